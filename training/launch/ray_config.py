"""Write the config an iteration runs with on a Ray cluster (ray-iteration.sh): CONFIG with the `executor:`
sections set (top level for the RL rollout actors and validation, `iteration.synth` for TaskPilot), the
rollout server and the calibration policy pointed at the cluster's vLLM endpoint, and `iteration.launch`
dropped, since the driver itself is the trainer process.
    python training/launch/ray_config.py CONFIG OUT.yaml http://ROLLOUT_HEAD:8000
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

RAY = {"kind": "ray", "address": "auto", "sandbox_resources": {"docker": "sandbox"},
       "worker_resources": {"sandbox": 0.01}}
"""Jobs that need Docker, and rollout actors, go to the nodes started with the `sandbox` resource."""


def ray_config(cfg: dict[str, Any], endpoint: str) -> dict[str, Any]:
    cfg = {**cfg, "executor": {**RAY, **(cfg.get("executor") or {})}}
    rollout = cfg.setdefault("rollout", {})
    rollout["server"] = {**(rollout.get("server") or {}), "base_url": endpoint}
    iteration = dict(cfg.get("iteration") or {})
    iteration.pop("launch", None)
    synth = dict(iteration.get("synth") or {})
    synth["executor"] = {**RAY, **(synth.get("executor") or {})}
    policy = str(synth.get("policy", ""))
    if policy.startswith("openai:"):
        synth["policy"] = f"openai:{policy[len('openai:'):].split('@')[0]}@{endpoint}/v1"
    cfg["iteration"] = {**iteration, "synth": synth}
    return cfg


def main(argv: list[str]) -> int:
    source, target, endpoint = Path(argv[0]), Path(argv[1]), argv[2].rstrip("/")
    cfg = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    target.write_text(yaml.safe_dump(ray_config(cfg, endpoint), sort_keys=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
