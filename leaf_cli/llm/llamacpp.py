"""The in-process llama.cpp engine: conversation-aware, it evaluates only the new tail of each prompt.

Each conversation carries an append-only token log (`Conversation.token_log`): the rendered prefix, the exact
sampled tokens of every assistant turn (never re-rendered or re-tokenized), then the rendered tool results and
next generation prompt found by incremental rendering (`increment.py`). The llama context holds a prefix of
that log, so a call evaluates only what lies beyond it: with one conversation per engine, the previous turn's
last sampled token plus the new prompt text. That matters most for hybrid models (Qwen3.5, FrogNano), which
llama.cpp cannot roll back: anything but an exact append would be re-evaluated from token 0.

When the context must go back (a reply interrupted with Ctrl-C, a canonical re-render at a user message) or
serve another conversation, `llama_state.StateStore` restores a saved state instead: recurrent-state
checkpoints taken at the start of each evaluated tail and one token before each prompt's end (hybrid models),
and whole-sequence snapshots of a conversation that another one is about to overwrite. Conversations take
turns under a lock, so one engine may serve several threads.

Sampling is leaf's own (`sampler.py`), so each sampled token comes with its behaviour log-probability under the
distribution actually used; a grammar (`constrain_tools`) filters candidates through llama.cpp's GBNF sampler.
A thinking budget (`Sampling.thinking_budget`) closes a reasoning that runs past it with `</think>`; those
tokens are leaf's, not the policy's, and the token log marks them as prompt.
"""

from __future__ import annotations

import codecs
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Literal

import numpy as np

from leaf_cli.llm.engine import ContextOverflow, EngineError, OnDelta, Sampling
from leaf_cli.llm.gguf_info import GGUFInfo, read_gguf_info
from leaf_cli.llm.grammar import tool_call_grammar
from leaf_cli.llm.increment import first_prompt, next_prompt
from leaf_cli.llm.llama_runtime import GrammarFilter, kv_seq_rm, load_llama, vocab_handle
from leaf_cli.llm.llama_state import StateStore
from leaf_cli.llm.messages import AssistantTurn, Conversation, TokenLog, TurnUsage
from leaf_cli.llm.parse import parse_reply
from leaf_cli.llm.progress import eval_reporting
from leaf_cli.llm.prefix_cache import PrefixCache, model_identity
from leaf_cli.llm.sampler import TokenSampler
from leaf_cli.llm.speculate import DRAFT_TOKENS, decode_all, drop_after, lookup
from leaf_cli.llm.stream import ThinkStreamer
from leaf_cli.llm.template import ChatTemplate, TemplateRenderError

CLOSE_REASONING = "\n</think>\n\n"
"""What a thinking budget writes when it ends the reasoning: the template's own text after a reasoning."""


