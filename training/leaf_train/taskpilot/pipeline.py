"""The TaskPilot run: snapshots -> candidates -> validation -> calibration -> refinement -> tasks.jsonl.

The main thread prepares snapshots and draws candidates from the generator; K worker threads each carry
one candidate family through validation, calibration and up to R refinements (the work is subprocesses:
pytest, git, the agent's Bash). Every result is appended to the run folder as it happens (store.py), so
a killed run resumes: decided candidates are skipped, validations and finished calibrations are reused,
half-done rollouts continue inside their eval run folder. Snapshot suite runs, validations and calibration
rollouts go through the executor (`cfg.executor`): here, or as Ray tasks on a cluster.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Iterator

from leaf_cli.executor import Executor, Job, LocalExecutor, make_executor
from leaf_cli.tasks import Environment, Sandbox, make_sandbox, split_files
from leaf_train.taskpilot import combine, llm, procedural, statement
from leaf_train.taskpilot.calibrate import calibrate
from leaf_train.taskpilot.candidate import Candidate, Decision, Validation, digest
from leaf_train.taskpilot.config import SynthConfig
from leaf_train.taskpilot.policy import Policy
from leaf_train.taskpilot.refine import CannotRefine, refine, write_statement
from leaf_train.taskpilot.snapshot import (Snapshot, build_snapshot, build_snapshot_job, environment, export,
                                           rebase_snapshot, snapshot_repo)
from leaf_train.taskpilot.sources import SkippedSource, SourceError, SourceTree, resolve
from leaf_train.taskpilot.store import Store, read_jsonl
from leaf_train.taskpilot.tasks_out import final_task, hidden_tests
from leaf_train.taskpilot.validate import validate_job

OnEvent = Callable[[str, str], None]
"""Called with (stage, detail) as work happens: snapshot, generated, validated, executable, calibrated,
accepted, dropped. Front ends (the rich progress display) render it; nothing here prints."""


@dataclass
class Run:
    cfg: SynthConfig
    store: Store
    policy: Policy
    sandbox: Sandbox
    emit: OnEvent
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    covers: dict[str, dict] = field(default_factory=dict)
    envs: dict[str, Environment] = field(default_factory=dict)
    dedupe: dict[tuple, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    executor: Executor = field(default_factory=LocalExecutor)


def run(cfg: SynthConfig, on_event: OnEvent | None = None) -> Run:
    """Synthesize until `cfg.target` tasks are accepted or the candidates run out; returns the run state."""
    store = Store(cfg.out)
    (cfg.out / "config.json").write_text(cfg.model_dump_json(indent=2) + "\n", encoding="utf-8")
    policy = Policy(cfg.policy, n_ctx=cfg.agent_max_context)
    ctx = Run(cfg, store, policy, make_sandbox(cfg.sandbox), on_event or (lambda _s, _d: None),
              executor=make_executor(cfg.executor, job_name=f"leaf train synth {cfg.out.name}"))
    prepare_snapshots(ctx)
    if not ctx.snapshots:
        return ctx
    _restore_dedupe(ctx)
    drawn = 0
    with ThreadPoolExecutor(max_workers=cfg.workers, thread_name_prefix="taskpilot") as pool:
        inflight: set[Future] = set()
        for cand in candidate_stream(ctx):
            if cand.id in store.decisions:
                continue
            while len(inflight) >= cfg.workers:  # wait for a free worker before deciding to go on
                done, inflight = wait(inflight, return_when=FIRST_COMPLETED)
                for f in done:
                    f.result()
            if store.accepted() >= cfg.target or drawn >= cfg.max_candidates:
                break
            drawn += 1
            ctx.emit("generated", cand.id)
            inflight.add(pool.submit(process, ctx, cand))
        for f in inflight:
            f.result()
    return ctx


def prepare_snapshots(ctx: Run) -> None:
    """Resolve, build and baseline every source; skipped ones are recorded with the reason."""
    cfg, known = ctx.cfg, {r["id"]: r for r in read_jsonl(ctx.store.path("snapshots"))}
    for spec in cfg.sources:
        try:
            trees = resolve(spec, cfg.cache)
        except SourceError as exc:
            trees = [SkippedSource(spec=spec, id=spec, reason=str(exc))]
        for src in trees:
            cover_path = cfg.out / "cover" / f"{src.id}.json"
            old = known.get(src.id)
            if old and old["status"] == "ok" and cover_path.exists() and old.get("tests") == cfg.tests:
                snap, cover = Snapshot.model_validate(old), json.loads(cover_path.read_text(encoding="utf-8"))
            else:
                snap, cover, seconds = _build(ctx, src)
                ctx.store.append("snapshots", {**snap.model_dump(mode="json"), "seconds": seconds})
                if snap.status == "ok":
                    cover_path.parent.mkdir(parents=True, exist_ok=True)
                    cover_path.write_text(json.dumps(cover), encoding="utf-8")
            if snap.status != "ok":
                ctx.emit("snapshot", f"{snap.id} skipped: {snap.reason}")
                continue
            ctx.snapshots[snap.id], ctx.covers[snap.id] = snap, cover
            ctx.envs[snap.id] = environment(snap, cfg.out)
            ctx.emit("snapshot", f"{snap.id}: {len(snap.passing)} passing tests, {snap.suite_seconds:.1f} s")


def _build(ctx: Run, src: SourceTree | SkippedSource) -> tuple[Snapshot, dict, float]:
    if isinstance(src, SkippedSource):
        return Snapshot(id=src.id, spec=src.spec, status="skipped", reason=src.reason), {}, 0.0
    began = time.monotonic()
    knobs = {"tests": ctx.cfg.tests, "budget_s": ctx.cfg.suite_budget_s, "pip_packages": ctx.cfg.pip_packages}
    repo = snapshot_repo(ctx.cfg.cache, src.id)
    if (repo / ".git").exists():  # built by an earlier run: the job only runs its suite
        job = Job(name=f"snapshot {src.id}", fn=partial(build_snapshot, **knobs),
                  args=(src, ctx.cfg.out, ctx.cfg.cache, ctx.sandbox))
    else:  # the job makes the repository in its output folder; it lands in the driver's cache
        job = Job(name=f"snapshot {src.id}", fn=partial(build_snapshot_job, **knobs), args=(src, ctx.cfg.out, ctx.sandbox),
                  outputs=repo, rebase=partial(rebase_snapshot, run_dir=ctx.cfg.out))
    snap, cover = ctx.executor.call(job)
    return snap, cover, round(time.monotonic() - began, 3)


def candidate_stream(ctx: Run) -> Iterator[Candidate]:
    """Undecided candidates of an earlier run first, then fresh ones, round-robin over snapshots."""
    for cand in list(ctx.store.candidates.values()):
        if cand.parent is None and cand.generator == ctx.cfg.generator and cand.snapshot in ctx.snapshots:
            yield cand
    streams = [_fresh(ctx, snap) for snap in ctx.snapshots.values()]
    while streams:
        for stream in list(streams):
            cand = next(stream, None)
            if cand is None:
                streams.remove(stream)
            elif cand.id not in ctx.store.candidates:
                yield cand


def _fresh(ctx: Run, snap: Snapshot) -> Iterator[Candidate]:
    cfg = ctx.cfg
    if cfg.generator == "llm":
        from leaf_cli.llm.openai import OpenAIEngine

        return llm.generate(snap, cfg.out, ctx.envs[snap.id], ctx.sandbox,
                            lambda: OpenAIEngine(cfg.generator_url or "", cfg.generator_model),
                            max_turns=cfg.generator_max_turns, attempts=cfg.max_candidates, log_dir=cfg.out / "generation")
    with _clean_tree(ctx, snap) as tree:
        sources = procedural.read_sources(tree, ctx.covers[snap.id])
    singles = procedural.generate(snap, sources, ctx.covers[snap.id], cfg.seed)
    if cfg.generator == "procedural":
        return singles
    return combine.generate(snap, cfg.out, singles, lambda c: validation(ctx, c), cfg.combine_size)


@contextlib.contextmanager
def _clean_tree(ctx: Run, snap: Snapshot) -> Iterator[Path]:
    """The snapshot's clean files in a temporary folder (the generators read sources from it)."""
    with tempfile.TemporaryDirectory(prefix="taskpilot-src-") as tmp:
        export(ctx.cfg.out / snap.repo, snap.commit, Path(tmp) / "tree")
        yield Path(tmp) / "tree"


