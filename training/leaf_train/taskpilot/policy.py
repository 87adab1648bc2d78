"""The policy being calibrated: an engine spec, turned into a fresh engine per rollout.

Specs:
  scripted:P0,P1,P2,P3,P4   a SCRIPTED ORACLE, not a model: it knows the gold patch and applies it (one Bash
                            `git apply` through the real harness) with probability P[level] of the
                            statement's specificity level, else gives up. Deterministic per (seed, task,
                            statement, rollout). It exists so the whole funnel runs with no model at all.
  replay:FILE               leaf's ReplayEngine (the same scripted turns for every rollout)
  openai:MODEL@URL          an OpenAI-compatible server (vLLM, SGLang, llama-server, llama_cpp.server)
  llama:PATH.gguf           llama.cpp in-process (one engine per worker thread: it holds a context of
                            `n_ctx` tokens, default the model's training context)
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from pathlib import Path
from typing import Any, Callable

from leaf_cli.errors import LeafError
from leaf_cli.llm.engine import Engine, OnDelta, Sampling
from leaf_cli.llm.messages import AssistantTurn, Conversation, ToolCall
from leaf_cli.tasks import Task

EngineFactory = Callable[[], Engine]


def wilson(solved: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval for solved/n (95% by default); (0, 1) when n = 0."""
    if n == 0:
        return 0.0, 1.0
    p = solved / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


class ScriptedOracle:
    """A deterministic stand-in for a policy (see the module docstring): solves with probability p."""

    def __init__(self, gold_patch: str, p: float, key: str) -> None:
        self.name = f"scripted-oracle(p={p:.2f})"
        self.context_limit = 1 << 20
        self.solves = _draw(key) < p
        self.patch = gold_patch if gold_patch.endswith("\n") else gold_patch + "\n"
        self.turn = 0

    def complete(self, conversation: Conversation, tools: list[dict[str, Any]], sampling: Sampling,
                 on_delta: OnDelta | None = None) -> AssistantTurn:
        self.turn += 1
        if self.solves and self.turn == 1:
            command = f"git apply --whitespace=nowarn <<'LEAF_GOLD_EOF'\n{self.patch}LEAF_GOLD_EOF"
            call = ToolCall(id="call_1", name="Bash", arguments={"command": command, "description": "apply the fix"})
            return AssistantTurn(content="", tool_calls=[call], raw_text="", finish_reason="stop")
        text = "Fixed." if self.solves else "I could not find the cause of the problem."
        return AssistantTurn(content=text, raw_text=text, finish_reason="stop")


def _draw(key: str) -> float:
    """A uniform [0, 1) number from a key: reproducible across runs, workers and resumes."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) / float(1 << 48)


class ScriptedFactory:
    """The oracle's engines for one task. The eval runner asks `for_attempt(k)`: rollout k draws the same
    outcome in any order, on any worker (threads or Ray tasks), and after a resume; a plain call numbers
    the rollouts in call order from `first`."""

    def __init__(self, patch: str, p: float, key: str, first: int = 0) -> None:
        self.patch, self.p, self.key = patch, p, key
        self.counter = itertools.count(first)  # next() on it is atomic under the GIL

    def for_attempt(self, attempt: int) -> Engine:
        return ScriptedOracle(self.patch, self.p, f"{self.key}:{attempt}")

    def __call__(self) -> Engine:
        return self.for_attempt(next(self.counter))

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "counter"}  # a copy elsewhere uses for_attempt

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, counter=itertools.count(0))


class Policy:
    """Parses a spec once; `factory(task, level, seed)` gives the engine factory for one task's rollouts."""

    def __init__(self, spec: str, n_ctx: int | None = None) -> None:
        self.spec, self.n_ctx = spec, n_ctx
        self.kind, _, self.arg = spec.partition(":")
        self._local = threading.local()
        if self.kind == "scripted":
            try:
                self.table = [float(x) for x in self.arg.split(",")]
            except ValueError:
                raise LeafError(f"bad policy {spec!r}: write scripted:P0,P1,... (solve probability per level)") from None
            if not self.table or not all(0.0 <= p <= 1.0 for p in self.table):
                raise LeafError(f"bad policy {spec!r}: probabilities must lie in [0, 1]")
        elif self.kind == "replay":
            if not Path(self.arg).is_file():
                raise LeafError(f"bad policy {spec!r}: replay file not found")
        elif self.kind == "openai":
            model, sep, url = self.arg.partition("@")
            if not sep or not url:
                raise LeafError(f"bad policy {spec!r}: write openai:MODEL@http://host:port/v1")
        elif self.kind == "llama":
            if not Path(self.arg).is_file():
                raise LeafError(f"bad policy {spec!r}: GGUF file not found")
        else:
            raise LeafError(f"unknown policy {spec!r}; use scripted:P0,..., replay:FILE, openai:MODEL@URL or llama:PATH")

    @property
    def name(self) -> str:
        return self.spec

    def __getstate__(self) -> dict[str, Any]:
        """A copy sent to another process (a Ray worker) opens its own engines there."""
        return {k: v for k, v in self.__dict__.items() if k != "_local"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _local=threading.local())

    def factory(self, task: Task, level: int | None, seed: int, first_rollout: int = 0) -> EngineFactory:
        """Engines for the rollouts of `task`, numbered from `first_rollout` (so a resumed run draws the
        same oracle outcomes as an uninterrupted one)."""
        if self.kind == "scripted":
            index = len(self.table) // 2 if level is None else min(level, len(self.table) - 1)
            statement = hashlib.sha256(task.problem_statement.encode()).hexdigest()[:12]
            return ScriptedFactory(task.patch, self.table[index], f"{seed}:{task.instance_id}:{statement}", first_rollout)
        return self._model_factory()

    def _model_factory(self) -> EngineFactory:
        if self.kind == "replay":
            from leaf_cli.llm.replay import ReplayEngine

            return lambda: ReplayEngine.from_file(Path(self.arg))
        if self.kind == "openai":
            from leaf_cli.llm.openai import OpenAIEngine

            model, _, url = self.arg.partition("@")
            return lambda: OpenAIEngine(url, model or None)
        return self._llama

    def _llama(self) -> Engine:
        """One in-process llama.cpp engine per worker thread, reused across that thread's rollouts."""
        engine = getattr(self._local, "engine", None)
        if engine is None:
            from leaf_cli.llm.llamacpp import LlamaCppEngine

            engine = self._local.engine = LlamaCppEngine(self.arg, n_ctx=self.n_ctx)
        return engine
