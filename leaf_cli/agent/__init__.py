"""The agent core: one episode function shared by `leaf fix`, `leaf eval`, TaskPilot and RL."""

from leaf_cli.agent.episode import EpisodeHooks, Limits, run_episode
from leaf_cli.agent.exits import ExitReason
from leaf_cli.agent.trajectory import Trajectory

__all__ = ["EpisodeHooks", "ExitReason", "Limits", "Trajectory", "run_episode"]
