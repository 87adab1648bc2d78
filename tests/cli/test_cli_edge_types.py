"""The CLI edge's types: `leaf fix`'s session and `leaf chat` annotate with real types, imported under
TYPE_CHECKING only, so every annotation resolves to a real class while `--help` still imports nothing below
the CLI."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import typing
from pathlib import Path
from types import ModuleType

import pytest

from leaf_cli.cli import chat, fix_session

ROOT = Path(__file__).resolve().parents[2]
EDGE = (fix_session, chat)


def type_only_names(module: ModuleType) -> dict[str, object]:
    """The names the module's `if TYPE_CHECKING:` block binds, by running that block as a type checker reads it."""
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    blocks = [n for n in tree.body if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING"]
    assert len(blocks) == 1, f"{module.__name__}: one TYPE_CHECKING block expected"
    namespace: dict[str, object] = {}
    exec(compile(ast.Module(body=blocks[0].body, type_ignores=[]), module.__file__ or "", "exec"), namespace)
    return namespace


def annotated(module: ModuleType) -> list[object]:
    """The module's own functions, classes and methods (what carries annotations)."""
    found: list[object] = []
    for value in vars(module).values():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(value):
            found.append(value)
            found.extend(v for v in vars(value).values() if inspect.isfunction(v))
        elif inspect.isfunction(value):
            found.append(value)
    return found


@pytest.mark.parametrize("module", EDGE, ids=lambda m: m.__name__)
def test_every_annotation_resolves_to_a_real_type(module: ModuleType) -> None:
    names = {**vars(module), **type_only_names(module)}
    resolved = 0
    for item in annotated(module):
        hints = typing.get_type_hints(item, globalns=names, localns=names)  # NameError on a stale import
        assert typing.Any not in hints.values(), f"{item}: {hints}"
        resolved += len(hints)
    assert resolved > 20  # the walk saw the module's annotations


@pytest.mark.parametrize("module", EDGE, ids=lambda m: m.__name__)
def test_no_annotation_says_any(module: ModuleType) -> None:
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    anys = [f"line {n.lineno}" for n in ast.walk(tree)
            if (isinstance(n, ast.Name) and n.id == "Any") or (isinstance(n, ast.Attribute) and n.attr == "Any")]
    assert anys == [], f"{module.__name__} says Any at {', '.join(anys)}: name the type (object for any JSON value)"


HELP_MODULES = """
import sys
from leaf_cli.cli.main import app
try:
    app(sys.argv[1:])
except SystemExit:
    pass
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("command", [["--help"], ["fix", "--help"], ["chat", "--help"]], ids=" ".join)
def test_help_imports_nothing_below_the_cli(command: list[str]) -> None:
    """The type-only imports stay type-only: `--help` loads no room beneath the CLI, nor rich or pydantic."""
    proc = subprocess.run([sys.executable, "-c", HELP_MODULES, *command], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    modules = set(proc.stderr.split())
    assert "leaf_cli.cli.chat" in modules and "Usage" in proc.stdout, proc.stderr[-2000:]
    heavy = sorted(m for m in modules if m.split(".")[0] in ("rich", "pydantic", "numpy", "httpx")
                   or (m.startswith("leaf_cli.") and m.split(".")[1] not in ("cli", "errors")))
    assert heavy == []
