"""A rollout engine on a vLLM or SGLang server (GPU path): token ids in, token ids and logprobs out.

It keeps the same append-only token log as the in-process engine (it *is* one, with sampling done over
HTTP): the prompt is sent as token ids, never as text, and the sampled ids and their log-probabilities come
back. After each training step the trainer writes the weights to `weights_dir` and asks the server to
reload them. Needs a GPU server; the CPU test suite skips it.

Behaviour log-probabilities must be those of the sampling distribution: vLLM returns them only when served
with `--logprobs-mode processed_logprobs` (training/launch/vllm-serve.sh; its default is the raw model's),
and every sampling knob is sent explicitly so the server's generation_config defaults (Qwen3.5: top_k 20,
top_p 0.95) never apply silently. SGLang's `return_logprob` values are not verified here (no GPU).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from leaf_cli.llm.engine import EngineError, Sampling
from leaf_cli.llm.messages import Conversation
from leaf_cli.llm.transformers_engine import Render, TransformersEngine
from leaf_train.rl.config import ServerConfig

_NO_MODEL = type("NoModel", (), {"generation_config": None})()


class ServerEngine(TransformersEngine):
    def __init__(self, cfg: ServerConfig, tokenizer: Any, *, render: Render | None = None,
                 context_limit: int = 65_536, accelerator: Any = None) -> None:
        super().__init__(_NO_MODEL, tokenizer, name=f"{cfg.kind}:{cfg.model}", context_limit=context_limit,
                         render=render)
        import httpx

        self.cfg, self.accelerator = cfg, accelerator
        self.http = httpx.Client(base_url=cfg.base_url, timeout=cfg.timeout)

    def _sample(self, conv: Conversation, prompt: list[int], sampling: Sampling,
                budget: int) -> tuple[list[int], list[float], int]:
        if self.cfg.kind == "sglang":
            body = {"input_ids": prompt, "return_logprob": True, "sampling_params": {
                "max_new_tokens": budget, "temperature": sampling.temperature, "top_p": sampling.top_p,
                "top_k": sampling.top_k or -1, "stop_token_ids": self.stop_ids, "skip_special_tokens": False}}
            meta = self._post("/generate", body)["meta_info"]
            pairs = meta["output_token_logprobs"]  # [[logprob, token_id, text], ...]
            return [int(p[1]) for p in pairs], [float(p[0]) for p in pairs], int(meta.get("cached_tokens", 0))
        body = {"model": self.cfg.model, "prompt": prompt, "max_tokens": budget, "temperature": sampling.temperature,
                "top_p": sampling.top_p, "top_k": sampling.top_k or -1, "logprobs": 0,
                "return_tokens_as_token_ids": True, "skip_special_tokens": False,
                "stop_token_ids": self.stop_ids, "include_stop_str_in_output": True}
        choice = self._post("/v1/completions", body)["choices"][0]
        tokens = choice["logprobs"]["tokens"]  # "token_id:123" with return_tokens_as_token_ids
        ids = [int(t.split(":", 1)[1]) for t in tokens]
        return ids, [float(x) for x in choice["logprobs"]["token_logprobs"]], 0

    def load_weights(self, state_dict: dict[str, Any], version: int) -> None:
        """Write the new weights to `weights_dir` and ask the server to reload them from there."""
        if self.cfg.weights_dir is None:
            raise EngineError("rollout.server.weights_dir must name a folder the server can read")
        target = Path(self.cfg.weights_dir)
        with self.lock:
            model = self.accelerator.unwrap_model(self._trainer_model) if self.accelerator else self._trainer_model
            if self.accelerator is None or self.accelerator.is_main_process:
                model.save_pretrained(target, state_dict=state_dict)
                self.tokenizer.save_pretrained(target)
                if self.cfg.kind == "sglang":
                    self._post("/update_weights_from_disk", {"model_path": str(target)})
                else:  # vLLM: dev-mode RPC that reloads the weights from the model folder it was started on
                    self._post("/collective_rpc", {"method": "reload_weights"})
            if self.accelerator is not None:
                self.accelerator.wait_for_everyone()
            self.policy_version = version

    def attach(self, trainer_model: Any) -> None:
        """The model whose config and `save_pretrained` the weight files are written with."""
        self._trainer_model = trainer_model

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        try:
            response = self.http.post(path, json=body)
        except httpx.HTTPError as exc:
            raise EngineError(f"{self.cfg.base_url}{path}: {exc}") from exc
        if response.status_code != 200:
            raise EngineError(f"{self.cfg.base_url}{path}: HTTP {response.status_code}: {response.text[:300]}")
        return response.json()
