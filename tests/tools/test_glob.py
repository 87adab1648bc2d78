"""Glob: Python-glob matching as FrogNano's harness ran it, the 1,000 cap, the fast walk and its cache."""

from __future__ import annotations

import glob as pyglob
import os
import random
import shutil
import time
from pathlib import Path

import pytest

from leaf_cli.tools import Workspace


def _touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)


def test_recursive_sorted_files_only(call, ws: Workspace) -> None:
    _touch(ws.root, "setup.py", "pkg/__init__.py", "pkg/core.py", "pkg/sub/deep.py", "docs/index.md", "pkg/data.json")
    assert call("Glob", pattern="**/*.py") == "pkg/__init__.py\npkg/core.py\npkg/sub/deep.py\nsetup.py"
    assert call("Glob", pattern="*.py") == "setup.py"
    assert call("Glob", pattern="pkg/*") == "pkg/__init__.py\npkg/core.py\npkg/data.json"  # folders are not listed
    assert call("Glob", pattern="pkg/**") == "pkg/__init__.py\npkg/core.py\npkg/data.json\npkg/sub/deep.py"
    assert call("Glob", pattern="*.py", path="pkg") == "pkg/__init__.py\npkg/core.py"  # shown from the workdir
    assert call("Glob", pattern="p?g/[cd]*.py") == "pkg/core.py"
    assert call("Glob", pattern="pkg/[!_c]*") == "pkg/data.json"
    assert call("Glob", pattern="pkg/core.py") == "pkg/core.py"  # no wildcard: that one file
    assert call("Glob", pattern=str(ws.root / "pkg" / "*.py")) == "pkg/__init__.py\npkg/core.py"
    assert call("Glob", pattern="**/*.rs") == "No files matched."
    assert call("Glob", pattern="pkg/*/") == "pkg/__init__.py\npkg/core.py\npkg/data.json"  # pathlib drops the `/`


