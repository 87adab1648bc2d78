"""The body of `leaf fix`: gather the task and settings, checkpoint, run the episode, review, report."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from leaf_cli.errors import LeafError

if TYPE_CHECKING:  # types only: `leaf --help` must not import the agent, the engines or rich
    from rich.console import Console

    from leaf_cli.agent.events import Event, OnEvent
    from leaf_cli.agent.permissions import Answer, Confirm
    from leaf_cli.agent.reaper import Reaper
    from leaf_cli.agent.sandbox import AgentSandbox
    from leaf_cli.config import Settings
    from leaf_cli.llm.engine import Engine, Sampling
    from leaf_cli.llm.messages import Conversation, ToolCall
    from leaf_cli.repo.runs import RunRecord
    from leaf_cli.tools import Workspace
    from leaf_cli.ui.live import LiveView


class Pausable(Protocol):
    """What the permission prompt pauses before it asks: the live view (`leaf fix`) or the chat's current one."""

    def pause(self) -> None: ...


@dataclass
class Plan:
    """Everything decided before the run starts (all bad input has been rejected by then)."""

    root: Path
    top: Path
    task: str
    title: str
    settings: Settings
    engine: Engine
    interactive: bool
    yes: bool
    json_out: bool
    branch: str | None
    trajectory: Path | None
    conversation: Conversation | None = None
    continued_from: str | None = None
    memory: str | None = None  # the repository instructions file read into the task (AGENTS.md, CLAUDE.md)
    earlier_turns: int = 0


@dataclass
class Result:
    exit_reason: str
    turns: int
    messages: list[dict[str, object]]  # JSON: OpenAI-style messages, redacted
    patch: str
    usage: dict[str, object]
    trajectory: str
    run_id: str
    extra: dict[str, object] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return {"exit_reason": self.exit_reason, "turns": self.turns, "messages": self.messages,
                "patch": self.patch, "usage": self.usage, "trajectory": self.trajectory, "run_id": self.run_id}


def prepare(root: Path, flags: dict[str, object], *, text: str | None, issue_file: Path | None, gh: str | None,
            yes: bool, json_out: bool, continue_: bool, branch: str | None, trajectory: Path | None,
            continue_undone: bool = False) -> Plan:
    """Validate every input; LeafError (exit 2) for the first thing that is wrong."""
    from leaf_cli.config import load_settings
    from leaf_cli.repo.lifecycle import ensure_git_work_tree

    top = ensure_git_work_tree(root)
    if branch:
        _check_new_branch(top, branch)
    from leaf_cli.ui.review import ask_trust

    settings, _origins = load_settings(flags, top, ask_trust if _on_terminal(json_out, yes) else None)
    _check_sandbox(settings.sandbox)  # a missing bubblewrap is said before any checkpoint is made
    task = _read_task(text, issue_file, gh, top)
    continue_ = continue_ or continue_undone
    conversation, continued_from = _continuation(top, continue_undone) if continue_ else (None, None)
    memory = None
    if not continue_:
        from leaf_cli.agent.issue_input import repo_memory, with_repo_memory

        task = with_repo_memory(task, top)
        memory = found[0] if (found := repo_memory(top)) else None
    engine = _load_engine(settings, yes=yes, show=not (json_out or settings.quiet))
    interactive = _on_terminal(json_out, yes)
    title = task.strip().splitlines()[0][:100]
    earlier = sum(1 for m in conversation.messages if m.role == "assistant") if conversation is not None else 0
    return Plan(root=root, top=top, task=task, title=title, settings=settings, engine=engine,
                interactive=interactive, yes=yes, json_out=json_out, branch=branch, trajectory=trajectory,
                conversation=conversation, continued_from=continued_from, memory=memory,
                earlier_turns=earlier)


def _load_engine(settings: Settings, *, yes: bool, show: bool) -> Engine:
    """The engine, under a "loading the model" spinner on a terminal (a 4B GGUF takes seconds to map)."""
    from rich.console import Console

    from leaf_cli.ui.live import phase, shorten

    with phase(Console(stderr=True), f"loading the model {shorten(settings.model, 60, path=True)}", show=show):
        return make_engine_for(settings, yes=yes)


def _check_sandbox(kind: str) -> None:
    from leaf_cli.agent.sandbox import resolve_kind, sandbox_program

    resolved = resolve_kind(kind)
    if resolved != "none":
        sandbox_program(resolved)


def _on_terminal(json_out: bool, yes: bool) -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty() and not json_out and not yes


