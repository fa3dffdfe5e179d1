"""Plug-ins under guard: their decisions checked, their failures named.

A plug-in policy or placement (one not built in) runs behind two guards, so that a mistake in it ends
the run with a message that names the plug-in, the hook, the simulated time and the job — never an
assertion deep inside the engine, never a result half-written:

* :class:`CheckedContext` checks each decision before the engine carries it out (a job started twice,
  GPUs that are not free, a preemption of a job that does not run, ...);
* :func:`guard_hooks` turns an exception raised inside a hook into :class:`PluginFailed`.

Built-in policies run unguarded (their decisions are tested; a check per decision would cost them
time on every pass).  The conformance kit (:mod:`simcluster.testing`) uses the same checks, recording
each broken rule instead of stopping at the first.
"""

from __future__ import annotations

import inspect
import math
import sys
import traceback
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from math import isnan
from typing import Any

from simcluster.job import JobState
from simcluster.placement.base import Placement
from simcluster.queue import JobQueue, _push_sized
from simcluster.registry import implements

POLICY_HOOKS = ("schedule", "pending_key", "on_submit", "on_finish", "on_run_start", "on_run_stop", "on_epoch",
                "attach", "report")


class PluginFailed(RuntimeError):
    """A plug-in raised an exception, or took a decision the engine cannot carry out."""

    def __init__(self, message: str, rule: str = "exception") -> None:
        super().__init__(message)
        self.rule = rule


Violation = Callable[[str, str], None]  # (rule, message): what to do when a rule is broken


def at(t: float) -> str:
    """``t=12,345.5 s``: a simulated time as messages write it.

    >>> at(13225200.0), at(61.25)
    ('t=13,225,200 s', 't=61.25 s')
    """
    text = f"{t:,.3f}".rstrip("0").rstrip(".")
    return f"t={text} s"


def raise_violation(rule: str, message: str) -> None:
    raise PluginFailed(message, rule)


def _job_of(args: Iterable[Any]) -> Any:
    return next((a for a in args if hasattr(a, "job_id") and hasattr(a, "gpu_num")), None)


def where_in(exc: BaseException, module: str | None) -> str:
    """`` (FILE line N)``: the innermost frame of the traceback that is in ``module``'s file, if any."""
    frames = traceback.extract_tb(exc.__traceback__)
    if module:
        own = [f for f in frames if f.filename == module]
        if own:
            return f" ({own[-1].filename} line {own[-1].lineno})"
    return f" ({frames[-1].filename} line {frames[-1].lineno})" if frames else ""


def guard_hooks(plugin: Any, base: type, hooks: Iterable[str], label: str, clock: Callable[[], float],
                source_file: str | None = None) -> None:
    """Wrap each hook ``plugin`` implements (of ``hooks``) so that an exception it raises becomes
    :class:`PluginFailed` naming ``label``, the hook, the time and the job it was called for."""
    for hook in hooks:
        if not implements(plugin, base, hook):
            continue
        original = getattr(plugin, hook)

        def guarded(*args: Any, _original: Callable[..., Any] = original, _hook: str = hook) -> Any:
            try:
                return _original(*args)
            except PluginFailed:
                raise
            except Exception as exc:
                job = _job_of(args)
                on = f", job {job.job_id}" if job is not None else ""
                vc = next((a.name for a in args if hasattr(a, "pending") and hasattr(a, "name")), None)
                on += f", VC {vc}" if vc is not None and job is None else ""
                raise PluginFailed(f"{label} raised {type(exc).__name__}: {exc} in {_hook} at {at(clock())}{on}"
                                   f"{where_in(exc, source_file)}") from exc

        setattr(plugin, hook, guarded)


