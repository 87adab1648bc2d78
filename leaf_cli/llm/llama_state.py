"""Saved llama.cpp sequence states, so that a context which must go back, or serve another conversation, does
not evaluate everything again.

llama.cpp cannot cut a hybrid model's recurrent state (Gated DeltaNet in Qwen3.5/FrogNano) inside the
sequence: the cache's `seq_rm` fails and the whole prompt is evaluated from token 0. Two tools avoid that:

- **Checkpoints** (hybrid and recurrent models only): the recurrent part of the state at a position
  (`LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY`, tens of MB for a 4B model, constant in the context length).
  Restoring one and cutting the attention cache after it rolls the context back to that position: how
  llama-server's context checkpoints work. Valid only while the context still holds the same tokens up to
  that position, which the caller checks (`usable`).
- **Snapshots** (every model): the whole sequence state (attention KV included), taken when the context is
  about to be overwritten by a prompt that shares less of it (another conversation's turn), restored when
  that conversation comes back. Bounded by bytes; the least recently used goes first.

llama.cpp's own bounded rollback (`n_rs_seq`) keeps per-token snapshots of the last micro-batch only (it is
made for rejecting speculative drafts), so it cannot go back across turns; it is not used here.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from leaf_cli.llm.llama_runtime import kv_seq_rm


@dataclass(eq=False)
class SavedState:
    """A sequence state at `tokens` (the context held exactly these tokens when it was saved)."""

    tokens: np.ndarray
    data: Any  # ctypes byte array
    size: int
    partial: bool
    used: int = field(default=0)
    pinned: bool = False


def _prefix_len(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else n


class StateStore:
    """Checkpoints and snapshots of sequence 0 of one llama context."""

    def __init__(self, llm: Any, *, hybrid: bool, max_checkpoints: int = 8, checkpoint_bytes: int = 1 << 30,
                 snapshot_bytes: int = 1 << 30) -> None:
        from llama_cpp import llama_cpp as lib

        self._lib, self._llm = lib, llm
        self.hybrid = hybrid
        self.max_checkpoints, self.checkpoint_bytes = max_checkpoints, checkpoint_bytes
        self.snapshot_bytes = snapshot_bytes
        self.checkpoints: list[SavedState] = []
        self.snapshots: list[SavedState] = []
        self._clock = 0

    def checkpoint(self, pin: bool = False) -> None:
        """Save the recurrent state at the context's current position (hybrid models; once per position).

        `pin`: a checkpoint that later turns or conversations are likely to need (after the shared system
        turn, before the first reply after a user message); the least recently used unpinned one goes
        first, and pinned ones hold at most half the places. Both `max_checkpoints` and `checkpoint_bytes`
        bound them; a checkpoint larger than the whole budget is not taken.
        """
        n = self._llm.n_tokens
        if not self.hybrid or self.max_checkpoints <= 0 or n == 0:
            return
        tokens = np.array(self._llm.input_ids[:n], copy=True)
        for c in self.checkpoints:
            if len(c.tokens) == n and np.array_equal(c.tokens, tokens):
                c.pinned = c.pinned or pin
                self._touch(c)
                return
        size = self._size(partial=True)
        if size > self.checkpoint_bytes:
            return
        saved = self._save(tokens, partial=True, size=size)
        saved.pinned = pin
        self.checkpoints.append(saved)
        while (len(self.checkpoints) > self.max_checkpoints
               or sum(c.size for c in self.checkpoints) > self.checkpoint_bytes):
            pinned = [c for c in self.checkpoints if c.pinned]
            pool = pinned if len(pinned) > self.max_checkpoints // 2 else [c for c in self.checkpoints if not c.pinned]
            self.checkpoints.remove(min(pool or self.checkpoints, key=lambda c: c.used))

    def best_checkpoint(self, prompt: np.ndarray, limit: int) -> SavedState | None:
        """The longest checkpoint whose tokens start `prompt` and lie within the first `limit` tokens, which
        the context must hold unchanged (the attention cache there is reused as is)."""
        fits = [c for c in self.checkpoints if len(c.tokens) <= limit and _prefix_len(c.tokens, prompt) == len(c.tokens)]
        return max(fits, key=lambda c: len(c.tokens), default=None)

    def restore_checkpoint(self, saved: SavedState) -> bool:
        """Roll the context back to the checkpoint's position. False when llama.cpp refuses."""
        n = len(saved.tokens)
        flags = self._flags(partial=True)
        if self._lib.llama_state_seq_set_data_ext(self._llm.ctx, saved.data, saved.size, 0, flags) == 0:
            return False
        if not kv_seq_rm(self._llm, n):  # the attention cache after the checkpoint
            return False
        self._llm.n_tokens = n
        self._touch(saved)
        return True

    def snapshot(self) -> None:
        """Save the whole sequence state (called before the context is overwritten)."""
        n = self._llm.n_tokens
        if self.snapshot_bytes <= 0 or n == 0:
            return
        tokens = np.array(self._llm.input_ids[:n], copy=True)
        self.snapshots = [s for s in self.snapshots if _prefix_len(s.tokens, tokens) < len(s.tokens)]  # superseded
        size = self._size(partial=False)
        if size > self.snapshot_bytes:
            return
        self.snapshots.append(self._save(tokens, partial=False, size=size))
        while sum(s.size for s in self.snapshots) > self.snapshot_bytes:
            self.snapshots.remove(min(self.snapshots, key=lambda s: s.used))

    def best_snapshot(self, prompt: np.ndarray) -> tuple[SavedState | None, int]:
        """The snapshot sharing the longest prefix with `prompt`, and that length."""
        best, length = None, 0
        for s in self.snapshots:
            n = _prefix_len(s.tokens, prompt)
            if n > length:
                best, length = s, n
        return best, length

    def restore_snapshot(self, saved: SavedState) -> bool:
        """Put the snapshot's whole state into the context (replacing what it holds)."""
        if not self.load_sequence(saved.tokens, saved.data, saved.size):
            return False
        self.snapshots.remove(saved)  # the context now holds it; it is saved again when overwritten
        return True

    def save_sequence(self) -> SavedState:
        """The whole sequence state at the context's current position (attention KV and recurrent state)."""
        n = self._llm.n_tokens
        return self._save(np.array(self._llm.input_ids[:n], copy=True), partial=False)

    def load_sequence(self, tokens: np.ndarray, data: Any, size: int) -> bool:
        """Replace what the context holds with a whole sequence state saved after exactly `tokens`.

        False when llama.cpp refuses it (another model or context layout); the context is then empty."""
        kv_seq_rm(self._llm, 0)
        buffer = data if isinstance(data, ctypes.Array) else (ctypes.c_uint8 * size).from_buffer(data)
        if self._lib.llama_state_seq_set_data(self._llm.ctx, buffer, size, 0) == 0:
            kv_seq_rm(self._llm, 0)
            self._llm.n_tokens = 0
            return False
        n = len(tokens)
        self._llm.input_ids[:n] = tokens
        self._llm.n_tokens = n
        return True

    def _flags(self, partial: bool) -> int:
        return self._lib.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY if partial else self._lib.LLAMA_STATE_SEQ_FLAGS_NONE

    def _size(self, *, partial: bool) -> int:
        """Bytes of sequence 0's state: the recurrent part alone (`partial`) or the whole of it."""
        return int(self._lib.llama_state_seq_get_size_ext(self._llm.ctx, 0, self._flags(partial)))

    def _save(self, tokens: np.ndarray, *, partial: bool, size: int | None = None) -> SavedState:
        """The state at `tokens`; `size` when the caller already asked llama.cpp for it."""
        size = self._size(partial=partial) if size is None else size
        data = (ctypes.c_uint8 * size)()
        written = int(self._lib.llama_state_seq_get_data_ext(self._llm.ctx, data, size, 0, self._flags(partial)))
        saved = SavedState(tokens=tokens, data=data, size=written, partial=partial)
        self._touch(saved)
        return saved

    def _touch(self, saved: SavedState) -> None:
        self._clock += 1
        saved.used = self._clock
