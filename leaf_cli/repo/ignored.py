"""What the run made inside folders that were wholly ignored at its start (`build/`, `node_modules/`).

The checkpoint leaves those folders out of its tree: their content is the user's and may be huge, so it is
never read, never recorded, never touched. What is recorded instead is the *names* of the entries under
them, with their type and inode, found by one directory listing per folder (getdents: no file is opened
and no entry is stat'ed), bounded by IGNORED_WALK_LIMIT per folder. At the end of the run a path under such
a folder that is not in that list was made by the run: the review names it and undo removes it. An entry
whose type changed (a file where a folder was), or a "new" name whose inode was recorded (the user's entry,
moved by the run), may hold the user's data: undo moves it aside, never deletes it. A folder over the bound
is recorded as too big, and the review says that what the run made there stays.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from leaf_cli.repo import safefs
from leaf_cli.repo.walk import looks_like_git_dir

IGNORED_WALK_LIMIT = 200_000
"""Entries per wholly ignored folder: past this, the folder is recorded as too big, not listed."""
_FILE = "ignored-names.json"
_SHOWN = 50
"""Created paths named per folder in the review; the rest are counted."""


@dataclass
class Listing:
    """The entries under one wholly ignored folder: relative path -> (kind, inode)."""

    entries: dict[str, tuple[str, int]] = field(default_factory=dict)
    too_big: bool = False


@dataclass
class Found:
    """What differs under the ignored folders now, by path relative to the work tree."""

    created: list[str] = field(default_factory=list)
    """Entries the run made (a folder ends with '/'): undo removes them."""
    aside: list[tuple[str, str]] = field(default_factory=list)
    """(path, why) of entries that may hold the user's data: undo moves them aside."""
    too_big: list[str] = field(default_factory=list)
    """Folders over the bound at the start: not listed, so not cleaned."""
    over: list[str] = field(default_factory=list)
    """Folders where the run made more than the bound: only the first ones are named."""


def _kind(entry: os.DirEntry[str]) -> str:
    """The entry's type from the listing itself (d_type; lstat only where the file system gives none)."""
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "special"


def list_folder(top: Path, folder: str, limit: int = IGNORED_WALK_LIMIT) -> Listing:
    """The entries under `folder` (relative, ending with '/'), never following a link, at most `limit`."""
    listing = Listing()
    pending = [folder.rstrip("/")]
    while pending:
        rel_dir = pending.pop()
        try:
            with os.scandir(top / rel_dir) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}"
            kind = _kind(entry)
            listing.entries[rel] = (kind, entry.inode())
            if len(listing.entries) > limit:
                listing.too_big = True
                return listing  # what was found so far; the checkpoint keeps none of it
            if kind == "dir":
                pending.append(rel)
    return listing


def folders(ignored: list[str]) -> list[str]:
    """The wholly ignored folders among the ignored paths (git names them with a trailing '/')."""
    return [rel for rel in ignored if rel.endswith("/")]


def record(top: Path, ignored: list[str], meta_dir: Path, limit: int = IGNORED_WALK_LIMIT) -> dict[str, Listing]:
    """List every wholly ignored folder and save the listings beside the checkpoint.

    The inodes of ignored single files are kept too: a run that moves the user's ignored `.env` into
    `build/` must not have it taken for a file it made."""
    listings = {rel: list_folder(top, rel, limit) for rel in folders(ignored) if safefs.kind(top / rel) == "dir"}
    for listing in listings.values():
        if listing.too_big:
            listing.entries = {}
    inodes = []
    for rel in ignored:
        if not rel.endswith("/"):
            try:
                inodes.append(os.lstat(top / rel).st_ino)
            except OSError:
                pass
    data = {"folders": {rel: {"too_big": lst.too_big, "entries": lst.entries} for rel, lst in listings.items()},
            "inodes": inodes}
    meta_dir.mkdir(parents=True, exist_ok=True)
    (meta_dir / _FILE).write_text(json.dumps(data))  # ASCII: a name that is not UTF-8 round-trips escaped
    return listings


def load(meta_dir: Path | None) -> tuple[dict[str, Listing], set[int]]:
    """The saved listings and every recorded inode; nothing for a checkpoint of an older leaf."""
    path = meta_dir / _FILE if meta_dir is not None else None
    if path is None or not path.is_file():
        return {}, set()
    data = json.loads(path.read_text())
    listings = {rel: Listing(entries={k: (v[0], v[1]) for k, v in f["entries"].items()}, too_big=f["too_big"])
                for rel, f in data["folders"].items()}
    inodes = set(data["inodes"]) | {ino for lst in listings.values() for _kind, ino in lst.entries.values()}
    return listings, inodes


