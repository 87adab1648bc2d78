"""The funnel report of a run folder: generated -> executable -> in band, every drop reason counted, the
p̂ histogram before and after refinement (text, and a PNG via matplotlib), and time per stage."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from leaf_train.taskpilot.store import Store, read_jsonl

BINS = 10


def build(out: Path) -> dict[str, Any]:
    """The report's numbers, from the files on disk (works on a finished, killed or resumed run)."""
    store = Store(out)
    decisions = list(store.decisions.values())
    reasons = Counter(d.reason for d in decisions if not d.accepted)
    executable = sum(1 for d in decisions if _validated_ok(store, d.root) and d.reason != "duplicate")
    snapshots = {r["id"]: r for r in read_jsonl(store.path("snapshots"))}
    vals, cals = list(store.validations.values()), list(store.calibrations.values())
    return {
        "funnel": {"generated": len(decisions), "executable": executable,
                   "in_band": sum(d.accepted for d in decisions)},
        "drop_reasons": dict(reasons.most_common()),
        "snapshots": {k: {"status": v["status"], "reason": v.get("reason"), "passing": len(v.get("passing", [])),
                          "suite_s": v.get("suite_seconds"), "build_s": v.get("seconds")} for k, v in snapshots.items()},
        "p_hat_before": [d.p_hat_first for d in decisions if d.p_hat_first is not None],
        "p_hat_after": [d.p_hat_final for d in decisions if d.p_hat_final is not None],
        "seconds": {"validation_total": round(sum(v.seconds for v in vals), 1), "validations": len(vals),
                    "calibration_total": round(sum(c.seconds for c in cals), 1), "calibrations": len(cals),
                    "rollouts": sum(c.rollouts for c in cals)},
        "refinement_rounds": dict(Counter(str(c.round) for c in cals)),
    }


def _validated_ok(store: Store, root_id: str) -> bool:
    root = store.candidates.get(root_id)
    val = store.validations.get(root.code_key()) if root else None
    return bool(val and val.ok)


def histogram(values: list[float]) -> list[int]:
    counts = [0] * BINS
    for v in values:
        counts[min(BINS - 1, int(v * BINS))] += 1
    return counts


def text(report: dict[str, Any]) -> str:
    f = report["funnel"]
    lines = [f"funnel: generated {f['generated']} -> executable {f['executable']} -> in band {f['in_band']}"]
    lines += [f"  dropped {n:4d}  {reason}" for reason, n in report["drop_reasons"].items()]
    for sid, s in report["snapshots"].items():
        lines.append(f"snapshot {sid}: {s['status']}" + (f" ({s['reason']})" if s["reason"] else
                                                          f", {s['passing']} passing tests, suite {s['suite_s']} s"))
    for name in ("p_hat_before", "p_hat_after"):
        counts = histogram(report[name])
        lines.append(f"{name.replace('_', ' ')} refinement (n={len(report[name])}):")
        for i, c in enumerate(counts):
            lines.append(f"  [{i / BINS:.1f}, {(i + 1) / BINS:.1f}{']' if i == BINS - 1 else ')'} {'#' * c} {c}")
    s = report["seconds"]
    lines.append(f"time: validation {s['validation_total']} s over {s['validations']}, "
                 f"calibration {s['calibration_total']} s over {s['calibrations']} ({s['rollouts']} rollouts)")
    return "\n".join(lines)


def write(out: Path) -> dict[str, Any]:
    """Write report.json, report.txt and phat_hist.png into the run folder; returns the report."""
    report = build(out)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "report.txt").write_text(text(report) + "\n", encoding="utf-8")
    plot(report, out / "phat_hist.png")
    return report


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    edges = [i / BINS for i in range(BINS + 1)]
    for ax, name, title in zip(axes, ("p_hat_before", "p_hat_after"), ("before refinement", "after refinement")):
        ax.hist(report[name], bins=edges, color="#4a7", edgecolor="black")
        ax.set_title(f"p̂ {title} (n={len(report[name])})")
        ax.set_xlabel("p̂ = solved / N")
    axes[0].set_ylabel("candidates")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
