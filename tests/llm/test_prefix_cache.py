"""The persistent prefix cache: the state after the system turn saved once, loaded by later engines.

Each test compares against an engine without the cache (the reference output), on SmolLM2 (attention only)
and on the tiny Qwen3.5 (hybrid: the recurrent state must come back too), and checks that every way a saved
state could be wrong for the run (other tools, another system prompt, a changed model file, a corrupt,
truncated or misplaced file) leads to a fresh evaluation with the same output.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from leaf_cli.llm.engine import Sampling
from leaf_cli.llm.messages import Conversation, Message
from leaf_cli.llm.prefix_cache import PrefixCache
from leaf_cli.tools import tool_schemas

pytestmark = pytest.mark.llama

GREEDY = Sampling(temperature=0.0, max_tokens=12)


def tools(names: tuple[str, ...] = ("Read", "Bash")) -> list[dict[str, Any]]:
    return [t for t in tool_schemas() if t["function"]["name"] in names]


def conv(system: str = "You are a coding agent.") -> Conversation:
    return Conversation(messages=[Message(role="system", content=system),
                                  Message(role="user", content="Fix the bug in calc.py: add subtracts.")])


def engine(path: Path, cache: Path | None, **options: Any) -> Any:
    from leaf_cli.llm.llamacpp import LlamaCppEngine

    return LlamaCppEngine(path, n_ctx=2048, prefix_cache=cache, **options)


def two_turns(e: Any, schemas: list[dict[str, Any]], system: str = "You are a coding agent.") -> list[list[int]]:
    """Greedy token ids of a first reply and of the reply after a tool result."""
    c = conv(system)
    first = e.complete(c, schemas, GREEDY)
    c.append(first.to_message())
    c.append(Message(role="tool", content="calc.py\n1. def add(a, b):\n2.     return a - b", tool_call_id="c", name="Read"))
    return [first.token_ids, e.complete(c, schemas, GREEDY).token_ids]


@pytest.fixture(params=["smollm2", "tiny_qwen35"])
def model(request: pytest.FixtureRequest) -> Path:
    return request.getfixturevalue("smollm2_path" if request.param == "smollm2" else "tiny_qwen35_gguf")


def test_a_loaded_prefix_gives_the_same_greedy_output(model: Path, tmp_path: Path) -> None:
    reference = two_turns(engine(model, None), tools())
    cold = engine(model, tmp_path)
    assert two_turns(cold, tools()) == reference
    assert cold.last_prefix == "miss" and len(list(tmp_path.glob("*.state"))) == 1
    warm = engine(model, tmp_path)
    c = conv()
    reply = warm.complete(c, tools(), GREEDY)
    assert warm.last_prefix == "hit"
    assert reply.usage.cached_tokens > 0 and warm.last_evaluated == reply.usage.prompt_tokens - reply.usage.cached_tokens
    assert reply.token_ids == reference[0]
    assert two_turns(engine(model, tmp_path), tools()) == reference  # and the turn after it


def test_other_tools_or_system_prompt_are_a_fresh_evaluation(smollm2_path: Path, tmp_path: Path) -> None:
    two_turns(engine(smollm2_path, tmp_path), tools())
    for schemas, system in ((tools(("Read", "Bash", "Edit")), "You are a coding agent."),
                            (tools(), "You are a careful coding agent.")):
        e = engine(smollm2_path, tmp_path)
        assert two_turns(e, schemas, system) == two_turns(engine(smollm2_path, None), schemas, system)
        assert e.last_prefix == "miss"
    assert len(list(tmp_path.glob("*.state"))) == 3


def test_a_changed_model_file_is_a_fresh_evaluation(smollm2_path: Path, tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    shutil.copyfile(smollm2_path, model)
    cache = tmp_path / "cache"
    reference = two_turns(engine(model, cache), tools())
    stat = model.stat()
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # as a re-download would leave it
    e = engine(model, cache)
    assert two_turns(e, tools()) == reference and e.last_prefix == "miss"
    assert len(list(cache.glob("*.state"))) == 2


@pytest.mark.parametrize("damage", ["flip", "truncate", "other_prefix"])
def test_a_damaged_or_misplaced_file_is_a_fresh_evaluation(model: Path, tmp_path: Path, damage: str) -> None:
    reference = two_turns(engine(model, tmp_path), tools())
    [entry] = tmp_path.glob("*.state")
    if damage == "flip":
        data = bytearray(entry.read_bytes())
        data[-100] ^= 0xFF  # inside the state itself
        entry.write_bytes(bytes(data))
    elif damage == "truncate":
        entry.write_bytes(entry.read_bytes()[:-4096])
    else:  # a valid entry of another system prompt under this prefix's name
        other = tmp_path / "other"
        two_turns(engine(model, other), tools(), "You are a careful coding agent.")
        [foreign] = other.glob("*.state")
        shutil.copyfile(foreign, entry)
    e = engine(model, tmp_path)
    assert two_turns(e, tools()) == reference
    assert e.last_prefix == "miss" and e.prefix_cache.misses == 1
    e2 = engine(model, tmp_path)  # the damaged entry was replaced by a good one
    assert two_turns(e2, tools()) == reference and e2.last_prefix == "hit"


def test_the_cache_folder_stays_within_its_budget(smollm2_path: Path, tmp_path: Path) -> None:
    e = engine(smollm2_path, tmp_path)
    two_turns(e, tools())
    [first] = tmp_path.glob("*.state")
    size = first.stat().st_size
    budget_mb = -(-int(size * 1.5) // (1 << 20))  # room for one entry, not two
    e = engine(smollm2_path, tmp_path, prefix_cache_mb=budget_mb)
    two_turns(e, tools(), "You are a careful coding agent.")
    entries = list(tmp_path.glob("*.state"))
    assert len(entries) == 1 and entries[0] != first  # the least recently used went
    assert sum(p.stat().st_size for p in entries) <= budget_mb << 20


def test_lru_order_and_atomic_writes(tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path, max_bytes=3500, context={"model": "m"})  # three ~1 kB entries fit, four do not
    for i, tokens in enumerate(([1, 2], [3, 4], [5, 6])):
        assert cache.save(tokens, bytearray([i]) * 900, 900) is not None
        os.utime(cache.path(tokens), ns=(i * 10**9, i * 10**9))
    assert cache.load([1, 2]) == bytearray([0]) * 900  # a hit makes it the most recently used
    cache.save([7, 8], bytearray(900), 900)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(cache.path(t).name for t in ([1, 2], [5, 6], [7, 8]))
    assert cache.load([3, 4]) is None and not list(tmp_path.glob(".tmp-*"))
    assert cache.save([9], bytearray(4000), 4000) is None  # larger than the whole budget: not written