def check_plan(job: Any, plan: Any, vc: Any, shares: bool, max_jobs: int, resizing: bool = False,
               releasing: Collection[Any] = ()) -> str | None:
    """What is wrong with ``plan`` for ``job`` on ``vc`` (None: nothing): nodes of another VC or down, GPUs that
    are not there or not free (or, for a policy that shares GPUs, full), or not the job's GPU count (an elastic
    job takes any count).  ``resizing``: the job runs and its own GPUs count as free, and those of the jobs
    ``releasing`` (resized at the same instant)."""
    if not isinstance(plan, (list, tuple)) or not plan:
        return f"a plan must be a non-empty list of (node, count) or (node, [GPU indices]), got {plan!r}"
    nodes = {id(n) for n in vc.nodes}
    named = f"VC {vc.name}" if hasattr(vc, "name") else f"the {vc.gpu_type} pool"
    total, seen = 0, set()
    for item in plan:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            return f"a plan's items are (node, count) or (node, [GPU indices]), got {item!r}"
        node, where = item
        if id(node) not in nodes:
            return f"node {getattr(node, 'name', node)!r} is not a node of {named}"
        if id(node) in seen:
            return f"node {node.name} appears twice in the plan"
        seen.add(id(node))
        if not node.up:
            return f"node {node.name} is down"
        if isinstance(where, bool) or not isinstance(where, (int, list, tuple)):
            return f"node {node.name}: expected a GPU count or a list of GPU indices, got {where!r}"
        own = [i for other in {job, *releasing} for i in node.jobs.get(other, ())] if resizing else []
        if isinstance(where, int):
            if where <= 0 or where > node.free_gpus + len(own):
                held = f" (and {len(own)} held by the job(s) resized)" if own else ""
                return f"asks for {where} idle GPUs of node {node.name}, which has {node.free_gpus}{held}"
            total += where
            continue
        ids = list(where)
        if len(set(ids)) != len(ids) or any(not isinstance(i, int) or not 0 <= i < node.gpu_count for i in ids):
            return f"node {node.name}: GPU indices {ids} are not distinct indices below {node.gpu_count}"
        for i in ids:
            holders = node.gpus[i]
            if job.gpu_milli < 1000 and node.milli is not None:
                if node.milli[i] + job.gpu_milli > 1000:
                    return f"GPU {i} of node {node.name} has {1000 - node.milli[i]} thousandths free; the job takes " \
                           f"{job.gpu_milli}"
                continue
            if holders and not all(h is job or h in releasing for h in holders) and not shares:
                return f"GPU {i} of node {node.name} is not free (it runs {holders[0].job_id})"
            if shares and len(holders) >= max_jobs:
                return f"GPU {i} of node {node.name} already holds {len(holders)} jobs (--max-jobs-per-gpu {max_jobs})"
        total += len(ids)
    if total != job.gpu_num and getattr(job, "elastic", None) is None:
        return f"the plan gives job {job.job_id} {total} GPUs; it asks for {job.gpu_num}"
    return None


