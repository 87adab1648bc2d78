"""The object store a checkpoint lives in: a bare git repository under leaf's state directory.

It sits outside the workdir (and the sandbox hides the state directory), so nothing the agent runs there
(`git gc --prune=now`, `rm -rf .git`, truncating `.git/objects/*` in place) reaches it. The repository's
objects are *copied* in, never hard-linked: a link would share the inode, and a file truncated in the
repository would be truncated in the store too. Where the file system can (btrfs, XFS, APFS) the copy is a
reflink, which costs no space until one side changes. Each object file or pack is copied once: its name
is its hash, so later checkpoints copy only what is new.

The store is also the git dir of leaf's content-reading calls (add, write-tree, checkout-index, diff): its
own config and `info/attributes` make those calls store and restore the exact bytes of every file (no
end-of-line conversion, no filter, no textconv) whatever the repository's attributes or config say.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

from leaf_cli.repo.git import git

_PACK_SUFFIXES = (".pack", ".idx", ".rev")
_FICLONE = 0x40049409  # Linux ioctl: make dst a copy-on-write clone of src (btrfs, XFS, bcachefs)

# Highest-precedence attributes for every path: bytes in, bytes out.
RAW_ATTRIBUTES = "* -text -crlf !eol -filter -ident !working-tree-encoding !diff\n"
STORE_CONFIG = (("core.autocrlf", "false"), ("core.safecrlf", "false"), ("core.symlinks", "true"),
                ("core.filemode", "true"), ("gc.auto", "0"), ("core.logAllRefUpdates", "false"),
                ("core.fsmonitor", "false"), ("core.untrackedCache", "false"), ("core.bigFileThreshold", "512m"))


def store_for(state_root: Path, workdir: Path) -> Path:
    """The store of one work tree, keyed by its path (the path survives `rm -rf .git`, the git dir does not)."""
    key = hashlib.sha256(str(workdir.resolve()).encode()).hexdigest()[:16]
    return state_root / "store" / f"{workdir.name or 'root'}-{key}.git"


def ensure_store(store: Path, object_format: str) -> Path:
    """Create the bare store once, with leaf's config and raw attributes; return its objects folder."""
    if not (store / "objects").is_dir():
        store.parent.mkdir(parents=True, exist_ok=True)
        git(store.parent, "init", "-q", "--bare", f"--object-format={object_format}", str(store))
        for key, value in STORE_CONFIG:
            git(store, "config", "--file", str(store / "config"), key, value)
    (store / "info").mkdir(exist_ok=True)
    (store / "info" / "attributes").write_text(RAW_ATTRIBUTES)
    return store / "objects"


def stat_cache(store: Path, top: Path) -> Path:
    """The store's own index for work tree `top`: git's stat cache, valid because only leaf's calls write it."""
    key = hashlib.sha256(str(top).encode()).hexdigest()[:16]
    return store / f"leaf-index-{key}"


def clear_stale_lock(index: Path) -> None:
    """Remove the lock a killed git left on one of the store's stat caches.

    Safe because only leaf writes these indexes, and only while it holds the work tree's repository lock
    (lock.RepoLock): no live git of leaf's can own the lock file then.
    """
    index.with_name(index.name + ".lock").unlink(missing_ok=True)


def copy_objects(src: Path, dst: Path, *, alternates: bool = True) -> int:
    """Copy every loose object and pack from `src` into `dst` that `dst` lacks; return the count.

    Only names are compared: an object file's name is its hash, and a pack's name the hash of its content.
    Into a repository (undo), a link or file where an object folder belongs is removed first, never
    followed; `alternates=False` there, since the git dir's own copy of info/ is put back as data, and
    an object file the agent truncated or swapped for a FIFO (same name, not the same size or not a file)
    is replaced too.
    """
    added = 0
    if not src.is_dir() or dst.is_symlink():
        return 0
    exact = not alternates
    for entry in os.scandir(src):
        if len(entry.name) == 2 and entry.is_dir(follow_symlinks=False):
            added += _copy_dir(Path(entry.path), dst / entry.name, lambda _n: True, exact)
    packs = src / "pack"
    if packs.is_dir():
        # A pack's .idx is what makes git look at it: copy the .pack first, the .idx and .rev after.
        added += _copy_dir(packs, dst / "pack", lambda n: n.endswith(".pack"), exact)
        have = {p.name for p in (dst / "pack").glob("*.pack")} if (dst / "pack").is_dir() else set()
        added += _copy_dir(packs, dst / "pack",
                           lambda n: n.endswith(_PACK_SUFFIXES[1:]) and n.rsplit(".", 1)[0] + ".pack" in have, exact)
    if alternates:
        _copy_alternates(src, dst)
    return added


def _copy_dir(src: Path, dst: Path, wanted, exact: bool = False) -> int:  # type: ignore[no-untyped-def]
    try:
        names = [e.name for e in os.scandir(src) if e.is_file(follow_symlinks=False) and wanted(e.name)]
    except FileNotFoundError:
        return 0  # a concurrent gc removed the folder
    if not names:
        return 0
    if dst.is_symlink() or (dst.exists() and not dst.is_dir()):
        dst.unlink()  # planted where objects go: write through no link
    dst.mkdir(parents=True, exist_ok=True)
    present = set(os.listdir(dst))
    if exact:
        wanted_names = set(names)
        present = {n for n in present if n in wanted_names and _same_size(src / n, dst / n)}
    added = 0
    for name in names:
        if name in present or name.endswith(".tmp") or name.startswith(("tmp_", ".")):
            continue
        added += _copy_file(src / name, dst / name)
    return added


def _same_size(src: Path, dst: Path) -> bool:
    """Whether `dst` is a regular file of `src`'s size; when not, it is removed (the copy replaces it)."""
    try:
        st = os.lstat(dst)
        if stat.S_ISREG(st.st_mode) and st.st_size == os.stat(src).st_size:
            return True
    except FileNotFoundError:
        return False
    from leaf_cli.repo.safefs import remove

    remove(dst)
    return False


def _copy_file(src: Path, dst: Path) -> int:
    """Copy one object file (reflink when possible) under a temporary name, then rename it into place."""
    tmp = dst.with_name(f".tmp-{os.getpid()}-{dst.name}")
    try:
        tmp.unlink(missing_ok=True)
        with open(src, "rb") as fin, open(tmp, "xb") as fout:
            if not _reflink(fin.fileno(), fout.fileno()):
                shutil.copyfileobj(fin, fout, 1 << 20)
    except FileNotFoundError:
        tmp.unlink(missing_ok=True)
        return 0  # git removed it between the listing and the copy (a concurrent gc); its pack has it
    os.chmod(tmp, 0o444)
    os.replace(tmp, dst)
    return 1


def _reflink(fd_in: int, fd_out: int) -> bool:
    try:
        import fcntl

        fcntl.ioctl(fd_out, _FICLONE, fd_in)
        return True
    except (ImportError, OSError):
        return False  # no reflinks here (another file system, tmpfs, ext4, not Linux): a plain copy then


def _copy_alternates(src: Path, dst: Path) -> None:
    """A repository borrowing objects (`clone --shared`) needs the store to borrow from the same places."""
    alternates = src / "info" / "alternates"
    if alternates.is_file():
        (dst / "info").mkdir(parents=True, exist_ok=True)
        lines = [line for line in alternates.read_text().splitlines() if line.strip() and not line.startswith("#")]
        resolved = [str((src / line).resolve()) if not os.path.isabs(line) else line for line in lines]
        (dst / "info" / "alternates").write_text("\n".join(resolved) + "\n")
