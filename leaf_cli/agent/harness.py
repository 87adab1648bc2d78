"""Named tool profiles ("harnesses"): which tools the model gets, its system prompt, and what ends an episode.

- `leaf` (the default): the five Leaf tools, the three-sentence prompt; a reply without a tool call ends it.
- `r2e`: the R2E-Gym / SWE-agent style profile for the harness ablation (the paper moves Qwen3.5-4B from
  8.3% under this style to 37.2% under Leaf): `file_editor`, `execute_bash`, `search` and an explicit
  `finish`; only `finish` ends the episode, so a model that never calls it runs to the turn limit.
Same engines, tasks and grading either way: only this profile changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from leaf_cli.agent.exits import ExitReason
from leaf_cli.agent.prompt import SYSTEM_PROMPT
from leaf_cli.errors import LeafError
from leaf_cli.tools import TOOLS, Tool
from leaf_cli.tools.r2e import R2E_TOOLS

R2E_SYSTEM_PROMPT = (
    "You are a programming agent working inside a code repository to resolve the issue described by the user. "
    "You act only through function calls, and the result of each call comes back to you as the next message.\n"
    "Work step by step:\n"
    "1. Explore the repository to find the code related to the issue.\n"
    "2. Write a small script that reproduces the problem and run it with execute_bash.\n"
    "3. Edit the source code to fix the problem; do not change the existing tests.\n"
    "4. Run your script again, and the relevant tests, to confirm the fix; think about edge cases.\n"
    "5. When you are done, call `finish` with command `submit`.\n"
    "Make one function call per reply. The task only ends when you call `finish`."
)


class Harness(BaseModel):
    """A tool profile: everything `run_episode` needs to switch harness (`tools`, `system_prompt`, `final_tool`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    name: str
    tools: tuple[Tool, ...]
    system_prompt: str
    final_tool: str | None = None
    description: str = ""

    def episode_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `run_episode(...)`."""
        return {"tools": self.tools, "system_prompt": self.system_prompt, "final_tool": self.final_tool}


HARNESSES: dict[str, Harness] = {
    "leaf": Harness(name="leaf", tools=TOOLS, system_prompt=SYSTEM_PROMPT, final_tool=None,
                    description="Read, Write, Edit, Glob, Bash; a reply without a tool call is the final answer."),
    "r2e": Harness(name="r2e", tools=R2E_TOOLS, system_prompt=R2E_SYSTEM_PROMPT, final_tool="finish",
                   description="file_editor, execute_bash, search, finish (R2E-Gym / SWE-agent style); only finish ends it."),
}
DEFAULT_HARNESS = "leaf"


def get_harness(name: str | None) -> Harness:
    """The harness called `name` (None: the default); an unknown name lists the valid ones."""
    key = (name or DEFAULT_HARNESS).strip().lower()
    if key not in HARNESSES:
        raise LeafError(f"unknown harness {name!r}; choose one of: {', '.join(HARNESSES)}")
    return HARNESSES[key]


def turn_limit_summary(results: Iterable[Mapping[str, Any] | BaseModel]) -> dict[str, Any]:
    """How many episodes ran out of turns without finishing (the paper saw 96% for Qwen3.5-4B under R2E-Gym).

    `results` are results.jsonl rows (dicts or models with `exit_reason`); rows whose agent never ran
    (exit_reason None, e.g. an infrastructure failure before the episode) are not episodes and are left out.
    Returns `{"episodes", "turn_limit", "turn_limit_share"}` for summary.json.
    """
    reasons = []
    for row in results:
        reason = row.get("exit_reason") if isinstance(row, Mapping) else getattr(row, "exit_reason", None)
        if reason is not None:
            reasons.append(str(reason))
    hit = sum(r == ExitReason.MAX_TURNS.value for r in reasons)
    return {"episodes": len(reasons), "turn_limit": hit,
            "turn_limit_share": round(hit / len(reasons), 4) if reasons else None}
