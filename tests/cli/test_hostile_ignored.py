"""What the run makes inside a folder ignored at the start (`build/`) is named in the review and undone.

The checkpoint records only the names and types under such folders (never their contents); a real
`leaf fix --model replay:` agent writes there, git cannot see it, and `leaf undo` must remove exactly
what the run made while the user's ignored build output stays byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.repo import ignored
from tests.cli.fixcli import call, leaf, turn
from tests.cli.test_hostile_fix import SANDBOXES, decoy, run_fix  # noqa: F401 - decoy is a fixture
from tests.repo.gitrepo import messy_repo, sh

KEEP = b"\x7fELF the user's object file\x00\xff"


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_files_made_in_an_ignored_folder_are_reviewed_and_undone(tmp_path: Path, decoy: dict, sandbox: str) -> None:
    repo = messy_repo(tmp_path / "work")  # its .gitignore has `build/`
    (repo / "build").mkdir()
    (repo / "build" / "keep.o").write_bytes(KEEP)
    status_before = sh(repo, "git status --porcelain --ignored=no")
    out = run_fix(repo, tmp_path, sandbox, turn(call("Bash", command="mkdir -p build/evil && echo 'import os' > "
                                                     "build/evil/conftest.py && echo new > build/new.txt")),
                  {"content": "ok"}, env=decoy)
    assert (repo / "build" / "evil" / "conftest.py").is_file() and (repo / "build" / "new.txt").is_file()
    assert sh(repo, "git status --porcelain --ignored=no") == status_before  # git cannot see them
    for rel in ("build/evil/", "build/evil/conftest.py", "build/new.txt"):
        assert f"{rel}: made by the run in a folder ignored at the start; undo removes it" in out["patch"]
    assert "build/keep.o" not in out["patch"]
    result = leaf("undo", "--workdir", str(repo))
    assert result.exit_code == 0, result.stderr
    for rel in ("build/evil/conftest.py", "build/evil/", "build/new.txt"):
        assert f"Removed {rel} (the run made it in a folder ignored at the start)." in result.stderr
    assert sorted(p.name for p in (repo / "build").iterdir()) == ["keep.o"]
    assert (repo / "build" / "keep.o").read_bytes() == KEEP


def test_undo_moves_aside_a_replaced_entry_and_follows_no_link(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_bytes(b"outside data\n")
    (repo / "build" / "obj").mkdir(parents=True)
    (repo / "build" / "obj" / "a.o").write_bytes(KEEP)
    run_fix(repo, tmp_path, "none", turn(call("Bash", command=f"rm -rf build/obj && echo replaced > build/obj "
                                              f"&& ln -s {outside} build/link")), {"content": "ok"}, env=decoy)
    assert (repo / "build" / "obj").is_file() and (repo / "build" / "link").is_symlink()
    result = leaf("undo", "--workdir", str(repo))
    assert result.exit_code == 0, result.stderr
    # The file where the user's folder was may hold data, and the link is the run's: both are moved aside
    # into the run's folder and named, never deleted, and the link is never followed.
    moved = [line for line in result.stderr.splitlines() if line.startswith("Moved aside ")]
    assert any(f"{repo}/build/obj " in line for line in moved)
    # The link holds no data: moved aside or removed, as the walk meets it first; never followed either way.
    assert any(f"{repo}/build/link " in line for line in moved) or "Removed build/link (" in result.stderr
    assert (outside / "precious.txt").read_bytes() == b"outside data\n"
    assert not (repo / "build" / "link").exists() and not (repo / "build" / "link").is_symlink()


def test_a_folder_over_the_bound_is_recorded_too_big_and_said_so(tmp_path: Path) -> None:
    (tmp_path / "build" / "sub").mkdir(parents=True)
    for i in range(6):
        (tmp_path / "build" / "sub" / f"f{i}").write_text("x")
    meta = tmp_path / "meta"
    listings = ignored.record(tmp_path, ["build/", "small/"], meta, limit=5)
    assert listings["build/"].too_big and listings["build/"].entries == {}  # nothing of it is kept
    (tmp_path / "build" / "made.txt").write_text("run's")
    found = ignored.compare(tmp_path, meta)
    assert found.too_big == ["build/"] and found.created == []
    assert any(n.startswith("build/: over 200000 entries when the run started") and "stays after undo" in n
               for n in ignored.review_notes(found))
    listings = ignored.record(tmp_path, ["build/"], meta, limit=8)
    assert not listings["build/"].too_big and len(listings["build/"].entries) == 8
