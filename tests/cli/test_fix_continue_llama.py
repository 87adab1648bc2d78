"""`leaf fix --continue` across processes on the real llama.cpp runtime with SmolLM2-135M.

A new process has no token cache: the reloaded conversation (messages only) is rendered once with the model's
own template, earlier assistant turns included, and later turns of the continued run evaluate only their new
tokens. SmolLM2 has no tool format of its own, so the runs use the tool grammar (--constrain-tools) and a task
that asks for a call, decoded greedily (--temperature 0) so the test does not rest on sampling luck.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leaf_cli.agent.trajectory import load

pytestmark = [pytest.mark.llama, pytest.mark.slow]  # two model processes: ~45 s of CPU, minutes on a busy box

FOLLOW_UP = "Call the Glob tool now. Reply with only a <tool_call> block."


def _fix(repo: Path, home: Path, *args: str) -> dict[str, Any]:
    """`leaf fix --json` as its own process (the point: nothing survives in memory between runs)."""
    env = {**os.environ, "HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "leaf_cli", "fix", "--json", "--model", "smollm2-135m",
                           "--constrain-tools", "--temperature", "0", *args],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert proc.stdout.count("\n") == 1, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_continue_rerenders_the_conversation_then_reuses_the_cache(git_repo: Path, smollm2_path: Path,
                                                                   tmp_path: Path) -> None:
    from leaf_cli.llm.increment import first_prompt
    from leaf_cli.llm.llamacpp import LlamaCppEngine
    from leaf_cli.tools import TOOLS, tool_schemas

    home = tmp_path / "home"
    home.mkdir()
    first = _fix(git_repo, home, "--max-turns", "1", FOLLOW_UP)  # a call in the history invites another
    second = _fix(git_repo, home, "--continue", "--max-turns", "2", FOLLOW_UP)

    assert second["messages"][:len(first["messages"])] == first["messages"]  # the same conversation, continued
    assert second["messages"][len(first["messages"])] == {"role": "user", "content": FOLLOW_UP}
    turns = second["usage"]["turns"]
    assert len(turns) >= 2, f"SmolLM2 made no tool call, so the continued run had one turn: {second['messages'][-1]}"
    assert first["usage"]["turns"][0]["cached_tokens"] == 0  # a new process starts with an empty context...
    # ...and the next one loads the system turn the first saved (the prefix cache), evaluating the rest
    assert 0 < turns[0]["cached_tokens"] < turns[0]["prompt_tokens"]
    for before, now in zip(turns, turns[1:]):
        # Everything up to the previous reply's last token is reused; only the new tail is evaluated.
        assert now["cached_tokens"] == before["prompt_tokens"] + before["completion_tokens"] - 1 > 0

    # The first prompt of the continued run is the template's rendering of the reloaded messages, earlier
    # assistant turns as the template writes them (not the tokens the first process sampled).
    engine = LlamaCppEngine(smollm2_path, n_ctx=512)
    traj = load(Path(second["trajectory"]))
    assert traj.token_log is not None
    reloaded = traj.messages[:len(first["messages"]) + 1]
    expected = first_prompt(engine.template.render_messages, reloaded, tool_schemas(TOOLS), enable_thinking=False)
    prefix = traj.token_log.ids[:turns[0]["prompt_tokens"]]
    assert engine.llm.detokenize(prefix, special=True).decode("utf-8") == expected
    assert traj.token_log.mask[:len(prefix)] == [0] * len(prefix)
