"""PatchEval imports and grading against bytedance/PatchEval: its record shapes (the dataset card's, the
verified file's, two real rows of its SWE-agent dataset in `fixtures/`), the image and work folder derived
as its scripts derive them, and its strict and PoC-only verdicts. The verdict comparison runs PatchEval's
own `Evaluation` class (from a checkout: `LEAF_PATCHEVAL_REPO`, a git repository of bytedance/PatchEval;
not on PyPI, so CI cannot fetch it: a manual check, see docs/reproduce.md) with its Docker client answered
by local bash, against leaf's command run by bash on the same scripts."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from leaf_cli.tasks.importers import import_patcheval_rows, read_rows
from leaf_cli.tasks.format.reward_spec import reward_spec
from leaf_cli.tasks.grading.patcheval import patcheval_command, patcheval_rewards

FIXTURES = Path(__file__).parent / "fixtures"
CARD_ROW = {  # the dataset card's schema (input.json): no image field
    "cve_id": "CVE-2021-23376", "cve_description": "This affects all versions of package ffmpegdotjs. If "
    "attacker-controlled user input is given to the trimvideo function, it is possible for an attacker to execute "
    "arbitrary commands.", "cwe_info": {"CWE-78": {"name": "Improper Neutralization of Special Elements used in an "
                                                           "OS Command ('OS Command Injection')", "description": "..."}},
    "repo": "https://github.com/TRomesh/ffmpegdotjs",
    "patch_url": ["https://github.com/TRomesh/ffmpegdotjs/commit/dae868764d6418dac081ed1aa84c636645ba6adb"],
    "programming_language": "JavaScript",
    "vul_func": [{"id": "vul_js_21_1", "commit": "b7395da", "file_path": "index.js", "start_line": 216,
                  "end_line": 233, "snippet": "exec(`ffmpeg ... ${input}`)"}],
    "fix_func": [{"id": "fix_js_21_1", "commit": "dae8687", "file_path": "index.js", "snippet": "execFile('ffmpeg', args)"}],
    "vul_patch": "diff --git a/index.js b/index.js\n--- a/index.js\n+++ b/index.js\n@@ -219 +219 @@\n-        exec(\n+        execFile(\n",
    "poc_test_cmd": "bash fix-run.sh",
}


def test_the_three_record_shapes_import() -> None:
    [card] = import_patcheval_rows([CARD_ROW])
    assert card.model_extra["image_name"] == "ghcr.io/anonymous2578-data/cve-2021-23376:latest"  # derived
    assert card.model_extra["workdir"] == "/workspace/ffmpegdotjs" and card.source["language"] == "JavaScript"
    assert card.patch.startswith("diff --git a/index.js")  # the gold fix, for --gold
    hidden = ("execFile", "dae8687", "vul_patch", "fix_func")
    assert not any(h in card.problem_statement for h in hidden)
    assert not any(k in card.model_extra for k in ("vul_patch", "fix_func", "patch_url"))
    [verified] = import_patcheval_rows([{**CARD_ROW, "programing_language": "JavaScript", "programming_language": None,
                                         "image_url": "ghcr.io/patcheval-cve/patcheval-cve:cve-2021-23376"}])
    assert verified.model_extra["image_name"] == "ghcr.io/patcheval-cve/patcheval-cve:cve-2021-23376"
    assert verified.source["language"] == "JavaScript"
    rows = read_rows(FIXTURES / "patcheval_sweagent_rows.jsonl")
    tasks = import_patcheval_rows(rows)
    for row, task in zip(rows, tasks):
        assert task.model_extra["workdir"] == row["work_dir"] and task.problem_statement.strip()
        assert task.problem_statement == row["problem_statement"]  # PatchEval's own statement, as its agents get it
        # the image its evaluator derives from the CVE alone is the one the row names
        [bare] = import_patcheval_rows([{k: v for k, v in row.items() if k != "image_name"}])
        assert bare.model_extra["image_name"] == row["image_name"]
    assert [t.source["language"] for t in tasks] == ["JavaScript", "Python"]  # from the located files
    with_card = import_patcheval_rows(rows, card=[{"cve_id": rows[0]["cve_id"], "programing_language": "TypeScript"}])
    assert with_card[0].source["language"] == "TypeScript"  # the card wins, as PatchEval's scripts look it up
    with pytest.raises(Exception, match="no sandbox"):
        import_patcheval_rows([{**CARD_ROW, "poc_test_cmd": None}])


MODULE = "def quote(text):\n    return text\n"
FIXES = {
    "good": MODULE.replace("return text", "return text if text.isalnum() else \"'\" + text.replace(\"'\", \"\") + \"'\""),
    "overfix": MODULE.replace("return text", "return \"'\" + text + \"'\""),  # the PoC passes, the unit test breaks
    "none": MODULE,
}


def _workspace(root: Path, fix: str, *, unit_test: bool) -> Path:
    """A PatchEval-style /workspace: the repository below it, prepare.sh / fix-run.sh / unit_test.sh, fix.patch."""
    repo = root / "workspace" / "lib"
    repo.mkdir(parents=True)
    (repo / "shell.py").write_text(MODULE)
    env = {"PATH": os.environ["PATH"], "HOME": str(root), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "vulnerable"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=60)
    (repo / "shell.py").write_text(FIXES[fix])
    patch = subprocess.run(["git", "diff"], cwd=repo, env=env, capture_output=True, text=True, timeout=60).stdout
    subprocess.run(["git", "checkout", "-q", "."], cwd=repo, env=env, check=True, timeout=60)
    ws = root / "workspace"
    (ws / "fix.patch").write_text(patch)
    (ws / "prepare.sh").write_text("cd lib && git checkout -q . && { [ -s ../fix.patch ] && git apply ../fix.patch || true; }\n")
    (ws / "fix-run.sh").write_text("cd lib && python3 -c \"import shell, sys; sys.exit(0 if ';' not in shell.quote('a; rm -rf /').strip(\\\"'\\\") or shell.quote('a; rm').startswith(\\\"'\\\") else 1)\"\n")
    if unit_test:
        (ws / "unit_test.sh").write_text("cd lib && python3 -c \"import shell, sys; sys.exit(0 if shell.quote('abc') == 'abc' else 1)\"\n")
    return ws


def _ours(ws: Path) -> dict[str, float]:
    run = subprocess.run(["bash", "-c", patcheval_command(60, workspace=str(ws))], capture_output=True, text=True, timeout=300)
    return patcheval_rewards(run.stdout + run.stderr)


def _official_evaluation(monkeypatch: pytest.MonkeyPatch):
    repo = os.environ.get("LEAF_PATCHEVAL_REPO") or "/work/.mirror/bytedance+PatchEval/repo"
    show = subprocess.run(["git", "--git-dir", str(Path(repo) / ".git") if (Path(repo) / ".git").exists() else repo,
                           "show", "HEAD:patcheval/evaluation/run_evaluation.py"], capture_output=True, text=True, timeout=60)
    if show.returncode != 0:
        pytest.skip("[no-internet] no bytedance/PatchEval checkout (LEAF_PATCHEVAL_REPO) to run its evaluator; it is "
                    "not on PyPI (a manual check: docs/reproduce.md)")
    if importlib.util.find_spec("docker") is None:  # the evaluator imports the Docker SDK; its client is ours
        not_found = type("NotFound", (Exception,), {})
        monkeypatch.setitem(sys.modules, "docker", SimpleNamespace(from_env=None, errors=SimpleNamespace(NotFound=not_found)))
    pytest.importorskip("tqdm")
    spec = importlib.util.spec_from_loader("patcheval_run_evaluation", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(show.stdout, "run_evaluation.py", "exec"), module.__dict__)  # noqa: S102 - the official evaluator
    return module


class _LocalContainer:
    """PatchEval's evaluator talks to Docker; here its exec runs with local bash in the workspace folder
    (the image's WORKDIR, /workspace). Nothing else of the evaluator is changed."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws

    def exec_run(self, cmd: str, demux: bool = True):  # noqa: ANN201
        run = subprocess.run(cmd, shell=True, cwd=self.ws, capture_output=True, timeout=300, executable="/bin/bash")
        return SimpleNamespace(exit_code=run.returncode, output=(run.stdout, run.stderr))

    def stop(self) -> None:
        return None

    def remove(self, force: bool = False) -> None:
        return None


def _official(module, ws: Path) -> dict[str, float]:
    container = _LocalContainer(ws)
    client = SimpleNamespace(containers=SimpleNamespace(get=lambda name: container,
                                                        run=lambda *a, **k: container, list=lambda **k: []))
    manager = module.DockerManager.__new__(module.DockerManager)
    manager.logger, manager.cve, manager.client = __import__("logging").getLogger("patcheval"), "CVE", client
    manager.start_container = lambda cve, name, patch=None: name  # the patch is already at fix.patch
    manager.is_container_exist = lambda name: False
    evaluation = module.Evaluation.__new__(module.Evaluation)
    evaluation.logger, evaluation.cve, evaluation.docker_manager = manager.logger, "CVE", manager
    poc, _, _, _, kind = evaluation.run_evaluation(cve="CVE", llm_patch="x", language="Python", test_name="t")
    return {"strict": float(kind == "Repair Success"), "poc": float(poc is True)}


EXPECTED = {"good": (1.0, 1.0), "none": (0.0, 0.0), "overfix": (None, 1.0)}
"""fix -> (strict, poc); the overfix's strict verdict is 0 where a unit test exists, 1 where none does."""


def _expected(fix: str, unit_test: bool) -> dict[str, float]:
    strict, poc = EXPECTED[fix]
    return {"strict": float(not unit_test) if strict is None else strict, "poc": poc}


@pytest.mark.parametrize("unit_test", [True, False])
@pytest.mark.parametrize("fix", sorted(FIXES))
def test_strict_and_poc_verdicts(fix: str, unit_test: bool, tmp_path: Path) -> None:
    assert _ours(_workspace(tmp_path, fix, unit_test=unit_test)) == _expected(fix, unit_test)


@pytest.mark.network
@pytest.mark.parametrize("unit_test", [True, False])
@pytest.mark.parametrize("fix", sorted(FIXES))
def test_strict_and_poc_verdicts_agree_with_patcheval(fix: str, unit_test: bool, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A manual check (docs/reproduce.md): PatchEval's evaluator comes from a GitHub checkout, which CI
    cannot fetch, so CI skips it with that reason."""
    module = _official_evaluation(monkeypatch)
    ours = _ours(_workspace(tmp_path, fix, unit_test=unit_test))
    assert ours == _expected(fix, unit_test)
    assert _official(module, _workspace(tmp_path / "official", fix, unit_test=unit_test)) == ours


def test_patcheval_tasks_grade_both_ways_in_one_container() -> None:
    [task] = import_patcheval_rows([CARD_ROW])
    command = reward_spec(task).command
    assert command.index("fix-run.sh") < command.index("unit_test.sh")  # unit tests only after the PoC is fixed
    assert patcheval_rewards("no markers") is None


def test_the_agent_container_hides_the_scripts_and_has_no_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The PoC, prepare/fix-run/unit_test scripts and fix.patch live in /workspace, above the repository the
    agent gets: the agent's container covers /workspace with an empty tmpfs and mounts only the repository."""
    from leaf_cli.tasks.envs import image as image_module
    from leaf_cli.tasks.envs.image import ImageSession

    [task] = import_patcheval_rows([CARD_ROW])
    seen: list[list[str]] = []
    monkeypatch.setattr(image_module, "docker", lambda args, **kw: seen.append(args) or "")
    ImageSession(task, tmp_path).start()
    argv = seen[-1]
    assert argv[argv.index("--tmpfs") + 1] == "/workspace" and argv[argv.index("--network") + 1] == "none"
    assert f"{tmp_path.resolve()}:/workspace/ffmpegdotjs" in argv


def test_summary_reports_both_patcheval_rates() -> None:
    """PatchEval reports a strict rate and a PoC-only rate over the same attempts; summary.json does too."""
    from leaf_cli.tasks.runner.results import AttemptResult, summary_of

    def attempt(cve: str, strict: float, poc: float) -> AttemptResult:
        return AttemptResult(instance_id=cve, attempt=0, repo=cve, model="m", resolved=bool(strict),
                             patch_applied="by_verifier", grader="reward", reward=strict,
                             rewards={"strict": strict, "poc": poc})

    summary = summary_of([attempt("CVE-1", 1.0, 1.0), attempt("CVE-2", 0.0, 1.0), attempt("CVE-3", 0.0, 0.0),
                          attempt("CVE-4", 0.0, 1.0)])
    assert summary["reward_means"] == {"poc": 0.75, "strict": 0.25} and summary["solve_rate"] == 0.25