class CheckedContext:
    """A :class:`~simcluster.policies.base.SchedulingContext` that checks each decision of a plug-in policy before
    the engine's context carries it out; a broken rule goes to ``violation`` (default: raise)."""

    def __init__(self, inner: Any, vc: Any, label: str, shares: bool, violation: Violation = raise_violation,
                 guard: RunGuard | None = None, source: str | None = None) -> None:
        self._inner, self._vc, self._label, self._shares = inner, vc, label, shares
        self._violation, self._run_guard = violation, guard
        clock = getattr(inner, "clock", None)
        self._clock = clock if callable(clock) else lambda: inner.now
        self._source = guard.source if guard is not None and source is None else source

    def _broken(self, rule: str, message: str) -> None:
        hook, line = user_frame(sys._getframe(1), self._source)
        where = f" in {hook}" if hook else ""
        self._violation(rule, f"{self._label} {message}{where} ({at(self._inner.now)}, VC {self._vc.name}){line}")

    def _waiting_here(self, job: Any, action: str) -> bool:
        if job.state is not JobState.PENDING or job not in self._vc.pending:
            state = "running" if job.state is JobState.RUNNING else job.state.value
            where = "" if job.queue_vc == self._vc.name else f" in VC {job.queue_vc}"
            self._broken("start-not-pending", f"{action} job {job.job_id}, which is not waiting in this VC "
                                              f"(it is {state}{where})")
            return False
        return True

    @property
    def now(self) -> float:
        return self._clock()  # type: ignore[no-any-return]

    @property
    def config(self) -> Any:
        return self._inner.config

    def try_start(self, job: Any, gpu_type: str | None = None) -> bool:
        if (job.state is not JobState.PENDING or job not in self._vc.pending._entry_of) \
                and not self._waiting_here(job, "started"):
            return False
        return self._inner.try_start(job, gpu_type)  # type: ignore[no-any-return]

    def start_on(self, job: Any, plan: Any, batch: Any = None, delay: float | None = None) -> None:
        if not self._waiting_here(job, "started"):
            return
        wrong = check_plan(job, plan, self._vc, self._shares, self.config.max_jobs_per_gpu)
        if wrong is not None:
            self._broken("more-gpus-than-free", f"started job {job.job_id} on GPUs it cannot have: {wrong}")
            return
        if (batch is not None or delay is not None) and not self._elastic(job, "started", batch, delay):
            return
        self._inner.start_on(job, plan, batch, delay)

    def resize(self, job: Any, plan: Any, batch: Any = None, delay: float | None = None) -> None:
        if self._resizable(job, batch, delay):
            wrong = check_plan(job, plan, self._vc, False, 1, resizing=True)
            if wrong is not None:
                self._broken("more-gpus-than-free", f"resized job {job.job_id} to GPUs it cannot have: {wrong}")
                return
            self._inner.resize(job, plan, batch, delay)

    def resize_many(self, changes: Any, batches: Any = None, delay: float | None = None) -> None:
        batches = batches or {}
        if not all(self._resizable(job, batches.get(job), delay) for job in changes):
            return
        for job, plan in changes.items():  # each plan alone, as if the others' GPUs were free ...
            wrong = check_plan(job, plan, self._vc, False, 1, resizing=True, releasing=set(changes))
            if wrong is not None:
                self._broken("more-gpus-than-free", f"resized job {job.job_id} to GPUs it cannot have: {wrong}")
                return
        asked: dict[Any, int] = {}  # ... then all of them together
        for plan in changes.values():
            for node, where in plan:
                asked[node] = asked.get(node, 0) + (where if isinstance(where, int) else len(where))
        for node, count in asked.items():
            room = node.free_gpus + sum(len(ids) for job, ids in node.jobs.items() if job in changes)
            if count > room:
                self._broken("more-gpus-than-free", f"resized jobs to {count} GPUs of node {node.name}, which has "
                                                    f"{room} free or held by the jobs resized")
                return
        self._inner.resize_many(changes, batches, delay)

    def _resizable(self, job: Any, batch: Any, delay: Any) -> bool:
        if job.state is not JobState.RUNNING or job not in self._vc.running:
            self._broken("resize-not-running", f"resized job {job.job_id}, which does not run in this VC "
                                               f"(it is {job.state.value})")
            return False
        return self._elastic(job, "resized", batch, delay)

    def _elastic(self, job: Any, action: str, batch: Any, delay: Any) -> bool:
        """Whether ``job`` is elastic and ``delay`` a time; a broken rule said otherwise."""
        if getattr(job, "elastic", None) is None:
            self._broken("not-elastic", f"{action} job {job.job_id} with a batch, delay or new size, but the job is "
                                        "not elastic (declare elastic = True on the policy)")
            return False
        if delay is not None and not (isinstance(delay, (int, float)) and math.isfinite(delay) and delay >= 0):
            self._broken("bad-value", f"{action} job {job.job_id} with delay {delay!r}: give a number >= 0")
            return False
        return True

    def decline(self, job: Any) -> None:
        if self._waiting_here(job, "declined"):
            self._inner.decline(job)

    def preempt(self, job: Any, overhead: float | None = None, moving: bool = False) -> None:
        if job.state is not JobState.RUNNING or job not in self._vc.running:
            self._broken("preempt-not-running", f"preempted job {job.job_id}, which does not run in this VC "
                                                f"(it is {job.state.value})")
            return
        if overhead is not None and not (isinstance(overhead, (int, float)) and math.isfinite(overhead)
                                         and overhead >= 0):
            self._broken("bad-value", f"preempted job {job.job_id} with overhead {overhead!r}: give a number >= 0")
            return
        self._inner.preempt(job, overhead, moving)

    def stall(self, job: Any, seconds: float) -> None:
        if job.state is not JobState.RUNNING or job not in self._vc.running:
            self._broken("stall-not-running", f"stalled job {job.job_id}, which does not run in this VC "
                                              f"(it is {job.state.value})")
            return
        if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds >= 0):
            self._broken("bad-value", f"stalled job {job.job_id} for {seconds!r} seconds: give a number >= 0")
            return
        if getattr(job, "elastic", None) is not None:
            self._broken("bad-value", f"stalled elastic job {job.job_id}: give it a pause with resize(job, its plan, "
                                      "delay=...)")
            return
        self._inner.stall(job, seconds)

    def wake_at(self, when: float) -> None:
        if not isinstance(when, (int, float)) or math.isnan(when):
            self._broken("bad-value", f"asked to be woken at {when!r}: give a time in seconds")
            return
        if math.isinf(when):
            return  # never: no timer
        if self._run_guard is not None:
            self._run_guard.woke(self._vc.name, when)
        self._inner.wake_at(when)

    def requeue(self, job: Any) -> None:
        if self._waiting_here(job, "requeued"):
            self._inner.requeue(job)

    def reorder(self) -> None:
        self._inner.reorder()

    def move(self, job: Any, partition: str) -> None:
        if partition not in self._inner.partition_names():
            self._broken("bad-value", f"moved job {job.job_id} to {partition!r}, which is no VC or partition")
            return
        self._inner.move(job, partition)

    @property
    def colocation(self) -> Any:
        return self._inner.colocation

    @property
    def throughputs(self) -> Any:
        return self._inner.throughputs

    def pair_speeds(self, a: Any, b: Any) -> tuple[float, float]:
        return self._inner.pair_speeds(a, b)  # type: ignore[no-any-return]


