"""The R2E-Gym / SWE-agent style tool profile used for the harness ablation: a multi-command file editor,
a bash tool, a search tool and an explicit finish action."""

from leaf_cli.tools.r2e.execute_bash import EXECUTE_BASH
from leaf_cli.tools.r2e.file_editor import FILE_EDITOR
from leaf_cli.tools.r2e.finish import FINISH
from leaf_cli.tools.r2e.search import SEARCH

R2E_TOOLS = (FILE_EDITOR, EXECUTE_BASH, SEARCH, FINISH)

__all__ = ["EXECUTE_BASH", "FILE_EDITOR", "FINISH", "R2E_TOOLS", "SEARCH"]
