"""The eval output folder: predictions.jsonl, results.jsonl (one line per attempt), summary.json.

Lines are appended as attempts finish, so a crash loses only attempts in flight; `--resume` reads what is
there (a torn last line is dropped) and skips finished attempts.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, computed_field

from leaf_cli.agent.harness import turn_limit_summary
from leaf_cli.tasks.runner.presets import paper_report
from leaf_cli.tasks.runner.stats import summarize
from leaf_cli.tasks.grading.testrun import GOOD


class AttemptResult(BaseModel):
    """One graded attempt (a line of results.jsonl)."""

    instance_id: str
    attempt: int
    repo: str
    model: str
    resolved: bool
    patch_applied: str
    protected_touched: list[str] = Field(default_factory=list)
    restored: list[str] = Field(default_factory=list)
    f2p: dict[str, str] = Field(default_factory=dict)
    p2p: dict[str, str] = Field(default_factory=dict)
    exit_code: int | None = None
    infra_failure: str | None = None
    infra_retries: int = 0
    """Times the attempt was re-run because its worker or node was lost (Ray executor)."""
    error: str | None = None
    exit_reason: str | None = None
    steps: int = 0
    tokens: dict[str, int | None] = Field(default_factory=dict)  # None: the server gave no count
    wall_s: float = 0.0
    agent_s: float = 0.0
    grade_s: float = 0.0
    traj_path: str | None = None
    sandbox: str = ""
    grader: str = "tests"
    reward: float | None = None
    rewards: dict[str, float] = Field(default_factory=dict)
    """Every reward the verifier wrote (Harbor's keys; PatchEval's strict and poc)."""
    log_path: str | None = None
    harness: str = "leaf"

    @property
    def key(self) -> tuple[str, int]:
        return (self.instance_id, self.attempt)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reason(self) -> str:
        """Why the attempt ended as it did, in a few words: the first of infrastructure, the agent's time,
        an empty or unappliable patch, the reward, the tests that failed."""
        if self.resolved:
            return "resolved"
        if self.infra_failure:
            return f"infrastructure: {self.infra_failure}" + (f" ({_first_line(self.error)})" if self.error else "")
        if self.exit_reason == "max_time" and self.patch_applied == "empty":
            return "timeout: the agent's time ran out with no change"
        if self.patch_applied == "empty":
            return "empty patch" + (f" (the agent ended: {self.exit_reason})" if self.exit_reason else "")
        if self.patch_applied == "failed":
            return "patch did not apply"
        failed = [name for name, outcome in {**self.f2p, **self.p2p}.items() if outcome not in GOOD]
        if failed:
            shown = ", ".join(_short_test(name) for name in failed[:3])
            return f"tests failed: {shown}" + (f" (+{len(failed) - 3} more)" if len(failed) > 3 else "")
        if self.reward is not None:
            return f"reward {self.reward:g}"
        return _first_line(self.error) if self.error else "not resolved by the grader"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 120 else line[:117] + "..."


def _short_test(node_id: str) -> str:
    """`tests/test_calc.py::TestAdd::test_add[1-2]` -> `TestAdd::test_add[1-2]`: the part a reader names."""
    return node_id.split("::", 1)[1] if "::" in node_id else node_id


class Prediction(BaseModel):
    """A line of predictions.jsonl, in SWE-bench's format plus the run id and attempt number."""

    instance_id: str
    model_name_or_path: str
    model_patch: str
    run_id: str = ""
    attempt: int = 0


class RunDir:
    """Reads and appends the files of one output folder."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.results_path = self.path / "results.jsonl"
        self.predictions_path = self.path / "predictions.jsonl"
        self.summary_path = self.path / "summary.json"

    def has_results(self) -> bool:
        return self.results_path.exists() and self.results_path.stat().st_size > 0

    def load_results(self) -> dict[tuple[str, int], AttemptResult]:
        """Finished attempts, first record per (instance_id, attempt); unreadable lines dropped."""
        found: dict[tuple[str, int], AttemptResult] = {}
        for record in _lines(self.results_path):
            try:
                result = AttemptResult.model_validate(record)
            except ValidationError:
                continue
            found.setdefault(result.key, result)
        return found

    def compact(self) -> dict[tuple[str, int], AttemptResult]:
        """Before a resume: rewrite both files with only the finished attempts (no torn or orphan lines)."""
        results = self.load_results()
        predictions: dict[tuple[str, int], dict] = {}
        for record in _lines(self.predictions_path):
            key = (record.get("instance_id"), record.get("attempt", 0))
            if key in results:
                predictions.setdefault(key, record)
        self.path.mkdir(parents=True, exist_ok=True)
        self.results_path.write_text("".join(r.model_dump_json() + "\n" for r in results.values()), encoding="utf-8")
        self.predictions_path.write_text("".join(json.dumps(p) + "\n" for p in predictions.values()), encoding="utf-8")
        return results

    def append(self, result: AttemptResult, prediction: Prediction | None) -> None:
        """Record one finished attempt: the result line last, so a result always has its prediction."""
        self.path.mkdir(parents=True, exist_ok=True)
        if prediction is not None:
            _append(self.predictions_path, prediction.model_dump_json())
        _append(self.results_path, result.model_dump_json())

    def write_summary(self, extra: dict | None = None) -> dict:
        """summary.json computed from every result line on disk."""
        results = list(self.load_results().values())
        summary = summary_of(results)
        summary.update(extra or {})
        self.summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        return summary


def summary_of(results: list[AttemptResult]) -> dict:
    """Per-task counts, then `stats.summarize`. Infra failures count as unresolved attempts. Beside them:
    `turn_limit` (episodes that ran out of turns) and `paper_report` (each run's solve rate, their mean and its
    standard error over runs: the figure the paper reports)."""
    counts: dict[str, tuple[int, int]] = {}
    repos: dict[str, str] = {}
    for r in results:
        n, c = counts.get(r.instance_id, (0, 0))
        counts[r.instance_id] = (n + 1, c + int(r.resolved))
        repos[r.instance_id] = r.repo
    summary = summarize(counts, repos, infra_failures=sum(r.infra_failure is not None for r in results))
    summary["infra_by_kind"] = _tally(r.infra_failure for r in results if r.infra_failure)
    summary["patch_applied"] = _tally(r.patch_applied for r in results)
    summary["turn_limit"] = turn_limit_summary(results)
    summary["paper_report"] = paper_report(results)
    if any(r.rewards for r in results):
        summary["reward_means"] = reward_means(results)
    return summary


def reward_means(results: list[AttemptResult]) -> dict[str, float]:
    """Each reward key's mean over the attempts, a missing key counting 0 (Harbor's `mean` metric); for
    PatchEval these are its two rates: strict (PoC fixed and unit tests pass) and PoC-only."""
    keys = sorted({k for r in results for k in r.rewards})
    return {k: round(sum(r.rewards.get(k, 0.0) for r in results) / len(results), 6) for k in keys}


def task_rates(path: Path) -> dict[str, float]:
    """Per-task solve rate c_i / n_i of an output folder (for `leaf eval compare`)."""
    counts: dict[str, list[int]] = {}
    for r in RunDir(path).load_results().values():
        entry = counts.setdefault(r.instance_id, [0, 0])
        entry[0] += 1
        entry[1] += int(r.resolved)
    return {i: c / n for i, (n, c) in counts.items()}


def _tally(values) -> dict[str, int]:  # noqa: ANN001 - any iterable of str
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line torn by a crash
        if isinstance(record, dict):
            out.append(record)
    return out
