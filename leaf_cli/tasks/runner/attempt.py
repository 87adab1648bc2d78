"""One attempt: a fresh single-commit workspace, the agent's episode under a harness, and the patch without
protected paths. Local tasks start from their repository snapshot and run Bash in the host sandbox; image
tasks (SWE-bench, Pro, Harbor, PatchEval imports) start from their image's workdir and run Bash in a container
of the image (`envs/image.py`)."""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from leaf_cli.agent import EpisodeHooks, Limits, Trajectory, run_episode
from leaf_cli.agent.harness import get_harness
from leaf_cli.agent.sandbox import with_shell
from leaf_cli.llm.engine import Engine, Sampling
from leaf_cli.tasks.envs.venv import Environment
from leaf_cli.tasks.format.globs import matcher
from leaf_cli.tasks.envs.image import ImageSession, image_tree, is_image_task, keeps_tree, workspace_from_tree
from leaf_cli.tasks.grading.patches import without_paths
from leaf_cli.tasks.envs.sandbox import BwrapSandbox, Sandbox
from leaf_cli.tasks.envs.source import git, single_commit_repo, snapshot
from leaf_cli.tasks.format.task import Task
from leaf_cli.tools import Workspace
from leaf_cli.tools.host import ToolHost, host_argv, host_env, leaf_root


class AttemptWorkspace(BaseModel):
    """The attempt's repository (`root`), its start commit, and a HOME and a /tmp beside it (outside the
    diff, removed with the attempt's folder). `git_dir` is set when the repository lives outside the tree
    (Harbor trees are kept exactly). `tmp` is None for a workspace made by hand (image tests)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    root: Path
    home: Path
    start_commit: str
    git_dir: Path | None = None
    tmp: Path | None = None

    def git_args(self) -> list[str]:
        """What git needs before its command to find this repository."""
        return ["--git-dir", str(self.git_dir), "--work-tree", str(self.root)] if self.git_dir else []


class AttemptOutcome(BaseModel):
    """What the agent produced: the graded patch, the protected paths it tried to change, its trajectory."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    patch: str
    raw_patch: str
    protected_touched: list[str] = Field(default_factory=list)
    trajectory: Trajectory


def make_attempt_workspace(task: Task, dest: Path, base_dir: Path | None = None) -> AttemptWorkspace:
    """`dest/repo`: the task's start state as the only commit, hidden paths removed; `dest/home` and
    `dest/tmp` (the sandbox's /tmp for the whole attempt) beside it. An image task's start state is its
    image's workdir (copied out once, needs Docker)."""
    dest.mkdir(parents=True, exist_ok=True)
    dirs = {"home": dest / "home", "tmp": dest / "tmp"}
    for path in dirs.values():
        path.mkdir(exist_ok=True)
    if is_image_task(task):
        root, start, git_dir = workspace_from_tree(image_tree(task), dest, keep_tree=keeps_tree(task))
        return AttemptWorkspace(root=root, start_commit=start, git_dir=git_dir, **dirs)
    root = dest / "repo"
    start = single_commit_repo(snapshot(task, base_dir), root, drop=task.hidden_paths)
    return AttemptWorkspace(root=root, start_commit=start, **dirs)


def workspace_diff(ws: AttemptWorkspace) -> str:
    """Everything changed since the start commit, untracked files included (even if the agent committed)."""
    git([*ws.git_args(), "add", "-A", "."], ws.root)
    return git([*ws.git_args(), "diff", "--cached", "--binary", "--no-renames", ws.start_commit], ws.root)


def extract_patch(ws: AttemptWorkspace, task: Task) -> tuple[str, str, list[str]]:
    """(patch without protected or hidden paths, the full diff, the protected paths touched)."""
    raw = workspace_diff(ws)
    patch, touched = without_paths(raw, matcher(task.protected + task.hidden_paths))
    return patch, raw, touched


