"""Tasks that live in a Docker image (SWE-bench, SWE-bench Pro, Harbor / Terminal-Bench 2.0, PatchEval imports).

The image is the source: its working directory (/testbed, /app, /workspace/<repo>) is copied out once per image
(`docker create` + `docker cp`, cached by image id) and each attempt gets a copy as a fresh repository with a
single commit. For SWE-bench-style tasks the image's own `.git` is dropped, so the agent cannot read later
commits; Harbor trees are kept exactly as the image has them (a task may ship its own `.git`), and their
tracking repository lives beside the tree instead of inside it.

The agent works in a container started from the image with that copy mounted at the workdir: the file tools
edit the host copy (absolute container paths map onto it, `ContainerWorkspace`), and Bash runs through
`ImageSession.wrap`, a `docker exec` into the container, so the benchmark's toolchain and environment apply.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from leaf_cli.errors import InfraError, LeafError
from leaf_cli.tasks.envs.cache import cache_key, cache_root, locked
from leaf_cli.tasks.envs.container_args import run_args
from leaf_cli.tasks.envs.docker import DockerSandbox, build_harbor_image
from leaf_cli.tasks.envs.proc import run_process
from leaf_cli.tasks.envs.source import IGNORED, git
from leaf_cli.tasks.format.task import Task
from leaf_cli.tools import Workspace

IMAGE_EVAL_TYPES = ("swebench", "swebench_pro", "reward")
"""The importers' `eval_type`s: tasks that run, and are graded, inside their image."""
DOCKER_ENV = ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH",
              "DOCKER_TLS_VERIFY", "XDG_RUNTIME_DIR")
"""What the docker client itself needs from leaf's environment (the container gets the image's own)."""


def is_image_task(task: Task) -> bool:
    """Whether `task` is an imported benchmark task that runs in its image."""
    extra = task.model_extra or {}
    return extra.get("eval_type") in IMAGE_EVAL_TYPES and bool(extra.get("image_name"))


def image_of(task: Task) -> str:
    return str((task.model_extra or {})["image_name"])


def workdir_of(task: Task) -> str:
    """The agent's folder inside the image (the importers record it; SWE-bench's is /testbed)."""
    return str((task.model_extra or {}).get("workdir") or "/testbed")


def keeps_tree(task: Task) -> bool:
    """Harbor trees stay exactly as the image has them; repository benchmarks lose their history."""
    return (task.model_extra or {}).get("eval_type") == "reward" and (task.source or {}).get("kind") == "harbor"


def docker_env() -> dict[str, str]:
    return {k: os.environ[k] for k in DOCKER_ENV if k in os.environ}


def docker_problem() -> str | None:
    """What keeps the docker sandbox from running here (no CLI, no daemon), or None when it can."""
    try:
        DockerSandbox().prepare()
    except LeafError as exc:
        return str(exc).split(";")[0]
    return None


def check_image_tasks(tasks: list[Task], sandbox_name: str) -> None:
    """Refuse at once, with one line naming what is missing, a run whose image tasks cannot run: a sandbox
    other than docker, no Docker, or a task without the grading script its grader needs."""
    mine = [t for t in tasks if is_image_task(t)]
    if not mine:
        return
    example = f"e.g. {mine[0].instance_id} in {image_of(mine[0])}"
    what = f"{len(mine)} task(s) run inside their Docker images ({example})"
    if sandbox_name != "docker":
        raise LeafError(f"{what}; run them with --sandbox docker (the {sandbox_name} sandbox has no images)")
    for task in mine:
        extra = task.model_extra or {}
        if extra.get("eval_type") in ("swebench", "swebench_pro") and not extra.get("eval_script"):
            hint = ("re-import with --pro-scripts run_scripts/" if extra["eval_type"] == "swebench_pro"
                    else "its repository has no official test command in leaf's table")
            raise LeafError(f"{task.instance_id} has no grading script ({hint})")
    problem = docker_problem()
    if problem is not None:
        raise LeafError(f"{what}, but {problem}; start Docker and run again (nothing was run)")


def ensure_image(task: Task) -> str:
    """The task's image, present locally: built (Harbor environment/) or pulled when missing."""
    image = image_of(task)
    if (task.model_extra or {}).get("harbor"):
        return build_harbor_image(task)
    if docker(["image", "inspect", image], timeout=60, check=False) is None:
        docker(["pull", image], timeout=task.timeouts.build_s, what=f"cannot pull {image}")
    return image


def docker(args: list[str], *, timeout: float, check: bool = True, what: str = "") -> str | None:
    """Run the docker CLI; its stdout, or None (check=False) / InfraError (check=True) when it fails."""
    run = run_process(["docker", *args], cwd=Path.cwd(), timeout=timeout, env=docker_env())
    if run.ok:
        return run.stdout
    if not check:
        return None
    why = "timed out" if run.timed_out else (run.stderr.strip() or run.stdout.strip())[-400:]
    raise InfraError(f"{what or 'docker ' + ' '.join(args[:2])}: {why}", "docker")