class CheckedPlacement(Placement):
    """A plug-in placement whose plans are checked before the engine applies them."""

    def __init__(self, inner: Any, label: str, clock: Callable[[], float], violation: Violation = raise_violation,
                 source_file: str | None = None) -> None:
        self._inner, self._label, self._clock, self._violation = inner, label, clock, violation
        self._source = source_file
        self.name = getattr(inner, "name", label)
        self.chooses_types = getattr(inner, "chooses_types", False)
        self.places_fractions = getattr(inner, "places_fractions", False)

    def place(self, job: Any, pool: Any) -> Any:
        try:
            plan = self._inner.place(job, pool)
        except PluginFailed:
            raise
        except Exception as exc:
            raise PluginFailed(f"{self._label} raised {type(exc).__name__}: {exc} in place at {at(self._clock())}, "
                               f"job {job.job_id}{where_in(exc, self._source)}") from exc
        if plan is None:
            return None
        wrong = check_plan(job, plan, pool, False, 1)
        if wrong is not None:
            self._violation("more-gpus-than-free", f"{self._label} placed job {job.job_id} on GPUs it cannot have: "
                                                   f"{wrong} in place ({at(self._clock())})"
                                                   f"{definition_line(self._inner.place, self._source)}")
            return None
        return plan


# --- one guarded run: hooks, writes to views, progress ---------------------------------------------

SAME_INSTANT_LIMIT = 10_000  # passes on one VC at one simulated instant, with nothing started or finished
IDLE_PASS_LIMIT = 10_000  # passes in a row on one VC where nothing ran, nothing changed and a waiting job fitted
SUSPECT_HOOKS = frozenset(POLICY_HOOKS) | {"__init__", "place", "allocate", "partitions", "borrowed_nodes"}


def user_frame(frame: Any, source: str | None) -> tuple[str | None, str]:
    """(hook, `` (FILE line N)``) of the stack from ``frame`` outwards: the innermost frame in the plug-in's file
    gives the line, the outermost one there named like a hook gives the hook (None if none is)."""
    line, hook = "", None
    while frame is not None:
        code = frame.f_code
        if source is not None and code.co_filename == source:
            if not line:
                line = f" ({source} line {frame.f_lineno})"
            if code.co_name in SUSPECT_HOOKS:
                hook = code.co_name
        frame = frame.f_back
    return hook, line


def _in_file(frame: Any, source: str) -> bool:
    while frame is not None:
        if frame.f_code.co_filename == source:
            return True
        frame = frame.f_back
    return False


def definition_line(function: Any, source: str | None) -> str:
    """`` (FILE line N)``: where ``function`` (a hook of the plug-in) is defined, when it is in ``source``."""
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    if code is None or (source is not None and code.co_filename != source):
        return f" ({source})" if source else ""
    return f" ({code.co_filename} line {code.co_firstlineno})"


def _bad_key(key: Any) -> str | None:
    """Why a queue key cannot order jobs (None: it can): None or NaN, or a tuple holding one."""
    if key is None:
        return "None"
    kind = type(key)
    if kind is float:
        return "NaN" if math.isnan(key) else None
    if kind is tuple:
        for part in key:
            if part is None or (type(part) is float and math.isnan(part)):
                return f"{key!r}, which holds {part!r}"
    return None


