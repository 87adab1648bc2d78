"""Tasks across iterations: TaskPilot's seed follows the iteration, a task pool keeps earlier iterations'
tasks out of new synthesis (de-duplication) and re-calibrates the carried ones against the new policy, and
the validation benchmark is built once from other snapshots and read back unchanged every iteration.
Real repositories, real pytest suites, the scripted oracle policy (not a model) for calibration."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.tasks import dump_tasks, load_tasks
from leaf_train.driver import synth as driver_synth
from leaf_train.driver.config import IterationConfig
from leaf_train.rl.config import RolloutConfig
from leaf_train.taskpilot import pipeline
from leaf_train.taskpilot.config import SynthConfig
from leaf_train.taskpilot.store import read_jsonl


def _cfg(repo: Path, cache: Path, out: Path, **extra) -> SynthConfig:
    return SynthConfig(sources=[str(repo)], target=1, rollouts=1, band=(0.0, 1.0), rounds=0, max_candidates=3,
                       out=out, cache_dir=cache, policy="scripted:1,1,1,1,1", **extra)


def test_the_seed_follows_the_iteration(tmp_path: Path) -> None:
    cfg = IterationConfig(synth={"sources": ["x"], "seed": 3})
    seeds = {driver_synth.synth_config(cfg, tmp_path / "p.gguf", tmp_path / "o", RolloutConfig(), iteration=n).seed
             for n in (1, 2, 3)}
    assert len(seeds) == 3
    again = driver_synth.synth_config(cfg, tmp_path / "p.gguf", tmp_path / "o", RolloutConfig(), iteration=2).seed
    assert again == driver_synth.iteration_seed(3, 2)


@pytest.fixture(scope="module")
def first(mathx_repo: Path, session_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("iter1")
    pipeline.run(_cfg(mathx_repo, session_cache, out))
    assert load_tasks(out / "tasks.jsonl").tasks
    return out


@pytest.mark.slow
def test_pool_tasks_are_not_generated_again(first: Path, mathx_repo: Path, session_cache: Path,
                                            tmp_path: Path) -> None:
    """Same seed, so the pool's task comes up again among the candidates: with the pool excluded it is
    dropped as a duplicate and a different task is accepted. (Not necessarily the first candidate: one before
    it may be rejected for its own reason, such as a mutation no test can tell apart, `value >= high` in a
    clamp that returns `high` there anyway.)"""
    pool = load_tasks(first / "tasks.jsonl").tasks
    pool_file = tmp_path / "pool.jsonl"
    dump_tasks([t.model_copy(update={"repo": t.repo_location(first)}) for t in pool], pool_file)
    pipeline.run(_cfg(mathx_repo, session_cache, tmp_path / "iter2", exclude_tasks=pool_file))
    decisions = read_jsonl(tmp_path / "iter2" / "decisions.jsonl")
    candidates = {c["id"]: c for c in read_jsonl(tmp_path / "iter2" / "candidates.jsonl")}
    duplicates = [candidates[d["candidate"]]["patch"] for d in decisions if d["reason"] == "duplicate"]
    assert duplicates and set(duplicates) <= {t.patch for t in pool}, decisions
    again = load_tasks(tmp_path / "iter2" / "tasks.jsonl").tasks
    assert again and not {t.patch for t in again} & {t.patch for t in pool}


@pytest.mark.slow
def test_carried_tasks_are_recalibrated_against_the_new_policy(first: Path, tmp_path: Path) -> None:
    task = load_tasks(first / "tasks.jsonl").tasks[0]
    task = task.model_copy(update={"repo": task.repo_location(first)})
    assert task.meta["p_hat"] == 1.0  # the first policy solved it
    never = SynthConfig(sources=["x"], rollouts=2, band=(0.2, 0.8), out=tmp_path, policy="scripted:0,0,0,0,0")
    kept, seen = driver_synth._recalibrate([task], never, tmp_path / "recal")
    assert seen == 1 and kept == []  # p̂ = 0 under the new policy: out of the band, not carried
    half = never.model_copy(update={"band": (0.0, 1.0)})
    kept, _ = driver_synth._recalibrate([task], half, tmp_path / "recal2")
    assert kept[0].meta["p_hat"] == 0.0 and kept[0].meta["carried"] is True


@pytest.mark.slow
def test_the_validation_benchmark_is_built_once_and_reused(mathx_repo: Path, session_cache: Path,
                                                           tmp_path: Path) -> None:
    cfg = IterationConfig(synth={"cache_dir": str(session_cache)},
                          validation={"tasks": 1, "benchmark": [str(mathx_repo)]})
    one = driver_synth.validation_benchmark(cfg, tmp_path, RolloutConfig())
    stamp = (tmp_path / "validation-benchmark.jsonl").stat().st_mtime_ns
    two = driver_synth.validation_benchmark(cfg, tmp_path, RolloutConfig())
    assert len(one) == 1 and [t.to_json() for t in one] == [t.to_json() for t in two]
    assert (tmp_path / "validation-benchmark.jsonl").stat().st_mtime_ns == stamp
    assert one[0].meta["p_hat"] == 0.0  # calibrated by no policy: its meaning does not follow the policy
