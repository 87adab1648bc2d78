"""An engine on a transformers model in-process: token ids and log-probabilities from the model itself.

Made for RL on small models on a CPU. Like the llama.cpp engine it keeps the conversation's append-only
token log: the rendered prompt, then each reply's sampled tokens exactly as sampled (end token included,
never re-tokenized), then the rendered tail (tool results, the next generation prompt). Each sampled token
carries the policy version that sampled it and its behaviour log-probability under the distribution it was
actually drawn from (temperature, top-k, top-p, min-p and repetition penalty applied). The model's KV
cache is kept per conversation, so a turn evaluates only the new tail.

Install the `train` extra (torch, transformers) to use it; nothing heavy is imported until it is built.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from leaf_cli.llm.engine import ContextOverflow, EngineError, OnDelta, Sampling
from leaf_cli.llm.increment import Render, next_prompt
from leaf_cli.llm.messages import AssistantTurn, Conversation, Message, TokenLog, TurnUsage

__all__ = ["Render", "TransformersEngine", "template_renderer", "tokenizer_renderer"]



def tokenizer_renderer(tokenizer: Any) -> Render:
    """Render with `tokenizer.apply_chat_template` as is (a template that ignores tools shows none)."""

    def render(messages: list[Message], tools: list[dict[str, Any]], add_generation_prompt: bool,
               enable_thinking: bool) -> str:
        return tokenizer.apply_chat_template([m.to_template() for m in messages], tools=tools or None,
                                             add_generation_prompt=add_generation_prompt, tokenize=False,
                                             enable_thinking=enable_thinking)

    return render


def template_renderer(tokenizer: Any) -> Render:
    """Render with leaf's template runtime over the tokenizer's chat template (tools spelled out as Hermes
    text when the template ignores them, exactly as the llama.cpp engine does)."""
    from leaf_cli.llm.template import ChatTemplate

    template = ChatTemplate(tokenizer.chat_template, bos_token=tokenizer.bos_token or "",
                            eos_token=tokenizer.eos_token or "<|im_end|>")
    return template.render_messages


class TransformersEngine:
    """The leaf Engine protocol over `model.generate`. `policy_version` tags every sampled token."""

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "transformers", context_limit: int = 8192,
                 render: Render | None = None, max_cached_conversations: int = 8, max_batch: int = 1,
                 batch_wait: float = 0.2) -> None:
        self.model, self.tokenizer, self.name, self.context_limit = model, tokenizer, name, context_limit
        self.render = render or template_renderer(tokenizer)
        self.policy_version = 0
        self.lock = threading.RLock()  # held while sampling; weight updates take it too
        self._caches: OrderedDict[int, tuple[Any, list[int]]] = OrderedDict()
        self._max_caches = max_cached_conversations
        # The KV-cache argument was renamed from `past_key_values` to `cache` in transformers 5.
        forward = inspect.signature(type(model).forward).parameters if hasattr(model, "forward") else {}
        self._cache_kwarg = "cache" if "cache" in forward else "past_key_values"
        self.stop_ids = _stop_ids(model, tokenizer)
        self.end_text = tokenizer.convert_ids_to_tokens(self.stop_ids[0])
        # Concurrent callers (one thread per episode) share one batched generate of up to max_batch rows.
        self.max_batch, self.batch_wait = max_batch, batch_wait
        self._cond = threading.Condition()
        self._pending: list[dict[str, Any]] = []
        self._busy = False

    @classmethod
    def load(cls, path: Path, **kwargs: Any) -> "TransformersEngine":
        """Load a transformers checkpoint folder (float32 on the CPU)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path).eval()
        return cls(model, tokenizer, **kwargs)

    def complete(self, conversation: Conversation, tools: list[dict[str, Any]], sampling: Sampling,
                 on_delta: OnDelta | None = None) -> AssistantTurn:
        from leaf_cli.llm.parse import parse_reply

        began = time.monotonic()
        log = self._extend_log(conversation, tools, sampling.enable_thinking)
        prompt_len = len(log.ids)
        # A generation prompt that opens <think> (Qwen3.5) means the reply starts inside the reasoning.
        in_reasoning = self.tokenizer.decode(log.ids[-4:], skip_special_tokens=False).rstrip().endswith("<think>")
        budget = min(sampling.max_tokens, self.context_limit - prompt_len)
        if budget <= 0:
            raise ContextOverflow(f"prompt of {prompt_len} tokens fills the {self.context_limit}-token context")
        if self.max_batch > 1:
            ids, logprobs, version, cached = *self._batched(log.ids, sampling, budget), 0
        else:
            with self.lock:
                ids, logprobs, cached = self._sample(conversation, log.ids, sampling, budget)
                version = self.policy_version
        log.append_sampled(ids, logprobs, version)
        stopped = bool(ids) and ids[-1] in self.stop_ids
        text = self.tokenizer.decode(ids[:-1] if stopped else ids, skip_special_tokens=False)
        parsed = parse_reply(text, tools, in_reasoning=in_reasoning)
        if on_delta is not None:
            if parsed.reasoning:
                on_delta("reasoning", parsed.reasoning)
            if parsed.content:
                on_delta("content", parsed.content)
        return AssistantTurn(
            content=parsed.content, reasoning=parsed.reasoning, tool_calls=parsed.tool_calls,
            parse_error=parsed.parse_error, raw_text=text, finish_reason="stop" if stopped else "length",
            usage=TurnUsage(prompt_tokens=prompt_len, cached_tokens=cached, completion_tokens=len(ids)),
            seconds=time.monotonic() - began, token_ids=ids, logprobs=logprobs,
        )

    def load_weights(self, state_dict: dict[str, Any], version: int) -> None:
        """Take new policy weights (after a training step); cached KV from older weights is dropped."""
        with self.lock:
            self.model.load_state_dict(state_dict, strict=False)
            self.policy_version = version
            self._caches.clear()

    def _extend_log(self, conv: Conversation, tools: list[dict[str, Any]], thinking: bool) -> TokenLog:
        """Append the rendered messages not yet in the token log, plus the generation prompt; at a user
        message, re-render canonically and keep the log up to the first differing token (`increment`)."""
        if conv.token_log is None:
            conv.token_log = TokenLog()
            conv.token_log.append_prompt(self._encode(self.render(conv.messages, tools, True, thinking)))
            conv.rendered_messages = len(conv.messages)
            return conv.token_log
        # The log ends with our last sampled reply, the message after the ones it covered before that reply.
        log = conv.token_log
        closed = bool(log.ids) and log.ids[-1] in self.stop_ids
        ext = next_prompt(self.render, conv.messages, conv.rendered_messages + 1, tools, thinking, self.end_text,
                          reply_closed=closed)
        if ext.rebase:
            log = conv.token_log = log.rebased(self._encode(ext.text))
        else:
            log.append_prompt(self._encode(ext.text))
        conv.rendered_messages = len(conv.messages)
        return log

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _sample(self, conv: Conversation, prompt: list[int], sampling: Sampling,
                budget: int) -> tuple[list[int], list[float], int]:
        """Generate up to `budget` tokens after `prompt`; return ids, behaviour logprobs, cached prompt tokens."""
        import torch

        key = id(conv.token_log)
        cache, seen = self._caches.pop(key, (None, []))
        cached = len(seen)
        if cached >= len(prompt) or prompt[:cached] != seen:  # a reused id() or a non-extension: start over
            cache, cached = None, 0
        input_ids = torch.tensor([prompt], dtype=torch.long, device=self.model.device)
        out = self._generate(input_ids, torch.ones_like(input_ids), sampling, budget, cache)
        ids = out.sequences[0, len(prompt):].tolist()
        logprobs = sampled_logprobs(out.scores, 0, ids)
        self._caches[key] = (out.past_key_values, (prompt + ids)[: len(prompt) + len(ids) - 1])
        while len(self._caches) > self._max_caches:
            self._caches.popitem(last=False)
        return ids, logprobs, cached

    def _batched(self, prompt: list[int], sampling: Sampling, budget: int) -> tuple[list[int], list[float], int]:
        """Queue one request; whichever caller finds the engine idle runs the queued batch for everyone."""
        request: dict[str, Any] = {"prompt": prompt, "budget": budget, "result": None}
        with self._cond:
            self._pending.append(request)
            self._cond.notify_all()
            deadline = time.monotonic() + self.batch_wait
            while request["result"] is None:
                full = len(self._pending) >= self.max_batch or time.monotonic() >= deadline
                if self._busy or not self._pending or not full:
                    self._cond.wait(timeout=0.01)
                    continue
                batch = self._pending[: self.max_batch]
                del self._pending[: len(batch)]
                self._busy = True
                self._cond.release()
                try:
                    with self.lock:
                        rows, version = self._sample_rows(batch, sampling), self.policy_version
                    results: list[Any] = [(ids, lps, version) for ids, lps in rows]
                except BaseException as exc:  # noqa: BLE001 - every caller in the batch gets the error
                    results = [exc] * len(batch)
                finally:
                    self._cond.acquire()
                    self._busy = False
                for req, result in zip(batch, results):
                    req["result"] = result
                self._cond.notify_all()
        if isinstance(request["result"], BaseException):
            raise EngineError(f"batched generation failed: {request['result']}") from request["result"]
        return request["result"]

    def _sample_rows(self, batch: list[dict[str, Any]], sampling: Sampling) -> list[tuple[list[int], list[float]]]:
        """One left-padded `generate` for several prompts; each row is cut at its stop token or budget."""
        import torch

        width = max(len(r["prompt"]) for r in batch)
        pad = self.stop_ids[0]
        ids = torch.tensor([[pad] * (width - len(r["prompt"])) + r["prompt"] for r in batch], device=self.model.device)
        mask = torch.tensor([[0] * (width - len(r["prompt"])) + [1] * len(r["prompt"]) for r in batch],
                            device=self.model.device)
        out = self._generate(ids, mask, sampling, max(r["budget"] for r in batch), None)
        rows = []
        for i, req in enumerate(batch):
            sampled = out.sequences[i, width:].tolist()[: req["budget"]]
            cut = next((k + 1 for k, t in enumerate(sampled) if t in self.stop_ids), len(sampled))
            sampled = sampled[:cut]
            rows.append((sampled, sampled_logprobs(out.scores, i, sampled)))
        return rows

    def _generate(self, ids: Any, mask: Any, sampling: Sampling, budget: int, cache: Any) -> Any:
        """`model.generate` with every sampling knob set explicitly, returning the processed scores.

        Each knob is spelled out (top_k 0 = off, top_p 1.0, min_p 0) because transformers fills a knob
        left unset from the model's generation_config or its own defaults (top_k 50), which would sample
        from a truncated distribution the caller never asked for. The behaviour log-probabilities are
        read from `scores`, the logits after every processor generate applied (temperature, top-k, top-p,
        min-p, repetition penalty), i.e. the exact distribution each token was drawn from."""
        import torch
        from transformers import GenerationConfig

        greedy = sampling.temperature <= 0
        config = GenerationConfig(
            max_new_tokens=budget, do_sample=not greedy, temperature=1.0 if greedy else sampling.temperature,
            top_k=0 if greedy else sampling.top_k, top_p=1.0 if greedy else sampling.top_p,
            min_p=sampling.min_p,
            repetition_penalty=sampling.repeat_penalty,
            eos_token_id=self.stop_ids, pad_token_id=self.stop_ids[0],
            output_scores=True, return_dict_in_generate=True,
        )
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        with torch.no_grad():
            reuse = {} if cache is None else {self._cache_kwarg: cache}
            return self.model.generate(ids, attention_mask=mask, generation_config=config, **reuse)


def sampled_logprobs(scores: Any, row: int, ids: list[int]) -> list[float]:
    """log q(ids[k]) for row `row`, q = softmax of generate's processed scores at step k: the sampler's own
    distribution (a token a processor removed would be −inf; a sampled token never is)."""
    import torch

    return [float(torch.log_softmax(scores[k][row].float(), dim=-1)[t]) for k, t in enumerate(ids)]


def _stop_ids(model: Any, tokenizer: Any) -> list[int]:
    """The end-of-turn ids: the tokenizer's EOS first, then any the generation config adds."""
    ids: list[int] = []
    for value in (tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
        for i in value if isinstance(value, list) else [value]:
            if i is not None and i not in ids:
                ids.append(int(i))
    if not ids:
        raise EngineError("the tokenizer has no end-of-sequence token")
    return ids
