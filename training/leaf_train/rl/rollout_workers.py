"""Rollout workers behind the executor seam (`leaf_cli.executor`): where the RL run's groups are sampled.

Local (the default): one in-process engine, a copy of the policy, shared by `rollout.workers` threads,
exactly the single-machine run. Ray: `rollout.workers` actors, each holding its own engine on its node (the
transformers engine, on CPU in the tests; on a GPU node a server-engine client of that node's vLLM/SGLang
replica) and its own group runner. Either way the scheduler's threads pull groups from the workers, one
thread per worker, under the same staleness bound, and every weight update reaches every worker with its
policy version, which tags the tokens it samples from then on.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

from leaf_cli.executor import Executor, Needs, Worker
from leaf_train.rl.config import RLConfig
from leaf_train.rl.environment import Environment
from leaf_train.rl.rollout import GroupRunner
from leaf_train.rl.samples import TokenSample


class RolloutWorker:
    """What one worker holds: an engine and a group runner over it."""

    def __init__(self, engine: Any, runner: GroupRunner) -> None:
        self.engine, self.runner = engine, runner

    def run_group(self, group: int) -> list[TokenSample]:
        return self.runner.run_group(group)

    def load_weights(self, state: dict[str, Any] | None, version: int) -> None:
        """New weights and their version; None = the server already serves them (the driver reloaded it)."""
        if state is None:
            with self.engine.lock:
                self.engine.policy_version = version
        else:
            self.engine.load_weights(state, version)

    def policy_version(self) -> int:
        return int(self.engine.policy_version)


def rollout_engine(cfg: RLConfig, model: Any, tokenizer: Any, accelerator: Any = None) -> Any:
    """The engine that samples rollouts of `model`: a server engine (weights pushed by reload) or the
    in-process transformers engine over `model` itself (the caller passes a frozen copy)."""
    from leaf_cli.llm.transformers_engine import TransformersEngine, template_renderer, tokenizer_renderer

    render = tokenizer_renderer(tokenizer) if cfg.rollout.template == "tokenizer" else template_renderer(tokenizer)
    if cfg.rollout.engine == "server":
        from leaf_train.rl.server_engine import ServerEngine

        engine = ServerEngine(cfg.rollout.server, tokenizer, render=render, context_limit=cfg.rollout.max_context,
                              accelerator=accelerator)
        engine.attach(model)
        return engine
    return TransformersEngine(model, tokenizer, name="policy", context_limit=cfg.rollout.max_context,
                              render=render, max_batch=cfg.rollout.batch)


def frozen(model: Any) -> Any:
    model = model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def remote_worker(cfg: RLConfig, env: Environment, trajectories: Path | None) -> RolloutWorker:
    """Built inside a Ray actor: the run's starting policy loaded on this node (the driver broadcasts the
    current weights before the first group), a frozen rollout copy of it, the environment it was handed."""
    import torch

    from leaf_train.rl.model import load_policy, resolve_checkpoint

    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    spec = cfg.model.model_copy(update={"gradient_checkpointing": False})
    model, tokenizer = load_policy(spec, resolve_checkpoint(cfg.model))
    engine = rollout_engine(cfg, frozen(model), tokenizer)
    return RolloutWorker(engine, GroupRunner(engine, cfg.rollout, env, trajectories))


@dataclass
class Rollouts:
    """The scheduler's view: one group function per worker thread, and the weight update."""

    run_groups: list[Callable[[int], list[TokenSample]]]
    update: Callable[[dict[str, Any], int], None]
    close: Callable[[], None]


def start_rollouts(cfg: RLConfig, executor: Executor, env: Environment, trajectories: Path | None,
                   local_engine: Callable[[], Any]) -> Rollouts:
    """`rollout.workers` workers on `executor`. `local_engine()` builds the in-process engine (local runs;
    on Ray with a server engine, the driver's copy that reloads the server once per update)."""
    n = max(1, cfg.rollout.workers)
    pusher = None
    if executor.name == "local":
        make: Callable[[], RolloutWorker] = lambda: _local_worker(local_engine(), cfg, env, trajectories)  # noqa: E731
    else:
        make = partial(remote_worker, cfg, env, trajectories)
        pusher = local_engine() if cfg.rollout.engine == "server" else None
    needs = Needs(cpus=executor.cfg.cpus_per_job, gpus=executor.cfg.gpus_per_worker,
                  resources=tuple(sorted(executor.cfg.worker_resources.items())))
    workers: list[Worker] = executor.pool(make, n, "rollout", needs)

    def update(state: dict[str, Any], version: int) -> None:
        if pusher is not None:  # one reload of the shared server; the actors learn the version only
            pusher.load_weights(state, version)
            executor.broadcast(workers, "load_weights", None, version)
        else:
            executor.broadcast(workers, "load_weights", state, version)

    return Rollouts([partial(w.call, "run_group") for w in workers], update, lambda: executor.release(workers))


def _local_worker(engine: Any, cfg: RLConfig, env: Environment, trajectories: Path | None) -> RolloutWorker:
    return RolloutWorker(engine, GroupRunner(engine, cfg.rollout, env, trajectories))
