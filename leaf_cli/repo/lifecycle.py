"""A run's life as git sees it: checkpoint before, diff and after-state when it ends, undo on request."""

from __future__ import annotations

import re
import time
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.repo.checkpoint import RepoState, current_tree, diff, locate, record
from leaf_cli.repo.git import out, work_tree_root
from leaf_cli.repo.restore import restore
from leaf_cli.repo.runs import RunRecord, new_run_id, state_root
from leaf_cli.repo.store import store_for


def begin_run(workdir: Path, *, title: str = "", model: str = "", run_id: str | None = None) -> RunRecord:
    """Record the repository's full state before the agent's first tool call; LeafError outside a work tree."""
    top = work_tree_root(workdir)
    run_id = run_id or new_run_id()
    store = store_for(state_root(), top)
    meta = state_root() / "runs" / run_id / "checkpoint"
    before = record(top, store, meta)
    run = RunRecord(run_id=run_id, top=str(top), workdir=str(workdir.resolve()), store=str(store),
                    title=title, model=model, before=before)
    run.save()
    return run


def run_patch(run: RunRecord) -> str:
    """Everything the run changed against the start state (new and deleted files included), as a git patch."""
    top, store = Path(run.top), Path(run.store)
    return diff(top, store, run.before.worktree_tree, current_tree(top, store, run.before.worktree_tree))


def finish_run(run: RunRecord, exit_reason: str | None) -> str:
    """Record the after-state and the diff stat; return the patch."""
    top, store = Path(run.top), Path(run.store)
    after_tree = current_tree(top, store, run.before.worktree_tree)
    run.after = _light_state(top, after_tree)
    patch = diff(top, store, run.before.worktree_tree, after_tree)
    run.files_changed, run.insertions, run.deletions = _shortstat(diff(top, store, run.before.worktree_tree,
                                                                       after_tree, stat=True))
    run.exit_reason, run.status, run.finished_at = exit_reason, "finished", time.time()
    run.save()
    return patch


def changed_since(run: RunRecord) -> list[str]:
    """What differs from the state the run left behind (empty when nothing does)."""
    if run.after is None:
        return ["the run never recorded its end state (it was killed)"]
    top, store = Path(run.top), Path(run.store)
    now = _light_state(top, current_tree(top, store, run.before.worktree_tree))
    problems = []
    if now.worktree_tree != run.after.worktree_tree:
        stat = diff(top, store, run.after.worktree_tree, now.worktree_tree, stat=True).strip().splitlines()
        problems.append("files changed since the run: " + ", ".join(line.split("|")[0].strip() for line in stat[:-1][:5]))
    if (now.head, now.branch) != (run.after.head, run.after.branch):
        problems.append(f"HEAD moved since the run (now {now.branch or now.head})")
    return problems


def undo_run(run: RunRecord, *, force: bool = False) -> list[tuple[str, str]]:
    """Restore the state recorded before `run`; refuse when the user changed things since, unless `force`.

    Returns the refs created since the run that were removed (name, object).
    """
    if run.status == "undone" and not force:
        raise LeafError(f"run {run.run_id} is already undone (use --force to restore its start state again)")
    if not force:
        problems = changed_since(run)
        if problems:
            raise LeafError("; ".join(problems) + f"; `leaf undo {run.run_id} --force` restores the start state anyway")
    dropped = restore(Path(run.top), Path(run.store), run.before)
    run.status = "undone"
    run.save()
    return dropped


def _light_state(top: Path, tree: str) -> RepoState:
    usable = locate(top) is not None
    head = out(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False) or None if usable else None
    branch = out(top, "symbolic-ref", "-q", "HEAD", check=False) or None if usable else None
    return RepoState(head=head, branch=branch, worktree_tree=tree)


def _shortstat(stat: str) -> tuple[int, int, int]:
    last = stat.strip().splitlines()[-1] if stat.strip() else ""
    numbers = [int(re.search(r"(\d+) " + word, last).group(1)) if re.search(r"(\d+) " + word, last) else 0
               for word in ("file", "insertion", "deletion")]
    return numbers[0], numbers[1], numbers[2]


def ensure_git_work_tree(workdir: Path) -> Path:
    """The work tree top for `workdir`, or a LeafError that says what to do."""
    if not workdir.exists():
        raise LeafError(f"--workdir {workdir} does not exist")
    return work_tree_root(workdir)
