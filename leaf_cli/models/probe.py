"""`python -m leaf_cli.models.probe MODEL.gguf`: load a model the way leaf does and run it briefly.

`leaf doctor` runs this in a child process, so that a runtime that crashes on this CPU (SIGILL from
instructions the CPU advertises but faults on, rc 132) is reported instead of killing leaf. The prompt is a
couple of hundred tokens so that batched prompt evaluation, where the AMX fault happened, is exercised.
Prints one JSON line: load seconds, prompt tokens, prompt and generation speed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

PROMPT = " ".join(f"Line {i}: the quick brown fox jumps over the lazy dog." for i in range(16))


def probe(path: Path, n_ctx: int = 1024, generate: int = 8) -> dict[str, float | int]:
    from leaf_cli.llm.llama_runtime import load_llama

    started = time.perf_counter()
    llm, _info = load_llama(path, n_ctx=n_ctx)
    loaded = time.perf_counter()
    tokens = llm.tokenize(PROMPT.encode(), add_bos=True)[: n_ctx - generate - 1]
    llm.eval(tokens)
    evaluated = time.perf_counter()
    out = llm.create_completion(tokens, max_tokens=generate, temperature=0.0)
    done = time.perf_counter()
    made = int(out["usage"]["completion_tokens"])
    return {
        "load_s": round(loaded - started, 3),
        "prompt_tokens": len(tokens),
        "prompt_tok_s": round(len(tokens) / max(evaluated - loaded, 1e-9), 1),
        "generated": made,
        "gen_tok_s": round(made / max(done - evaluated, 1e-9), 1),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m leaf_cli.models.probe MODEL.gguf", file=sys.stderr)
        return 2
    print(json.dumps(probe(Path(argv[0]))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
