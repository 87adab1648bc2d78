"""The eval runner (`leaf eval`): `eval.py` runs attempts or plain grading over many tasks on an executor
(`placement.py` says what each reserves), `attempt.py` is one attempt (workspace, episode, patch),
`results.py` the output folder, `stats.py` the statistics, `presets.py` the paper's settings."""
