"""Versioned prompt files for the llm generator and refiner: training/prompts/<name>.v<N>.md (Jinja2).

The newest version is used unless `LEAF_TASKPILOT_PROMPT_<NAME>` pins one (e.g. `=v1`); the version used
is recorded with every llm candidate, so a task file says which prompt wrote it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# `leaf_train/prompts` links to training/prompts, so the files ship inside the wheel as package data.
PROMPT_DIR = Path(__file__).resolve().parents[1] / "prompts"


def find(name: str) -> Path:
    """The prompt file for `name` (newest version, or the pinned one)."""
    pinned = os.environ.get(f"LEAF_TASKPILOT_PROMPT_{name.upper()}")
    versions = sorted(((int(m.group(1)), p) for p in PROMPT_DIR.glob(f"{name}.v*.md")
                       if (m := re.fullmatch(rf"{re.escape(name)}\.v(\d+)\.md", p.name))), reverse=True)
    if not versions:
        raise FileNotFoundError(f"no prompt {name}.v*.md in {PROMPT_DIR}")
    if pinned:
        for number, path in versions:
            if f"v{number}" == pinned:
                return path
        raise FileNotFoundError(f"prompt {name} has no version {pinned} in {PROMPT_DIR}")
    return versions[0][1]


def version(name: str) -> str:
    return find(name).name.removesuffix(".md").rsplit(".", 1)[-1]


def render(name: str, **values: object) -> str:
    import jinja2

    template = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
    return template.from_string(find(name).read_text(encoding="utf-8")).render(**values).strip()
