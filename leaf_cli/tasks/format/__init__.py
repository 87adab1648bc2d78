"""The task format: what a task is. `task.py` is the JSONL record (SWE-bench's columns and leaf's fields),
`reward_spec.py` the spec of a verifier-graded task (its `reward` field), `globs.py` the gitignore-style
patterns of its protected and hidden paths. Every other room of leaf_cli.tasks stands on this one."""