def make_engine_for(settings: Settings, *, yes: bool = False) -> Engine:
    """The engine `--model` names: through models.resolve.make_engine, or replay:PATH without it."""
    from leaf_cli.models.resolve import make_engine

    return make_engine(settings.model, base_url=settings.base_url, api_key=settings.api_key,
                       constrain_tools=settings.constrain_tools, n_ctx=settings.n_ctx, yes=yes,
                       llama_options=llama_options(settings))


def llama_options(settings: Settings) -> dict[str, object]:
    """The settings only the in-process llama.cpp engine reads."""
    from leaf_cli.models.resolve import prefix_cache_dir

    cache = settings.prefix_cache and settings.prefix_cache_mb > 0
    return {"kv_cache_type": settings.kv_cache, "speculate": settings.speculate,
            "prefix_cache": prefix_cache_dir() if cache else None, "prefix_cache_mb": settings.prefix_cache_mb}


def _read_task(text: str | None, issue_file: Path | None, gh: str | None, top: Path) -> str:
    from leaf_cli.agent import issue_input

    given = [name for name, value in (("TEXT", text), ("--issue-file", issue_file), ("--gh", gh)) if value is not None]
    if len(given) > 1:
        raise LeafError(f"give the issue one way only (got {' and '.join(given)})")
    if text == "-":
        return issue_input.read_stdin(sys.stdin.buffer, sys.stdin.isatty())
    if issue_file is not None:
        return issue_input.read_issue_file(issue_file.expanduser())
    if gh is not None:
        return issue_input.issue_from_gh(gh, top)
    if text is None:
        raise LeafError('no issue given: leaf fix "what to fix", leaf fix - < issue.txt, --issue-file or --gh N')
    return issue_input.issue_from_bytes(text.encode("utf-8", errors="surrogateescape"), "the command line")


def _continuation(top: Path, undone_ok: bool = False) -> tuple[Conversation, str]:
    """The conversation of the last run in this repository, reloaded from its trajectory; says on stderr
    which run it is. An undone run is refused unless `undone_ok`: its history says files were changed
    that no longer are, and the model would build on that.

    Only the messages come back, never the saved token log: a token-level engine (llama.cpp) sees
    `token_log=None` and renders the whole conversation with the model's template once, then appends as usual.
    """
    from leaf_cli.agent.trajectory import load
    from leaf_cli.llm.messages import Conversation
    from leaf_cli.repo.runs import list_runs

    runs = [r for r in list_runs(top) if r.trajectory and Path(r.trajectory).is_file()]
    if not runs:
        raise LeafError("--continue: no earlier run in this repository to continue")
    last = runs[0]
    if last.status == "undone" and not undone_ok:
        raise LeafError(f"--continue: the last run here, {last.run_id} ({last.title[:60]!r}), is undone, so its "
                        "conversation describes changes that are no longer in the files; `--continue-undone` "
                        "continues it anyway, or start a new run")
    try:
        previous = load(Path(last.trajectory))
    except ValueError as exc:
        raise LeafError(f"--continue: {exc}") from None
    note = " (undone: its changes are not in the files)" if last.status == "undone" else ""
    print(f"Continuing run {last.run_id} ({last.status}{note}): {last.title[:80]}", file=sys.stderr)
    return Conversation(messages=list(previous.messages)), last.run_id


def execute(plan: Plan) -> Result:
    """Checkpoint, run, record the end state, review on a terminal, print the summary.

    From the checkpoint on, every way out writes the run's record: an exception ends the run `error`
    (one line on stderr), Ctrl-C or SIGTERM `interrupted`, and the record is never left "running".
    """
    from rich.console import Console

    from leaf_cli.repo import lifecycle

    console = Console(stderr=True, highlight=False)
    run = lifecycle.begin_run(plan.root, title=plan.title, model=plan.engine.name)
    run.continued_from = plan.continued_from
    try:
        return _run_and_review(plan, run, console)
    except BaseException as exc:
        if run.status == "running":
            reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
            lifecycle.end_run_anyhow(run, reason)
            if not isinstance(exc, (KeyboardInterrupt, LeafError)):
                raise LeafError(f"run {run.run_id} stopped by an internal error ({type(exc).__name__}: {exc}); "
                                f"`leaf undo {run.run_id}` restores the start state") from exc
        raise
    finally:
        lifecycle.release_run(run)