def test_hidden_names_need_a_spelled_dot_and_git_is_a_dot_name_confined_or_not(call, ws: Workspace) -> None:
    """As FrogNano's glob: `.git` is hidden from broad patterns only because it is a dot name, and a pattern
    that spells it lists its files (leaf said "No files matched." when confined, unlike the harness)."""
    _touch(ws.root, "a.py", ".hidden.py", ".github/workflows/ci.yml", ".venv/lib/x.py", ".git/config", ".git/hooks/h.py",
           ".git/refs/heads/HEAD", "sub/.git", "sub/b.py")
    (ws.root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert call("Glob", pattern="**/*.py") == "a.py\nsub/b.py"
    assert call("Glob", pattern="**/*") == "a.py\nsub/b.py"
    assert call("Glob", pattern=".*.py") == ".hidden.py"
    assert call("Glob", pattern=".github/**/*.yml") == ".github/workflows/ci.yml"
    assert call("Glob", pattern="**/HEAD") == "No files matched."  # `**` never enters a dot folder
    free = Workspace(ws.root, confined=False)
    for pattern, path, listed in [("**/.*", None, [".hidden.py", "sub/.git"]),
                                  (".git/*", None, [".git/HEAD", ".git/config"]),
                                  (".git/config", None, [".git/config"]),
                                  (".git/**/HEAD", None, [".git/HEAD", ".git/refs/heads/HEAD"]),
                                  ("**/*", ".git", [".git/HEAD", ".git/config", ".git/hooks/h.py", ".git/refs/heads/HEAD"])]:
        assert pyglob_listing(ws.root, pattern, path) == listed  # what the harness's own glob gives
        assert call("Glob", pattern=pattern, **({"path": path} if path else {})) == "\n".join(listed)  # confined
        assert ws_glob(free, pattern, path=path) == listed  # unconfined (eval, RL)


def pyglob_listing(root: Path, pattern: str, path: str | None) -> list[str]:
    """FrogNano's `_glob`, run here: Python's glob under the folder, files only, relative and sorted."""
    base = root / (path or ".")
    return sorted(os.path.relpath(m, root) for m in pyglob.glob(str(base / pattern), recursive=True) if os.path.isfile(m))


def test_cap_at_1000_then_count(call, ws: Workspace) -> None:
    for i in range(1203):
        (ws.root / f"f{i:05d}.txt").write_text("")
    lines = call("Glob", pattern="*.txt").split("\n")
    assert len(lines) == 1001 and lines[0] == "f00000.txt" and lines[999] == "f00999.txt"
    assert lines[1000] == "... 203 more files"


def test_confinement(call, ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _touch(outside, "secret.txt", "deep/secret.py")
    _touch(ws.root, "in.txt")
    (ws.root / "escape_dir").symlink_to(outside)
    (ws.root / "escape_file.txt").symlink_to(outside / "secret.txt")
    (ws.root / "inner_link.txt").symlink_to("in.txt")
    # Confined: symlinked folders are not entered, a symlinked file is listed when it points inside.
    assert call("Glob", pattern="**/*") == "in.txt\ninner_link.txt"
    assert call("Glob", pattern="**/secret*") == "No files matched."
    assert call("Glob", pattern="*", path="escape_dir").startswith("PermissionError: escape_dir is outside")
    assert call("Glob", pattern="escape_dir/*").startswith("PermissionError: ")
    assert call("Glob", pattern="../outside/*").startswith("PermissionError: ")
    assert call("Glob", pattern=str(outside / "*")).startswith("PermissionError: ")
    assert call("Glob", pattern="*/../../outside/*").startswith("PermissionError: ")


def test_a_symlink_loop_is_reported_not_walked(ws: Workspace) -> None:
    # FrogNano's glob walked one loop to the OS's limit and two loops for ever; leaf says where the loop is.
    from leaf_cli.llm.messages import ToolCall
    from leaf_cli.tools import run_tool_call

    _touch(ws.root, "a.txt", "sub/b.txt")
    (ws.root / "sub" / "up").symlink_to(ws.root)
    (ws.root / "sub" / "again").symlink_to("..")
    free = Workspace(ws.root, confined=False)
    out = run_tool_call(ToolCall(id="c", name="Glob", arguments={"pattern": "**/*.txt"}), free).text
    assert out in (f"OSError: [Errno 40] Too many levels of symbolic links: '{ws.root}/sub/up'",
                   f"OSError: [Errno 40] Too many levels of symbolic links: '{ws.root}/sub/again'")
    assert run_tool_call(ToolCall(id="c", name="Glob", arguments={"pattern": "*/*.txt"}), free).text == "sub/b.txt"


def test_bad_arguments(call, ws: Workspace) -> None:
    _touch(ws.root, "f.txt")
    assert call("Glob", pattern="") == "ValueError: pattern is required"
    assert call("Glob", pattern="*", path="nowhere") == "No files matched."
    assert call("Glob", pattern="*", path="f.txt") == "No files matched."


PATTERNS = ["**/*.py", "**/*", "*", "a*/**/*.txt", "**/b?/*", "[ab]*/*", "**/c/**/*.md", "a1/**", "**/[!a]*.txt",
            "*/*/*", ".*", "**/.*", "**/.h*/*", "a1/*.py"]


@pytest.mark.parametrize("seed", range(6))
def test_matches_python_glob_on_random_trees(seed: int, ws: Workspace) -> None:
    rng = random.Random(seed)
    names = ["a1", "a2", "b1", "bb", "c", ".h", "d.py"]  # folders; "d.py" checks that folders are not listed
    for _ in range(60):
        depth = rng.randint(1, 4)
        _touch(ws.root, "/".join(rng.choice(names) for _ in range(depth - 1)) + ("/" if depth > 1 else "")
               + rng.choice(["x.py", "y.txt", "z.md", ".dot.py", "w", "[x].txt"]))
    for pattern in PATTERNS:
        # As the harness: every path glob yields (twice, when two `**` both reach it), sorted.
        expected = sorted(os.path.relpath(p, ws.root) for p in pyglob.glob(str(ws.root / pattern), recursive=True)
                          if os.path.isfile(p))
        assert ws_glob(Workspace(ws.root, confined=False), pattern) == expected, pattern
        if "**" not in pattern.split("/")[:-1] or pattern.count("**") == 1:
            confined = ws_glob(ws, pattern)  # the same, as long as no `**` can reach a file twice
            assert confined == expected, pattern


def ws_glob(ws: Workspace, pattern: str, path: str | None = None) -> list[str]:
    from leaf_cli.tools.args import CallArgs
    from leaf_cli.tools.glob import run_glob

    out = run_glob(CallArgs({"pattern": pattern, "path": path}), ws)
    return [] if out == "No files matched." else out.split("\n")


# --- the listing cache: a Workspace reuses folder listings across Globs while a stat says they are unchanged ---

CACHE_PATTERNS = ["**/*", "**/*.py", "*", "a/**/*.txt", "**/.*", "b/*", "**/l*"]


def _fresh(ws: Workspace, pattern: str) -> list[str]:
    return ws_glob(Workspace(ws.root), pattern)


def _mutate(root: Path, rng: random.Random, outside: Path) -> None:
    """One random change of the kind an agent's Bash or Write makes between two Globs."""
    everything = sorted(root.rglob("*"))
    files = [p for p in everything if p.is_file() and not p.is_symlink()]
    dirs = [root] + [p for p in everything if p.is_dir() and not p.is_symlink()]
    links = [p for p in everything if p.is_symlink()]
    folder, sub = rng.choice(dirs), rng.choice(dirs[1:] or [None])
    name = rng.choice(["x", "y", ".h", "l"]) + str(rng.randint(0, 9)) + rng.choice([".py", ".txt", ""])
    free = lambda path: not path.exists() and not path.is_symlink()  # noqa: E731
    action = rng.choice(["create", "create", "delete", "rename", "move", "mkdir", "dir_to_file", "file_to_dir",
                         "link", "retarget", "unlink_target", "rmtree"])
    if not files and action in ("delete", "rename", "move", "file_to_dir"):
        action = "create"
    if action == "create" and free(folder / name):
        (folder / name).write_text("new")
    elif action == "delete":
        rng.choice(files).unlink()
    elif action == "rename" and free((source := rng.choice(files)).with_name(name)):
        source.rename(source.with_name(name))  # same folder, same second
    elif action == "move" and free(folder / (source := rng.choice(files)).name):
        source.rename(folder / source.name)  # to another folder
    elif action == "mkdir" and free(new := folder / f"d{rng.randint(0, 99)}"):
        _touch(new, "inner.py", "deep/more.txt", ".dot.py")
    elif action == "dir_to_file" and sub is not None:
        shutil.rmtree(sub)
        sub.write_text("was a folder")
    elif action == "file_to_dir":
        victim = rng.choice(files)
        victim.unlink()
        _touch(victim, "now_a_folder.py")
    elif action == "link" and free(link := folder / f"l{rng.randint(0, 99)}.py"):
        link.symlink_to(rng.choice(files + dirs + [outside / "secret.py", root / "missing.py"]))
    elif action == "retarget" and links:
        link = rng.choice(links)
        link.unlink()
        link.symlink_to(rng.choice(files + dirs + [outside / "secret.py"]))
    elif action == "unlink_target" and links:
        # The link's own folder does not change: only resolving links on every Glob notices this.
        target = Path(os.path.realpath(rng.choice(links)))
        if target.is_file() and str(target).startswith(str(root) + "/"):
            target.unlink()
    elif action == "rmtree" and sub is not None:
        shutil.rmtree(sub)


@pytest.mark.parametrize("seed", range(8))
def test_cached_listings_always_equal_a_fresh_walk(seed: int, ws: Workspace, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Trust every listing at once (as if the tree were old), so the (inode, mtime, ctime) key alone must catch
    # each change; the changes come back to back, well within one second.
    from leaf_cli.tools import listing

    monkeypatch.setattr(listing, "RACY_NS", 0)
    rng = random.Random(seed)
    outside = tmp_path / "outside"
    _touch(outside, "secret.py")
    _touch(ws.root, "a/one.py", "a/b/two.txt", "b/three.py", "b/.hidden.py", "c/d/e/four.txt", "top.py")
    for _ in range(40):
        for pattern in rng.sample(CACHE_PATTERNS, 3):
            assert ws_glob(ws, pattern) == _fresh(ws, pattern), pattern
        _mutate(ws.root, rng, outside)
    for pattern in CACHE_PATTERNS:
        assert ws_glob(ws, pattern) == _fresh(ws, pattern), pattern


def test_unchanged_folders_are_not_read_again(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    from leaf_cli.tools import listing

    monkeypatch.setattr(listing, "RACY_NS", 0)
    _touch(ws.root, "a/one.py", "a/b/two.py", "c/three.py")
    reads: list[str] = []

    def scandir(path: str | int) -> object:  # a confined Glob reads each folder through its descriptor
        reads.append(path if isinstance(path, str) else os.readlink(f"/proc/self/fd/{path}") + "/")
        return os.scandir(path)

    monkeypatch.setattr(listing, "scandir", scandir)
    assert ws_glob(ws, "**/*.py") == ["a/b/two.py", "a/one.py", "c/three.py"]
    assert len(reads) == 4  # the root, a, a/b and c
    reads.clear()
    assert ws_glob(ws, "**/*.py") == ["a/b/two.py", "a/one.py", "c/three.py"]
    assert reads == []  # a stat per folder, no listing read
    (ws.root / "a" / "b" / "new.py").write_text("")
    assert ws_glob(ws, "**/*.py") == ["a/b/new.py", "a/b/two.py", "a/one.py", "c/three.py"]
    assert reads == [str(ws.root / "a" / "b") + "/"]  # only the folder that changed


def test_a_folder_mtime_set_back_is_caught_by_its_ctime(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    from leaf_cli.tools import listing

    monkeypatch.setattr(listing, "RACY_NS", 0)
    _touch(ws.root, "pkg/a.py")
    before = os.stat(ws.root / "pkg")
    assert ws_glob(ws, "**/*.py") == ["pkg/a.py"]
    (ws.root / "pkg" / "b.py").write_text("")
    os.utime(ws.root / "pkg", ns=(before.st_atime_ns, before.st_mtime_ns))  # as `tar x` or `touch -d` would
    assert os.stat(ws.root / "pkg").st_mtime_ns == before.st_mtime_ns
    assert ws_glob(ws, "**/*.py") == ["pkg/a.py", "pkg/b.py"]


def test_racy_listings_are_read_again_on_coarse_timestamps(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    # A filesystem whose timestamps did not tick between two changes: the folder's stamp stays the same.
    # Listings taken within RACY_NS of that stamp are not trusted, so the second change is still seen.
    from types import SimpleNamespace

    from leaf_cli.tools import listing

    frozen = time.time_ns()

    def coarse(stat_fn):  # noqa: ANN001, ANN202 - a confined Glob stats a folder's descriptor (fstat)
        def stat(path: str | int) -> SimpleNamespace:
            info = stat_fn(path)
            return SimpleNamespace(st_mode=info.st_mode, st_dev=info.st_dev, st_ino=info.st_ino,
                                   st_mtime_ns=frozen, st_ctime_ns=frozen)
        return stat

    monkeypatch.setattr(listing, "lstat", coarse(os.lstat))
    monkeypatch.setattr(listing, "fstat", coarse(os.fstat))
    _touch(ws.root, "a.py")
    assert ws_glob(ws, "*.py") == ["a.py"]
    (ws.root / "b.py").write_text("")
    assert ws_glob(ws, "*.py") == ["a.py", "b.py"]
    # The same sequence with the rule switched off shows what it guards against: a stale listing.
    monkeypatch.setattr(listing, "RACY_NS", 0)
    stale = Workspace(ws.root)
    assert ws_glob(stale, "*.py") == ["a.py", "b.py"]
    (ws.root / "c.py").write_text("")
    assert ws_glob(stale, "*.py") == ["a.py", "b.py"]


def test_first_thousand_in_sorted_order_past_the_cap(call, ws: Workspace) -> None:
    # Past the cap only the first 1,000 paths are built, by a walk in path order; names around `/` in code
    # point order (`-` and `.` sort before `/`, `0` after) check that it agrees with a plain sort.
    names = [f"{d}/{f}" for d in ("a", "a-b", "a.b", "a0", "b") for f in ("x", "y.py", "z/w.py", "z-w.py", "z.w.py")]
    names += [f"m/f{i:04d}.py" for i in range(1100)]
    _touch(ws.root, *names)
    lines = call("Glob", pattern="**/*").split("\n")
    expected = sorted(names)
    assert lines[:1000] == expected[:1000] and lines[1000] == f"... {len(names) - 1000} more files"
    lines = call("Glob", pattern="**/*.py").split("\n")
    expected = sorted(n for n in names if n.endswith(".py"))
    assert lines[:1000] == expected[:1000] and lines[1000] == f"... {len(expected) - 1000} more files"
