"""The object store a checkpoint lives in: a bare git repository under leaf's state directory.

It sits outside the workdir, so nothing the agent runs there (`git gc --prune=now`, `rm -rf .git`, ...)
reaches it. The repository's objects are hard-linked in (git never rewrites an object file, so a link is
a free, immutable copy; a copy is made only across file systems), which makes the store self-contained
without paying for a `git fetch` of the whole history.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from pathlib import Path

from leaf_cli.repo.git import git

_PACK_SUFFIXES = (".pack", ".idx", ".rev")


def store_for(state_root: Path, workdir: Path) -> Path:
    """The store of one work tree, keyed by its path (the path survives `rm -rf .git`, the git dir does not)."""
    key = hashlib.sha256(str(workdir.resolve()).encode()).hexdigest()[:16]
    return state_root / "store" / f"{workdir.name or 'root'}-{key}.git"


def ensure_store(store: Path, object_format: str) -> Path:
    """Create the bare store once; return its objects folder."""
    if not (store / "objects").is_dir():
        store.parent.mkdir(parents=True, exist_ok=True)
        git(store.parent, "init", "-q", "--bare", f"--object-format={object_format}", str(store))
    return store / "objects"


def link_objects(src: Path, dst: Path) -> int:
    """Hard-link (or copy) every loose object and pack from `src` into `dst` that `dst` lacks; return the count.

    Only names are compared: an object file's name is its hash, and a pack's name the hash of its content.
    """
    added = 0
    if not src.is_dir():
        return 0
    for entry in os.scandir(src):
        if len(entry.name) == 2 and entry.is_dir(follow_symlinks=False):
            added += _link_dir(Path(entry.path), dst / entry.name, lambda _n: True)
    packs = src / "pack"
    if packs.is_dir():
        have = {p.name for p in packs.glob("*.pack")}
        # An index without its pack would point git at a missing file: take .idx/.rev only beside a .pack.
        added += _link_dir(packs, dst / "pack",
                           lambda n: n.endswith(_PACK_SUFFIXES) and n.rsplit(".", 1)[0] + ".pack" in have)
    _copy_alternates(src, dst)
    return added


def _link_dir(src: Path, dst: Path, wanted) -> int:  # type: ignore[no-untyped-def]
    names = [e.name for e in os.scandir(src) if e.is_file(follow_symlinks=False) and wanted(e.name)]
    if not names:
        return 0
    dst.mkdir(parents=True, exist_ok=True)
    present = set(os.listdir(dst))
    added = 0
    for name in names:
        if name in present or name.endswith(".tmp") or name.startswith("tmp_"):
            continue
        _link_or_copy(src / name, dst / name)
        added += 1
    return added


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except FileExistsError:
        pass
    except FileNotFoundError:
        pass  # git removed it between the listing and the link (a concurrent gc); its pack has it
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
            raise
        shutil.copy2(src, dst)


def _copy_alternates(src: Path, dst: Path) -> None:
    """A repository borrowing objects (`clone --shared`) needs the store to borrow from the same places."""
    alternates = src / "info" / "alternates"
    if alternates.is_file():
        (dst / "info").mkdir(parents=True, exist_ok=True)
        lines = [line for line in alternates.read_text().splitlines() if line.strip() and not line.startswith("#")]
        resolved = [str((src / line).resolve()) if not os.path.isabs(line) else line for line in lines]
        (dst / "info" / "alternates").write_text("\n".join(resolved) + "\n")
