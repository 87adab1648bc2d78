"""Presets that mirror the paper's published evaluation settings, one per benchmark figure.

FrogNano-4B was evaluated with temperature 0.6, top_p 0.95, top_k 20, min_p 0, thinking on and at most
8,192 tokens a turn (DESIGN.md; FrogNano's `frognano/configs/eval/*.yaml`); SWE-bench at 100 steps,
65,536 context tokens and 3,000 s; Terminal-Bench 2.0 at 150 steps, 131,072 tokens and 10,800 s. Each task
runs three times and the figure is the mean solve rate over the three runs with its standard error
(`paper_report`). PatchEval's limits are not published; it uses the SWE-bench limits (an assumption,
stated in `note`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from leaf_cli.agent import Limits
from leaf_cli.errors import LeafError
from leaf_cli.llm.engine import Sampling

PAPER_SAMPLING = Sampling(temperature=0.6, top_p=0.95, top_k=20, min_p=0.0, repeat_penalty=1.0,
                          max_tokens=8192, enable_thinking=True)
SWEBENCH_LIMITS = Limits(max_turns=100, max_context=65_536, max_seconds=3_000.0)
TERMINAL_BENCH_LIMITS = Limits(max_turns=150, max_context=131_072, max_seconds=10_800.0)


class Preset(BaseModel):
    """One published setting: sampling, limits, attempts per task and the paper's number for FrogNano-4B."""

    model_config = ConfigDict(frozen=True)

    name: str
    benchmark: str = Field(description="What the tasks file must hold (see docs/reproduce.md).")
    sampling: Sampling
    limits: Limits
    attempts: int = Field(3, description="Runs per task; the paper averages three.")
    sandbox: str = Field("docker", description="These benchmarks grade inside their own images.")
    harness: str = "leaf"
    paper_solve_rate: float | None = Field(None, description="FrogNano-4B's published score, in percent.")
    note: str = ""


PRESETS: dict[str, Preset] = {
    "swebench-verified": Preset(name="swebench-verified", benchmark="SWE-bench Verified (500 tasks)",
                                sampling=PAPER_SAMPLING, limits=SWEBENCH_LIMITS, paper_solve_rate=61.5),
    "swebench-pro": Preset(name="swebench-pro", benchmark="SWE-bench Pro public set (731 tasks)",
                           sampling=PAPER_SAMPLING, limits=SWEBENCH_LIMITS, paper_solve_rate=37.6),
    "terminal-bench-2": Preset(name="terminal-bench-2", benchmark="Terminal-Bench 2.0 (89 Harbor tasks)",
                               sampling=PAPER_SAMPLING, limits=TERMINAL_BENCH_LIMITS, paper_solve_rate=31.1),
    "patcheval": Preset(name="patcheval", benchmark="PatchEval-Verified (230 sandboxed CVEs)",
                        sampling=PAPER_SAMPLING, limits=SWEBENCH_LIMITS, paper_solve_rate=23.2,
                        note="limits not published for PatchEval; the SWE-bench limits are assumed"),
}


def get_preset(name: str) -> Preset:
    """The preset called `name`; an unknown name lists the valid ones."""
    key = name.strip().lower()
    if key not in PRESETS:
        raise LeafError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    return PRESETS[key]


def paper_report(results: Iterable[Mapping[str, Any] | BaseModel]) -> dict[str, Any]:
    """The figure the paper reports: the solve rate of each run (attempt index), their mean, and the standard
    error of that mean over runs (sd of the run rates / sqrt(runs)). A run's rate counts every task it
    attempted; a missing attempt is not a pass. Rates are fractions (0.615 = 61.5%)."""
    by_run: dict[int, dict[str, bool]] = defaultdict(dict)
    for row in results:
        data = row if isinstance(row, Mapping) else row.model_dump()
        by_run[int(data["attempt"])][str(data["instance_id"])] = bool(data["resolved"])
    tasks = sorted({i for run in by_run.values() for i in run})
    rates = {run: sum(done.get(i, False) for i in tasks) / len(tasks) for run, done in sorted(by_run.items())}
    values = list(rates.values())
    mean = sum(values) / len(values) if values else float("nan")
    se = (math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) / math.sqrt(len(values))
          if len(values) > 1 else float("nan"))
    clean = lambda x: None if math.isnan(x) else round(x, 6)  # noqa: E731 - JSON has no NaN
    return {"runs": len(values), "n_tasks": len(tasks), "run_solve_rates": {str(k): clean(v) for k, v in rates.items()},
            "mean_solve_rate": clean(mean), "se_over_runs": clean(se)}
