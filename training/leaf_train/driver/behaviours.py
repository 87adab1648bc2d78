"""Tool-use statistics of a checkpoint, measured from its eval trajectories.

Per episode: the tool calls in order, whether it validated before answering (a test command run after
its last file change and before its final answer), whether it edited in place (Edit) rather than
rewriting (Write), its format errors and its turns. Per checkpoint (one eval run folder): the tool mix,
the rates of those behaviours, format errors per turn, mean turns, and the solve rate.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, Field

from leaf_cli.agent.trajectory import Trajectory, load
from leaf_cli.tasks import RunDir

TEST_COMMAND = re.compile(r"\b(pytest|py\.test|unittest|tox|nox|make\s+(test|check))\b|\btest_\w*\.py\b")
"""A Bash command that runs tests (what 'validating' means here)."""

CHANGE_TOOLS = {"write", "edit"}


class Episode(BaseModel):
    """What one trajectory shows."""

    path: str
    instance_id: str = ""
    resolved: bool = False
    tools: list[str] = Field(default_factory=list)
    changed: bool = False
    validated_before_answer: bool = False
    edits: int = 0
    writes: int = 0
    format_errors: int = 0
    unknown_tools: int = 0
    turns: int = 0
    answered: bool = False


class CheckpointStats(BaseModel):
    """The statistics of one checkpoint's eval run."""

    run_dir: str
    episodes: int
    solve_rate: float
    tool_mix: dict[str, float]
    tool_calls_per_episode: float
    validate_before_answer: float = Field(description="Among episodes that changed files and answered.")
    edit_share: float = Field(description="Edit calls / (Edit + Write calls).")
    format_errors_per_turn: float
    turns_mean: float

    def behaviours(self) -> dict[str, float]:
        """The rates consolidation protects (higher is better)."""
        return {"validate_before_answer": self.validate_before_answer, "edit_share": self.edit_share}


def episode(traj: Trajectory, path: Path, resolved: bool = False, instance_id: str = "") -> Episode:
    """Read the behaviours off one trajectory."""
    calls = [(c.name.lower(), c.arguments) for m in traj.messages if m.role == "assistant" for c in m.tool_calls]
    last_change = max((i for i, (name, _) in enumerate(calls) if name in CHANGE_TOOLS), default=-1)
    tested_after = any(name == "bash" and TEST_COMMAND.search(str(args.get("command", "")))
                       for name, args in calls[last_change + 1:]) if last_change >= 0 else False
    answered = traj.exit_reason == "final_answer"
    unknown = sum(1 for m in traj.messages if m.role == "tool" and m.content.startswith("Unknown tool"))
    return Episode(path=str(path), instance_id=instance_id, resolved=resolved, tools=[n for n, _ in calls],
                   changed=last_change >= 0, validated_before_answer=tested_after and answered,
                   edits=sum(n == "edit" for n, _ in calls), writes=sum(n == "write" for n, _ in calls),
                   format_errors=sum(t.parse_error is not None for t in traj.turns), unknown_tools=unknown,
                   turns=traj.assistant_turns(), answered=answered)


def run_episodes(run_dir: Path) -> list[Episode]:
    """Every trajectory of an eval run folder with its graded outcome."""
    results = {Path(r.traj_path).name: r for r in RunDir(run_dir).load_results().values() if r.traj_path}
    found = []
    for path in sorted((run_dir / "trajectories").glob("*.jsonl")):
        result = results.get(path.name)
        found.append(episode(load(path), path, bool(result and result.resolved), result.instance_id if result else ""))
    return found


def checkpoint_stats(run_dir: Path) -> CheckpointStats:
    """The tool-use statistics of one eval run folder."""
    eps = run_episodes(run_dir)
    mix = Counter(t for e in eps for t in e.tools)
    calls = sum(mix.values())
    changed = [e for e in eps if e.changed and e.answered]
    turns = sum(e.turns for e in eps)
    return CheckpointStats(
        run_dir=str(run_dir), episodes=len(eps), solve_rate=_rate(sum(e.resolved for e in eps), len(eps)),
        tool_mix={k: round(v / calls, 4) for k, v in sorted(mix.items())},
        tool_calls_per_episode=_rate(calls, len(eps)),
        validate_before_answer=_rate(sum(e.validated_before_answer for e in changed), len(changed)),
        edit_share=_rate(sum(e.edits for e in eps), sum(e.edits + e.writes for e in eps)),
        format_errors_per_turn=_rate(sum(e.format_errors + e.unknown_tools for e in eps), turns),
        turns_mean=_rate(turns, len(eps)))


def lost_behaviours(earlier: list[CheckpointStats], current: CheckpointStats, tolerance: float) -> dict[str, float]:
    """behaviour -> its best earlier rate, for each behaviour whose current rate fell more than `tolerance` below it."""
    lost = {}
    for name, now in current.behaviours().items():
        best = max((s.behaviours()[name] for s in earlier), default=0.0)
        if best - now > tolerance:
            lost[name] = best
    return lost


def stats_table(stats: list[CheckpointStats]) -> str:
    """A fixed-width text table, one row per checkpoint."""
    head = f"{'checkpoint':<44} {'eps':>4} {'solve':>6} {'valid.':>6} {'edit':>6} {'fmt/t':>6} {'turns':>6}  tool mix"
    rows = [head]
    for s in stats:
        mix = " ".join(f"{k}={v:.2f}" for k, v in s.tool_mix.items()) or "-"
        rows.append(f"{_short(s.run_dir):<44} {s.episodes:>4} {s.solve_rate:>6.2f} {s.validate_before_answer:>6.2f} "
                    f"{s.edit_share:>6.2f} {s.format_errors_per_turn:>6.2f} {s.turns_mean:>6.2f}  {mix}")
    return "\n".join(rows)


def _short(path: str) -> str:
    return "/".join(Path(path).parts[-3:])


def _rate(num: float, den: float) -> float:
    return round(num / den, 4) if den else 0.0
