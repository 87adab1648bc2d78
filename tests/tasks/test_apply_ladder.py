"""The apply ladder against swebench's own: 5.0.2's commands (read from its `run_evaluation.py`) run here
exactly as its harness runs them (reset between rungs, the reverse check last) on real git repositories,
beside leaf's two implementations of the same ladder, the in-process one (`patches.apply_patch`, leaf's own
grading) and the shell one the grading containers run (`image_grading.apply_script`). Each case compares
whether the patch went in and the tree it left. 4.1.0's ladder is run too, to show the case it got wrong."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from leaf_cli.tasks.grading.swebench import RESET, apply_script
from leaf_cli.tasks.grading.patches import Applied, apply_patch

from .official import constant

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
       "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "GIT_CONFIG_NOSYSTEM": "1"}
LINES = "".join(f"line {i}\n" for i in range(1, 61))


def _diff(path: str, hunks: list[tuple[int, list[str], list[str], list[str]]]) -> str:
    """A unified diff of `path`: each hunk (start line, context before, removed/added pairs as '-x'/'+y', after)."""
    out = [f"diff --git a/{path} b/{path}\n", f"--- a/{path}\n", f"+++ b/{path}\n"]
    for start, before, change, after in hunks:
        old = len(before) + sum(c.startswith("-") for c in change) + len(after)
        new = len(before) + sum(c.startswith("+") for c in change) + len(after)
        out.append(f"@@ -{start},{old} +{start},{new} @@\n")
        out += [f" {b}\n" for b in before] + [f"{c}\n" for c in change] + [f" {a}\n" for a in after]
    return "".join(out)


def _lines(*numbers: int) -> list[str]:
    return [f"line {n}" for n in numbers]


TWO_HUNKS_SECOND_FUZZY = _diff("src/a.py", [  # hunk 1 exact; hunk 2's first context line differs from the file
    (4, _lines(4, 5, 6), ["-line 7", "+line seven"], _lines(8, 9, 10)),
    (40, ["line 40 (as the author saw it)", "line 41", "line 42"], ["-line 43", "+line forty-three"], _lines(44, 45, 46)),
])
CASES = {
    "clean": _diff("src/a.py", [(20, _lines(20, 21, 22), ["-line 23", "+line 23!"], _lines(24, 25, 26))]),
    "offset": _diff("src/a.py", [(25, _lines(20, 21, 22), ["-line 23", "+line 23!"], _lines(24, 25, 26))]),
    "two_hunks_second_fuzzy": TWO_HUNKS_SECOND_FUZZY,
    "new_file": "diff --git a/src/new.py b/src/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n",
    "garbage": _diff("src/a.py", [(20, _lines(90, 91, 92), ["-line 93", "+x"], _lines(94, 95, 96))]),
    "wrong_file": _diff("src/missing.py", [(1, ["a"], ["-b", "+c"], ["d"])]),
}


def _repo(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text(LINES)
    (root / "README").write_text("readme\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=ENV, capture_output=True, timeout=60)
    return root


def _tracked_and_new(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.parts and not p.name.endswith((".rej", ".orig"))}


def _sh(command: str, cwd: Path) -> int:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=ENV, capture_output=True, timeout=60).returncode


def official_ladder(commands: list[str], repo: Path, patch: Path, *, reset: bool) -> bool:
    """The official harness's loop, run here: each command in turn (the tree reset before a later one when
    `reset`, as 5.0.2 does), then 5.0.2's `git apply --check --reverse`."""
    for attempt, command in enumerate(commands):
        if attempt and reset:
            _sh(RESET, repo)
        if _sh(f"{command} {patch}", repo) == 0:
            return True
    return reset and _sh(f"git apply --check --reverse {patch}", repo) == 0


@pytest.fixture(scope="module")
def ladders() -> dict[str, list[str]]:
    return {"5.0.2": constant("swebench-5.0.2", "swebench/harness/run_evaluation.py", "GIT_APPLY_CMDS"),
            "4.1.0": constant("swebench-4.1.0", "swebench/harness/run_evaluation.py", "GIT_APPLY_CMDS")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_ladder_agrees_with_swebench_5(case: str, ladders, tmp_path: Path) -> None:
    patch = tmp_path / "patch.diff"
    patch.write_text(CASES[case])
    official = _repo(tmp_path / "official")
    applied = official_ladder(ladders["5.0.2"], official, patch, reset=True)

    pristine = _repo(tmp_path / "pristine")
    ours = tmp_path / "ours"
    shutil.copytree(pristine, ours, symlinks=True)
    how, _ = apply_patch(CASES[case], ours, pristine)
    assert (how != Applied.FAILED) == applied, (case, how)
    assert _tracked_and_new(ours) == _tracked_and_new(official) or not applied

    container = _repo(tmp_path / "container")
    run = subprocess.run(["bash", "-c", apply_script(str(container), str(patch))], env=ENV, capture_output=True,
                         text=True, timeout=120)
    assert (run.returncode == 0) == applied, run.stdout + run.stderr
    assert _tracked_and_new(container) == _tracked_and_new(official)


def test_two_hunk_fuzz_case_needs_the_reset(ladders, tmp_path: Path) -> None:
    """4.1.0: `--reject` applies hunk 1 and fails; `patch` then finds hunk 1 applied, reverses it, fails.
    5.0.2 resets first, so `patch --forward --fuzz=5` applies both hunks."""
    patch = tmp_path / "patch.diff"
    patch.write_text(TWO_HUNKS_SECOND_FUZZY)
    assert not official_ladder(ladders["4.1.0"], _repo(tmp_path / "old"), patch, reset=False)
    pristine = _repo(tmp_path / "pristine")
    ours = tmp_path / "ours"
    shutil.copytree(pristine, ours, symlinks=True)
    how, messages = apply_patch(TWO_HUNKS_SECOND_FUZZY, ours, pristine)
    assert how == Applied.PATCH_FUZZ and "git_apply_reject" in messages
    text = (ours / "src" / "a.py").read_text()
    assert "line seven\n" in text and "line forty-three\n" in text


def test_a_patch_already_in_the_tree_passes_the_reverse_check(tmp_path: Path) -> None:
    pristine = _repo(tmp_path / "pristine")
    patch = CASES["clean"]
    subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=pristine, check=True, env=ENV, timeout=60)
    tree = tmp_path / "tree"
    shutil.copytree(pristine, tree, symlinks=True)
    how, _ = apply_patch(patch, tree, pristine)
    assert how == Applied.ALREADY_APPLIED
