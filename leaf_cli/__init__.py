"""Leaf: a local-first coding agent. Nothing is imported here so `leaf --help` starts fast."""

__version__ = "0.1.0"
