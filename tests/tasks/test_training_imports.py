"""training/ reaches leaf_cli.tasks through its public namespace only: never a submodule of it, never a private
module or name of leaf_cli, deferred imports included, so the tasks package can rearrange its rooms freely."""

from __future__ import annotations

import ast
from pathlib import Path

import leaf_cli.tasks

TRAINING = Path(__file__).resolve().parents[2] / "training"


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, imported names) of every absolute import in the file, deferred ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, []) for a in node.names)
    return sorted(found)


def violations(root: Path) -> list[str]:
    bad = []
    for path in sorted(root.rglob("*.py")):
        for line, module, names in _imports(path):
            parts = module.split(".")
            if parts[0] != "leaf_cli":
                continue
            where = f"{path.relative_to(root)}:{line} {module}"
            if module.startswith("leaf_cli.tasks."):
                bad.append(f"{where}: a leaf_cli.tasks submodule; import it from leaf_cli.tasks")
            elif any(p.startswith("_") for p in parts) or any(n.startswith("_") for n in names):
                bad.append(f"{where}: private ({', '.join(names) or module})")
    return bad


def test_training_imports_only_public_leaf_cli() -> None:
    assert any(TRAINING.rglob("*.py")), TRAINING  # the walk sees the training code
    assert violations(TRAINING) == []


def test_every_name_training_takes_from_tasks_is_exported() -> None:
    taken = {n for p in TRAINING.rglob("*.py") for _l, m, names in _imports(p) if m == "leaf_cli.tasks" for n in names}
    assert {"Task", "agent_workspace", "workspace_diff"} <= taken
    missing = sorted(n for n in taken if not hasattr(leaf_cli.tasks, n))
    assert missing == [], missing


def test_the_rule_catches_a_submodule_and_a_private_import(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def f():\n    from leaf_cli.tasks.runner.attempt import agent_workspace\n"
                                     "from leaf_cli.llm.openai import _request\nimport leaf_cli._internal\n")
    assert [v.split(":")[1].split()[0] for v in violations(tmp_path)] == ["2", "3", "4"]
