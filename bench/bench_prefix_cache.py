"""Time to the first generated token of a `leaf fix`, with the persistent prefix cache and without it.

Each run is a fresh engine (a new process's `leaf fix`: leaf's system prompt, the five tool schemas, an issue
text), timed from `complete()` to the first token; the model load is excluded and reported apart. "cache"
loads the saved state after the system turn (written once, before the timed runs); "fresh" evaluates it.
The runs alternate fresh, cache, fresh, cache..., and the medians and spreads (min-max) are printed with the
ratio cache / fresh and the prompt tokens each evaluated.

Run: python bench/bench_prefix_cache.py [MODEL.gguf ...]   (default: SmolLM2, then the tiny Qwen3.5 fixture)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_prefill import model_path, tiny_qwen35  # noqa: E402

from leaf_cli.agent.prompt import SYSTEM_PROMPT  # noqa: E402
from leaf_cli.llm.engine import Sampling  # noqa: E402
from leaf_cli.llm.llamacpp import LlamaCppEngine  # noqa: E402
from leaf_cli.llm.messages import Conversation, Message  # noqa: E402
from leaf_cli.tools import tool_schemas  # noqa: E402

REPEATS = 5
ISSUE = "add() in calc.py subtracts instead of adding; fix it and run the tests."


def first_token(path: Path, cache: Path | None) -> tuple[float, float, int]:
    """(load seconds, seconds to the first generated token, prompt tokens evaluated) of a fresh engine."""
    started = time.perf_counter()
    engine = LlamaCppEngine(path, n_ctx=8192, prefix_cache=cache)
    loaded = time.perf_counter()
    conversation = Conversation(messages=[Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=ISSUE)])
    engine.complete(conversation, tool_schemas(), Sampling(temperature=0.0, max_tokens=1))
    if cache is not None and engine.last_prefix != "hit":
        raise SystemExit(f"the prefix cache missed ({engine.last_prefix}): the measurement would be wrong")
    return loaded - started, time.perf_counter() - loaded, engine.last_evaluated


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s ({min(values):.3f}-{max(values):.3f})"


def bench(path: Path) -> None:
    cache = Path(tempfile.mkdtemp(prefix="leaf-bench-prefix-"))
    LlamaCppEngine(path, n_ctx=8192, prefix_cache=cache).complete(
        Conversation(messages=[Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=ISSUE)]),
        tool_schemas(), Sampling(temperature=0.0, max_tokens=1))  # writes the entry
    runs: dict[str, list[tuple[float, float, int]]] = {"fresh": [], "cache": []}
    for _ in range(REPEATS):
        runs["fresh"].append(first_token(path, None))
        runs["cache"].append(first_token(path, cache))
    entry = sum(p.stat().st_size for p in cache.glob("*.state"))
    print(f"\n== {path.name}: time to the first token, model load excluded ({REPEATS} runs each, interleaved) ==")
    for name, values in runs.items():
        print(f"{name:6} load {spread([v[0] for v in values])}  first token {spread([v[1] for v in values])}  "
              f"prompt tokens evaluated {values[0][2]}")
    ratio = statistics.median(v[1] for v in runs["cache"]) / statistics.median(v[1] for v in runs["fresh"])
    print(f"cache / fresh (first token): {ratio:.3f}   saved state on disk: {entry / 1e6:.1f} MB")


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]] or [model_path(), tiny_qwen35()]
    for path in paths:
        bench(path)


if __name__ == "__main__":
    main()
