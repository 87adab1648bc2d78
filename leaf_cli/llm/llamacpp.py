"""The in-process llama.cpp engine: conversation-aware, it evaluates only the new tail of each prompt.

Each conversation carries an append-only token log (`Conversation.token_log`): the rendered prefix, the exact
sampled tokens of every assistant turn (never re-rendered or re-tokenized), then the rendered tool results and
next generation prompt found by incremental rendering (`increment.py`). The llama context holds a prefix of
that log, so a call evaluates only what lies beyond it: with one conversation per engine, the previous turn's
last sampled token plus the new prompt text. That matters most for hybrid models (Qwen3.5, FrogNano), which
llama.cpp cannot roll back: anything but an exact append would be re-evaluated from token 0.

Sampling is leaf's own (`sampler.py`), so each sampled token comes with its behaviour log-probability under the
distribution actually used; a grammar (`constrain_tools`) filters candidates through llama.cpp's GBNF sampler.
"""

from __future__ import annotations

import codecs
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np

from leaf_cli.llm.engine import ContextOverflow, EngineError, OnDelta, Sampling
from leaf_cli.llm.grammar import tool_call_grammar
from leaf_cli.llm.increment import first_prompt, next_prompt
from leaf_cli.llm.llama_runtime import GrammarFilter, load_llama
from leaf_cli.llm.messages import AssistantTurn, Conversation, TokenLog, TurnUsage
from leaf_cli.llm.parse import parse_reply
from leaf_cli.llm.sampler import TokenSampler
from leaf_cli.llm.stream import ThinkStreamer
from leaf_cli.llm.template import ChatTemplate, TemplateRenderError


