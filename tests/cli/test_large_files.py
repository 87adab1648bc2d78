"""`leaf fix` and `leaf undo` with large files and a git that runs out of time, and a commit message that
must not carry the model's terminal sequences into the history (scripted agents, real repositories)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from leaf_cli.cli import fix_review
from leaf_cli.repo import git as gitmod
from leaf_cli.repo.runs import list_runs
from tests.cli.fixcli import call, fix_json, leaf, script, turn
from tests.cli.test_hostile_fix import decoy  # noqa: F401 - a fixture
from tests.repo.gitrepo import fingerprint, messy_repo, sh


def locks(state: Path) -> list[Path]:
    return sorted((state / "store").glob("*/leaf-index-*.lock"))


def test_sparse_gigabyte_is_named_in_the_review_and_undone(tmp_path: Path, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    before = fingerprint(repo)
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command="truncate -s 1G big.bin && echo x >> src/calc.py")),
                  {"content": "ok"})
    code, out = fix_json(repo, spec, "--sandbox", "none", "task", env=decoy)
    assert code == 0 and (repo / "big.bin").stat().st_size == 1 << 30
    assert "# leaf: not in this patch (undo still restores it): big.bin: 1.0 GiB" in out["patch"]
    assert "GIT binary patch" not in out["patch"] and "+x" in out["patch"]
    assert leaf("undo", "--workdir", str(repo)).exit_code == 0
    assert fingerprint(repo) == before


def test_timed_out_snapshot_leaves_no_lock_and_undo_and_fix_go_on(tmp_path: Path, decoy: dict,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    state = Path(os.environ["LEAF_HOME"])
    repo = messy_repo(tmp_path / "work")
    before = fingerprint(repo)
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command="truncate -s 4G huge.bin")), {"content": "ok"})
    monkeypatch.setattr(gitmod, "GIT_TIMEOUT", 1.0)  # stands in for 300 s against a 50 GB file
    result = leaf("fix", "--json", "--workdir", str(repo), "--model", spec, "--sandbox", "none", "task", env=decoy)
    assert (repo / "huge.bin").stat().st_size == 4 << 30  # the attack took effect
    assert "timed out" in result.stderr and "Traceback" not in result.stderr
    assert not locks(state)
    monkeypatch.setattr(gitmod, "GIT_TIMEOUT", 300.0)
    undone = leaf("undo", "--workdir", str(repo), "--force")
    assert undone.exit_code == 0, undone.stderr
    saved = sh(repo, "git for-each-ref --format='%(refname)' refs/leaf/saved/").split()  # --force keeps a copy
    assert saved and "huge.bin" in sh(repo, f"git ls-tree --name-only {saved[0]}")
    for ref in saved:
        sh(repo, f"git update-ref -d {ref}")
    assert fingerprint(repo) == before
    again = leaf("fix", "--json", "--workdir", str(repo), "--model", script(tmp_path / "t.jsonl", {"content": "x"}),
                 "--sandbox", "none", "t")
    assert again.exit_code == 0, again.stderr


def test_stale_lock_left_by_a_killed_leaf_is_cleared(tmp_path: Path, decoy: dict) -> None:
    state = Path(os.environ["LEAF_HOME"])
    repo = messy_repo(tmp_path / "work")
    before = fingerprint(repo)
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command="echo x > x.txt")), {"content": "ok"})
    code, _out = fix_json(repo, spec, "--sandbox", "none", "task", env=decoy)
    assert code == 0
    for cache in (state / "store").glob("*/leaf-index-*"):
        cache.with_name(cache.name + ".lock").write_bytes(b"")  # as git leaves it when killed mid-write
    assert locks(state)
    run_id = list_runs(repo)[0].run_id
    for args in ((), (run_id, "--force")):  # once undone, only a named run is undone again (issue 25)
        result = leaf("undo", "--workdir", str(repo), *args)
        assert result.exit_code == 0 and "Traceback" not in result.stderr, result.stderr
    assert fingerprint(repo) == before
    code, _out = fix_json(repo, script(tmp_path / "t.jsonl", {"content": "x"}), "--sandbox", "none", "t")
    assert code == 0


def test_commit_message_drops_the_answers_terminal_sequences(git_repo: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e.com", "GIT_COMMITTER_NAME": "T",
                       "GIT_COMMITTER_EMAIL": "t@e.com"}.items():
        monkeypatch.setenv(key, value)
    answer = "Fixed add\x1b]0;owned title\x07\n\nclip \x1b]52;c;ZXZpbA==\x07 done"
    spec = script(tmp_path / "s.jsonl", turn(call("Write", file_path="calc.py", content="def add(a, b):\n    return a + b\n")),
                  {"content": answer})
    code, out = fix_json(git_repo, spec, "--sandbox", "none", "task")
    assert code == 0 and "\x1b]0;" in out["messages"][-1]["content"]  # the answer did carry them
    monkeypatch.setattr(fix_review, "ask_text", lambda _c, _label, default, **_kw: default)
    run = list_runs(git_repo)[0]
    fix_review._apply(Console(file=io.StringIO()), "commit", run, out["patch"], answer, "task")
    message = sh(git_repo, "git log -1 --format=%B")
    assert "\x1b" not in message and "\x07" not in message
    assert message.startswith("Fixed add\n") and "clip  done" in message
