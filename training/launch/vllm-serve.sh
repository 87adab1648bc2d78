#!/usr/bin/env bash
# The rollout engine of a GPU run: one OpenAI-compatible vLLM server, data-parallel over the rollout GPUs.
# The RL config points at it (rollout.engine: server, rollout.server.base_url) and the trainer writes new
# weights to rollout.server.weights_dir after every step for the server to reload (leaf_train.rl.server_engine).
#   GPUS=4,5,6,7 training/launch/vllm-serve.sh                     # FrogNano-4B-2609 from the Hugging Face hub
#   GPUS=4,5,6,7 MODEL=runs/frognano/iteration-1/leaf-iter1 ...     # a later iteration's starting checkpoint
# Assumes: a vLLM release that serves `qwen3_5` (Qwen3.5's hybrid Gated DeltaNet / gated attention) and has
# --logprobs-mode; the safetensors checkpoint (microsoft/FrogNano-4B-2609, MIT, a Qwen3.5-4B fine-tune; or
# Qwen/Qwen3.5-4B) in the hub cache or a local folder; the 80 GB GPUs training/README.md sizes the run for.
set -euo pipefail
MODEL="${MODEL:-microsoft/FrogNano-4B-2609}"
GPUS="${GPUS:-4,5,6,7}"
DP=$(awk -F, '{print NF}' <<<"$GPUS")
export CUDA_VISIBLE_DEVICES="$GPUS"
# Across rollout nodes (ray-iteration.sh sets these): one data-parallel group of DP_TOTAL replicas, this node's
# DP of them starting at rank DP_START_RANK; the node at DP_ADDRESS serves the API, the others run headless.
MULTI=()
if [[ -n "${DP_TOTAL:-}" ]]; then
  MULTI=(--data-parallel-size-local "$DP" --data-parallel-address "${DP_ADDRESS:?}" --data-parallel-rpc-port
         "${DP_RPC_PORT:-13345}" --data-parallel-start-rank "${DP_START_RANK:-0}")
  [[ "${DP_START_RANK:-0}" != 0 ]] && MULTI+=(--headless)
  DP="$DP_TOTAL"
fi
# A 4B model fits one GPU (8 GB of bf16 weights), so every rollout GPU holds a full replica (data parallel,
# no tensor parallelism); the rest of each GPU's memory is KV cache for concurrent episodes.
# --logprobs-mode processed_logprobs: the returned logprobs are those of the distribution the token was
# sampled from (after temperature, top-k, top-p), which the trainer uses as the behaviour policy μ; vLLM's
# default returns the raw model's.
exec vllm serve "$MODEL" \
  --served-model-name policy \
  --host 0.0.0.0 --port "${PORT:-8000}" \
  --data-parallel-size "$DP" "${MULTI[@]}" \
  --dtype bfloat16 \
  --max-model-len "${MAX_MODEL_LEN:-65536}" \
  --gpu-memory-utilization "${GPU_MEM:-0.90}" \
  --enable-prefix-caching \
  --max-num-seqs "${MAX_SEQS:-128}" \
  --return-tokens-as-token-ids \
  --logprobs-mode processed_logprobs \
  --enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3
