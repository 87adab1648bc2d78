"""A persistent cache of the sequence state after the prompt prefix that every run of a model shares.

The system turn (the system prompt and the tool schemas) is the same on every `leaf fix` / `leaf chat` of a
given model, template and leaf version, and at the 4B size evaluating it takes minutes on a CPU. The engine
saves llama.cpp's whole sequence-0 state right after it (the attention KV and, for a hybrid model, the full
recurrent state), once, and later runs load that file instead of evaluating the prefix.

A wrong state must never be loaded, so an entry is found by a hash of everything the state depends on: the
model file's identity (size, mtime and a hash of its first and last MiB: cheap, and a re-downloaded or
re-converted file changes all three), the settings that shape the state (context size, KV types, flash
attention, batch sizes, buffer types), llama-cpp-python's and leaf's versions, and the prefix tokens
themselves (which the template, the system prompt and the tools render to). The file repeats the key and the
tokens and carries a checksum of the state; all three are checked on load, so a changed key, a truncated or
corrupt file is a miss and the prefix is evaluated afresh. Writes go to a temporary file renamed into place
(a crash leaves no half file under the real name). The folder is kept under a byte budget: least recently
used entries go first (a hit refreshes the file's mtime).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"LEAFPFX1"
SUFFIX = ".state"
EDGE_BYTES = 1 << 20


def model_identity(path: str | Path) -> dict[str, Any]:
    """A cheap, stable identity of a model file: size, mtime and a hash of its first and last MiB."""
    path = Path(path)
    stat = path.stat()
    digest = hashlib.sha256()
    with path.open("rb") as f:
        digest.update(f.read(EDGE_BYTES))
        f.seek(max(0, stat.st_size - EDGE_BYTES))
        digest.update(f.read(EDGE_BYTES))
    return {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "edges": digest.hexdigest()}


class PrefixCache:
    """Saved prefix states of one model and runtime setup (`context`), in `folder`, at most `max_bytes`."""

    def __init__(self, folder: Path, max_bytes: int, context: dict[str, Any]) -> None:
        self.folder, self.max_bytes = Path(folder), max_bytes
        self._context = json.dumps(context, sort_keys=True, default=str)
        self.hits = self.misses = 0

    def key(self, tokens: list[int]) -> str:
        digest = hashlib.sha256(self._context.encode())
        digest.update(np.asarray(tokens, dtype="<i4").tobytes())
        return digest.hexdigest()[:32]

    def path(self, tokens: list[int]) -> Path:
        return self.folder / f"{self.key(tokens)}{SUFFIX}"

    def load(self, tokens: list[int]) -> bytearray | None:
        """The saved state after exactly `tokens`, or None (no entry, or one that fails a check: then removed)."""
        path = self.path(tokens)
        try:
            with path.open("rb") as f:
                state = _read_entry(f, self.key(tokens), tokens)
        except FileNotFoundError:
            state = None
        except (OSError, ValueError, struct.error):
            state = None
            path.unlink(missing_ok=True)  # corrupt or foreign: a fresh evaluation rewrites it
        if state is None:
            self.misses += 1
            return None
        self.hits += 1
        os.utime(path)  # most recently used
        return state

    def save(self, tokens: list[int], state: Any, size: int) -> Path | None:
        """Write the state (any buffer of `size` bytes) atomically, then trim the folder to the budget."""
        if size > self.max_bytes:
            return None
        self.folder.mkdir(parents=True, exist_ok=True)
        key = self.key(tokens)
        header = json.dumps({"key": key, "n_tokens": len(tokens), "state_bytes": size,
                             "sha256": hashlib.sha256(memoryview(state)[:size]).hexdigest()}).encode()
        final = self.folder / f"{key}{SUFFIX}"
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=SUFFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + struct.pack("<I", len(header)) + header)
                f.write(np.asarray(tokens, dtype="<i4").tobytes())
                f.write(memoryview(state)[:size])
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            return None  # a full disk costs the next run the prefix evaluation, nothing more
        self.trim(keep=final)
        return final

    def trim(self, keep: Path | None = None) -> None:
        """Delete the least recently used entries until the folder holds at most `max_bytes`."""
        entries = []
        for p in self.folder.glob(f"*{SUFFIX}"):
            try:
                stat = p.stat()
            except OSError:
                continue
            entries.append((stat.st_mtime_ns, stat.st_size, p))
        total = sum(size for _, size, _ in entries)
        for _, size, p in sorted(entries, key=lambda e: (e[2] == keep, e[0])):
            if total <= self.max_bytes:
                break
            p.unlink(missing_ok=True)
            total -= size


def _read_entry(f: Any, key: str, tokens: list[int]) -> bytearray:
    """The state in an open entry file; ValueError unless its key, tokens, size and checksum all match."""
    if f.read(len(MAGIC)) != MAGIC:
        raise ValueError("not a prefix-state file")
    (length,) = struct.unpack("<I", f.read(4))
    header = json.loads(f.read(length))
    if header.get("key") != key or header.get("n_tokens") != len(tokens):
        raise ValueError("the entry was written for another key")
    stored = np.frombuffer(f.read(4 * len(tokens)), dtype="<i4")
    if len(stored) != len(tokens) or not np.array_equal(stored, np.asarray(tokens, dtype="<i4")):
        raise ValueError("the entry holds other prefix tokens")
    size = int(header["state_bytes"])
    state = bytearray(size)
    if f.readinto(state) != size or f.read(1):
        raise ValueError("truncated or overlong prefix-state file")
    if hashlib.sha256(state).hexdigest() != header.get("sha256"):
        raise ValueError("prefix-state checksum mismatch")
    return state