def compare(top: Path, meta_dir: Path | None, limit: int = IGNORED_WALK_LIMIT) -> Found:
    """What the run made or replaced under the ignored folders (for the review; nothing is changed)."""
    listings, inodes = load(meta_dir)
    found = Found()
    for folder, listing in listings.items():
        if listing.too_big:
            found.too_big.append(folder)
            continue
        if safefs.kind(top / folder) != "dir":
            found.aside.append((folder, "no longer a folder"))
            continue
        now = list_folder(top, folder, len(listing.entries) + limit)
        if now.too_big:
            found.over.append(folder)
        _classify(listing, inodes, now, found)
    return found


def _classify(listing: Listing, inodes: set[int], now: Listing, found: Found) -> None:
    handled: list[str] = []  # entries moved aside: what is under them goes with them
    for rel in sorted(now.entries):
        if any(rel.startswith(h + "/") for h in handled):
            continue
        kind, ino = now.entries[rel]
        was = listing.entries.get(rel)
        if was is None and ino in inodes:
            found.aside.append((rel, "the user's entry, moved here by the run"))
        elif was is None:
            found.created.append(rel + "/" if kind == "dir" else rel)
            continue
        elif was[0] != kind:
            found.aside.append((rel, f"a {was[0]} at the start, now a {kind}"))
        else:
            continue
        handled.append(rel)


def review_notes(found: Found) -> list[str]:
    """One line per created path (up to _SHOWN per folder), per entry undo moves aside, per unlisted folder."""
    notes: list[str] = []
    by_folder: dict[str, int] = {}
    for rel in found.created:
        top_folder = rel.split("/", 1)[0]
        by_folder[top_folder] = by_folder.get(top_folder, 0) + 1
        if by_folder[top_folder] <= _SHOWN:
            notes.append(f"{rel}: made by the run in a folder ignored at the start; undo removes it")
    for top_folder, count in by_folder.items():
        if count > _SHOWN:
            notes.append(f"{top_folder}/: {count - _SHOWN} more entries made by the run; undo removes them too")
    notes += [f"{rel}/: the run made more than {IGNORED_WALK_LIMIT} entries here; undo removes them all"
              for rel in found.over]
    notes += [f"{rel}: {why}; undo moves it aside" for rel, why in found.aside]
    notes += [f"{rel}: over {IGNORED_WALK_LIMIT} entries when the run started, so leaf did not list them; "
              "what the run made there is not shown and stays after undo" for rel in found.too_big]
    return notes


def remove_created(top: Path, meta_dir: Path | None, aside: safefs.Aside) -> list[str]:
    """Remove what the run made under the ignored folders; move aside what may be the user's. Returns the
    paths removed. Only entries absent from the checkpoint's listing are removed, a folder only once all
    it holds is gone; no link is followed (each folder is entered only after lstat says it is one)."""
    listings, inodes = load(meta_dir)
    removed: list[str] = []
    for folder, listing in listings.items():
        path = top / folder
        if listing.too_big or not _real_dirs(top, folder):
            continue
        if safefs.kind(path) != "dir":  # the user's folder is gone: what is there now is the run's
            if safefs.kind(path) == "file":
                aside.move(path)
            else:
                safefs.remove(path)  # a link or FIFO: no data of its own
            path.mkdir()
            continue
        _clean(top, folder.rstrip("/"), listing, inodes, aside, removed)
    return removed


def _real_dirs(top: Path, folder: str) -> bool:
    """Whether every component above `folder` is a real folder (the restored tree's, never a link)."""
    parts = folder.rstrip("/").split("/")[:-1]
    return all(safefs.kind(top.joinpath(*parts[:i])) == "dir" for i in range(1, len(parts) + 1))


def _clean(top: Path, rel_dir: str, listing: Listing, inodes: set[int], aside: safefs.Aside,
           removed: list[str]) -> None:
    with os.scandir(top / rel_dir) as it:
        entries = list(it)
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}"
        path = top / rel
        kind = _kind(entry)
        was = listing.entries.get(rel)
        if was is None and (entry.inode() in inodes or (kind == "dir" and looks_like_git_dir(str(path)))):
            aside.move(path)
        elif was is None and kind == "dir":
            _clean(top, rel, listing, inodes, aside, removed)
            try:
                path.rmdir()  # empty now unless something in it could not go
                removed.append(rel + "/")
            except OSError:
                pass
        elif was is None:
            os.unlink(path)
            removed.append(rel)
        elif was[0] != kind:
            aside.move(path)
        elif kind == "dir" and stat.S_ISDIR(os.lstat(path).st_mode):
            _clean(top, rel, listing, inodes, aside, removed)