def validation(ctx: Run, cand: Candidate) -> Validation:
    """The validation of `cand`'s code: reused when already on disk, else run and recorded."""
    found = ctx.store.validations.get(cand.code_key())
    if found is not None:
        return found
    snap = ctx.snapshots[cand.snapshot]
    record = ctx.executor.call(Job(name=f"validate {cand.id}", fn=validate_job,
                                   args=(cand, snap, ctx.cfg.out, ctx.envs[snap.id], ctx.sandbox, ctx.cfg),
                                   outputs=(ctx.cfg.out / snap.repo).resolve()))
    ctx.store.append("validated", record)
    ctx.emit("validated", f"{cand.id}: {'ok' if record.ok else record.reason}")
    return record


def process(ctx: Run, root: Candidate) -> Decision:
    """Carry one candidate family to its decision: accepted, or dropped with the reason."""
    if root.id not in ctx.store.candidates:
        ctx.store.append("candidates", root)
    val = validation(ctx, root)
    if not val.ok:
        return _decide(ctx, root, root, False, val.reason or "invalid")
    with ctx.lock:
        owner = ctx.dedupe.setdefault(_dedupe_key(root, val), root.id)
    if owner != root.id:
        return _decide(ctx, root, root, False, "duplicate")
    ctx.emit("executable", root.id)
    snap = ctx.snapshots[root.snapshot]
    cand = _first_statement(ctx, root, val, snap)
    if statement.leaks(cand.problem_statement, _secrets(cand)):
        return _decide(ctx, root, cand, False, "statement_leaks")
    first: float | None = None
    refine_engine = _refine_engine(ctx) if cand.generator == "llm" else None
    for round_ in range(ctx.cfg.rounds + 1):
        if cand.id not in ctx.store.candidates:
            ctx.store.append("candidates", cand)
        cal = ctx.store.calibrations.get(cand.id)
        if cal is None or cal.rollouts < ctx.cfg.rollouts:
            task = snap.task(ctx.cfg.out, instance_id=cand.id, base_commit=val.base_commit, patch=cand.patch,
                             test_patch=cand.test_patch, problem_statement=cand.problem_statement,
                             FAIL_TO_PASS=val.f2p, PASS_TO_PASS=val.p2p, hidden_paths=hidden_tests(cand, val))
            cal = calibrate(task, round_, cand.specificity, ctx.policy, ctx.sandbox, ctx.cfg, ctx.cfg.out,
                            ctx.executor)
            ctx.store.append("calibration", cal)
        ctx.emit("calibrated", f"{cand.id}: p̂={cal.p_hat:.2f} {cal.verdict}")
        first = cal.p_hat if first is None else first
        if cal.verdict == "in_band":
            task = final_task(cand, val, snap, cal, ctx.policy.name)
            ctx.store.append("tasks", json.loads(task.to_json()))
            return _decide(ctx, root, cand, True, "accepted", task.instance_id, first, cal.p_hat)
        if round_ == ctx.cfg.rounds:
            return _decide(ctx, root, cand, False, f"out_of_band_{cal.verdict}", None, first, cal.p_hat)
        try:
            cand = refine(cand, val, snap.package, cal.verdict, refine_engine, cal, ctx.cfg.band)
        except CannotRefine:
            return _decide(ctx, root, cand, False, f"cannot_refine_{cal.verdict}", None, first, cal.p_hat)
    raise AssertionError("unreachable: the loop returns on its last round")


