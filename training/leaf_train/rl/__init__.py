"""DPPO reinforcement learning on Leaf rollouts."""
