"""The RL environments: the toy repositories and a task file behind one protocol, on real git repositories,
real test environments and leaf's real grader (no model: the test plays the agent's edits itself)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from leaf_cli.tasks import Task, make_sandbox
from leaf_train.rl.config import EnvConfig
from leaf_train.rl.environment import TaskFileEnvironment
from leaf_train.rl.toy_env import ToyEnvironment


def _head(repo: Path) -> str:
    run = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True)
    return run.stdout.strip()


def test_a_task_file_episode_starts_and_is_graded_as_an_eval_attempt(git_repo: Path, tmp_path: Path) -> None:
    task = Task(instance_id="calc-add", repo=str(git_repo), base_commit=_head(git_repo), problem_statement="Fix add().",
                patch="", FAIL_TO_PASS=["test_calc.py::test_add"], protected_paths=["test_calc.py"])
    other = task.model_copy(update={"instance_id": "calc-other"})
    env = TaskFileEnvironment([task, other], make_sandbox("subprocess"), seed=3)
    again = TaskFileEnvironment([task, other], make_sandbox("subprocess"), seed=3)
    assert [env.task(g).instance_id for g in range(4)] == [again.task(g).instance_id for g in range(4)]
    assert {t.name for t in env.tools} == {"Read", "Write", "Edit", "Glob", "Bash"}
    start = env.start(task, tmp_path / "episode")
    root = start.workspace.root
    assert start.conversation is None and (root / "calc.py").is_file()
    # Bash runs with the task's cached test environment first on PATH, as in an eval attempt
    assert start.workspace.env["PATH"].split(":")[0].endswith("/venv/bin")
    assert not env.grade(task, start.patch()).resolved  # nothing changed yet
    (root / "test_calc.py").write_text("def test_add():\n    pass\n")  # a protected path: left out of grading
    assert not env.grade(task, start.patch()).resolved
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    verdict = env.grade(task, start.patch())
    assert verdict.resolved and verdict.infra_failure is None


def test_the_toy_environment_offers_its_tools_and_the_solved_example(tmp_path: Path) -> None:
    env = ToyEnvironment(tmp_path / "env", EnvConfig(num_tasks=3, task_kind="copy", demo=True), 0,
                         make_sandbox("subprocess"))
    assert [t.name for t in env.tools] == ["Read", "Write"]
    task = env.task(5)
    assert task.instance_id == env.task(5 + 3).instance_id  # cyclic over the seeded order
    start = env.start(task, tmp_path / "episode")
    assert start.conversation is not None and start.conversation.messages[0].role == "system"
    word = (start.workspace.root / "notes" / f"task{task.instance_id.rsplit('-', 1)[1]}.txt").read_text().strip()
    (start.workspace.root / "answer.txt").write_text(word + "\n")
    assert env.grade(task, start.patch()).resolved