def agent_workspace(ws: AttemptWorkspace, env: Environment, sandbox: Sandbox) -> Workspace:
    """The tools' workspace, unconfined: Bash runs inside the sandbox with the task's venv first on PATH, and
    Read, Write, Edit and Glob in a process inside that sandbox too."""
    roots = [str(ws.root / "src")] if (ws.root / "src").is_dir() else []
    variables = {
        "PATH": f"{env.bin}:/usr/local/bin:/usr/bin:/bin", "VIRTUAL_ENV": str(env.path), "HOME": str(ws.home),
        "TMPDIR": str(ws.home), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": ":".join([*roots, str(ws.root)]), "PIP_NO_INDEX": "1", "GIT_CONFIG_NOSYSTEM": "1",
    }
    box = {"cwd": ws.root, "writable": [ws.root, ws.home], "readonly": [env.path.parent], "tmp": ws.tmp}
    # The sandbox is the boundary (as FrogNano's container was): the tools take any path, and the file tools
    # run in the same sandbox as Bash (tools/host.py), so a path outside the tree is the sandbox's. Every Bash
    # call and the file tools see the attempt's one /tmp, as in that container.
    box["readonly"] = [*box["readonly"], leaf_root()]  # the file tools' host imports leaf itself
    if not isinstance(sandbox, BwrapSandbox) or ws.tmp is None:
        build = functools.partial(sandbox.wrap, host_argv(ws.root), **box)  # anew per start: bwrap lists sockets
        host = ToolHost(build(), env=host_env(str(ws.home)), cwd=ws.root, rebuild=build)
        return Workspace(root=ws.root, env=variables, bash_prefix=sandbox.wrap([], **box), confined=False,
                         file_host=host)
    # bwrap: one sandbox (one pid namespace) for the whole episode, as FrogNano's one container was, so a
    # server started in the background by one Bash call answers the next (agent/sandbox_shell.py, shared with
    # `leaf fix`). Its holder sees only the Bash environment, never leaf's; the episode's end kills it and all
    # inside. The file tools' host is `leaf fix`'s too (AgentSandbox.file_host, unconfined here): a bwrap of
    # its own with the same binds (it talks over stdin, which the command server does not relay), sharing the
    # file system, /tmp included, which is what it needs.
    shell = with_shell(functools.partial(sandbox.wrap, [], **box), ws.tmp, variables)
    host = shell.file_host(ws.root, str(ws.home), confined=False)
    workspace = Workspace(root=ws.root, env=variables, bash_prefix=shell.prefix, confined=False, file_host=host)
    workspace.jobs.on_close.append(lambda _sessions: shell.end_episode())
    return workspace


def attempt_limits(task: Task, limits: Limits | None) -> Limits:
    """The episode's limits: the run's, with the task's own agent time (`timeouts.agent_s`; a Harbor task's
    `[agent] timeout_sec`) as a cap on every kind of task, so the shorter of the two wins."""
    if limits is None:
        return Limits(max_seconds=task.timeouts.agent_s)
    return limits.model_copy(update={"max_seconds": min(limits.max_seconds, task.timeouts.agent_s)})


def run_attempt(task: Task, engine: Engine, ws: AttemptWorkspace, env: Environment | None, sandbox: Sandbox, *,
                limits: Limits | None = None, sampling: Sampling | None = None,
                trajectory_path: Path | None = None, run_id: str | None = None,
                harness: str | None = None) -> AttemptOutcome:
    """Run the episode under `harness` (leaf by default; r2e for the ablation) on the task's problem
    statement and take its patch. `sandbox` is an `ImageSession` for image tasks (then `env` is None)."""
    limits = attempt_limits(task, limits)
    if isinstance(sandbox, ImageSession):
        tools_ws = sandbox.workspace_for_tools()
    elif env is None:
        raise ValueError(f"{task.instance_id}: a host-sandbox attempt needs the task's environment")
    else:
        tools_ws = agent_workspace(ws, env, sandbox)
    try:
        traj = run_episode(task.problem_statement, engine, tools_ws, sampling=sampling, limits=limits,
                           run_id=run_id,
                           hooks=EpisodeHooks(trajectory_path=trajectory_path, patch_fn=lambda: workspace_diff(ws)),
                           **get_harness(harness).episode_kwargs())
    finally:
        tools_ws.end_episode()  # the episode ended it already; this covers a failure before it began (twice is safe)
    patch, raw, touched = extract_patch(ws, task)
    return AttemptOutcome(patch=patch, raw_patch=raw, protected_touched=touched, trajectory=traj)
