"""Stage 7: the iteration's evidence — plots (PNG) and summary.md from the files the stages wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from leaf_train.driver.state import IterationState


def plot_curves(metrics: list[dict[str, Any]], evaluations: list[dict[str, Any]], folder: Path) -> list[str]:
    """reward.png, length.png and validation.png; returns the file names written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    series = [("reward.png", "reward_mean", "mean reward (tests pass)"),
              ("length.png", "episode_tokens_mean", "sampled tokens per episode")]
    for name, key, label in series:
        points = [(r["step"], r[key]) for r in metrics if key in r]
        if not points:
            continue
        fig, ax = plt.subplots(figsize=(6, 3.2), dpi=110)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", lw=1.5)
        ax.set_xlabel("RL step")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(folder / name)
        plt.close(fig)
        written.append(name)
    if evaluations:
        fig, ax = plt.subplots(figsize=(6, 3.2), dpi=110)
        ax.plot([e["step"] for e in evaluations], [e["solve_rate"] for e in evaluations], marker="s", lw=1.5)
        ax.set_xlabel("RL step (0 = starting policy)")
        ax.set_ylabel("validation solve rate")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(folder / "validation.png")
        plt.close(fig)
        written.append("validation.png")
    return written


def summary_markdown(state: IterationState, metrics: list[dict[str, Any]], plots: list[str],
                     wall_seconds: dict[str, float]) -> str:
    """The iteration's summary: solve rate before/after, task funnel, RL curve figures, export, timings."""
    done = state.done
    evals = state.evaluations
    synth, select, export = done.get("synth", {}), done.get("select", {}), done.get("export", {})
    before = evals[0] if evals else None
    best = next((e for e in evals if e.step == select.get("step")), None)
    lines = [f"# Iteration {state.iteration}", ""]
    lines += ["## Solve rate on the held-out tasks", "",
              "| policy | RL step | solve rate | SE | resolved / attempts |", "| --- | --- | --- | --- | --- |"]
    for label, e in (("before (starting policy)", before), ("after (best checkpoint)", best)):
        if e is not None:
            lines.append(f"| {label} | {e.step} | {e.solve_rate:.3f} | {e.se:.3f} | {e.resolved} / {e.attempts} |")
    lines += ["", "Every evaluation (± Agresti–Coull SE; a checkpoint counts as better only past min_delta, by default "
              "1 SE of the difference): " + ", ".join(f"step {e.step}: {e.solve_rate:.3f} ± {e.se:.3f}" for e in evals),
              f"Validation set: {synth.get('validation_set', 'held_out')}; tasks: {synth.get('fresh', '?')} fresh, "
              f"{synth.get('carried', 0)} carried of {synth.get('recalibrated', 0)} re-calibrated",
              f"RL stopped: {done.get('rl', {}).get('stopped', 'n/a')}", ""]
    funnel = synth.get("funnel", {})
    lines += ["## Task funnel (TaskPilot)", "",
              f"generated {funnel.get('generated', 0)} -> executable {funnel.get('executable', 0)} -> "
              f"in band {funnel.get('in_band', 0)}; training on {synth.get('train', 0)}, "
              f"{synth.get('validation', 0)} held out. Calibration policy: `{synth.get('policy', '')}`.", ""]
    for reason, n in synth.get("drop_reasons", {}).items():
        lines.append(f"- dropped {n}: {reason}")
    lines += ["", "## RL curves", "", "| step | mean reward | sampled tokens / episode | trained tokens | loss |",
              "| --- | --- | --- | --- | --- |"]
    for r in metrics:
        lines.append(f"| {r['step']} | {r.get('reward_mean', 0):.3f} | {r.get('episode_tokens_mean', 0):.1f} | "
                     f"{r.get('tokens', 0):.0f} | {_num(r.get('loss'))} |")
    updated = sum(1 for r in metrics if r.get("tokens", 0) > 0)
    lines += ["", f"{updated} of {len(metrics)} steps updated the policy (the others had equal shaped rewards "
                  "in every group, hence zero advantage and no gradient)."]
    lines += [""] + [f"![{p[:-4]}]({p})" for p in plots] + [""]
    lines += ["## Export", ""]
    if export:
        lines.append(f"- GGUF: `{export.get('gguf')}` ({export.get('quant')}), next-token KL vs the checkpoint: "
                     f"{export.get('kl_unquantized', float('nan')):.3g} unquantized, "
                     f"{export.get('kl_quantized', float('nan')):.3g} quantized")
    lines.append(f"- best checkpoint: `{select.get('best', 'n/a')}` (RL step {select.get('step', 'n/a')})")
    lines += ["", "## Tool-use statistics per checkpoint (validation trajectories)", "", "```", _stats_text(evals), "```"]
    if state.consolidation:
        text = state.consolidation.get("text", "")
        lines += ["", "## Consolidation (before this iteration's RL)", "", "```", text, "```"]
    lines += ["", "## Wall time", "", "| stage | seconds |", "| --- | --- |"]
    lines += [f"| {k} | {v:.0f} |" for k, v in wall_seconds.items()]
    lines.append(f"| total | {sum(wall_seconds.values()):.0f} |")
    return "\n".join(lines) + "\n"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _stats_text(evaluations: list) -> str:
    from leaf_train.driver.behaviours import checkpoint_stats, stats_table

    runs = [Path(e.run_dir) for e in evaluations if (Path(e.run_dir) / "results.jsonl").is_file()]
    return stats_table([checkpoint_stats(r) for r in runs])


def write_report(state: IterationState, folder: Path, wall_seconds: dict[str, float]) -> dict[str, Any]:
    from leaf_train.rl.metrics import read_metrics

    metrics_path = folder / "rl" / "metrics.jsonl"
    metrics = read_metrics(metrics_path) if metrics_path.is_file() else []
    evals = [e.model_dump() for e in state.evaluations]
    (folder / "metrics.json").write_text(json.dumps({"rl": metrics, "validation": evals}, indent=2) + "\n",
                                         encoding="utf-8")
    plots = plot_curves(metrics, evals, folder)
    (folder / "summary.md").write_text(summary_markdown(state, metrics, plots, wall_seconds), encoding="utf-8")
    return {"summary": str(folder / "summary.md"), "plots": plots}
