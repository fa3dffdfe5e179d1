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

import math
import traceback
from collections.abc import Callable, Collection, Iterable
from typing import Any

from simcluster.job import JobState
from simcluster.placement.base import Placement
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

    def __init__(self, inner: Any, vc: Any, label: str, shares: bool, violation: Violation = raise_violation) -> None:
        self._inner, self._vc, self._label, self._shares = inner, vc, label, shares
        self._violation = violation

    def _broken(self, rule: str, message: str) -> None:
        self._violation(rule, f"{self._label} {message} ({at(self._inner.now)}, VC {self._vc.name})")

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
        return self._inner.now  # type: ignore[no-any-return]

    @property
    def config(self) -> Any:
        return self._inner.config

    def try_start(self, job: Any) -> bool:
        if not self._waiting_here(job, "started"):
            return False
        return self._inner.try_start(job)  # type: ignore[no-any-return]

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
                                                   f"{wrong} ({at(self._clock())})")
            return None
        return plan
