"""TaskPilot: policy-calibrated task synthesis."""
