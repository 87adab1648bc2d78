"""Holds `leaf_nodeid_report`, the pytest plugin grading loads with `-p` (this folder goes on PYTHONPATH)."""

from pathlib import Path

PLUGIN_DIR = Path(__file__).resolve().parent
PLUGIN_NAME = "leaf_nodeid_report"
