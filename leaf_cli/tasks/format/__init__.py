"""The task format: what a task is (`task.py`, `reward_spec.py`: the JSONL record and a verifier-graded
task's spec), the globs over its protected and hidden paths (`globs.py`), and its export as Harbor task
folders (`harbor_export.py`)."""