def _run_and_review(plan: Plan, run: RunRecord, console: Console) -> Result:
    from leaf_cli.agent import EpisodeHooks, Limits, run_episode
    from leaf_cli.agent.permissions import make_gate
    from leaf_cli.agent.reaper import Reaper
    from leaf_cli.agent.secrets import Redactor
    from leaf_cli.repo import lifecycle
    from leaf_cli.ui.live import LiveView, memory_note, summary

    settings = plan.settings
    if plan.branch:
        _switch_to_new_branch(plan.top, plan.branch)
    trajectory_path = plan.trajectory.expanduser().resolve() if plan.trajectory else run.folder / "trajectory.jsonl"
    run.trajectory = str(trajectory_path)
    run.save()
    view = LiveView(console, quiet=settings.quiet, context_limit=getattr(plan.engine, "context_limit", 0) or 0,
                    progress=console.is_terminal and not (settings.quiet or plan.json_out))
    if not (settings.quiet or plan.json_out):
        memory_note(console, plan.memory)
    mode = "yolo" if plan.yes else (settings.mode or ("ask" if plan.interactive else "yolo"))
    confirm = confirm_prompt(console, view, plan.root) if plan.interactive else None
    sandbox = open_agent_sandbox(settings, plan.top, plan.root)
    reaper = Reaper.for_sandbox(sandbox)
    redact = Redactor(os.environ, settings.pass_env)  # the secrets kept from the agent stay out of leaf's records
    try:
        workspace = agent_workspace(settings, sandbox, plan.root)
        hook_episode_end(workspace, reaper, sandbox)
        traj = run_episode(plan.task, plan.engine, workspace,
                           limits=Limits.with_safeguards(max_turns=settings.max_turns, max_seconds=settings.max_time),
                           sampling=sampling_for_model(settings), conversation=plan.conversation, run_id=run.run_id,
                           hooks=EpisodeHooks(on_event=numbered_after(view, plan.earlier_turns), gate=make_gate(mode, plan.root, confirm),
                                              trajectory_path=trajectory_path, redact=redact,
                                              patch_fn=lambda: lifecycle.run_patch(run)))
    finally:
        view.pause()  # an exception must not leave the live line running and the cursor hidden
        reaper.stop()  # the agent's commands and everything they started, whatever session they moved to
        sandbox.close()
    exit_reason = traj.exit_reason or "interrupted"
    patch = lifecycle.end_run_anyhow(run, exit_reason)
    summary(console, turns=traj.assistant_turns(), usage=traj.usage(), seconds=traj.wall_seconds,
            exit_reason=exit_reason, files_changed=run.files_changed, insertions=run.insertions,
            deletions=run.deletions, run_id=run.run_id)
    if traj.exit_message and exit_reason != "final_answer":
        from leaf_cli.ui.safe_text import markup_safe

        console.print(f"[dim]{markup_safe(traj.exit_message)}[/dim]")
    if plan.interactive and patch.strip():
        from leaf_cli.cli.fix_review import review

        review(console, run, patch, traj.final_answer(), plan.task)
    return Result(exit_reason=exit_reason, turns=traj.assistant_turns(),
                  messages=redact.obj([m.to_openai() for m in traj.messages]), patch=redact.text(patch),
                  usage=traj.usage(), trajectory=str(trajectory_path), run_id=run.run_id)


def numbered_after(view: LiveView, earlier: int) -> OnEvent:
    """The live view's event callback with turn numbers carried on after `earlier` turns (a continuation)."""
    if not earlier:
        return view
    import dataclasses

    from leaf_cli.agent import events

    def on_event(event: Event) -> None:
        if isinstance(event, events.TurnFinished):
            event = dataclasses.replace(event, index=event.index + earlier)
        view(event)

    return on_event


def hook_episode_end(workspace: Workspace, reaper: Reaper, sandbox: AgentSandbox) -> None:
    """Kill the agent's escaped processes and the sandbox's jobs where the episode's own cleanup runs
    (Workspace.jobs, when the tools have one), so nothing is left writing while the patch is taken. Both
    calls are idempotent; the caller makes them again after the episode for tools without that hook."""
    jobs = getattr(workspace, "jobs", None)
    if jobs is not None and hasattr(jobs, "on_close"):
        def end(_sessions: list[int]) -> None:
            reaper.stop()
            sandbox.end_episode()

        jobs.on_close.append(end)