class LlamaCppEngine:
    """`Engine` over llama-cpp-python. One `Llama` context; conversations take turns in it.

    `constrain_tools`: hold replies to free text then well-formed calls of the given tools (GBNF grammar in
    the template's call format); `tool_choice="required"` makes a call mandatory under the grammar, and
    `parallel_tool_calls=False` allows at most one call per reply.
    `kv_cache_type`: "f16" (default), "q8_0" or "q4_0" (quantized KV turns flash attention on).
    `extra_bufts`: keep llama.cpp's REPACK/AMX buffer types (default off: they crash on AMX VMs).
    `max_checkpoints`: recurrent-state checkpoints kept (hybrid models; ~50 MB each for a 4B Qwen3.5), also
    bounded by `checkpoint_mb` (None: `checkpoint_budget` of the model file, an eighth of the weights).
    `snapshot_mb`: memory for whole-state snapshots of conversations waiting for their turn (0 = none).
    `prefix_cache`: a folder where the state after the system turn is saved and loaded (`prefix_cache.py`),
    at most `prefix_cache_mb` megabytes; None = off.
    `speculate`: prompt-lookup drafting (`speculate.py`); the same greedy tokens, the same distribution;
    None = on for attention-only models, off for hybrids (not yet measured at their real size).
    """

    def __init__(self, model_path: str | Path, *, n_ctx: int | None = None, n_threads: int | None = None,
                 constrain_tools: bool = False, tool_choice: Literal["auto", "required"] = "auto",
                 parallel_tool_calls: bool = True,
                 kv_cache_type: str | None = None, extra_bufts: bool | None = None, policy_version: int = 0,
                 name: str | None = None, max_checkpoints: int = 8, checkpoint_mb: int | None = None,
                 snapshot_mb: int = 1024,
                 prefix_cache: str | Path | None = None, prefix_cache_mb: int = 2048,
                 speculate: bool | None = False) -> None:
        info = read_gguf_info(model_path)  # once: the header decides drafting, then the load checks the same file
        if speculate is None:  # auto: on where it was measured faster (attention-only models), off for hybrids
            speculate = not _header_is_recurrent(info)
        # Drafting on a hybrid needs llama.cpp's per-token recurrent snapshots to drop rejected tokens (it
        # keeps them only for the architectures that support it, and ignores the setting elsewhere).
        rollback = DRAFT_TOKENS if speculate else 0
        self.llm, self.info = load_llama(model_path, info=info, n_ctx=n_ctx, n_threads=n_threads,
                                         kv_cache_type=kv_cache_type, extra_bufts=extra_bufts, n_rs_seq=rollback)
        self.name = name or f"llama.cpp:{Path(model_path).name}"
        self.context_limit = min(self.llm.n_ctx(), len(self.llm.input_ids))  # llama.cpp may round n_ctx up
        self.constrain_tools, self.tool_choice = constrain_tools, tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.policy_version = policy_version
        self.n_vocab = self.llm.n_vocab()
        self.template = ChatTemplate(self.info.chat_template, bos_token=self._piece(self.llm.token_bos()),
                                     eos_token=self._piece(self.llm.token_eos()))
        self.hybrid = bool(lib_is_hybrid(self.llm))
        self.speculate = speculate and (not self.hybrid or _rollback_depth(self.llm) >= DRAFT_TOKENS)
        self.drafted = self.accepted = 0  # draft tokens proposed and kept so far (benchmarks read them)
        budget = checkpoint_budget(Path(self.info.path).stat().st_size) if checkpoint_mb is None else checkpoint_mb << 20
        self.states = StateStore(self.llm, hybrid=self.hybrid, max_checkpoints=max_checkpoints,
                                 checkpoint_bytes=budget, snapshot_bytes=snapshot_mb << 20)
        self.lock = threading.Lock()  # one conversation's turn at a time in the one context
        self._serving: Any = None  # weak reference to the conversation the context last served
        self._dirty = False  # a turn was interrupted: the context may hold state past `n_tokens`
        self.last_evaluated = 0  # prompt tokens the last call evaluated (benchmarks read it)
        self.last_prefix: str | None = None  # the prefix cache's answer at the last empty-context prompt
        self.prefix_cache = (None if prefix_cache is None else
                             PrefixCache(Path(prefix_cache), prefix_cache_mb << 20, self._state_context(model_path, extra_bufts)))

    def complete(self, conversation: Conversation, tools: list[dict[str, Any]], sampling: Sampling,
                 on_delta: OnDelta | None = None) -> AssistantTurn:
        """Answer the conversation's last message, extending its token log."""
        with self.lock:
            return self._complete(conversation, tools, sampling, on_delta)

    def _complete(self, conversation: Conversation, tools: list[dict[str, Any]], sampling: Sampling,
                  on_delta: OnDelta | None) -> AssistantTurn:
        began = time.monotonic()
        log, new_ids, text = self._prompt_for(conversation, tools, sampling)
        prompt = log.ids + new_ids
        if len(prompt) >= self.context_limit:
            raise ContextOverflow(f"prompt of {len(prompt)} tokens does not fit the {self.context_limit}-token context")
        switching = self._switching_to(conversation)
        marks = self._marks(prompt, text, first=not log.ids)
        shared = self._shared_prefix(prompt) if conversation.messages[0].role == "system" else 0
        try:
            cached = self._evaluate(prompt, keep_live=switching, marks=marks,
                                    pin=conversation.messages[-1].role == "user", shared=shared)
            in_reasoning = _opens_reasoning(text)
            ids, logprobs, forced, finish = self._generate(prompt, tools, sampling, on_delta, in_reasoning)
        except BaseException:
            self._dirty = True  # Ctrl-C or an error mid-evaluation: what the context holds is uncertain
            raise
        log.append_prompt(new_ids)
        log.append_sampled(ids, logprobs, self.policy_version, forced=forced)
        conversation.token_log = log
        conversation.rendered_messages = len(conversation.messages) + 1  # the reply the loop appends next
        raw = self._text(ids)
        parsed = parse_reply(raw, tools, in_reasoning=in_reasoning)
        usage = TurnUsage(prompt_tokens=len(prompt), cached_tokens=cached, completion_tokens=len(ids))
        return AssistantTurn(content=parsed.content, reasoning=parsed.reasoning, tool_calls=parsed.tool_calls,
                             parse_error=parsed.parse_error, raw_text=raw, finish_reason=finish, usage=usage,
                             seconds=time.monotonic() - began, token_ids=ids, logprobs=logprobs)

    def _prompt_for(self, conversation: Conversation, tools: list[dict[str, Any]],
                    sampling: Sampling) -> tuple[TokenLog, list[int], str]:
        """(the log to extend, the tokens to append to it, the prompt text that ends in the generation prompt).

        A new conversation is rendered whole; later turns append; at a user message the conversation is
        rendered canonically and the log is kept up to the first differing token (`TokenLog.rebased`).
        """
        log = conversation.token_log
        try:
            if log is None or not log.ids:
                text = first_prompt(self.template.render_messages, conversation.messages, tools, sampling.enable_thinking)
                return TokenLog(), self._bos(text) + self._tokenize(text), text
            ext = next_prompt(self.template.render_messages, conversation.messages, conversation.rendered_messages, tools,
                              sampling.enable_thinking, self.template.end_token, reply_closed=self._is_end(log.ids[-1]))
        except TemplateRenderError as exc:
            raise EngineError(str(exc)) from exc
        if ext.rebase:
            return log.rebased(self._bos(ext.text) + self._tokenize(ext.text)), [], ext.text
        return log, self._tokenize(ext.text), ext.text  # the log itself grows only once the turn succeeded

    def _switching_to(self, conversation: Conversation) -> bool:
        """Whether the context last served another conversation that is still alive (it may come back)."""
        previous = self._serving() if self._serving is not None else None
        self._serving = weakref.ref(conversation)
        return previous is not None and previous is not conversation

    def _marks(self, prompt: list[int], text: str, first: bool) -> list[int]:
        """Where to checkpoint inside this prompt: before its generation prompt (a canonical re-render at
        the next user message differs from there: Qwen3.5 drops that turn's `<think>`), and in a first
        prompt after the system turn (every conversation of this engine shares it, tools included)."""
        end = self.template.end_token
        cut = text.rfind(end)
        marks = [len(prompt) - len(self._tokenize(text[cut + len(end):]))] if cut >= 0 else []
        end_ids = self._tokenize(end)
        if first and len(end_ids) == 1 and end_ids[0] in prompt:
            marks.append(prompt.index(end_ids[0]) + 1)
        return sorted(set(marks))

    def _evaluate(self, prompt: list[int], keep_live: bool = False, marks: list[int] = [],  # noqa: B006
                  pin: bool = False, shared: int = 0) -> int:
        """Bring the context to hold `prompt`, evaluating only the tail it lacks. Returns the tokens reused.

        `keep_live`: the context holds another live conversation; snapshot it before overwriting it.
        `marks`: positions to checkpoint at on the way (hybrid models); `pin`: keep those checkpoints longest.
        `shared`: the length of the system turn every run shares; from an empty context its state comes from
        the prefix cache when saved there, and is saved there once evaluated.
        """
        target = np.asarray(prompt, dtype=np.intc)
        keep = self._reusable(target)
        if keep < self.llm.n_tokens or self._dirty:
            snapshot, shared = self.states.best_snapshot(target)
            if keep_live and self.llm.n_tokens - keep > 1:
                self.states.snapshot()
            if snapshot is not None and min(shared, len(prompt) - 1) > keep and self.states.restore_snapshot(snapshot):
                keep = self._reusable(target)
            keep = self._cut(target, keep)
        self._dirty = False
        save_prefix = 0
        if keep == 0 and shared and self.prefix_cache is not None:
            if self._load_prefix(prompt[:shared]):
                keep = shared
                self.states.checkpoint(pin=True)
            else:
                save_prefix, marks = shared, sorted({*marks, shared})
        self.states.checkpoint()  # where this tail starts: a Ctrl-C mid-reply comes back here
        start = self.llm.n_tokens
        for mark in [m for m in marks if keep < m < len(prompt)] + [len(prompt)]:
            eval_reporting(self.llm, prompt[self.llm.n_tokens:mark], self.llm.n_tokens - start, len(prompt) - start)
            if mark == save_prefix:
                self._save_prefix()
            if mark < len(prompt):
                self.states.checkpoint(pin=pin or mark != marks[-1])
        self.last_evaluated = len(prompt) - keep
        if self.llm.n_tokens != len(prompt) or list(self.llm.input_ids[:keep]) != prompt[:keep]:
            raise EngineError("llama context does not hold the conversation's token log after evaluation")
        return keep

    def _shared_prefix(self, prompt: list[int]) -> int:
        """The length of the prompt's first turn (the system prompt and the tools), 0 when it has none or
        nothing follows it."""
        end_ids = self._tokenize(self.template.end_token)
        if self.prefix_cache is None or len(end_ids) != 1 or end_ids[0] not in prompt:
            return 0
        n = prompt.index(end_ids[0]) + 1
        return n if n < len(prompt) - 1 else 0

    def _state_context(self, model_path: str | Path, extra_bufts: bool | None) -> dict[str, Any]:
        """Everything a saved sequence state depends on besides its tokens (the prefix cache's key)."""
        import llama_cpp

        import leaf_cli
        from leaf_cli.llm.llama_runtime import extra_bufts_wanted

        p = self.llm.context_params
        return {"format": 1, "model": model_identity(model_path), "leaf": leaf_cli.__version__,
                "llama_cpp": llama_cpp.__version__, "n_ctx": self.llm.n_ctx(), "type_k": int(p.type_k),
                "type_v": int(p.type_v), "flash_attn": int(p.flash_attn_type), "n_batch": int(p.n_batch),
                "n_ubatch": int(p.n_ubatch), "n_seq_max": int(p.n_seq_max), "n_rs_seq": int(getattr(p, "n_rs_seq", 0)),
                "extra_bufts": extra_bufts_wanted(extra_bufts), "hybrid": self.hybrid}

    def _load_prefix(self, tokens: list[int]) -> bool:
        """Put the saved state after `tokens` into the (empty) context; False on a miss or a refusal."""
        assert self.prefix_cache is not None
        data = self.prefix_cache.load(tokens)
        self.last_prefix = "miss" if data is None else "hit"
        if data is None:
            return False
        if self.states.load_sequence(np.asarray(tokens, dtype=np.intc), data, len(data)):
            return True
        self.prefix_cache.path(tokens).unlink(missing_ok=True)  # llama.cpp refused it: evaluate and rewrite
        self.last_prefix = "refused"
        return False

    def _save_prefix(self) -> None:
        assert self.prefix_cache is not None
        saved = self.states.save_sequence()
        self.prefix_cache.save(saved.tokens.tolist(), saved.data, saved.size)

    def _reusable(self, target: np.ndarray) -> int:
        """How many leading tokens of `target` the context holds, leaving at least one to evaluate."""
        held = self.llm.n_tokens
        n = min(held, len(target))
        mismatch = np.flatnonzero(self.llm.input_ids[:n] != target[:n])
        return min(int(mismatch[0]) if len(mismatch) else n, len(target) - 1)

    def _cut(self, target: np.ndarray, keep: int) -> int:
        """Drop what the context holds after `keep` tokens; returns the tokens it still holds.

        Attention caches cut anywhere; a hybrid's recurrent state goes back to the latest checkpoint within
        the shared prefix, or, without one, to token 0.
        """
        if kv_seq_rm(self.llm, keep):
            self.llm.n_tokens = keep
            return keep
        checkpoint = self.states.best_checkpoint(target, keep)
        if checkpoint is not None and self.states.restore_checkpoint(checkpoint):
            return len(checkpoint.tokens)
        self.llm.reset()
        kv_seq_rm(self.llm, 0)
        return 0

    def _generate(self, prompt: list[int], tools: list[dict[str, Any]], sampling: Sampling, on_delta: OnDelta | None,
                  in_reasoning: bool) -> tuple[list[int], list[float], frozenset[int], str]:
        """Sample a reply: (token ids, their behaviour log-probabilities, indexes leaf forced, finish reason)."""
        from llama_cpp import llama_cpp as lib

        budget = min(sampling.max_tokens, self.context_limit - len(prompt))
        grammar = self._grammar(tools, in_reasoning)
        sampler = TokenSampler(sampling, grammar.valid if grammar else None)
        streamer = ThinkStreamer(on_delta, in_reasoning)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        thinking = _Reasoning(in_reasoning, sampling.thinking_budget)
        ids: list[int] = []
        logprobs: list[float] = []
        forced: list[int] = []
        pending: list[int] = []  # tokens leaf writes next (closing an over-budget reasoning)
        # Drafting needs every accepted token to be the sampler's own: no grammar state or forced tokens.
        drafting = self.speculate and grammar is None and sampling.thinking_budget is None
        rows: list[np.ndarray] = []  # logits of positions a verify batch already evaluated, next first
        drafts: list[int] = []  # the draft tokens those rows judge
        finish = "length"
        try:
            while len(ids) < budget:
                if not pending and thinking.over_budget():
                    pending = self._tokenize(CLOSE_REASONING)
                if pending:
                    token, logprob = pending.pop(0), 0.0
                    forced.append(len(ids))
                elif drafts:
                    token, logprob, accepted = sampler.verify(rows.pop(0), drafts.pop(0))
                    self.accepted += accepted
                    if not accepted:  # the rest of the draft goes; the context ends at the reply so far
                        rows, drafts = [], []
                        self._drop_drafts(len(prompt) + len(ids))
                elif rows:
                    token, logprob = sampler.sample(rows.pop(0))
                else:
                    logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(self.llm.ctx, -1), shape=(self.n_vocab,))
                    token, logprob = sampler.sample(logits)
                ids.append(token)
                logprobs.append(logprob)
                if self._is_end(token):
                    finish = "stop"
                    break
                if grammar is not None:
                    grammar.accept(token)
                piece = decoder.decode(self.llm.detokenize([token], special=True))
                thinking.feed(piece)
                streamer.feed(piece)
                if len(ids) < budget and not rows:
                    if drafting:
                        rows, drafts = self._step_with_draft(prompt, ids, budget)
                    else:
                        self.llm.eval([token])
        finally:
            if grammar is not None:
                grammar.close()
            if drafting:
                self._drop_drafts(len(prompt) + len(ids))  # the context holds nothing past the reply
        streamer.feed(decoder.decode(b"", final=True))
        streamer.finish()
        if finish == "length" and budget < sampling.max_tokens:
            raise ContextOverflow(f"the context of {self.context_limit} tokens filled up during the reply")
        return ids, logprobs, frozenset(forced), finish

    def _step_with_draft(self, prompt: list[int], ids: list[int], budget: int) -> tuple[list[np.ndarray], list[int]]:
        """Evaluate the last sampled token, with a prompt-lookup draft after it when the history has one:
        (the logits rows of the draft positions and the one after, the draft)."""
        room = min(budget - len(ids) - 1, self.context_limit - self.llm.n_tokens - 2, DRAFT_TOKENS)
        draft = lookup(np.asarray(prompt + ids, dtype=np.intc), room) if room > 0 else []
        if not draft:
            self.llm.eval([ids[-1]])
            return [], []
        self.drafted += len(draft)
        return list(decode_all(self.llm, [ids[-1], *draft])), draft

    def _drop_drafts(self, n: int) -> None:
        if not drop_after(self.llm, n):
            raise EngineError(f"llama.cpp could not drop the rejected draft tokens after position {n}")

    def _grammar(self, tools: list[dict[str, Any]], in_reasoning: bool) -> GrammarFilter | None:
        if not self.constrain_tools or not tools:
            return None
        text = tool_call_grammar(tools, self.template.tool_format, require_call=self.tool_choice == "required",
                                 in_reasoning=in_reasoning, parallel=self.parallel_tool_calls)
        return GrammarFilter(self.llm, text)

    def _is_end(self, token: int) -> bool:
        from llama_cpp import llama_cpp as lib

        return bool(lib.llama_vocab_is_eog(vocab_handle(self.llm), token))

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