def image_tree(task: Task) -> Path:
    """The image's workdir copied to the host once per (image id, workdir); do not modify it."""
    image = ensure_image(task)
    image_id = docker(["image", "inspect", "--format", "{{.Id}}", image], timeout=60).strip()
    root = cache_root() / "image-trees" / cache_key(image_id, workdir_of(task))
    tree = root / "tree"
    with locked(root.with_suffix(".lock")):
        if not (root / "ready").exists():
            shutil.rmtree(root, ignore_errors=True)
            tree.mkdir(parents=True)
            name = f"leaf-src-{uuid.uuid4().hex[:10]}"
            docker(["create", "--name", name, image], timeout=600, what=f"cannot create a container of {image}")
            try:
                docker(["cp", f"{name}:{workdir_of(task)}/.", str(tree)], timeout=task.timeouts.build_s,
                       what=f"cannot copy {workdir_of(task)} out of {image}")
            finally:
                docker(["rm", "-f", name], timeout=120, check=False)
            (root / "ready").write_text(image_id + "\n")
    return tree


def workspace_from_tree(tree: Path, dest: Path, *, keep_tree: bool) -> tuple[Path, str, Path | None]:
    """Copy `tree` to `dest/repo` and commit it as the only commit; returns (root, commit, outside git dir).

    `keep_tree=False`: the copy's own `.git` is removed and the new repository lives inside it (the agent can
    use git; no history). `keep_tree=True`: the tree stays byte for byte and the repository is `dest/git`.
    `.gitignore` is honoured either way, so build output the image carries never enters a patch."""
    root = dest / "repo"
    shutil.copytree(tree, root, symlinks=True)
    git_dir = dest / "git" if keep_tree else None
    if not keep_tree:
        dot_git = root / ".git"
        if dot_git.is_dir() and not dot_git.is_symlink():
            shutil.rmtree(dot_git)
        elif dot_git.exists() or dot_git.is_symlink():
            dot_git.unlink()
    where = ["--git-dir", str(git_dir), "--work-tree", str(root)] if git_dir else []
    if git_dir is None:
        git(["init", "-q", "-b", "main"], root)
    else:  # a repository outside the tree: nothing is added to the tree, not even a `.git` file
        git(["init", "-q", "-b", "main", "--bare", str(git_dir)], root)
        git(["--git-dir", str(git_dir), "config", "core.bare", "false"], root)
    info = (git_dir or root / ".git") / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "exclude").write_text(IGNORED, encoding="utf-8")
    git([*where, "add", "-A", "."], root)
    git([*where, "commit", "-q", "--no-verify", "--allow-empty", "-m", "start"], root)
    return root, git([*where, "rev-parse", "HEAD"], root).strip(), git_dir


@dataclass
class ContainerWorkspace(Workspace):
    """The tools' workspace for a container: `alias` (the container workdir) names the host `root` too, so
    `Read /testbed/x.py` reads the mounted copy."""

    alias: str = "/testbed"

    def resolve(self, path: str) -> Path:
        text = os.path.expanduser(path) if path else path
        if text and (text == self.alias or text.startswith(self.alias.rstrip("/") + "/")):
            text = str(self.root) + text[len(self.alias.rstrip("/")):]
        return super().resolve(text)


class ImageSession(DockerSandbox):
    """A container of the task's image for one attempt: the workspace mounted at the workdir, no network
    (unless a Harbor task's agent phase has it), its cpu / memory limits, commands run with `docker exec` (as the image's user, with its
    environment). Closing it hands the files back to leaf's user and removes the container with everything
    still running in it."""

    def __init__(self, task: Task, workspace: Path) -> None:
        super().__init__(image_of(task))
        self.task, self.workspace, self.workdir = task, Path(workspace), workdir_of(task)
        self.container = f"leaf-{uuid.uuid4().hex[:12]}"
        self.started = False

    def start(self) -> "ImageSession":
        argv = ["run", "-d", "--name", self.container, "--entrypoint", "tail", *run_args(self.task, "agent")]
        if (self.task.source or {}).get("kind") == "patcheval":
            parent = str(Path(self.workdir).parent)
            if parent not in ("/", self.workdir):  # PatchEval hides its PoC and scripts from the agent
                argv += ["--tmpfs", parent]
        argv += ["-v", f"{self.workspace.resolve()}:{self.workdir}", "-w", self.workdir, str(self.image), "-f", "/dev/null"]
        docker(argv, timeout=600, what=f"cannot start a container of {self.image}")
        self.started = True
        return self

    def wrap(self, argv: list[str], *, cwd: Path, writable: list[Path], readonly: list[Path] = (),
             network: bool = False, tmp: Path | None = None) -> list[str]:
        # `tmp` is not needed: every command execs in the one container of the attempt, which keeps its /tmp.
        return ["docker", "exec", "-i", "-w", self.workdir, self.container, *argv]

    def workspace_for_tools(self) -> ContainerWorkspace:
        """The agent's workspace: host files under the alias, Bash through `docker exec`."""
        return ContainerWorkspace(root=self.workspace, env=docker_env(), bash_prefix=self.wrap([], cwd=self.workspace,
                                  writable=[self.workspace]), alias=self.workdir)

    def close(self) -> None:
        if not self.started:
            return
        if os.getuid() != 0:  # files the image's root user made must stay removable by leaf's user
            docker(["exec", self.container, "chown", "-R", f"{os.getuid()}:{os.getgid()}", self.workdir],
                   timeout=600, check=False)
        docker(["rm", "-f", self.container], timeout=120, check=False)
        self.started = False

    def __enter__(self) -> "ImageSession":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
