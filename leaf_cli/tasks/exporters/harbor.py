"""Export tasks to the Harbor task layout (Terminal-Bench 2.0's runner), for cloud sandboxes.

Per task: instruction.md, task.toml, environment/Dockerfile (python image + install_config + the start
state), tests/test.sh (applies test_patch, runs F2P and P2P, writes 1 or 0 to /logs/verifier/reward.txt),
tests/config.json, solution/solve.sh (applies the gold patch).
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from leaf_cli.tasks.format.globs import matcher, tree_files
from leaf_cli.tasks.envs.docker import dockerfile
from leaf_cli.tasks.envs.source import snapshot
from leaf_cli.tasks.format.task import Task


TEST_SH = """#!/bin/bash
# Grade: restore protected files, apply the hidden test patch, run the task's tests by node id.
set -u
mkdir -p /logs/verifier
cd /testbed
git checkout -q HEAD -- {protected} 2>/dev/null || true
git apply --whitespace=nowarn /tests/test.patch || {{ echo 0 > /logs/verifier/reward.txt; exit 0; }}
python -m pytest -p no:cacheprovider -q --tb=short {node_ids}
status=$?
if [ $status -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def export_harbor(tasks: list[Task], out: Path, base_dir: Path | None = None) -> list[Path]:
    """Write one Harbor task folder per task under `out`; returns the folders."""
    folders = []
    for task in tasks:
        folder = out / task.instance_id
        if folder.exists():
            shutil.rmtree(folder)
        (folder / "environment").mkdir(parents=True)
        (folder / "tests").mkdir()
        (folder / "solution").mkdir()
        (folder / "instruction.md").write_text(task.problem_statement.rstrip() + "\n", encoding="utf-8")
        (folder / "task.toml").write_text(_task_toml(task), encoding="utf-8")
        (folder / "environment" / "Dockerfile").write_text(dockerfile(task), encoding="utf-8")
        testbed = folder / "environment" / "testbed"
        shutil.copytree(snapshot(task, base_dir), testbed, symlinks=True)
        hidden = matcher(task.hidden_paths)
        for rel in [r for r in tree_files(testbed) if hidden(r)]:
            (testbed / rel).unlink()
        (folder / "tests" / "test.patch").write_text(task.test_patch, encoding="utf-8")
        (folder / "tests" / "config.json").write_text(task.to_json() + "\n", encoding="utf-8")
        protected = " ".join(shlex.quote(f":(glob){p}") for p in task.protected)
        node_ids = " ".join(shlex.quote(n) for n in task.tests)
        _script(folder / "tests" / "test.sh", TEST_SH.format(protected=protected, node_ids=node_ids))
        (folder / "solution" / "gold.patch").write_text(task.patch, encoding="utf-8")
        _script(folder / "solution" / "solve.sh",
                "#!/bin/bash\nset -e\ncd /testbed\ngit apply --whitespace=nowarn \"$(dirname \"$0\")/gold.patch\"\n")
        folders.append(folder)
    return folders


def _task_toml(task: Task) -> str:
    t = task.timeouts
    return "\n".join([
        'version = "1.0"', "", "[metadata]", f"instance_id = {json.dumps(task.instance_id)}",
        f"repo = {json.dumps(task.repo)}", 'category = "software-engineering"', "",
        "[verifier]", f"timeout_sec = {float(t.test_s)}", "", "[agent]", f"timeout_sec = {float(t.agent_s)}", "",
        "[environment]", f"build_timeout_sec = {float(t.build_s)}", "allow_internet = false", "",
    ])


def _script(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
