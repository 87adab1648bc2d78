"""A git dir as data: every entry of it but the object stores, saved as bytes and put back as bytes.

Undo must not ask the repository where its data lives: the agent can point `.git/commondir` at another
repository, replace `.git` with a `gitdir:` file naming one, or make `.git/index` a symlink to a file in
the home, and every git command would then follow. So the checkpoint copies the whole git dir (config,
hooks, info/, HEAD, refs, packed-refs, reflogs, the index, merge / rebase / cherry-pick / bisect state,
submodules' git dirs under modules/) while it is still the user's, and undo writes it back at the path
recorded then, entry by entry, through safefs: whatever the run added there is removed, links are never
followed, and nothing of git decides where a byte goes. Objects are not copied here: they go to the store
(store.copy_objects), which this module names by the object folders it skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from leaf_cli.repo import safefs
from leaf_cli.repo.walk import looks_like_git_dir

_MANIFEST = "manifest.json"
_DATA = "data"
_HEX = frozenset("0123456789abcdef")


def is_object_store(rel: str, stores: list[str]) -> bool:
    """Whether `rel` is (inside) an object folder (loose `objects/xx`, `objects/pack`) or `lfs/`, `annex/`
    of one of the git dirs `stores` (relative paths, '' for the root): git's objects live in the store, and
    large-file stores are too big to copy each run (they are left as they are)."""
    for root in stores:
        prefix = f"{root}/" if root else ""
        if not rel.startswith(prefix):
            continue
        rest = rel[len(prefix):].split("/")
        if rest[0] in ("lfs", "annex") or (rest[0] == "objects" and len(rest) > 1
                                and (rest[1] == "pack" or (len(rest[1]) == 2 and set(rest[1]) <= _HEX))):
            return True
    return False


def save(src: Path, folder: Path) -> list[str]:
    """Copy every entry of the git dir `src` into `folder` (objects aside) and write the manifest; return
    the git dirs found inside it (relative; '' is `src`) whose objects the caller copies to a store."""
    if folder.exists():
        shutil.rmtree(folder)
    data = folder / _DATA
    data.mkdir(parents=True)
    entries: dict[str, list] = {}
    stores: list[str] = []
    for dirpath, dirnames, filenames in os.walk(src):
        rel_dir = os.path.relpath(dirpath, src).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        if looks_like_git_dir(dirpath):
            stores.append(rel_dir)
        kept = []
        for name in sorted(dirnames + filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if is_object_store(rel, stores):
                continue
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode):
                entries[rel] = ["dir", st.st_mode]
                (data / rel).mkdir()
                kept.append(name)
            elif stat.S_ISLNK(st.st_mode):
                entries[rel] = ["symlink", st.st_mode, os.readlink(path)]
            elif stat.S_ISREG(st.st_mode):
                entries[rel] = ["file", st.st_mode]
                shutil.copy2(path, data / rel, follow_symlinks=False)
            # a socket or FIFO (fsmonitor's, a daemon's): no data, nothing to put back
        dirnames[:] = [d for d in dirnames if d in kept]
    (folder / _MANIFEST).write_text(json.dumps({"entries": entries, "stores": stores}))
    return stores


def manifest(folder: Path) -> tuple[dict[str, list], list[str]]:
    loaded = json.loads((folder / _MANIFEST).read_text())
    return loaded["entries"], loaded["stores"]


def restore(dest: Path, folder: Path, anchor: Path, aside: safefs.Aside) -> None:
    """Make the git dir at `dest` exactly what `save` recorded (its object folders left as they are)."""
    entries, stores = manifest(folder)
    safefs.ensure_dir(dest, anchor, aside)
    _prune(dest, "", entries, stores)
    data = folder / _DATA
    for rel, (what, mode, *extra) in sorted(entries.items()):
        target = dest / rel
        if what == "dir":
            if safefs.kind(target) != "dir":
                safefs.remove(target)
                target.mkdir()
            os.chmod(target, stat.S_IMODE(mode))
        elif what == "symlink":
            if safefs.kind(target) != "symlink" or os.readlink(target) != extra[0]:
                safefs.write_symlink(extra[0], target)
        elif not safefs.same_file(target, data / rel):
            safefs.write_copy(data / rel, target, mode)
        elif stat.S_IMODE(os.lstat(target).st_mode) != stat.S_IMODE(mode):
            os.chmod(target, stat.S_IMODE(mode))


def _prune(root: Path, rel_dir: str, entries: dict[str, list], stores: list[str]) -> None:
    """Remove every entry the record lacks, or holds as another kind (the run made it; links not followed)."""
    folder = root / rel_dir if rel_dir else root
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        what = safefs.kind(entry.path)
        if is_object_store(rel, stores):
            if what != "dir":
                safefs.remove(entry.path)  # a link or file where objects go: the run's, and nothing to keep
            continue
        recorded = entries.get(rel)
        if recorded is None or recorded[0] != what:
            safefs.remove(entry.path)
        elif what == "dir":
            _prune(root, rel, entries, stores)
