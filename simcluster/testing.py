"""The conformance kit: run a policy on small adversarial traces and say, in words, each rule it breaks.

``lucid-sim check-policy SPEC`` prints the report; in a researcher's own test suite::

    from simcluster.testing import check_policy

    def test_my_policy_keeps_the_rules():
        check_policy("my_policy.py")        # raises PolicyCheckFailed listing each broken rule

The rules (:data:`RULES`) are the contract of :class:`~simcluster.policies.base.Policy`: start only waiting
jobs, once; ask only for free GPUs; preempt only running jobs; change nothing but through the context; keep
a waiting job's queue key unless the context is told; make progress while jobs wait and GPUs are free;
give the same results for the same seed; finish every job of a feasible trace; raise no exception.  Each
trace runs twice (the second run checks determinism); a run that would never end is stopped and said so,
with the simulated time.

>>> report = policy_problems("srtf")
>>> report.ok, report.runs
(True, 12)
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from simcluster.cluster import Node, Pool, RunningJobs, VirtualCluster
from simcluster.config import SimConfig
from simcluster.guard import POLICY_HOOKS, CheckedContext, CheckedPlacement, PluginFailed, at, where_in
from simcluster.job import Job, JobState
from simcluster.metrics.observer import Observer
from simcluster.placement.base import Placement
from simcluster.plugins import absolute_spec, display_name, origin_of, resolve, resolved_config
from simcluster.policies.base import Policy
from simcluster.queue import JobQueue
from simcluster.registry import implements
from simcluster.run import resolve_run

RULES: dict[str, str] = {
    "start-not-pending": "starts only waiting jobs of the VC it decides for, each once",
    "more-gpus-than-free": "asks only for GPUs that exist and are free",
    "preempt-not-running": "preempts only jobs that run in the VC it decides for",
    "resize-not-running": "resizes only jobs that run in the VC it decides for",
    "stall-not-running": "stalls only jobs that run in the VC it decides for",
    "not-elastic": "gives a batch, a restart delay or a new size only to elastic jobs",
    "mutates-view": "changes jobs, nodes, VCs and queues only through the context",
    "unstable-order": "keeps a waiting job's queue key unless it tells the context (requeue, reorder)",
    "no-progress": "makes progress while jobs wait and GPUs are free (never an endless run)",
    "nondeterministic": "gives the same results for the same seed",
    "never-finishes": "finishes every job of a feasible trace",
    "exception": "raises no exception",
    "bad-value": "gives the context valid values (times, overheads, partitions)",
}
SAME_INSTANT_LIMIT = 10_000  # passes at one simulated instant before the run is called endless
PASS_LIMIT = 500_000  # passes in one run of a small trace before it is called endless


@dataclass(frozen=True)
class Finding:
    """One broken rule, with what happened (time, job) and on which trace."""

    rule: str
    message: str
    trace: str

    def __str__(self) -> str:
        return f"[{self.rule}] {RULES.get(self.rule, self.rule)}: {self.message} (trace {self.trace})"


@dataclass
class CheckReport:
    """What :func:`policy_problems` found: one finding per broken rule and trace (the first occurrence)."""

    policy: str
    findings: list[Finding] = field(default_factory=list)
    runs: int = 0
    traces: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def broken(self) -> list[str]:
        return list(dict.fromkeys(f.rule for f in self.findings))

    def __str__(self) -> str:
        if self.ok:
            return f"{self.policy}: keeps every rule on {len(self.traces)} traces ({self.runs} runs)"
        lines = [f"{self.policy} breaks {len(self.broken())} rule(s):"]
        lines += [f"  - {f}" for f in self.findings]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "ok": self.ok, "runs": self.runs, "traces": self.traces,
                "rules": {rule: rule not in self.broken() for rule in RULES},
                "findings": [{"rule": f.rule, "rule_text": RULES.get(f.rule, ""), "message": f.message,
                              "trace": f.trace} for f in self.findings]}


class PolicyCheckFailed(AssertionError):
    """A policy broke rules of the contract; the message lists each, in words."""


def check_policy(policy: str | type, traces: Sequence[tuple[str, Any, SimConfig | None]] | None = None,
                 config: SimConfig | None = None) -> CheckReport:
    """:func:`policy_problems`, raising :class:`PolicyCheckFailed` (an AssertionError) if any rule is broken: the
    one line to put in a test suite."""
    report = policy_problems(policy, traces, config)
    if not report.ok:
        raise PolicyCheckFailed(str(report))
    return report


def policy_problems(policy: str | type, traces: Sequence[tuple[str, Any, SimConfig | None]] | None = None,
                    config: SimConfig | None = None) -> CheckReport:
    """Run ``policy`` (a spec or a class) twice on each trace (default :func:`adversarial_traces`, or
    :func:`elastic_traces` for an elastic policy: (name, trace, settings or None) each) and collect the rules it
    breaks.  ``config``: the settings every run starts
    from (its policy field is replaced)."""
    base = resolved_config(replace(config or SimConfig(), policy=absolute_spec(policy)))
    report = CheckReport(display_name(base.policy))
    if base.placement != SimConfig().placement and origin_of(base.placement, "placement").source != "built-in":
        report.policy = f"placement {display_name(base.placement, 'placement')} (with policy {report.policy})"
    if traces is None:
        traces = default_traces(base.policy)
    for name, trace, settings in traces:
        run_config = base if settings is None else replace(settings, policy=base.policy,
                                                           policy_settings=base.policy_settings)
        report.traces.append(name)
        first = _Run(run_config, trace, name).go()
        second = _Run(run_config, trace, name).go()
        report.runs += 2
        found = {f.rule: f for f in first.findings}
        if not found and not second.findings and first.outcome != second.outcome:
            job = next(j for j in first.outcome if first.outcome[j] != second.outcome.get(j))
            found["nondeterministic"] = Finding(
                "nondeterministic", f"two runs with seed {run_config.seed} differ: job {job} ran "
                f"{_times(first.outcome[job])} the first time and {_times(second.outcome.get(job))} the second", name)
        report.findings += found.values()
    return report


def default_traces(policy: str | type) -> list[tuple[str, Any, SimConfig | None]]:
    """The traces a policy is checked on: :func:`elasticflow_traces` for a policy of jobs of ElasticFlow's
    models, :func:`elastic_traces` (jobs with scaling models) for an elastic one, else :func:`adversarial_traces`."""
    cls = resolve(policy, "policy")[0]
    if getattr(cls, "trace_format", None) == "elasticflow":  # (jobs of ElasticFlow's models: elasticflow, edf)
        return elasticflow_traces()
    return elastic_traces() if getattr(cls, "elastic", False) else adversarial_traces()


def _times(outcome: tuple[Any, ...] | None) -> str:
    if outcome is None:
        return "not at all"
    start, end, preemptions = outcome
    return f"from t={start} to t={end} with {preemptions} preemption(s)"


# --- the adversarial traces ------------------------------------------------------------------------

def adversarial_traces() -> list[tuple[str, Any, SimConfig | None]]:
    """Small feasible traces that exercise the corners where policies go wrong: a burst of jobs in one second,
    a big job blocking the head of the queue, multi-node jobs that fill a VC exactly, idle gaps between
    arrivals (timers with nothing else to wake the policy), churn that invites preemptions, and node failures
    that evict running jobs.  Each is (name, trace, settings or None for the checked run's own)."""
    from simcluster.api import load_trace

    def trace(rows: Sequence[tuple[str, int, float, float]], vcs: dict[str, int]) -> Any:
        frame = pd.DataFrame(rows, columns=["vc", "gpu_num", "submit_time", "duration"])
        frame.insert(0, "job_id", [f"j{i}" for i in range(len(frame))])
        frame["user"] = [f"u{i % 3}" for i in range(len(frame))]
        return load_trace(frame, vcs)

    burst = [("a", g, 0, d) for g, d in [(1, 50), (2, 1), (4, 300), (8, 120), (1, 7), (16, 60), (3, 90), (8, 45),
                                          (2, 200), (1, 1), (4, 30)]]
    burst += [("b", g, 0, d) for g, d in [(8, 100), (4, 50), (2, 20), (8, 10)]]
    blocking = [("a", 4, t, 3000) for t in range(4)] + [("a", 16, 10, 500)] + [("a", 1, 20 + t, 30) for t in range(6)]
    exact = [("a", g, t, d) for t, (g, d) in enumerate([(8, 400), (16, 300), (24, 200), (8, 100), (24, 50), (16, 80)])]
    gaps = [("a", 2, 0, 100), ("a", 8, 5000, 1), ("a", 16, 20000, 100), ("a", 1, 20000, 5000), ("a", 4, 90000, 60)]
    rng = random.Random(7)
    churn = sorted(((rng.choice("ab"), rng.choice([1, 1, 2, 4, 8, 16]), float(rng.randrange(0, 4000, 7)),
                     float(rng.choice([5, 60, 600, 3600, 9000]))) for _ in range(40)), key=lambda r: r[2])
    failures = [("a", g, t * 30.0, d) for t, (g, d) in enumerate([(8, 2000), (4, 500), (16, 1500), (2, 300),
                                                                   (8, 800), (1, 60), (4, 1200)])]
    two = {"a": 2, "b": 1}
    with_failures = SimConfig(node_mtbf=4000.0, node_repair=300.0, checkpoint_interval=100.0,
                              on_no_progress="abandon")
    return [("burst", trace(burst, two), None), ("blocking-head", trace(blocking, {"a": 2}), None),
            ("exact-fit", trace(exact, {"a": 3}), None), ("idle-gaps", trace(gaps, {"a": 2}), None),
            ("churn", trace(churn, two), None), ("node-failures", trace(failures, {"a": 2}), with_failures)]


ELASTICFLOW_ROWS = [(0, 20000, "resnet50", 8000, 64, 8), (30, 5000, "vgg16", 3000, 64, 4), (30, 3000, "bert", 900, 64, 2),
                    (600, 9000, "resnet50", 3000, 128, 8), (620, 400, "vgg16", 700, 64, 1),
                    (2000, 6000, "gpt2", 40000, 128, 4)]


def elasticflow_trace(rows: Sequence[tuple[float, int, str, float, int, int]] = ELASTICFLOW_ROWS, **options: Any
                      ) -> Any:
    """A small ElasticFlow trace of the shared data's models, each row (submit, iterations, model, deadline after
    submit, global batch, GPUs); ``options``: :func:`~simcluster.api.load_trace`'s (``nodes``, ...)."""
    import tempfile
    from pathlib import Path

    from simcluster.api import load_trace

    lines = ["job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration"]
    lines += [f"j{i},{t:g},{n},{m},{t + d:g},{b},{g},{max(1, n // 10)}" for i, (t, n, m, d, b, g) in enumerate(rows)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.csv"
        path.write_text("\n".join(lines) + "\n")
        return load_trace(path, **options)


def elasticflow_traces() -> list[tuple[str, Any, SimConfig | None]]:
    """The adversarial traces for a policy of jobs of ElasticFlow's models (``trace_format = "elasticflow"``):
    small ElasticFlow traces on clusters of 8-GPU nodes — the paper's jobs, a burst, a loose and a tight mix —
    run at exact times, with the artifact's slot batching, and with node failures."""
    burst = [(0, 2000 + 500 * i, ["resnet50", "vgg16", "bert"][i % 3], 2000 + 300 * i, 64, 2 ** (i % 4))
             for i in range(10)]
    failures = SimConfig(node_mtbf=4000.0, node_repair=300.0, checkpoint_interval=100.0, on_no_progress="abandon")
    return [("paper's jobs", elasticflow_trace(nodes=2), None), ("burst", elasticflow_trace(burst, nodes=2), None),
            ("slot batching", elasticflow_trace(nodes=2), SimConfig(arrivals_wait=True)),
            ("node-failures", elasticflow_trace(burst, nodes=3), failures)]


def elastic_traces() -> list[tuple[str, Any, SimConfig | None]]:
    """The adversarial traces for an elastic policy (``Policy.elastic``): small Pollux workloads (jobs of Pollux's
    measured applications, from the shared data) on clusters of 4-GPU nodes — a burst in one second, a big job
    at the head, idle gaps, churn, node failures — run both at exact times and with Pollux's simulator's
    timing (decisions at interval ends, epochs ending on whole seconds)."""
    import tempfile
    from pathlib import Path

    from simcluster.traces.pollux import load_pollux_trace

    def trace(rows: Sequence[tuple[float, str, int, int]], nodes: int) -> Any:
        lines = ["name,time,application,num_replicas,batch_size"]
        lines += [f"{app}-{i},{t:g},{app},{gpus},{batch}" for i, (t, app, gpus, batch) in enumerate(rows)]
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "workload.csv"
            path.write_text("\n".join(lines) + "\n")
            return load_pollux_trace(path, nodes=nodes)

    small = [("ncf", 1, 32768), ("cifar10", 2, 2048), ("cifar10", 8, 2048), ("ncf", 1, 32768), ("cifar10", 4, 4096)]
    burst = [(0.0, *small[i % len(small)]) for i in range(10)]
    blocking = [(0.0, "cifar10", 16, 4096)] + [(10.0 + i, *small[i % len(small)]) for i in range(5)]
    gaps = [(0.0, "ncf", 1, 32768), (5000.0, "cifar10", 8, 2048), (20000.0, "cifar10", 2, 2048), (20000.0, "ncf", 1, 32768)]
    rng = random.Random(7)
    churn = sorted(((float(rng.randrange(0, 3000, 7)), *rng.choice(small)) for _ in range(16)), key=lambda r: r[0])
    failures = [(i * 30.0, *small[i % len(small)]) for i in range(6)]
    with_failures = SimConfig(node_mtbf=4000.0, node_repair=300.0, checkpoint_interval=100.0, on_no_progress="abandon")
    artifact = SimConfig(arrivals_wait=True, progress_rounding="seconds")
    return [("burst", trace(burst, 2), None), ("blocking-head", trace(blocking, 4), None),
            ("idle-gaps", trace(gaps, 2), None), ("churn", trace(churn, 3), None),
            ("churn at interval ends", trace(churn, 3), artifact), ("node-failures", trace(failures, 3), with_failures)]


# --- one instrumented run --------------------------------------------------------------------------

class _Stop(Exception):
    """Ends an instrumented run early: a rule was broken in a way the run cannot go on from."""


class _Guard:
    """Who is running: the engine (may change anything) or a plug-in's code (may change nothing)."""

    def __init__(self, record: Callable[[str, str], None], clock: Callable[[], float]) -> None:
        self.stack: list[str] = []
        self.record, self.clock = record, clock

    @contextmanager
    def inside(self, who: str) -> Iterator[None]:
        self.stack.append(who)
        try:
            yield
        finally:
            self.stack.pop()

    def wrote(self, what: str) -> None:
        if self.stack and self.stack[-1] != "engine":
            self.record("mutates-view", f"{self.stack[-1]} code changed {what} at {at(self.clock())}; only the "
                                        "context's calls (try_start, preempt, requeue, ...) may change state")
            raise _Stop


_GUARD: _Guard | None = None
_CACHES = {"_gpus", "_by_size"}  # built on first read: a read, not a change


def _guarded(cls: type, methods: Sequence[str] = ()) -> type:
    """A subclass of ``cls`` (layout-compatible: the instance's class can be swapped) whose attribute writes and
    ``methods`` report to the active guard."""
    write: Callable[[Any, str, Any], None] = cls.__setattr__  # type: ignore[assignment]

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if _GUARD is not None and name not in _CACHES:
            _GUARD.wrote(f"{cls.__name__.lower()}.{name}")
        write(self, name, value)

    namespace: dict[str, Any] = {"__setattr__": __setattr__}
    if "__slots__" in cls.__dict__:
        namespace["__slots__"] = ()
    for method in methods:
        def call(self: Any, *args: Any, _method: str = method, **kwargs: Any) -> Any:
            if _GUARD is not None:
                _GUARD.wrote(f"{cls.__name__}.{_method}()")
            return getattr(cls, _method)(self, *args, **kwargs)

        namespace[method] = call
    return type(f"Guarded{cls.__name__}", (cls,), namespace)


_GUARDED_CLASSES = {
    Job: _guarded(Job),
    Node: _guarded(Node),
    VirtualCluster: _guarded(VirtualCluster),
    Pool: _guarded(Pool),
    JobQueue: _guarded(JobQueue, ("push", "remove", "rekey")),
    RunningJobs: _guarded(RunningJobs, ("__setitem__", "__delitem__", "pop", "popitem", "clear", "update",
                                        "setdefault")),
}


def _swap(obj: Any) -> None:
    guarded = _GUARDED_CLASSES.get(type(obj))
    if guarded is not None:
        obj.__class__ = guarded


class _Progress(Observer):
    """When a job last started or finished: progress, to the no-progress rule."""

    def __init__(self) -> None:
        self.last = -math.inf

    def on_start(self, job: Job, now: float) -> None:
        self.last = now

    def on_finish(self, job: Job, now: float) -> None:
        self.last = now


class _KitContext(CheckedContext):
    """The plug-in checks, with each broken rule recorded (the action skipped) and the engine's calls marked as
    the engine's, so that what they change is not taken for the policy's doing."""

    def __init__(self, inner: Any, vc: Any, label: str, shares: bool, record: Callable[[str, str], None],
                 guard: _Guard) -> None:
        super().__init__(inner, vc, label, shares, violation=record)
        self._guard = guard

    def try_start(self, job: Any, gpu_type: str | None = None) -> bool:
        with self._guard.inside("engine"):
            return super().try_start(job, gpu_type)

    def start_on(self, job: Any, plan: Any, batch: Any = None, delay: float | None = None) -> None:
        with self._guard.inside("engine"):
            super().start_on(job, plan, batch, delay)

    def resize(self, job: Any, plan: Any, batch: Any = None, delay: float | None = None) -> None:
        with self._guard.inside("engine"):
            super().resize(job, plan, batch, delay)

    def resize_many(self, changes: Any, batches: Any = None, delay: float | None = None) -> None:
        with self._guard.inside("engine"):
            super().resize_many(changes, batches, delay)

    def decline(self, job: Any) -> None:
        with self._guard.inside("engine"):
            super().decline(job)

    def preempt(self, job: Any, overhead: float | None = None, moving: bool = False) -> None:
        with self._guard.inside("engine"):
            super().preempt(job, overhead, moving)

    def stall(self, job: Any, seconds: float) -> None:
        with self._guard.inside("engine"):
            super().stall(job, seconds)

    def wake_at(self, when: float) -> None:
        with self._guard.inside("engine"):
            super().wake_at(when)

    def requeue(self, job: Any) -> None:
        with self._guard.inside("engine"):
            super().requeue(job)

    def reorder(self) -> None:
        with self._guard.inside("engine"):
            super().reorder()

    def move(self, job: Any, partition: str) -> None:
        with self._guard.inside("engine"):
            super().move(job, partition)


class _Run:
    """One run of a policy on a trace, instrumented; :attr:`findings` and :attr:`outcome` once :meth:`go` ran."""

    def __init__(self, config: SimConfig, trace: Any, name: str) -> None:
        self.trace, self.name = trace, name
        self.findings: list[Finding] = []
        self.outcome: dict[str, tuple[Any, ...]] = {}
        self.sim: Any = None
        self.resolved = resolved = resolve_run(trace, config)
        self.config = resolved.config
        self.label = resolved.policy.label
        self.source = resolved.policy.origin.location if not resolved.policy.builtin else None
        self.policy: Policy = resolved.policy.cls(resolved.config)
        self.passes = 0
        self._instant = (-math.inf, 0)

    def record(self, rule: str, message: str) -> None:
        if not any(f.rule == rule for f in self.findings):
            self.findings.append(Finding(rule, message, self.name))

    def now(self) -> float:
        return self.sim.env.now if self.sim is not None else 0.0

    def go(self) -> _Run:
        from simcluster.engine import Simulation, SimulationStalled

        global _GUARD
        guard = _Guard(self.record, self.now)
        progress = _Progress()
        resolved = self.resolved
        jobs = resolved.make_jobs()
        try:
            for part in resolved.features:  # (an elastic policy's jobs get their scaling models)
                part.feature.start(part.plan, jobs, resolved)
        except ValueError as exc:
            self.record("exception", f"{exc} (give it an elastic trace: check_policy(..., traces=...))")
            return self
        self._wrap_policy(guard, progress)
        chosen = resolved.placement
        placement = chosen.cls(random.Random(resolved.config.seed))
        placement = CheckedPlacement(_PlacementInGuard(placement, guard), chosen.label, self.now,
                                     violation=self.record, source_file=chosen.origin.location)
        shares = self.policy.shares_gpus

        def wrap(ctx: Any, vc: Any) -> Any:
            return _KitContext(ctx, vc, self.label, shares, self.record, guard)

        try:
            self.sim = Simulation(jobs, resolved, [progress], policy=self.policy, placement=placement,
                                  wrap_context=wrap)
        except Exception as exc:  # noqa: BLE001 — the policy's __init__-time hooks (partitions, attach) raised
            self.record("exception", f"raised {type(exc).__name__}: {exc} while the run was set up"
                                     f"{where_in(exc, self.source)}")
            return self
        for job in jobs:
            _swap(job)
        for vc in self.sim.cluster.vcs.values():
            for obj in (vc, vc.pending, vc.running, *vc.nodes, *(p for p in vc.pools.values() if p is not vc)):
                _swap(obj)
        _GUARD = guard
        try:
            self.sim.run()
        except _Stop:
            pass
        except SimulationStalled:
            self._stalled()
        except PluginFailed as exc:
            self.record(exc.rule, str(exc))
        except Exception as exc:  # noqa: BLE001 — the engine could not carry out a decision: said, not raised
            self.record("exception", f"the run failed at {at(self.now())} with {type(exc).__name__}: {exc}"
                                     f"{where_in(exc, self.source)}")
        finally:
            _GUARD = None
            for job in jobs:
                job.__class__ = Job
        unfinished = [j for j in jobs if j.state is not JobState.FINISHED and j not in self.sim.abandoned]
        if unfinished and not any(f.rule == "exception" for f in self.findings):
            self.record("never-finishes", f"{len(unfinished)} job(s) never finished, e.g. {unfinished[0].job_id} "
                                          f"({unfinished[0].gpu_num} GPUs, {unfinished[0].state.value})")
        self.outcome = {j.job_id: (j.start_time, j.end_time, j.preemptions) for j in jobs}
        return self

    def _stalled(self) -> None:
        """The run ran out of events with jobs waiting: say where jobs waited for GPUs that were free."""
        for vc in self.sim.cluster.vcs.values():
            fits = [j for j in vc.pending if j.gpu_num <= vc.free_gpus]
            if fits:
                self.record("no-progress", f"at {at(self.now())}, job {fits[0].job_id} ({fits[0].gpu_num} GPUs) "
                                           f"waited in VC {vc.name} with {vc.free_gpus} GPUs free, and the policy "
                                           "set no timer: nothing would ever happen again")
                return
        waiting = [j for vc in self.sim.cluster.vcs.values() for j in vc.pending]
        self.record("no-progress", f"at {at(self.now())}, {len(waiting)} job(s) waited and nothing was left to "
                                   "happen (the policy set no timer)")

    def _wrap_policy(self, guard: _Guard, progress: _Progress) -> None:
        """Each hook the policy implements, run as the policy's code: an exception is a finding that ends the run;
        the scheduler pass also checks the queue's keys and that time moves on."""
        policy = self.policy
        for hook in POLICY_HOOKS:
            if not implements(policy, Policy, hook) and hook not in ("schedule", "pending_key"):
                continue
            original = getattr(policy, hook)

            def call(*args: Any, _original: Callable[..., Any] = original, _hook: str = hook) -> Any:
                with guard.inside("policy"):
                    try:
                        result = _original(*args)
                    except (_Stop, PluginFailed):
                        raise
                    except Exception as exc:
                        job = next((a for a in args if isinstance(a, Job)), None)
                        on = f", job {job.job_id}" if job is not None else ""
                        self.record("exception", f"raised {type(exc).__name__}: {exc} in {_hook} at "
                                                 f"{at(self.now())}{on}{where_in(exc, self.source)}")
                        raise _Stop from exc
                if _hook == "schedule":
                    self._after_pass(args[0], progress)
                return result

            setattr(policy, hook, call)

    def _after_pass(self, vc: Any, progress: _Progress) -> None:
        now = self.now()
        self.passes += 1
        last, count = self._instant
        self._instant = (now, count + 1) if last == now else (now, 1)
        if self._instant[1] > SAME_INSTANT_LIMIT or self.passes > PASS_LIMIT:
            self.record("no-progress", f"the policy was run {self._instant[1]:,} times at {at(now)} "
                                       f"({self.passes:,} passes in all) without the run moving on: it asks to be "
                                       "woken again without deciding anything")
            raise _Stop
        queue = vc.pending
        for job in queue:
            held = queue._entry_of[job][0]
            with _GUARD.inside("policy") if _GUARD is not None else _nothing():
                key = self.policy.pending_key(job)
            if key != held:
                self.record("unstable-order", f"the key of waiting job {job.job_id} changed from {held!r} to "
                                              f"{key!r} ({at(now)}) without ctx.requeue(job) or ctx.reorder()")
                break
        patience = max(86_400.0, 10 * max((j.duration for j in self.sim.jobs), default=0.0))
        if queue and not vc.running and now - max(progress.last, min(j.submit_time for j in queue)) > patience:
            fits = [j for j in queue if j.gpu_num <= vc.free_gpus]
            if fits:
                since = f"from {at(progress.last)}" if progress.last > -math.inf else "from the first submission"
                self.record("no-progress", f"{since} to {at(now)} nothing started although "
                                           f"job {fits[0].job_id} ({fits[0].gpu_num} GPUs) waited in VC {vc.name} "
                                           f"with {vc.free_gpus} GPUs free")
                raise _Stop


@contextmanager
def _nothing() -> Iterator[None]:
    yield


class _PlacementInGuard(Placement):
    """A placement whose ``place`` runs as plug-in code (it must not change the cluster: the engine applies plans)."""

    def __init__(self, inner: Any, guard: _Guard) -> None:
        self._inner, self._guard = inner, guard
        self.name = getattr(inner, "name", "?")
        self.chooses_types = getattr(inner, "chooses_types", False)
        self.places_fractions = getattr(inner, "places_fractions", False)

    def place(self, job: Any, pool: Any) -> Any:
        with self._guard.inside("placement"):
            return self._inner.place(job, pool)