def checkpoint_budget(model_bytes: int) -> int:
    """Bytes of recurrent-state checkpoints one context keeps: an eighth of the model file, at least 64 MiB.

    Measured at Qwen3.5-4B's shape (bench/bench_4b.py, step `checkpoints`): a checkpoint is the recurrent
    state alone, ~50 MB whatever the context, so the 2.58 GiB Q4_K_M file keeps six of them (~330 MB, next to
    its 1.1-2.2 GB of KV at 64k) - enough for the system turn, the last user turn and a few replies back."""
    return max(64 << 20, model_bytes // 8)


def _header_is_recurrent(info: GGUFInfo) -> bool:
    """Whether the GGUF header describes recurrent layers (Gated DeltaNet, Mamba: `<arch>.ssm.*` keys)."""
    return f"{info.architecture}.ssm.inner_size" in info.metadata


def _rollback_depth(llm: Any) -> int:
    from llama_cpp import llama_cpp as lib

    return int(lib.llama_n_rs_seq(llm.ctx))


def lib_is_hybrid(llm: Any) -> bool:
    """llama.cpp's own word: the model's memory has a recurrent part (Qwen3.5: Gated DeltaNet layers)."""
    from llama_cpp import llama_cpp as lib

    model = llm.model  # the public property over `Llama._model.model`
    return bool(lib.llama_model_is_hybrid(model) or lib.llama_model_is_recurrent(model))


class _Reasoning:
    """Counts the tokens of an open reasoning and says when it has run past the thinking budget."""

    def __init__(self, open_: bool, budget: int | None) -> None:
        self.open, self.budget, self.tokens, self.tail = open_, budget, 0, ""

    def feed(self, piece: str) -> None:
        if not self.open:
            return
        self.tokens += 1
        self.tail = (self.tail + piece)[-16:]
        if "</think>" in self.tail:
            self.open = False

    def over_budget(self) -> bool:
        return self.open and self.budget is not None and self.tokens >= self.budget


def _opens_reasoning(prompt_text: str) -> bool:
    """The generation prompt left a `<think>` open, so the reply starts inside reasoning."""
    return prompt_text.rfind("<think>") > prompt_text.rfind("</think>")