class RunGuard:
    """One run of a plug-in policy behind the guard: its hooks wrapped (an exception, a None or NaN queue key, a
    report JSON cannot hold: :class:`PluginFailed`), writes to views refused (:mod:`simcluster.views`), and the
    no-progress limits of ``check-policy`` applied (endless passes at one instant, nothing started for long
    while jobs that fit wait, in simulated time or in passes); GPUs left idle with no timer set are remembered
    for a warning at the end."""

    def __init__(self, label: str, source: str | None, clock: Callable[[], float], jobs: Collection[Any]) -> None:
        self.label, self.source, self.clock = label, source, clock
        self.sim: Any = None  # the simulation (its counts of running and waiting jobs tell progress)
        self.instant = -math.inf  # the instant passes without progress are counted at
        self.passes = 0  # passes at that instant since something last started, stopped or finished
        self.quiet: dict[str, float] = {}  # VC → since when jobs waited there and none ran
        self.idle_passes: dict[str, tuple[int, float]] = {}  # VC → (passes in a row, since when) that changed
        # nothing while no job ran there and a waiting job fitted its idle GPUs
        self.patience = max(86_400.0, 10 * max((j.duration for j in jobs), default=0.0))
        self.idle: dict[str, tuple[float, str, int, int]] = {}  # VC → (since, job that fitted, GPUs free, jobs
        # unfinished then) while GPUs stay idle with no timer set
        self.woken: dict[str, float] = {}  # VC → the latest time its policy asked to be woken
        self.again: set[str] = set()  # VCs whose policy asked for a pass at this very instant
        self.longest: tuple[float, float, str, str, int] | None = None  # (from, to, VC, job, GPUs free)
        self.stretches = 0
        self.wake_frame: Any = None  # the caller of the last wake_at (its line, if the run never moves on)

        self.placement: tuple[str, str | None] | None = None  # (label, file) of a plug-in placement
        self.originals: dict[str, Callable[..., Any]] = {}  # hook → the plug-in's own, unwrapped

    def construct(self, cls: type, config: Any) -> Any:
        """The plug-in policy made from ``cls``: an exception in its ``__init__`` said as the others are."""
        try:
            return cls(config)
        except Exception as exc:
            raise self.raised(exc, "__init__", ()) from exc

    # --- failures, in words ---
    def fail(self, rule: str, what: str, hook: str | None = None, line: str = "", frame: Any = None) -> PluginFailed:
        if frame is not None:
            found, line = user_frame(frame, self.source)
            hook = hook or found
            if not line:  # in the plug-in's code outside its class's file (a base class's module)
                found, line = user_frame(frame, frame.f_code.co_filename)
                hook = hook or found
        where = f" in {hook}" if hook else ""
        return PluginFailed(f"{self.label} {what}{where} at {at(self.clock())}{line}", rule)

    def raised(self, exc: BaseException, hook: str, args: Iterable[Any]) -> PluginFailed:
        job = _job_of(args)
        on = f", job {job.job_id}" if job is not None else ""
        vc = next((a.name for a in args if hasattr(a, "pending") and hasattr(a, "name")), None)
        on += f", VC {vc}" if vc is not None and job is None else ""
        failed = PluginFailed(f"{self.label} raised {type(exc).__name__}: {exc} in {hook} at {at(self.clock())}{on}"
                              f"{where_in(exc, self.source)}")
        failed.__cause__ = exc
        return failed

    def wrote_view(self, obj: Any, name: str, frame: Any) -> None:
        """A plug-in's code wrote ``name`` of the view ``obj`` (called by the check the file was compiled with)."""
        if self.placement is not None and self.placement[1] is not None and _in_file(frame, self.placement[1]):
            label, source = self.placement
            _, line = user_frame(frame, source)
            raise PluginFailed(f"{label} wrote {name or 'an attribute'} of a read-only view in place at "
                               f"{at(self.clock())}{line} (a placement returns a plan; the engine applies it)",
                               "mutates-view")
        kind = type(obj).__name__
        whose = f"job {obj.job_id}" if hasattr(obj, "job_id") else (
            f"{kind} {obj.name}" if isinstance(getattr(obj, "name", None), str) else kind)
        raise self.fail("mutates-view", f"wrote {name or 'an attribute'} of {whose}, a read-only view (a policy "
                                        "changes jobs, nodes and queues only through the context: try_start, "
                                        "preempt, requeue, ...)", frame=frame)

    # --- the hooks ---
    def wrap(self, policy: Any, base: type) -> None:
        """Wrap the hooks of ``policy`` that need a check around each call: ``schedule`` (the pass checks),
        ``report`` (its value) and those called as the run is set up.  The hooks called by the thousand
        (``pending_key``, ``on_run_start``, ...) run bare: an exception in one is explained where the run
        stops (:meth:`explain`), at no cost per call."""
        for hook in POLICY_HOOKS:
            if implements(policy, base, hook) or hook == "schedule":
                self.originals[hook] = getattr(policy, hook)
        for hook in ("schedule", "report", "attach", "partitions", "borrowed_nodes"):
            if hook != "schedule" and not implements(policy, base, hook):
                continue
            original = self.originals[hook] = getattr(policy, hook)
            maker = {"schedule": self._schedule, "report": self._report}.get(hook, self._plain)
            setattr(policy, hook, maker(original, hook))

    def explain(self, exc: BaseException) -> PluginFailed | None:
        """``exc``, raised while the run went on, as a :class:`PluginFailed` naming the hook of the plug-in it
        came from, the job and the line (None: it did not come from the plug-in's code)."""
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            frames.append((tb.tb_frame, tb.tb_lineno))
            tb = tb.tb_next
        own = [(f, n) for f, n in frames if self.source is not None and f.f_code.co_filename == self.source]
        if not own:
            return None
        hooks = [f for f, _ in own if f.f_code.co_name in SUSPECT_HOOKS]
        hook = hooks[-1] if hooks else own[0][0]  # the innermost hook: on_run_start called from schedule's start
        found = hook.f_locals
        job, vc = found.get("job"), found.get("vc")
        on = f", job {job.job_id}" if hasattr(job, "job_id") else (
            f", VC {vc.name}" if isinstance(getattr(vc, "name", None), str) else "")
        failed = PluginFailed(f"{self.label} raised {type(exc).__name__}: {exc} in {hook.f_code.co_name} at "
                              f"{at(self.clock())}{on} ({self.source} line {own[-1][1]})")
        failed.__cause__ = exc
        return failed

    def _plain(self, original: Callable[..., Any], hook: str) -> Callable[..., Any]:
        def guarded(*args: Any) -> Any:
            try:
                return original(*args)
            except PluginFailed:
                raise
            except Exception as exc:
                raise self.raised(exc, hook, args) from exc

        return guarded

    def bad_key(self, job: Any, key: Any) -> PluginFailed | None:
        """What is wrong with ``key``, the queue key ``pending_key`` gave ``job`` (None: nothing)."""
        bad = _bad_key(key)
        if bad is None:
            return None
        return self.fail("bad-value", f"returned {bad} as the queue key of job {job.job_id}: a key must order jobs "
                                      "(no None, no NaN)", "pending_key",
                         definition_line(self.originals.get("pending_key"), self.source))

    def _report(self, original: Callable[..., Any], hook: str) -> Callable[..., Any]:
        def report() -> Any:
            from simcluster import views

            before, views.GUARD = views.GUARD, self
            try:
                found = original()
            except PluginFailed:
                raise
            except Exception as exc:
                raise self.raised(exc, hook, ()) from exc
            finally:
                views.GUARD = before
            wrong = _unwritable(found)
            if wrong is not None:
                raise self.fail("bad-value", f"returned {wrong} from report(); summary.json holds a dict of names "
                                             "to numbers, strings, lists and dicts", hook,
                                definition_line(original, self.source))
            return found

        return report

    def _schedule(self, original: Callable[..., Any], hook: str) -> Callable[..., Any]:
        idle = self.idle

        def schedule(vc: Any, ctx: Any) -> None:
            sim = self.sim
            running, pending = sim.running, sim.pending
            try:
                original(vc, ctx)
            except PluginFailed:
                raise
            except Exception as exc:
                raise (self.explain(exc) or self.raised(exc, hook, (vc, ctx))) from exc
            if idle and vc.name in idle:
                self._closed(vc.name, sim.pending < pending)
            changed = sim.running != running or sim.pending != pending  # started, stopped or turned away
            if changed:
                self.passes = 0
            else:
                self._unchanged(vc)
            if vc.pending._entry_of:
                self._waiting(vc, changed)
            elif self.quiet:
                self.quiet.pop(vc.name, None)

        return schedule

    def _unchanged(self, vc: Any) -> None:
        now = self.clock()
        if now != self.instant:
            self.instant, self.passes = now, 0
        self.passes += 1
        if self.passes > SAME_INSTANT_LIMIT:
            raise self.fail("no-progress", f"was run {self.passes:,} times at {at(now)} (last on VC {vc.name}) "
                                           "without starting or preempting anything: it asks to be woken at the "
                                           "same instant again and again (ctx.wake_at(ctx.now)) without deciding "
                                           "anything; the run would never end", "schedule", self._wake_line())

    def _waiting(self, vc: Any, changed: bool) -> None:
        """After a pass that left jobs waiting in ``vc``: nothing ran there for too long (an error), or GPUs were
        left idle for a job that fits with no timer set (remembered for the warning)."""
        now, name, quiet = self.clock(), vc.name, self.quiet
        if vc.running:
            if quiet:
                quiet.pop(name, None)
        elif now - quiet.setdefault(name, now) > self.patience:
            self._stuck(vc, now, quiet[name])
        if vc.running or changed or vc.pending.none_fits(vc.free_gpus):
            if self.idle_passes:
                self.idle_passes.pop(name, None)
        else:
            self._idle_pass(vc, now)
        again = False
        if self.again:
            again = name in self.again
            self.again.discard(name)
        head = vc.pending.first()
        if head.gpu_num <= vc.free_gpus and not again and self.woken.get(name, -math.inf) <= now:
            self.idle[name] = (now, head.job_id, vc.free_gpus, self.sim._unfinished)

    def _idle_pass(self, vc: Any, now: float) -> None:
        """One more pass in a row on ``vc`` that left a job that fits waiting, with nothing running there.

        The patience in simulated time (10 × the longest job) bounds such a policy's run in days, not in passes:
        one that sets a one-minute timer for ever made 3 million passes on venus_sept before it (over 20 minutes).
        Nothing but the policy can start work on a VC where nothing runs, so :data:`IDLE_PASS_LIMIT` passes that
        decide nothing there end the run (a few seconds).  The test is O(1) per pass: the queue's smallest size
        against the idle GPUs.

        >>> from types import SimpleNamespace
        >>> guard = RunGuard("policy P", None, lambda: 60.0, [])
        >>> guard._idle_pass(SimpleNamespace(name="a"), 60.0); guard.idle_passes
        {'a': (1, 60.0)}
        """
        count, since = self.idle_passes.get(vc.name, (0, now))
        count += 1
        self.idle_passes[vc.name] = (count, since)
        if count < IDLE_PASS_LIMIT or since == now:  # (all at one instant: the same-instant limit says it)
            return
        fits = next(j for j in vc.pending if j.gpu_num <= vc.free_gpus)
        raise self.fail("no-progress", f"started nothing in {count:,} passes in a row on VC {vc.name} from {at(since)} "
                                       f"to {at(now)} although job {fits.job_id} ({fits.gpu_num} GPUs) fitted its "
                                       f"{vc.free_gpus} idle GPUs and no job ran there; it keeps setting timers "
                                       "(wake_at) without deciding anything, so the run would never end", "schedule",
                        self._wake_line())

    def _closed(self, vc: str, started: bool) -> None:
        """The next pass on ``vc`` after GPUs were left idle: a stretch to warn of when no job had finished
        meanwhile (the policy was not waiting for GPUs to be freed) and this pass started jobs at last."""
        since, job, free, unfinished = self.idle.pop(vc)
        now = self.clock()
        if started and unfinished == self.sim._unfinished:
            self.stretches += 1
            if now > since and (self.longest is None or now - since > self.longest[1] - self.longest[0]):
                self.longest = (since, now, vc, job, free)

    def woke(self, vc: str, when: float) -> None:
        """The policy asked for a pass on ``vc`` at ``when`` (from the checked context)."""
        self.wake_frame = sys._getframe(2)
        if when <= self.clock():
            self.again.add(vc)
        elif when > self.woken.get(vc, -math.inf):
            self.woken[vc] = when

    def _wake_line(self) -> str:
        frame = self.wake_frame
        while frame is not None and self.source is not None and frame.f_code.co_filename != self.source:
            frame = frame.f_back
        return f" (wake_at at {self.source} line {frame.f_lineno})" if frame is not None else ""

    def _stuck(self, vc: Any, now: float, since: float) -> None:
        fits = [j for j in vc.pending if j.gpu_num <= vc.free_gpus]
        if not fits:
            return
        raise self.fail("no-progress", f"started nothing from {at(since)} to {at(now)} although job {fits[0].job_id} "
                                       f"({fits[0].gpu_num} GPUs) waited in VC {vc.name} with {vc.free_gpus} GPUs "
                                       "free and no job ran there; it keeps setting timers (wake_at) without "
                                       "deciding anything, so the run would never end", "schedule",
                        self._wake_line())

    def warnings(self) -> list[str]:
        """Said once, at the end of the run: the longest stretch of GPUs left idle with no timer set."""
        if self.longest is None:
            return []
        since, until, vc, job, free = self.longest
        return [(f"{self.label} left GPUs idle while jobs that fit waited with no timer set, {self.stretches:,} "
                 f"time(s); the longest from {at(since)} to {at(until)} ({until - since:,.0f} s): job {job} fitted "
                 f"the {free} idle GPUs of VC {vc} and started only at the next event — did the policy forget "
                 "`wake_at`? (lucid-sim check-policy tells more)")]

    def stalled(self, vcs: Iterable[Any], policy: bool = True) -> PluginFailed:
        """The run ran out of events while jobs waited: what was seen, where (``policy``: the policy is a plug-in;
        else only the placement is, and it is named)."""
        what = stall_seen(vcs, self.clock())
        if not policy and self.placement is not None:
            label, source = self.placement
            return PluginFailed(f"{label} stopped the run: {what}; nothing would ever happen again — the placement "
                                f"found no GPUs for jobs that fit in place{f' ({source})' if source else ''}",
                                "no-progress")
        return self.fail("no-progress", f"stopped the run: {what}; nothing would ever happen again — "
                                        "the policy left them waiting and set no timer (ctx.wake_at)", "schedule",
                         definition_line(self.originals.get("schedule"), self.source))


