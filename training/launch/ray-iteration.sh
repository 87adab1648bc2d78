#!/usr/bin/env bash
# One iteration on a Ray cluster (ray-cluster.yaml): vLLM replicas on the rollout nodes behind one endpoint,
# the FSDP trainer on the head node's GPUs, the iteration driver on the head. Run through `ray job submit`.
#   bash training/launch/ray-iteration.sh N [CONFIG] [OUT]
set -euo pipefail
N="${1:?iteration number}"
CONFIG="${2:-training/configs/iteration-4b.yaml}"
OUT="${3:-runs/frognano}"
MODEL="${MODEL:?set MODEL to the starting checkpoint folder}"
# vLLM uses Ray as its distributed executor: the replicas are Ray actors placed on nodes with the `rollout`
# resource; the data-parallel server gives one OpenAI-compatible endpoint for all of them.
python - <<PY &
import os, subprocess, ray
ray.init(address="auto")

@ray.remote(num_gpus=8, resources={"rollout": 1})
def serve() -> int:
    env = {**os.environ, "GPUS": "0,1,2,3,4,5,6,7", "MODEL": "$MODEL"}
    return subprocess.call(["bash", "training/launch/vllm-serve.sh"], env=env)

ray.get(serve.remote())
PY
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null || true' EXIT
# The driver runs once, on the head node; only its RL chunks are distributed: the config's `iteration.launch`
# starts each one under `accelerate launch` with training/launch/accelerate-fsdp.yaml on the head's GPUs.
leaf train --iteration "$N" --config "$CONFIG" --out "$OUT"
