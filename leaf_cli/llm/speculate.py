"""Prompt-lookup drafting: guess the next tokens by finding the conversation's last n-gram earlier in it.

An agent's Edit and Write calls mostly copy text it has just Read, so the tokens that followed the latest
earlier occurrence of the last few tokens are a good guess for what comes next. The engine verifies such a
draft in one batch (logits for every position) and keeps the longest prefix the sampler accepts
(`TokenSampler.verify`), so the output is what plain decoding gives: the same tokens under greedy decoding,
the same distribution under sampling. A draft costs nothing to make; a wrong one costs the extra positions
of one batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from leaf_cli.llm.llama_runtime import decode_batch, kv_seq_rm

NGRAMS = (4, 3, 2)
"""The n-gram lengths tried, longest first: a longer match is a more specific guess."""
DRAFT_TOKENS = 8
"""Most tokens one draft proposes (also the hybrid's rollback depth, llama.cpp's `n_rs_seq`)."""


def lookup(history: np.ndarray, k: int = DRAFT_TOKENS, ngrams: tuple[int, ...] = NGRAMS) -> list[int]:
    """Up to `k` tokens that followed the most recent earlier occurrence of the history's last n-gram."""
    size = len(history)
    if k <= 0:
        return []
    for n in ngrams:
        if size <= n:
            continue
        tail = history[size - n:]
        starts = np.flatnonzero(history[:size - n] == tail[0])  # an occurrence ending before the tail does
        for j in range(1, n):
            if not len(starts):
                break
            starts = starts[history[starts + j] == tail[j]]
        if len(starts):
            begin = int(starts[-1]) + n
            return history[begin:begin + k].tolist()
    return []


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
