"""A run's life as git sees it: checkpoint before, diff and after-state when it ends, undo on request."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

from leaf_cli.errors import LeafError
from leaf_cli.repo import ignored
from leaf_cli.repo.checkpoint import RepoState, current_tree, current_walk, record
from leaf_cli.repo.git import work_tree_root
from leaf_cli.repo.lock import RepoLock, is_held, lock_path
from leaf_cli.repo.patch import Patch, changed_paths, make_patch
from leaf_cli.repo.refs import read_head
from leaf_cli.repo.restore import RestoreReport, restore
from leaf_cli.repo.safefs import Aside
from leaf_cli.repo.runs import RunRecord, new_run_id, state_root
from leaf_cli.repo.store import store_for

_LOCKS: dict[str, RepoLock] = {}
"""The repository lock each live run of this process holds, by run id."""


def begin_run(workdir: Path, *, title: str = "", model: str = "", run_id: str | None = None) -> RunRecord:
    """Take the repository's lock and record its full state before the agent's first tool call.

    LeafError outside a work tree, while another run holds the repository, or when the state cannot be
    recorded (nothing is left behind then: no record, no lock).
    """
    top = work_tree_root(workdir)
    run_id = run_id or new_run_id()
    lock = RepoLock(lock_path(state_root(), top)).acquire(f"run {run_id}, pid {os.getpid()}")
    try:
        store = store_for(state_root(), top)
        meta = state_root() / "runs" / run_id / "checkpoint"
        before = record(top, store, meta)
    except BaseException:
        lock.release()
        shutil.rmtree(state_root() / "runs" / run_id, ignore_errors=True)
        raise
    run = RunRecord(run_id=run_id, top=str(top), workdir=str(workdir.resolve()), store=str(store),
                    title=title, model=model, before=before, pid=os.getpid())
    run.save()
    _LOCKS[run_id] = lock
    return run


def release_run(run: RunRecord) -> None:
    """Give the repository back to other leaf runs (the process's end does it too)."""
    lock = _LOCKS.pop(run.run_id, None)
    if lock is not None:
        lock.release()


def is_live(run: RunRecord) -> bool:
    """Whether a leaf process is still running `run` (it holds the repository's lock and says it is this run)."""
    if run.status != "running":
        return False
    if run.run_id in _LOCKS:
        return True
    path = lock_path(state_root(), Path(run.top))
    return is_held(path) and f"run {run.run_id}," in path.read_text(errors="replace")


def run_patch(run: RunRecord) -> str:
    """Everything the run changed against the start state (new and deleted files included), as a git patch."""
    return _patch(run)[0].text


def _patch(run: RunRecord) -> tuple[Patch, str]:
    top, store = Path(run.top), Path(run.store)
    found = current_walk(top, run.before)
    after_tree = current_tree(top, store, run.before, found)
    meta = Path(run.before.meta_dir) if run.before.meta_dir else None
    in_ignored = tuple(ignored.review_notes(ignored.compare(top, meta)))
    patch = make_patch(top, store, run.before.worktree_tree, after_tree, object_format=run.before.object_format,
                       found=found, recorded_repos=frozenset(n.root for n in run.before.nested)
                       | frozenset(p.rel[:-5] for p in run.before.pointers if p.rel.endswith("/.git")),
                       more_notes=in_ignored)
    return patch, after_tree


def finish_run(run: RunRecord, exit_reason: str | None) -> str:
    """Record the after-state and the diff stat; return the patch."""
    top = Path(run.top)
    patch, after_tree = _patch(run)
    run.after = _light_state(run.before, after_tree)
    run.files_changed, run.insertions, run.deletions = _shortstat(patch.stat)
    run.exit_reason, run.status, run.finished_at = exit_reason, "finished", time.time()
    run.save()
    return patch.text


def end_run_anyhow(run: RunRecord, exit_reason: str) -> str:
    """`finish_run`, or when even the end state cannot be recorded, a finished record without it: no run
    stays "running" once leaf is done with it. Ctrl-C and SIGTERM wait until the record is written."""
    with signals_held():
        try:
            return finish_run(run, exit_reason)
        except Exception as exc:  # noqa: BLE001 - the record must be written whatever failed
            run.exit_reason, run.status, run.finished_at = exit_reason, "finished", time.time()
            run.save()
            raise LeafError(f"run {run.run_id} ended ({exit_reason}) but its end state could not be recorded: "
                            f"{exc}") from None


class signals_held:
    """Hold SIGINT and SIGTERM for the block: they are noted, and acted on (their handlers run) as it ends.

    Handlers, not the signal mask: a process-directed signal is delivered to any thread that does not
    block it, and Python then runs the handler in the main thread anyway.
    """

    _SIGNALS = ("SIGINT", "SIGTERM")

    def __enter__(self) -> None:
        import signal
        import threading

        self._old: dict[int, object] = {}
        self._pending: list[int] = []
        if threading.current_thread() is not threading.main_thread():
            return
        for name in self._SIGNALS:
            number = getattr(signal, name, None)
            if number is not None:
                self._old[number] = signal.signal(number, lambda signum, _frame: self._pending.append(signum))

    def __exit__(self, *_exc: object) -> None:
        import signal

        for number, handler in self._old.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        for number in dict.fromkeys(self._pending):
            handler = self._old.get(number)
            if callable(handler):
                handler(number, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(number)


def after_leaf_commit(run: RunRecord) -> None:
    """The review committed the run's change: that state is the run's end state now, so `leaf undo` works."""
    top = Path(run.top)
    if run.after is not None:
        run.after = _light_state(run.before, run.after.worktree_tree)
        run.save()


def changed_since(run: RunRecord) -> list[str]:
    """What differs from the state the run left behind (empty when nothing does)."""
    if run.after is None:
        return ["the run never recorded its end state (it was killed)"]
    top, store = Path(run.top), Path(run.store)
    now = _light_state(run.before, current_tree(top, store, run.before))
    problems = []
    if now.worktree_tree != run.after.worktree_tree:
        paths = [c[-1] for c in changed_paths(top, store, run.after.worktree_tree, now.worktree_tree)]
        problems.append("files changed since the run: " + ", ".join(paths[:5]) + (" ..." if len(paths) > 5 else ""))
    if (now.head, now.branch) != (run.after.head, run.after.branch):
        problems.append(f"HEAD moved since the run (now {now.branch or now.head})")
    return problems


def undo_run(run: RunRecord, *, force: bool = False, keep_refs: tuple[str, ...] = ()) -> RestoreReport:
    """Restore the state recorded before `run`; refuse when the user changed things since, unless `force`.

    A run still going in another leaf process is refused even with `force`: its agent would keep writing.
    The repository's lock is taken before anything is read, so a stale lock a killed git left in the store
    can be cleared safely. Returns what was removed (refs made since, which `keep_refs` and the run's own
    kept refs escape) and what was moved aside (into the run's folder) instead of deleted.
    """
    if is_live(run) and run.run_id not in _LOCKS:
        raise LeafError(f"run {run.run_id} is still running (leaf pid {run.pid}); stop it (Ctrl-C) before undoing it")
    if run.status == "undone" and not force:
        raise LeafError(f"run {run.run_id} is already undone (use --force to restore its start state again)")
    own = run.run_id in _LOCKS
    lock = None if own else RepoLock(lock_path(state_root(), Path(run.top))).acquire(f"undo of run {run.run_id}, pid {os.getpid()}")
    try:
        if not force:
            problems = changed_since(run)
            if problems:
                raise LeafError("; ".join(problems) + f"; `leaf undo {run.run_id} --force` restores the start state anyway")
        run.kept_refs = sorted(set(run.kept_refs) | set(keep_refs))
        aside = Aside(run.folder / "aside" / time.strftime("%Y%m%d-%H%M%S"))
        report = restore(Path(run.top), Path(run.store), run.before, keep_refs=tuple(run.kept_refs), aside=aside)
        run.status = "undone"
        run.save()
    finally:
        if lock is not None:
            lock.release()
    return report


def _light_state(before: RepoState, tree: str) -> RepoState:
    """HEAD, its branch and the work tree now. HEAD is read as files at the git dir recorded before the run,
    not through git: the agent may have left a FIFO for an object git would open, or a planted commondir."""
    git_dir = Path(before.git_dir) if before.git_dir else None
    head, branch = read_head(git_dir, Path(before.common_dir or git_dir)) if git_dir else (None, None)
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