def stall_seen(vcs: Iterable[Any], now: float) -> str:
    """What a run that ran out of events left waiting, in words."""
    vcs = list(vcs)
    for vc in vcs:
        fits = [j for j in vc.pending if j.gpu_num <= vc.free_gpus]
        if fits:
            return (f"at {at(now)}, job {fits[0].job_id} ({fits[0].gpu_num} GPUs) waited in VC {vc.name} with "
                    f"{vc.free_gpus} GPUs free ({len(vc.pending):,} job(s) waiting there)")
    waiting = [j for vc in vcs for j in vc.pending]
    if waiting:
        return (f"at {at(now)}, {len(waiting):,} job(s) waited (e.g. {waiting[0].job_id}, {waiting[0].gpu_num} "
                "GPUs) and none fitted the GPUs free")
    return f"at {at(now)}, jobs were left unfinished with nothing waiting or running"


def _unwritable(value: Any) -> str | None:
    """Why ``value`` cannot be a policy's report in summary.json (None: it can)."""
    if not isinstance(value, dict):
        return f"a {type(value).__name__}, not a dict"
    from simcluster.results import to_json

    for key, item in value.items():
        if not isinstance(key, str):
            return f"a dict with the key {key!r} (keys are names: strings)"
        try:
            to_json({key: item})
        except (TypeError, ValueError) as exc:
            return f"{key!r}: {type(item).__name__} ({exc})"
    return None


