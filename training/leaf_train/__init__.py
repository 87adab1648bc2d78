"""The training pipeline that produced FrogNano: TaskPilot task synthesis and DPPO RL. Imports leaf_cli, never the reverse."""
