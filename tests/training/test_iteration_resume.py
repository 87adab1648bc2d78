"""The RL stage's chunk loop: validation every M steps, the stop after P flat evaluations, and resuming a
killed stage at the chunk where it stopped.

RL and evaluation are replaced by recorders here (a real DPPO chunk needs a model and minutes; the slow
smoke test runs them for real): the fake RL writes the checkpoint folder the real one would, the fake
evaluation returns scripted solve rates.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_train.driver import train
from leaf_train.driver.config import ValidationConfig
from leaf_train.driver.state import Evaluation, StateFile
from leaf_cli.tasks import Task
from leaf_train.rl import run as rl_run
from leaf_train.rl.config import RLConfig

TRAIN = [Task(instance_id="t0", repo="/r", base_commit="c", problem_statement="p", patch="", FAIL_TO_PASS=["x"])]


class Killed(Exception):
    pass


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    calls: dict[str, list] = {"rl": [], "eval": []}
    rates = {2: 0.0, 4: 0.5, 6: 0.5, 8: 0.25, 10: 0.5}
    kill_at: set[int] = set()

    def fake_rl(cfg: RLConfig, env, out: Path) -> Path:  # noqa: ANN001
        calls["rl"].append((cfg.steps, cfg.checkpoint_every, cfg.resume))
        assert out == Path(cfg.out_dir) and env.task(0).instance_id == "t0"
        (out / "checkpoints" / f"step_{cfg.steps:06d}" / "model").mkdir(parents=True)
        return out

    def fake_eval(model_dir: Path, base: Path, tasks: list, run_dir: Path, step: int, rl, val) -> Evaluation:  # noqa: ANN001
        if step in kill_at:
            kill_at.discard(step)
            raise Killed(step)
        assert model_dir.is_dir()
        calls["eval"].append(step)
        return Evaluation(step=step, solve_rate=rates[step], resolved=0, attempts=2, run_dir=str(run_dir))

    monkeypatch.setattr(rl_run, "train", fake_rl)
    monkeypatch.setattr(train, "evaluate", fake_eval)
    return calls, kill_at


def _state(tmp_path: Path) -> StateFile:
    state = StateFile(tmp_path, 1, "cfg")
    state.state.evaluations = [Evaluation(step=0, solve_rate=0.0, resolved=0, attempts=2, run_dir="eval/step_0")]
    return state


def test_chunks_until_patience_runs_out(tmp_path: Path, recorded) -> None:  # noqa: ANN001
    calls, _ = recorded
    state = _state(tmp_path)
    out = train.train_until_saturated(RLConfig(), ValidationConfig(every=2, patience=2, max_steps=20), tmp_path,
                                      TRAIN, [], tmp_path, state)
    # 0.0 (start) -> 0.0 at 2 (flat 1) -> 0.5 at 4 (better) -> 0.5 at 6 (flat 1) -> 0.25 at 8 (flat 2): stop
    assert calls["eval"] == [2, 4, 6, 8]
    assert [c[0] for c in calls["rl"]] == [2, 4, 6, 8] and all(c[1] == 2 and c[2] for c in calls["rl"])
    assert out["steps"] == 8 and "saturated" in out["stopped"]


def test_max_steps_caps_the_last_chunk(tmp_path: Path, recorded) -> None:  # noqa: ANN001
    calls, _ = recorded
    out = train.train_until_saturated(RLConfig(), ValidationConfig(every=4, patience=9, max_steps=6), tmp_path,
                                      TRAIN, [], tmp_path, _state(tmp_path))
    assert [c[0] for c in calls["rl"]] == [4, 6] and "max_steps" in out["stopped"]


def test_a_killed_stage_resumes_at_its_chunk(tmp_path: Path, recorded) -> None:  # noqa: ANN001
    calls, kill_at = recorded
    kill_at.add(4)
    val = ValidationConfig(every=2, patience=2, max_steps=20)
    with pytest.raises(Killed):
        train.train_until_saturated(RLConfig(), val, tmp_path, TRAIN, [], tmp_path, _state(tmp_path))
    assert calls["eval"] == [2]
    resumed = StateFile(tmp_path, 1, "cfg")  # a new process reads the state file
    assert [e.step for e in resumed.state.evaluations] == [0, 2]
    train.train_until_saturated(RLConfig(), val, tmp_path, TRAIN, [], tmp_path, resumed)
    # step 4's checkpoint was already written: RL is not rerun for it; its evaluation is
    assert [c[0] for c in calls["rl"]] == [2, 4, 6, 8]
    assert calls["eval"] == [2, 4, 6, 8]


def test_the_after_chunk_hook_runs_once_per_chunk(tmp_path: Path, recorded) -> None:  # noqa: ANN001
    seen: list[int] = []
    state = _state(tmp_path)
    train.train_until_saturated(RLConfig(), ValidationConfig(every=2, patience=1, max_steps=20), tmp_path, TRAIN, [],
                                tmp_path, state, after_chunk=lambda ckpt, step: seen.append(step))
    assert seen == [2] and state.state.rft_after == [2]


def test_a_launcher_runs_the_chunk_as_a_subprocess(tmp_path: Path) -> None:
    import json
    import sys

    from leaf_cli.errors import LeafError

    recorder = tmp_path / "launcher.py"
    recorder.write_text("import json, sys\nopen(sys.argv[0] + '.args', 'w').write(json.dumps(sys.argv[1:]))\n")
    cfg = RLConfig(steps=4, out_dir=str(tmp_path / "rl"))
    train.run_chunk(cfg, [], [sys.executable, str(recorder)], tmp_path)
    args = json.loads((tmp_path / "launcher.py.args").read_text())
    # every rank runs the RL stage's own entry point on the chunk config and the training task file
    assert args[:2] == ["leaf_train.rl", "--config"] and args[3] == "--tasks" and args[4].endswith("tasks/train.jsonl")
    from leaf_train.rl.config import load_config

    assert load_config(Path(args[2])).steps == 4  # the JSON chunk config reads as the RL stage's config
    with pytest.raises(LeafError, match="exit 3"):
        train.run_chunk(cfg, [], [sys.executable, "-c", "raise SystemExit(3)"], tmp_path)
