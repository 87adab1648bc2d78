"""Importers: public benchmark datasets (SWE-bench Verified/Lite/Pro, Terminal-Bench 2.0 / Harbor, PatchEval)
as leaf tasks."""

from leaf_cli.tasks.importers.harbor import HarborImport, harbor_import, harbor_task, import_harbor
from leaf_cli.tasks.importers.patcheval import import_patcheval_rows
from leaf_cli.tasks.importers.rows import read_rows, string_list
from leaf_cli.tasks.importers.swebench import import_swebench_rows, is_pro_row, swebench_image

__all__ = ["HarborImport", "harbor_import", "harbor_task", "import_harbor", "import_patcheval_rows", "import_swebench_rows",
           "is_pro_row", "read_rows", "string_list", "swebench_image"]