def agent_workspace(settings: Settings, sandbox: AgentSandbox, root: Path) -> Workspace:
    """The tools' workspace for `leaf fix`, `leaf chat` and `leaf replay`: confined to `root`, Bash through
    the sandbox's prefix, and Read, Write, Edit and Glob in the sandbox's file-tool host (none without a
    sandbox: then in this process, walking each path beneath the tree)."""
    from leaf_cli.agent.secrets import scrub_env
    from leaf_cli.tools import Workspace

    env = scrub_env(os.environ, settings.pass_env)
    return Workspace(root=root, env=env, bash_prefix=sandbox.prefix, file_host=sandbox.file_host(root, env.get("HOME")))


def open_agent_sandbox(settings: Settings, top: Path, root: Path) -> AgentSandbox:
    """The sandbox for the agent's commands (`--sandbox`, bwrap or Seatbelt by default); warns for none."""
    from leaf_cli.agent.sandbox import no_sandbox_warning, open_sandbox
    from leaf_cli.repo.checkpoint import locate
    from leaf_cli.repo.runs import state_root
    from leaf_cli.agent.secrets import scrub_env

    paths = locate(top)
    git_dirs = tuple(dict.fromkeys((paths.git_dir, paths.common_dir))) if paths else ()
    sandbox = open_sandbox(settings.sandbox, top, root, state_root(), network=settings.network, git_dirs=git_dirs,
                           env=scrub_env(os.environ, settings.pass_env), home_extra=settings.sandbox_home)
    if sandbox.kind == "none":
        from leaf_cli.agent.reaper import make_undumpable

        print(no_sandbox_warning(state_root(), sandbox.cgroup is not None), file=sys.stderr)
        make_undumpable()  # no /proc/<leaf>/environ or fd/1 for the agent's commands (same user, not root)
    return sandbox


def sampling_for_model(settings: Settings) -> Sampling:
    """The model's recommended sampling (the loop's defaults when it has none), with the user's
    `temperature`, `seed`, `thinking_budget` and `max_tokens` on top."""
    from leaf_cli.llm.engine import Sampling
    from leaf_cli.models.resolve import sampling_for

    try:
        sampling = sampling_for(settings.model)
    except LeafError:
        sampling = None
    sampling = sampling or Sampling()
    overrides = {k: v for k in ("temperature", "seed", "thinking_budget", "max_tokens") if (v := getattr(settings, k, None)) is not None}
    return sampling.model_copy(update=overrides)


def _check_new_branch(top: Path, branch: str) -> None:
    from leaf_cli.repo.git import git

    if git(top, "check-ref-format", "--branch", branch, check=False).returncode != 0:
        raise LeafError(f"--branch {branch!r} is not a valid branch name")
    if git(top, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False).returncode == 0:
        raise LeafError(f"--branch {branch}: that branch already exists; pick a new name")


def _switch_to_new_branch(top: Path, branch: str) -> None:
    from leaf_cli.repo.git import git

    # update-ref and symbolic-ref, not `git switch -c`: the files and index stay as they are, and no
    # checkout (with its hooks and filters) runs.
    head = git(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False).stdout.decode().strip()
    if head:
        git(top, "update-ref", f"refs/heads/{branch}", head, "")
    proc = git(top, "symbolic-ref", "HEAD", f"refs/heads/{branch}", check=False)
    if proc.returncode != 0:
        raise LeafError(f"--branch {branch}: {proc.stderr.decode(errors='replace').strip().splitlines()[-1]}")


def confirm_prompt(console: Console, view: Pausable, root: Path) -> Confirm:
    """The permission prompt: pause the spinner (`view.pause()`), show the preview, ask. Shared with `leaf chat`."""
    from leaf_cli.ui.review import ask_permission

    def confirm(call: ToolCall) -> Answer:
        view.pause()
        return ask_permission(console, call, _current_text(root, call.arguments.get("file_path")))

    return confirm


def _current_text(root: Path, path: object) -> str | None:
    """The file a Write or Edit would change, for the preview: read as the confined tools read it (beneath
    the work tree, never through a symlink out of it, never a pipe), None when there is none to show."""
    from leaf_cli.tools import Workspace
    from leaf_cli.tools.textfile import load_target

    if not isinstance(path, str) or not path:
        return None
    workspace = Workspace(root)
    try:
        return load_target(workspace.target(path), workspace).text
    except (OSError, ValueError, RuntimeError):
        return None


__all__ = ["Plan", "Result", "agent_workspace", "confirm_prompt", "execute", "make_engine_for", "prepare",
           "sampling_for_model", "hook_episode_end", "open_agent_sandbox"]
