"""The Ray launch path's config: the shipped 4B iteration config, rewritten for a cluster, still validates
and runs its RL, validation and TaskPilot work through the Ray executor with the driver as the trainer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from leaf_train.rl.config import load_config
from leaf_train.taskpilot.config import SynthConfig

ROOT = Path(__file__).resolve().parents[2]


def test_ray_iteration_config_points_every_stage_at_the_cluster(tmp_path: Path) -> None:
    out = tmp_path / "ray.yaml"
    done = subprocess.run([sys.executable, str(ROOT / "training/launch/ray_config.py"),
                           str(ROOT / "training/configs/iteration-4b.yaml"), str(out), "http://10.0.0.2:8000/"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    cfg = load_config(out)
    assert (cfg.executor.kind, cfg.executor.address) == ("ray", "auto")
    assert cfg.executor.worker_resources == {"sandbox": 0.01} and cfg.executor.sandbox_resources == {"docker": "sandbox"}
    assert cfg.rollout.server.base_url == "http://10.0.0.2:8000" and cfg.iteration.launch is None
    synth = SynthConfig.model_validate({**cfg.iteration.synth, "out": tmp_path / "tp"})
    assert synth.executor.kind == "ray" and synth.policy == "openai:policy@http://10.0.0.2:8000/v1"
    original = yaml.safe_load((ROOT / "training/configs/iteration-4b.yaml").read_text())
    assert original["iteration"]["launch"]  # the single-box file itself is unchanged


def test_launch_scripts_parse() -> None:
    for name in ("ray-iteration.sh", "vllm-serve.sh"):
        assert subprocess.run(["bash", "-n", str(ROOT / "training/launch" / name)], timeout=30).returncode == 0
