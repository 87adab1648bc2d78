#!/usr/bin/env bash
# One iteration on a Ray cluster (ray-cluster.yaml; the recipe is training/launch/README.md). The iteration
# driver runs once, directly (no `accelerate launch`), on the head node, and reaches the cluster through
# leaf's executor seam: TaskPilot's suite runs, validations and calibration rollouts are Ray tasks on the
# sandbox nodes, the RL rollout workers are Ray actors there, and every episode samples from one vLLM
# data-parallel endpoint spread over the rollout nodes. Run through `ray job submit`:
#   ray job submit --address http://HEAD:8265 --working-dir . -- bash training/launch/ray-iteration.sh N [CONFIG] [OUT]
set -euo pipefail
N="${1:?iteration number}"
CONFIG="${2:-training/configs/iteration-4b.yaml}"
OUT="${3:-runs/frognano}"
MODEL="${MODEL:?set MODEL to the starting checkpoint folder (on storage every node sees)}"
GPUS_PER_NODE="${GPUS_PER_NODE:-8}"
mkdir -p "$OUT"

# vLLM: one replica per GPU of every node with the `rollout` resource, pinned node by node; the first node
# serves the API, the rest join it headless. Writes the endpoint's URL for the config below.
python - "$MODEL" "$GPUS_PER_NODE" "$OUT/vllm-endpoint" <<'PY' &
import os, subprocess, sys
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

model, per_node, endpoint = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ray.init(address="auto", namespace="leaf")
nodes = sorted((n for n in ray.nodes() if n["Alive"] and n["Resources"].get("rollout")), key=lambda n: n["NodeManagerAddress"])
if not nodes:
    sys.exit("no node with the `rollout` resource in this cluster")
head_ip = nodes[0]["NodeManagerAddress"]
with open(endpoint, "w") as f:
    f.write(f"http://{head_ip}:8000\n")

@ray.remote(num_gpus=per_node, resources={"rollout": 1})
def serve(rank: int) -> int:
    env = {**os.environ, "MODEL": model, "GPUS": ",".join(map(str, range(per_node))), "DP_TOTAL": str(per_node * len(nodes)),
           "DP_ADDRESS": head_ip, "DP_START_RANK": str(rank * per_node)}
    return subprocess.call(["bash", "training/launch/vllm-serve.sh"], env=env)

tasks = [serve.options(name=f"vllm replicas {k * per_node}-{(k + 1) * per_node - 1}",
                       scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(k)
         for k, n in enumerate(nodes)]
sys.exit(max(ray.get(tasks)))
PY
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null || true' EXIT
for _ in $(seq 120); do [[ -s "$OUT/vllm-endpoint" ]] && break; sleep 1; done
ENDPOINT=$(cat "$OUT/vllm-endpoint")
for _ in $(seq 1800); do curl -sf "$ENDPOINT/health" >/dev/null && break; sleep 2; done

# The config as it runs on Ray: the executor sections point at this cluster (jobs needing Docker go to the
# `sandbox` nodes, rollout actors too), the server is the endpoint above, and the per-chunk accelerate
# launch is dropped: the RL trainer is this one driver process on the head's GPU.
RAY_CONFIG="$OUT/ray-iteration-$N.yaml"
python training/launch/ray_config.py "$CONFIG" "$RAY_CONFIG" "$ENDPOINT"
leaf train --iteration "$N" --config "$RAY_CONFIG" --out "$OUT"
