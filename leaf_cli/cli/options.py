"""The options `leaf fix` and `leaf chat` share: one definition each, so both commands stay in step."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

Workdir = Annotated[Optional[Path], typer.Option("--workdir", "-C", help="Where to work (default: here).", metavar="PATH")]
Model = Annotated[Optional[str], typer.Option("--model", "-m", help="Registry name, .gguf, hf:..., replay:PATH.", metavar="TEXT")]
BaseUrl = Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible server URL.", metavar="TEXT")]
MaxTurns = Annotated[Optional[int], typer.Option("--max-turns", min=1, help="Most assistant turns.", metavar="N")]
MaxTime = Annotated[Optional[float], typer.Option("--max-time", min=1, help="Wall-clock limit in seconds.", metavar="N")]
NCtx = Annotated[Optional[int], typer.Option("--n-ctx", min=256, help="Context window (in-process engine).", metavar="N")]
Mode = Annotated[Optional[str], typer.Option("--mode", help="ask | auto-edit | yolo.", metavar="TEXT")]
Sandbox = Annotated[Optional[str], typer.Option("--sandbox", help="auto (default: bwrap on Linux, sandbox-exec on macOS) | bwrap | sandbox-exec | none.", metavar="TEXT")]
Network = Annotated[Optional[bool], typer.Option("--network/--no-network", help="Let the sandboxed commands reach the network.")]
PassEnv = Annotated[Optional[list[str]], typer.Option("--pass-env", help="Let Bash see this secret variable.", metavar="NAME")]
Quiet = Annotated[Optional[bool], typer.Option("--quiet/--no-quiet", "-q", help="Hide the model's reasoning.")]
ConstrainTools = Annotated[Optional[bool], typer.Option(
    "--constrain-tools/--no-constrain-tools",
    help="Grammar-constrain replies to text + well-formed tool calls (in-process engine).")]
Temperature = Annotated[Optional[float], typer.Option("--temperature", min=0, help="Sampling temperature (default: the model's).", metavar="N")]
Seed = Annotated[Optional[int], typer.Option("--seed", help="Sampling seed, for reproducible runs.", metavar="N")]
ThinkingBudget = Annotated[Optional[int], typer.Option(
    "--thinking-budget", min=1, help="Most reasoning tokens per reply before it is closed with </think> (in-process engine).", metavar="N")]
MaxTokens = Annotated[Optional[int], typer.Option(
    "--max-tokens", min=1, help="Most tokens one reply may generate; a reply cut by it ends the run as max_tokens "
                                "(default: the model's, 8192).", metavar="N")]

KvCache = Annotated[Optional[str], typer.Option(
    "--kv-cache", help="KV cache type of the in-process engine: f16 (default) | q8_0 (about half the attention "
                       "memory; `leaf doctor` says what 64k costs).")]
PrefixCache = Annotated[Optional[bool], typer.Option(
    "--prefix-cache/--no-prefix-cache",
    help="Load the saved state after the system prompt and tools instead of evaluating them (in-process engine).")]
Speculate = Annotated[Optional[bool], typer.Option(
    "--speculate/--no-speculate",
    help="Prompt-lookup drafting: verify n-gram drafts from the conversation in one batch (in-process engine).")]
