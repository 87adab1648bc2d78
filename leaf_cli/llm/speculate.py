"""Prompt-lookup drafting: guess the next tokens by finding the conversation's latest suffix earlier in it.

An agent's Edit and Write calls mostly copy text it has just Read, so the tokens that followed the most
recent earlier occurrence of the longest repeated suffix are a good guess for what comes next, as long as
the earlier occurrences agree on it (`lookup`). The engine verifies such a draft in one batch (logits for
every position) and keeps the longest prefix the sampler accepts (`TokenSampler.verify`), so the output is
what plain decoding gives: the same tokens under greedy decoding, the same distribution under sampling. A
draft costs nothing to make; a wrong token costs one more position of the batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from leaf_cli.llm.llama_runtime import decode_batch, kv_seq_rm

DRAFT_TOKENS = 8
"""Most tokens one draft proposes (also the hybrid's rollback depth, llama.cpp's `n_rs_seq`)."""
MIN_MATCH = 2
"""The shortest repeated suffix a draft is made from: one token repeats too often to say what follows."""
MAX_MATCH = 16
"""The longest suffix compared: beyond it the occurrences are as specific as they get."""
AGREEMENT = 0.6
"""The share of the matching occurrences that must agree with the next draft token for the draft to go on."""


def longest_match(history: np.ndarray, max_n: int = MAX_MATCH) -> tuple[np.ndarray, int]:
    """(where the earlier occurrences of the history's longest repeated suffix end, its length), the suffix at
    most `max_n` tokens; the length is 0 when the last token never occurred before. Occurrences end before
    the history's last token, so each is followed by at least one token."""
    last = len(history) - 1
    ends = np.flatnonzero(history[:last] == history[last]) if last > 0 else np.zeros(0, dtype=np.intp)
    n = 1 if len(ends) else 0
    while n and n < max_n:
        longer = ends[ends >= n]
        longer = longer[history[longer - n] == history[last - n]]
        if not len(longer):
            break
        ends, n = longer, n + 1
    return ends, n


def lookup(history: np.ndarray, k: int = DRAFT_TOKENS, min_n: int = MIN_MATCH, max_n: int = MAX_MATCH,
           agreement: float = AGREEMENT) -> list[int]:
    """Up to `k` tokens that followed the most recent occurrence of the history's longest repeated suffix,
    stopping where the occurrences disagree about the next token.

    A longer match is a more specific guess, and the most recent occurrence the likeliest copy source. Each
    draft token extends the match, keeping the occurrences that still agree; when fewer than `agreement` of
    them continue with the most recent one's token (the history has seen several continuations here, e.g. the
    number after `def scale_`), the draft ends: a drafted token the model rejects costs half a decode step
    (SmolLM2 on a CPU, measured), so a draft is only worth making where the history is consistent.
    """
    ends, n = longest_match(history, max_n)
    if k <= 0 or n < min_n:
        return []
    draft: list[int] = []
    while len(draft) < k and len(ends):
        following = history[ends + 1]
        token = following[-1]
        same = following == token
        if np.count_nonzero(same) < agreement * len(same):
            break
        draft.append(int(token))
        ends = ends[same] + 1
        ends = ends[ends + 1 < len(history)]  # an occurrence that reached the end has nothing more to say
    return draft


def decode_all(llm: Any, tokens: list[int]) -> np.ndarray:
    """Evaluate `tokens` after what the context holds, in one batch, returning the logits of every position
    (row i: the distribution of the token after `tokens[i]`).

    The batch runs on the generation threads, not the prompt threads: llama.cpp picks `n_threads_batch` for
    any batch of more than one token, and a verify batch is as memory-bound as decoding one token (on a busy
    2-core machine the extra prompt thread made it 10-20x slower, measured)."""
    from llama_cpp import llama_cpp as lib

    n_past = llm.n_tokens
    kv_seq_rm(llm, n_past, seq_id=-1)  # as `Llama.eval` does: nothing stale after the position
    threads, batch_threads = int(llm.context_params.n_threads), int(llm.context_params.n_threads_batch)
    lib.llama_set_n_threads(llm.ctx, threads, threads)
    try:
        decode_batch(llm, tokens, n_past)
    finally:
        lib.llama_set_n_threads(llm.ctx, threads, batch_threads)
    llm.input_ids[n_past:n_past + len(tokens)] = tokens
    llm.n_tokens = n_past + len(tokens)
    return np.ctypeslib.as_array(lib.llama_get_logits(llm.ctx), shape=(len(tokens), llm.n_vocab())).copy()


def drop_after(llm: Any, n: int) -> bool:
    """Forget the evaluated tokens after the first `n` (rejected drafts). For a hybrid model llama.cpp does it
    from its per-token recurrent snapshots of the last batch (`n_rs_seq`); False when it cannot."""
    if llm.n_tokens <= n:
        return True
    if not kv_seq_rm(llm, n):
        return False
    llm.n_tokens = n
    return True
