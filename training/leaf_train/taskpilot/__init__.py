"""TaskPilot: policy-calibrated task synthesis (see the TaskPilot section of training/README.md).

snapshots (sources, snapshot, suite) -> generators (procedural + mutate, combine, llm) -> validate ->
calibrate (policy) -> refine (statement) -> tasks.jsonl + report. Entry points: `cli.synth_command`,
`pipeline.run(SynthConfig)`. Nothing is imported here, so `leaf --help` stays fast.
"""
