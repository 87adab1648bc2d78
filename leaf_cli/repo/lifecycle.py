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
from leaf_cli.repo import history
from leaf_cli.repo.history import Undone
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
    patch, after_tree = _patch(run)
    run.after = _light_state(run.before, after_tree)
    run.files_changed, run.insertions, run.deletions = _shortstat(patch.stat)
    run.exit_reason, run.status, run.finished_at = exit_reason, "kept", time.time()
    run.save()
    return patch.text


def end_run_anyhow(run: RunRecord, exit_reason: str) -> str:
    """`finish_run`, or when even the end state cannot be recorded, a finished record without it: no run
    stays "running" once leaf is done with it. Ctrl-C and SIGTERM wait until the record is written."""
    with signals_held():
        try:
            return finish_run(run, exit_reason)
        except Exception as exc:  # noqa: BLE001 - the record must be written whatever failed
            run.exit_reason, run.status, run.finished_at = exit_reason, "kept", time.time()
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


def after_leaf_commit(run: RunRecord, commit: str) -> None:
    """The review committed the run's change on this branch: that state is the run's end state now."""
    if run.after is not None:
        run.after = _light_state(run.before, run.after.worktree_tree)
    run.status, run.commit = "committed", commit
    run.save()


def move_to_branch(run: RunRecord, branch: str, commit: str) -> RestoreReport:
    """The review committed the run's change on the new `branch`: put this branch back as before the run
    and record the run as branched (the branch is kept by every later undo)."""
    ref = f"refs/heads/{branch}"
    run.kept_refs = sorted(set(run.kept_refs) | {ref})
    with _repo_locked(run):
        report = _restore(run, kept_refs(run) | {ref})
        run.after = _light_state(run.before, run.before.worktree_tree)
        run.status, run.commit, run.branch_name = "branched", commit, branch
        run.save()
    return report


def kept_refs(run: RunRecord) -> set[str]:
    """The refs no undo in this repository removes: every run's branch, undone commit and saved copies.

    Taken from leaf's own run records, never from the repository: a ref the agent made under refs/leaf/
    is one of the run's, and undo removes it.
    """
    from leaf_cli.repo.runs import list_runs

    refs = set(run.kept_refs)
    for other in list_runs(Path(run.top)):
        refs.update(other.kept_refs)
    return refs


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


def undo_run(run: RunRecord, *, force: bool = False, drop: bool = False) -> Undone:
    """Put the repository back as it was before `run`; refuse when the user changed things since, unless
    `force`, which keeps what it overwrites as a commit under refs/leaf/saved/.

    A committed or branched run's commit stays reachable (its branch, or refs/leaf/undone/<run>) unless
    `drop`. A run still going in another leaf process is refused even with `force`: its agent would keep
    writing. The repository's lock is taken before anything is read, so a stale lock a killed git left in
    the store can be cleared safely. What the run made that may hold data is moved aside (into the run's
    folder), never deleted; the result's `report` says what was removed, moved aside or not made again.
    """
    if is_live(run) and run.run_id not in _LOCKS:
        raise LeafError(f"run {run.run_id} is still running (leaf pid {run.pid}); stop it (Ctrl-C) before undoing it")
    if run.status == "undone" and not force:
        raise LeafError(f"run {run.run_id} is already undone (`leaf undo {run.run_id} --force` restores its start "
                        "state again)")
    with _repo_locked(run):
        problems = changed_since(run) if run.status != "undone" else ["the run is undone"]
        if problems and not force:
            raise LeafError("; ".join(problems) + f"; `leaf undo {run.run_id} --force` restores the start state "
                            "anyway (and keeps a copy of what it overwrites)")
        was = run.undone_from if run.status == "undone" else run.status
        result = Undone(was=was if was in ("committed", "branched") else "kept")
        overwritten = history.snapshot(run) if problems and _differs_from(run, run.before) else None
        keep = kept_refs(run)
        if drop and run.branch_name:
            keep.discard(f"refs/heads/{run.branch_name}")
            run.kept_refs = [r for r in run.kept_refs if r != f"refs/heads/{run.branch_name}"]
        result.report = _restore(run, keep)
        _keep_history(run, result, overwritten, drop)
        run.status, run.undone_from = "undone", result.was
        run.save()
    return result


def _keep_history(run: RunRecord, result: Undone, overwritten: history.Snapshot | None, drop: bool) -> None:
    """After the restore (the git dir is the recorded one again): pin what --force overwrote and the run's
    commit, each as a ref every later undo keeps."""
    pinned: list[str] = []
    if overwritten is not None:
        stamp = f"{run.run_id}-{int(time.time())}"
        result.saved = history.pin(run, f"refs/leaf/saved/{stamp}/worktree", history.save(run, overwritten),
                                   f"leaf undo --force of run {run.run_id}: the work tree it overwrote")
        pinned.append(result.saved[0])
        for name, sha in result.report.dropped:  # the refs it removed are part of what it overwrote
            pinned.append(history.pin(run, f"refs/leaf/saved/{stamp}/{name.removeprefix('refs/')}", sha,
                                      f"leaf undo --force of run {run.run_id}: {name}")[0])
    if run.commit and result.was == "committed" and not drop:
        result.kept_commit = history.pin(run, f"refs/leaf/undone/{run.run_id}", run.commit,
                                         f"leaf undo of run {run.run_id}: the commit of the run")
    elif run.branch_name and result.was == "branched" and not drop:
        result.kept_commit = (f"refs/heads/{run.branch_name}", run.commit or "")
    if result.kept_commit is not None:
        pinned.append(result.kept_commit[0])
    run.kept_refs = sorted(set(run.kept_refs) | set(pinned))


def _differs_from(run: RunRecord, state: RepoState) -> bool:
    top, store = Path(run.top), Path(run.store)
    now = _light_state(run.before, current_tree(top, store, run.before))
    return (now.worktree_tree, now.head, now.branch) != (state.worktree_tree, state.head, state.branch)


class _repo_locked:
    """The repository's lock for an undo (a live run of this process holds it already)."""

    def __init__(self, run: RunRecord) -> None:
        self.run = run
        self.lock: RepoLock | None = None

    def __enter__(self) -> None:
        if self.run.run_id not in _LOCKS:
            path = lock_path(state_root(), Path(self.run.top))
            self.lock = RepoLock(path).acquire(f"undo of run {self.run.run_id}, pid {os.getpid()}")

    def __exit__(self, *_exc: object) -> None:
        if self.lock is not None:
            self.lock.release()


def _restore(run: RunRecord, keep: set[str]) -> RestoreReport:
    """The start state back (the caller holds the lock); what may hold data goes aside into the run's folder."""
    aside = Aside(run.folder / "aside" / time.strftime("%Y%m%d-%H%M%S"))
    return restore(Path(run.top), Path(run.store), run.before, keep_refs=tuple(sorted(keep)), aside=aside)


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
