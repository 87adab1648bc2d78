"""Leaf's generation speed through the llama.cpp engine vs llama-cpp-python's own `Llama.generate` (target >= 0.95).

Same model, same Llama object, same prompt tokens, same sampling (temperature 0.6, top_p 0.95, top_k 20, min_p 0).
Decode rate only: tokens after the first divided by the time from the first token to the last, so prompt
evaluation (which leaf also skips when cached) does not enter. Runs alternate to share machine noise; medians.
Run: python bench/bench_generation.py [runs] [tokens]
"""

from __future__ import annotations

import statistics
import sys
import time

from bench_prefill import model_path

from leaf_cli.llm.engine import Sampling
from leaf_cli.llm.increment import first_prompt
from leaf_cli.llm.llamacpp import LlamaCppEngine
from leaf_cli.llm.messages import Conversation, Message


def conversation() -> Conversation:
    return Conversation(messages=[Message(role="system", content="You are a storyteller."),
                                  Message(role="user", content="Tell a long story about a lighthouse keeper.")])


def leaf_rate(engine: LlamaCppEngine, sampling: Sampling) -> tuple[float, int]:
    stamps: list[float] = []
    turn = engine.complete(conversation(), [], sampling, lambda kind, text: stamps.append(time.perf_counter()))
    end = time.perf_counter()
    n = turn.usage.completion_tokens
    return (n - 1) / (end - stamps[0]), n


def raw_rate(engine: LlamaCppEngine, prompt: list[int], sampling: Sampling) -> tuple[float, int]:
    llm = engine.llm
    stamps: list[float] = []
    for token in llm.generate(prompt, temp=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k,
                              min_p=sampling.min_p, repeat_penalty=1.0):
        stamps.append(time.perf_counter())
        if engine._is_end(token) or len(stamps) >= sampling.max_tokens:
            break
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), len(stamps)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 128
    engine = LlamaCppEngine(model_path(), n_ctx=2048)
    sampling = Sampling(max_tokens=tokens, seed=1)
    prompt = engine._tokenize(first_prompt(engine.template.render_messages, conversation().messages, [], True))
    leaf, raw = [], []
    for run in range(runs):
        leaf_tps, n_leaf = leaf_rate(engine, sampling)
        raw_tps, n_raw = raw_rate(engine, prompt, sampling)
        leaf.append(leaf_tps)
        raw.append(raw_tps)
        print(f"run {run + 1}: leaf {leaf_tps:6.1f} tok/s ({n_leaf} tokens)   llama.cpp raw {raw_tps:6.1f} tok/s ({n_raw} tokens)")
    ratio = statistics.median(leaf) / statistics.median(raw)
    print(f"median: leaf {statistics.median(leaf):.1f} tok/s, raw {statistics.median(raw):.1f} tok/s, "
          f"ratio {ratio:.3f} (target >= 0.95)")


if __name__ == "__main__":
    main()
