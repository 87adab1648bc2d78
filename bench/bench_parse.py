"""Benchmark the reply parser's schema-aware walk: a Write full of call markup against a plain one.

    python bench/bench_parse.py [--kb 50] [--repeat 7]

Each reply is a Qwen3-Coder Write of about `--kb` KB. "markup" is this repository's own parser tests repeated
(every `</parameter>` in it must be checked and skipped), "plain" is numbered lines of code. Both are timed
against `json.loads` of the same call written as Hermes JSON (the cheapest a parser of that call can be) and
printed as ratios, best of `--repeat`, the two in turns so background load falls on both alike.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Callable

from leaf_cli.llm.parse import parse_reply
from leaf_cli.tools import tool_schemas

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "llm" / "test_parse_peers.py"


def xml_write(content: str) -> str:
    return (f"<tool_call>\n<function=Write>\n<parameter=file_path>\na.py\n</parameter>\n<parameter=content>\n"
            f"{content}\n</parameter>\n</function>\n</tool_call>")


def best(fn: Callable[[], object], repeat: int, loops: int = 20) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        times.append((time.perf_counter() - start) / loops)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    size = args.kb * 1024
    fixture = FIXTURE.read_text(encoding="utf-8")
    contents = {"markup": (fixture * (size // len(fixture) + 1))[:size],
                "plain": "\n".join(f"line_{i} = {i * 7}" for i in range(size // 14))[:size]}
    tools = tool_schemas()
    for name, content in contents.items():
        reply = xml_write(content)
        assert parse_reply(reply, tools).tool_calls[0].arguments["content"] == content
        hermes = json.dumps({"name": "Write", "arguments": {"file_path": "a.py", "content": content}})
        xml_time = best(lambda: parse_reply(reply, tools), args.repeat)
        json_time = best(lambda: json.loads(hermes), args.repeat)
        print(f"{name:7s} {len(content) // 1024:4d} KB  parse_reply / json.loads = {xml_time / json_time:5.2f}")


if __name__ == "__main__":
    main()