class LlamaCppEngine:
    """`Engine` over llama-cpp-python. One `Llama` context; conversations take turns in it.

    `constrain_tools`: hold replies to free text then well-formed calls of the given tools (GBNF grammar in
    the template's call format); `tool_choice="required"` makes a call mandatory under the grammar, and
    `parallel_tool_calls=False` allows at most one call per reply.
    `kv_cache_type`: "f16" (default), "q8_0" or "q4_0" (quantized KV turns flash attention on).
    `extra_bufts`: keep llama.cpp's REPACK/AMX buffer types (default off: they crash on AMX VMs).
    """

    def __init__(self, model_path: str | Path, *, n_ctx: int | None = None, n_threads: int | None = None,
                 constrain_tools: bool = False, tool_choice: Literal["auto", "required"] = "auto",
                 parallel_tool_calls: bool = True,
                 kv_cache_type: str | None = None, extra_bufts: bool | None = None, policy_version: int = 0,
                 name: str | None = None) -> None:
        self.llm, self.info = load_llama(model_path, n_ctx=n_ctx, n_threads=n_threads,
                                         kv_cache_type=kv_cache_type, extra_bufts=extra_bufts)
        self.name = name or f"llama.cpp:{Path(model_path).name}"
        self.context_limit = min(self.llm.n_ctx(), len(self.llm.input_ids))  # llama.cpp may round n_ctx up
        self.constrain_tools, self.tool_choice = constrain_tools, tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.policy_version = policy_version
        self.n_vocab = self.llm.n_vocab()
        self.template = ChatTemplate(self.info.chat_template, bos_token=self._piece(self.llm.token_bos()),
                                     eos_token=self._piece(self.llm.token_eos()))
        self.last_evaluated = 0  # prompt tokens the last call evaluated (benchmarks read it)

    def complete(self, conversation: Conversation, tools: list[dict[str, Any]], sampling: Sampling,
                 on_delta: OnDelta | None = None) -> AssistantTurn:
        """Answer the conversation's last message, extending its token log."""
        began = time.monotonic()
        log = conversation.token_log
        try:
            if log is None or not log.ids:
                text = first_prompt(self.template, conversation.messages, tools, sampling.enable_thinking)
                new_ids = self._bos(text) + self._tokenize(text)
                log = TokenLog()
            else:
                text = next_prompt(self.template, conversation.messages, conversation.rendered_messages, tools,
                                   sampling.enable_thinking, reply_closed=self._is_end(log.ids[-1]))
                new_ids = self._tokenize(text)
        except TemplateRenderError as exc:
            raise EngineError(str(exc)) from exc
        prompt = log.ids + new_ids
        if len(prompt) >= self.context_limit:
            raise ContextOverflow(f"prompt of {len(prompt)} tokens does not fit the {self.context_limit}-token context")
        cached = self._evaluate(prompt)
        in_reasoning = _opens_reasoning(text)
        ids, logprobs, finish = self._generate(prompt, tools, sampling, on_delta, in_reasoning)
        log.append_prompt(new_ids)
        log.append_sampled(ids, logprobs, self.policy_version)
        conversation.token_log = log
        conversation.rendered_messages = len(conversation.messages) + 1  # the reply the loop appends next
        raw = self._text(ids)
        parsed = parse_reply(raw, tools, in_reasoning=in_reasoning)
        usage = TurnUsage(prompt_tokens=len(prompt), cached_tokens=cached, completion_tokens=len(ids))
        return AssistantTurn(content=parsed.content, reasoning=parsed.reasoning, tool_calls=parsed.tool_calls,
                             parse_error=parsed.parse_error, raw_text=raw, finish_reason=finish, usage=usage,
                             seconds=time.monotonic() - began, token_ids=ids, logprobs=logprobs)

    def _evaluate(self, prompt: list[int]) -> int:
        """Bring the context to hold `prompt`, evaluating only the tail it lacks. Returns the tokens reused."""
        held = self.llm.n_tokens
        current = self.llm.input_ids[:held]
        n = min(held, len(prompt))
        mismatch = np.flatnonzero(current[:n] != np.asarray(prompt[:n], dtype=current.dtype))
        keep = min(int(mismatch[0]) if len(mismatch) else n, len(prompt) - 1)  # always evaluate ≥ 1 token
        if keep < held and not self.llm._ctx.kv_cache_seq_rm(-1, keep, -1):
            keep = 0  # recurrent/hybrid memory cannot cut inside its state: start over
            self.llm.reset()
        self.llm.n_tokens = keep
        tail = prompt[keep:]
        self.llm.eval(tail)
        self.last_evaluated = len(tail)
        if self.llm.n_tokens != len(prompt) or list(self.llm.input_ids[:keep]) != prompt[:keep]:
            raise EngineError("llama context does not hold the conversation's token log after evaluation")
        return keep

    def _generate(self, prompt: list[int], tools: list[dict[str, Any]], sampling: Sampling,
                  on_delta: OnDelta | None, in_reasoning: bool) -> tuple[list[int], list[float], str]:
        from llama_cpp import llama_cpp as lib

        budget = min(sampling.max_tokens, self.context_limit - len(prompt))
        grammar = self._grammar(tools, in_reasoning)
        sampler = TokenSampler(sampling, grammar.valid if grammar else None)
        streamer = ThinkStreamer(on_delta, in_reasoning)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        ids: list[int] = []
        logprobs: list[float] = []
        finish = "length"
        try:
            for _ in range(budget):
                logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(self.llm.ctx, -1), shape=(self.n_vocab,))
                token, logprob = sampler.sample(logits)
                ids.append(token)
                logprobs.append(logprob)
                if self._is_end(token):
                    finish = "stop"
                    break
                if grammar is not None:
                    grammar.accept(token)
                streamer.feed(decoder.decode(self.llm.detokenize([token], special=True)))
                if len(ids) < budget:
                    self.llm.eval([token])
        finally:
            if grammar is not None:
                grammar.close()
        streamer.feed(decoder.decode(b"", final=True))
        streamer.finish()
        if finish == "length" and budget < sampling.max_tokens:
            raise ContextOverflow(f"the context of {self.context_limit} tokens filled up during the reply")
        return ids, logprobs, finish

    def _grammar(self, tools: list[dict[str, Any]], in_reasoning: bool) -> GrammarFilter | None:
        if not self.constrain_tools or not tools:
            return None
        text = tool_call_grammar(tools, self.template.tool_format, require_call=self.tool_choice == "required",
                                 in_reasoning=in_reasoning, parallel=self.parallel_tool_calls)
        return GrammarFilter(self.llm, text)

    def _is_end(self, token: int) -> bool:
        from llama_cpp import llama_cpp as lib

        return bool(lib.llama_vocab_is_eog(self.llm._model.vocab, token))

    def _tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True) if text else []

    def _bos(self, text: str) -> list[int]:
        """BOS when the model wants one and the template did not write it."""
        bos = self.llm.token_bos()
        wants = bool(self.info.add_bos_token) and bos >= 0 and not text.startswith(self.template.bos_token)
        return [bos] if wants else []

    def _piece(self, token: int) -> str:
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="replace") if token >= 0 else ""

    def _text(self, ids: list[int]) -> str:
        body = ids[:-1] if ids and self._is_end(ids[-1]) else ids
        return self.llm.detokenize(body, special=True).decode("utf-8", errors="replace")


def _opens_reasoning(prompt_text: str) -> bool:
    """The generation prompt left a `<think>` open, so the reply starts inside reasoning."""
    return prompt_text.rfind("<think>") > prompt_text.rfind("</think>")