def _first_statement(ctx: Run, root: Candidate, val: Validation, snap: Snapshot) -> Candidate:
    if root.generator == "llm":
        return root
    level = ctx.cfg.start_level
    text = write_statement(root, val, snap.package, level)
    return root.model_copy(update={"id": digest(root.code_key(), text), "parent": root.id, "problem_statement": text,
                                   "specificity": level})


def _secrets(cand: Candidate) -> list[str]:
    if cand.generator == "llm":
        return [l[1:].strip() for l in cand.patch.splitlines() if l.startswith("+") and not l.startswith("+++")]
    return list(cand.meta.get("secret_lines", []))


def _refine_engine(ctx: Run):  # noqa: ANN202 - an Engine or None
    from leaf_cli.llm.openai import OpenAIEngine

    return OpenAIEngine(ctx.cfg.generator_url or "", ctx.cfg.generator_model)


def _dedupe_key(cand: Candidate, val: Validation) -> tuple:
    return (tuple(sorted({p for paths, _ in split_files(cand.patch) for p in paths})), tuple(sorted(val.f2p)))


def _restore_dedupe(ctx: Run) -> None:
    """Rebuild the duplicate index from the decisions of an earlier run (first come, first kept), seeded
    with the tasks of `exclude_tasks` (an earlier iteration's pool) so that none is generated again."""
    if ctx.cfg.exclude_tasks is not None and ctx.cfg.exclude_tasks.is_file():
        from leaf_cli.tasks import load_tasks

        for task in load_tasks(ctx.cfg.exclude_tasks).tasks:
            files = tuple(sorted({p for paths, _ in split_files(task.patch) for p in paths}))
            ctx.dedupe.setdefault((files, tuple(sorted(task.FAIL_TO_PASS))), f"pool:{task.instance_id}")
    for decision in ctx.store.decisions.values():
        root = ctx.store.candidates.get(decision.root)
        val = ctx.store.validations.get(root.code_key()) if root else None
        if root is not None and val is not None and val.ok and decision.reason != "duplicate":
            ctx.dedupe.setdefault(_dedupe_key(root, val), root.id)


def _decide(ctx: Run, root: Candidate, cand: Candidate, accepted: bool, reason: str, instance_id: str | None = None,
            first: float | None = None, final: float | None = None) -> Decision:
    decision = Decision(candidate=cand.id, root=root.id, accepted=accepted, reason=reason, instance_id=instance_id,
                        p_hat_first=first, p_hat_final=final)
    ctx.store.append("decisions", decision)
    ctx.emit("accepted" if accepted else "dropped", f"{root.id}: {reason}")
    return decision
