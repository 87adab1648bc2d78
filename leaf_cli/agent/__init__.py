"""The agent core: one episode function shared by `leaf fix`, `leaf eval`, TaskPilot and RL."""

from leaf_cli.agent.episode import Limits, run_episode
from leaf_cli.agent.exits import ExitReason
from leaf_cli.agent.trajectory import Trajectory

__all__ = ["ExitReason", "Limits", "Trajectory", "run_episode"]