def source_of(cls: type) -> str | None:
    """The file a plug-in class is defined in (what its messages give lines of), if it has one."""
    try:
        return inspect.getsourcefile(cls)
    except (TypeError, OSError):
        return None


@contextmanager
def watching(guard: RunGuard | None) -> Iterator[None]:
    """While the engine runs a plug-in's hooks: its writes to views are refused (:data:`simcluster.views.GUARD`)."""
    if guard is None:
        yield
        return
    from simcluster import views

    before, views.GUARD = views.GUARD, guard
    try:
        yield
    finally:
        views.GUARD = before


class CheckedQueue(JobQueue):
    """The queue of a plug-in policy: a key that cannot order jobs (None, NaN, or one that does not compare with
    the others') is said with the policy, the hook and its line (:meth:`RunGuard.bad_key`)."""

    guard: RunGuard

    def push(self, job: Any) -> None:
        key = self._key(job)
        kind = type(key)
        if kind is float:
            if isnan(key):
                raise self.guard.bad_key(job, key)  # type: ignore[misc]
        elif kind is not int and (kind is tuple or key is None):
            wrong = self.guard.bad_key(job, key)
            if wrong is not None:
                raise wrong
        entry = (key, job.index)
        try:
            self._all.push(entry, job)
        except TypeError as exc:
            head = self.first()
            other = f" such as job {head.job_id}'s {self._entry_of[head][0]!r}" if head is not None else ""
            raise self.guard.fail("bad-value", f"returned {key!r} as the queue key of job {job.job_id}, which does "
                                               f"not compare with the other waiting jobs' keys{other} ({exc}); keys "
                                               "must be of one kind: numbers, or tuples of numbers", "pending_key",
                                  definition_line(self.guard.originals.get("pending_key"), self.guard.source)) from exc
        self._entry_of[job] = entry
        if self._by_size is not None:
            _push_sized(self._by_size, entry, job)
