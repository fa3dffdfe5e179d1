"""The simulation: a run's arrivals, scheduler passes and node failures, on a kernel that keeps SimPy's order.

Event-driven throughout: the clock jumps from one arrival, run's end, failure or repair to the next, so the
cost grows with the number of events, never with simulated time.  Within one instant the order is SimPy's
(:mod:`~simcluster.engine.events`): runs' ends and arrivals, then one scheduler pass (LATE) for every VC where
something changed.  A job's own life is in :mod:`~simcluster.engine.life`, how fast it runs in
:mod:`~simcluster.engine.speed`, node failures in :mod:`~simcluster.engine.failures`.

Three optional limits, all off by default so the published simulators' figures hold: ``spread_penalty``
(:mod:`~simcluster.engine.speed`); ``until`` (a horizon: the run stops ``until`` seconds after the first
submission, once everything of that instant has happened; jobs not finished are reported unfinished);
``restart_limit`` (no progress under failures: :class:`~simcluster.engine.failures.NoProgressGuard`).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import simpy

from simcluster.cluster import NO_LIMIT, Cluster, Node, Pool, VirtualCluster
from simcluster.cluster_spec import ClusterSpec, NodeGroup
from simcluster.colocation.loader import answer_shares
from simcluster.elastic.threads import one_blas_thread
from simcluster.engine.causes import NodeFailed, Replaced, Swapped
from simcluster.engine.context import PassStep, VcContext
from simcluster.engine.events import HORIZON, LATE, URGENT, NoEventsLeft, succeed_at
from simcluster.engine.failures import NoProgressGuard, node_life
from simcluster.engine.kernel import make_kernel
from simcluster.engine.life import JobLife
from simcluster.engine.reliability import Reliability, ReliabilityRecord
from simcluster.engine.speed import SpeedModel
from simcluster.guard import (
    CheckedContext,
    CheckedPlacement,
    CheckedQueue,
    PluginFailed,
    RunGuard,
    at,
    source_of,
    stall_seen,
    watching,
)
from simcluster.job import UNKNOWN_WORKLOAD as UNKNOWN
from simcluster.job import Job, JobState
from simcluster.metrics.observer import Observer, overridden_hooks
from simcluster.placement import Placement, fraction_plan
from simcluster.policies import Policy, SchedulingContext
from simcluster.queue import JobQueue, ranked
from simcluster.registry import implements

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.engine.terms import SpeedTerm
    from simcluster.run.resolved import ResolvedRun
    from simcluster.throughputs import ThroughputTable

_BY_INDEX = attrgetter("index")  # trace order


class SimulationStalled(RuntimeError):
    """Nothing is left to happen, yet jobs wait: they can never run on this cluster."""


@dataclass(frozen=True)
class RunOutcome:
    """What a run ended with, beside the jobs themselves: what :func:`simcluster.run.collect` formats."""

    end: float  # the clock when the run stopped
    finished_every_job: bool  # no horizon cut the run short, no job was given up on
    unfinished: list[Job]  # submitted but not finished (a horizon, or abandoned), in the jobs' order
    abandoned: dict[Job, float]  # jobs the no-progress guard gave up on, and when
    declined: dict[Job, float]  # jobs the policy turned away (admission control), and when
    vc_gpus: dict[str, int]  # the trace's VCs (a policy's own partitions left out)
    partition_gpus: dict[str, int]  # the policy's own partitions (lucid's profiler)
    vc_sharing: dict[str, tuple[float, float]]  # per VC and partition: shared GPU-seconds, extra job-seconds
    policy_report: Callable[[], dict[str, Any]]  # the policy's own figures, when asked (a learned policy's cost)
    policy_settings: Any  # the policy's own settings, as the run used them
    colocation: dict[str, Any] | None  # the model's source, provenance and fallbacks (sharing policies)
    kernel: str  # which kernel ran it: "fast" or "reference"
    notes: list[str] = field(default_factory=list)  # for the summary (the fast loop off, and why)
    warnings: list[str] = field(default_factory=list)  # what the guard of a plug-in saw (GPUs idle, no timer set)
    reliability: ReliabilityRecord | None = None  # failures by model, costs, spares (reliability options only)
    judged_ends: dict[str, float] = field(default_factory=dict)  # the policy's judged ends (Policy.judged_ends)


def without_borrowed(spec: ClusterSpec | Mapping[str, int], borrowed: dict[str, int], policy: str) -> ClusterSpec:
    """The cluster (or nodes per VC) once a policy's partitions took ``borrowed`` nodes out of its VCs (their
    last nodes)."""
    if not isinstance(spec, ClusterSpec):
        spec = ClusterSpec.uniform(spec)
    nodes = spec.vc_nodes
    for vc, n in borrowed.items():
        if vc not in nodes:
            raise ValueError(f"{policy} takes nodes from VC {vc!r}, which the trace does not have")
        if n > nodes[vc]:
            raise ValueError(f"{policy} takes {n} nodes from VC {vc!r}, which has {nodes[vc]}")
    return spec.without(borrowed) if borrowed else spec


class Simulation(JobLife):
    """Replays ``jobs`` under a resolved run (:func:`simcluster.run.resolve_run`): its settings, policy, placement,
    cluster, tables and failure model, read here and never resolved again.

    >>> from simcluster.config import SimConfig
    >>> from simcluster.job import Job
    >>> from simcluster.run import resolve_run
    >>> jobs = [Job(index=i, job_id=str(i), vc="a", gpu_num=8, submit_time=0, duration=100) for i in range(3)]
    >>> outcome = Simulation(jobs, resolve_run(config=SimConfig(policy="fifo"), cluster={"a": 2})).run()
    >>> [(j.start_time, j.end_time) for j in jobs], outcome.end
    ([(0.0, 100.0), (0.0, 100.0), (100.0, 200.0)], 200.0)
    """

    def __init__(
        self,
        jobs: list[Job],
        resolved: ResolvedRun,
        observers: Iterable[Observer] = (),
        *,
        policy: Policy | None = None,
        placement: Placement | None = None,
        wrap_context: Callable[[SchedulingContext, VirtualCluster], SchedulingContext] | None = None,
        kernel: str | None = None,
        speed_terms: Iterable[SpeedTerm] = (),
        queue_rank: Callable[[Job], Any] | None = None,
        pass_steps: Iterable[PassStep] = (),
        processes: Iterable[Callable[[Simulation], Generator[Any, Any, None]]] = (),
        wrap_placement: Callable[[Placement, Cluster], Placement] | None = None,
    ) -> None:
        """``resolved``: the run (its cluster's nodes per VC, its colocation model for sharing policies, its
        throughput table whose pairs time jobs sharing GPUs, its failure model).  ``policy`` and ``placement``:
        instances to use instead of the run's classes, and ``wrap_context`` what wraps each VC's context (the
        conformance kit's checks, :mod:`simcluster.testing`).  ``kernel``: "fast", "reference" or None (the fast
        one where this SimPy allows, :mod:`~.kernel`).  ``speed_terms``: what slows jobs through the other jobs
        running (the features' :class:`~simcluster.engine.terms.SpeedTerm`: jobs sharing an uplink).
        ``queue_rank``: what orders waiting jobs before the policy's own key (a tier's priority; the feature gives
        it only where the policy's class lets it, ``Policy.priority_first``); ``pass_steps``: what acts on a VC after each of the policy's
        passes there (the tiers' evictions), given the VC and its context; ``processes``: SimPy processes started with
        the run, each given the engine (spot nodes' reclaims); ``wrap_placement``: what wraps the run's placement,
        given the cluster (spot nodes kept for the jobs that may use them)."""
        self.resolved = resolved
        self.config = config = resolved.config
        colocation, throughputs = resolved.tables.colocation, resolved.tables.throughputs
        self.jobs = jobs
        start = min(map(attrgetter("submit_time"), jobs), default=0)
        self.env = simpy.Environment(initial_time=start)
        self.kernel, kernel_note = make_kernel(self.env, kernel)
        self.notes = [kernel_note] if kernel_note else []
        self.clock = self.kernel.clock
        self._call_at = self.kernel.call_at
        policy_class = resolved.policy.cls
        self.label = label = resolved.policy.label  # as messages name it
        guarded = not resolved.policy.builtin and policy is None  # a plug-in: its hooks and decisions are checked
        self.plugin_guard: RunGuard | None = None
        self._policy_guarded = guarded
        if guarded:
            self._route_writes(policy_class, label)
            self.plugin_guard = RunGuard(label, source_of(policy_class), self.clock, jobs)
            self.plugin_guard.sim = self
            self.policy = self.plugin_guard.construct(policy_class, config)
            self.plugin_guard.wrap(self.policy, Policy)
        else:
            self.policy = policy if policy is not None else policy_class(config)
        if self.policy.shares_gpus and colocation is None:
            raise ValueError(f"{label} shares GPUs: give the run its colocation model (resolve a run of a "
                             "policy that shares GPUs, or resolve_run(..., colocation=MODEL))")
        self.cluster = self._build_cluster(resolved.cluster, throughputs)
        placement_class = resolved.placement.cls
        self.placement = placement if placement is not None else placement_class(random.Random(config.seed))
        if wrap_placement is not None:
            self.placement = wrap_placement(self.placement, self.cluster)
        self._monotone_placement = self.placement.monotone
        builtin = resolved.placement.builtin and placement is None
        self._room_class = self.placement.room_class if builtin and not self.placement.monotone else None
        if not resolved.placement.builtin and placement is None:
            placement_label = resolved.placement.label
            placement_source = source_of(placement_class)
            self._route_writes(placement_class, placement_label)
            self.placement = CheckedPlacement(self.placement, placement_label, self.clock, source_file=placement_source)
            if self.plugin_guard is None:
                self.plugin_guard = RunGuard(label, None, self.clock, jobs)
                self.plugin_guard.sim = self
            self.plugin_guard.placement = (placement_label, placement_source)
        fractions = min(map(attrgetter("gpu_milli"), jobs), default=1000) < 1000
        arriving = Counter(map(attrgetter("queue_vc"), jobs))
        queue_key = self.policy.pending_key
        if queue_rank is not None:
            queue_key = ranked(queue_rank, queue_key)
        for vc in self.cluster.vcs.values():
            vc.pending = JobQueue(key=queue_key)
            if guarded:  # its keys checked as they are given
                vc.pending = CheckedQueue(key=queue_key)
                vc.pending.guard = self.plugin_guard  # type: ignore[union-attr]
            vc.clock = self.clock
            vc._since = float(start)
            vc.to_arrive = arriving[vc.name]
            if fractions:
                vc.track_fractions()
        self.policy.bind_clock(self.clock)
        with watching(self.plugin_guard):
            self.policy.attach(self.cluster)
        self._pools: dict[tuple[int, str], list[Pool]] = {}  # (id of a job's speeds, VC) → the pools it may use
        self._speed_terms = tuple(speed_terms)
        self.speed = SpeedModel(config.spread_penalty, throughputs, colocation if self.policy.shares_gpus else None,
                                resolved.cluster.level_costs, self._speed_terms)
        self._solo_speed = self.speed.solo
        if self.speed.colocation is not None:
            for job in jobs:
                if not job.memory:
                    job.memory = self.speed.colocation.memory_mib(job.workload or UNKNOWN, job.gpu_num)
        self._hook_observers(list(observers))
        self._own_contexts = {name: VcContext(self, vc) for name, vc in self.cluster.vcs.items()}  # (unwrapped)
        self._contexts: dict[str, SchedulingContext] = dict(self._own_contexts)
        self._pass_steps = list(pass_steps)
        self._processes = list(processes)
        if guarded:
            wrap_context = partial(CheckedContext, label=label, shares=self.policy.shares_gpus,
                                   guard=self.plugin_guard)
        if wrap_context is not None:
            self._contexts = {name: wrap_context(ctx, self.cluster.vcs[name]) for name, ctx in self._contexts.items()}
        # the policy's job hooks, looked up once: most policies have few of them
        self._policy_on_submit = implements(self.policy, Policy, "on_submit")
        self._policy_on_finish = implements(self.policy, Policy, "on_finish")
        self._policy_on_run_start = implements(self.policy, Policy, "on_run_start")
        self._policy_on_run_stop = implements(self.policy, Policy, "on_run_stop")
        self._policy_on_epoch = implements(self.policy, Policy, "on_epoch")
        self._whole_seconds = config.progress_rounding == "seconds"
        self._preempted = {}  # the policy's preemption causes, one record per (overhead, moving): JobLife.preempt
        self._down_for: dict[Node, set[str]] = {}  # why each node is down, while it is: node_down, node_up
        if self.policy.elastic and (bare := next((j for j in jobs if j.elastic is None), None)) is not None:
            raise ValueError(f"{self.label} resizes jobs while they run: job {bare.job_id} has no scaling "
                             "model (simcluster.elastic.work.attach_models gives a trace's jobs theirs)")
        self._dirty: dict[str, None] = {}  # VCs where something changed since the last pass
        self._timers: set[tuple[str, float]] = set()  # (VC, time) of policy wake-ups already set
        self._pass_due = False  # a scheduler pass is due at this instant
        self._unfinished = len(jobs)
        self._all_done = self.env.event()
        self.running = self.pending = 0
        self.reliability: Reliability | None = None
        if resolved.reliability:
            self.reliability = Reliability(self, config, resolved.fault_model)
            if config.checkpoint_cost:
                self._time_run = self._time_run_checkpointed  # type: ignore[method-assign]
        self.guard = NoProgressGuard(config, self.reliability)
        # a failed node's replacement from its jobs' domains (a topology-aware placement on a topology), else None
        self._replacement = self.reliability.replacement if self.reliability is not None else None
        self.abandoned: dict[Job, float] = {}
        self.declined: dict[Job, float] = {}
        self._arrivals: list[Job] = []
        self._submitted = 0  # how many of the arrivals (by submit time) have been submitted

    def _route_writes(self, cls: type, label: str) -> None:
        """A plug-in's writes to views checked however it was loaded (a file, module:Class, an entry point, a
        class given in Python: :func:`simcluster.views.route_writes`); a note where its source cannot be read."""
        from simcluster.views import route_writes

        unread = route_writes(cls)
        if unread:
            self.notes.append(f"{label}: its writes to views are not checked in {', '.join(unread)} (no source to "
                              "read: a class typed into an interactive session?)")

    def _build_cluster(self, spec: ClusterSpec, throughputs: ThroughputTable | None) -> Cluster:
        """The trace's VCs, less the nodes the policy's partitions borrow, plus those partitions."""
        config = self.config
        partitions = self.policy.partitions()
        if clash := set(partitions) & set(spec.vcs):
            raise ValueError(f"the trace has a VC named like {self.label}'s own partition: {sorted(clash)}")
        spec = without_borrowed(spec, self.policy.borrowed_nodes(), self.label)
        kind = spec.gpu_types[0] if spec.groups else "gpu"  # a partition's nodes: the cluster's first GPU type
        spec = spec.with_vcs(NodeGroup(name, kind, n, config.gpus_per_node) for name, n in partitions.items())
        return Cluster(spec, config.gpus_per_node, throughputs.type_order() if throughputs else ())

    def _hook_observers(self, observers: list[Observer]) -> None:
        """Per hook, only the observers that implement it (most hooks are no-ops for most observers)."""
        self._on_submit = overridden_hooks(observers, "on_submit")
        self._on_start = overridden_hooks(observers, "on_start")
        self._on_preempt = overridden_hooks(observers, "on_preempt")
        self._on_restart = overridden_hooks(observers, "on_restart")
        self._on_finish = overridden_hooks(observers, "on_finish")
        self._on_move = overridden_hooks(observers, "on_move")
        self._on_speed = overridden_hooks(observers, "on_speed")
        self._on_resize = overridden_hooks(observers, "on_resize")
        self._on_node_down = overridden_hooks(observers, "on_node_down")
        self._on_node_up = overridden_hooks(observers, "on_node_up")
        self._on_swap = overridden_hooks(observers, "on_swap")
        self._on_sample = overridden_hooks(observers, "on_sample")

    # --- the run -----------------------------------------------------------
    def run(self) -> RunOutcome:
        """Run to the end (every job finished or given up on, or the horizon); raises
        :class:`SimulationStalled` when jobs remain that can never run."""
        env = self.env
        # by submit time, then trace order: jobs listed in trace order keep it among equal submit times in a
        # stable sort by submit time alone, which is half the work of a (time, index) key
        indices = list(map(_BY_INDEX, self.jobs))
        by_submit = attrgetter("submit_time") if indices == sorted(indices) else attrgetter("submit_time", "index")
        self._arrivals = arrivals = sorted(self.jobs, key=by_submit)
        self._call_at(0.0, partial(self._arrive, arrivals, 0), URGENT)  # first, as a process would start
        reliability = self.reliability
        if reliability is not None and reliability.model is not None:  # one process: the model's faults in order
            env.process(reliability.replay(env, env.now))
        else:
            for node in self.cluster.nodes if self.config.node_mtbf > 0 else ():  # a node that never fails has no life
                env.process(node_life(env, node, self.config, self.node_down, self.node_up))
        for process in self._processes:
            env.process(process(self))
        if self._unfinished:
            stop: simpy.Event = self._all_done
            if self.config.until > 0:
                horizon = env.event()
                succeed_at(env, horizon, self.config.until, HORIZON)
                stop = env.any_of([self._all_done, horizon])
            try:
                with watching(self.plugin_guard):
                    if self.policy.elastic:  # (small NumPy calls by the thousand: BLAS threads only cost)
                        with one_blas_thread():
                            self.kernel.run(stop)
                    else:
                        self.kernel.run(stop)
            except NoEventsLeft as exc:
                vcs = self.cluster.vcs.values()
                if self.plugin_guard is not None:  # a plug-in policy (or placement) left them waiting
                    raise self.plugin_guard.stalled(vcs, self._policy_guarded) from None
                out = self.reliability.excluded if self.reliability is not None else {}
                why = (f"; --exclude-after took {len(out)} server(s) out for good, leaving "
                       f"{sum(n.gpu_count for n in self.cluster.nodes if n.up):,} GPUs up" if out else "")
                raise SimulationStalled(f"the simulation stalled: {stall_seen(vcs, env.now)}; nothing was left to "
                                        f"happen ({self.label}){why}") from exc
            except PluginFailed:
                raise
            except Exception as exc:  # a plug-in's hook raised (those called by the thousand run bare): said so
                explained = self.plugin_guard.explain(exc) if self._policy_guarded else None  # type: ignore[union-attr]
                if explained is None:
                    raise
                raise explained from exc
        return self.outcome()

    def outcome(self) -> RunOutcome:
        """The run's outcome record, as it stands now (after :meth:`run`: how it ended)."""
        end, vcs = self.env.now, self.cluster.vcs
        partitions = self.policy.partitions()
        colocation = self.speed.colocation
        return RunOutcome(
            end=end, finished_every_job=self.finished_every_job(), unfinished=self.unfinished(), abandoned=dict(self.abandoned),
            declined=dict(self.declined),
            vc_gpus={name: vc.total_gpus for name, vc in vcs.items() if name not in partitions},
            partition_gpus={name: vc.total_gpus for name, vc in vcs.items() if name in partitions},
            vc_sharing={name: vc.sharing_seconds(end) for name, vc in vcs.items()},
            policy_report=self.policy.report, policy_settings=self.policy.settings,
            colocation=None if colocation is None else {
                "source": colocation.source,
                "provenance": getattr(colocation, "provenance", None) or {"kind": "tables",
                                                                          "description": colocation.source},
                "fallbacks": colocation.fallback_counts(), "answered_by": answer_shares(colocation)},
            kernel=self.kernel.name, notes=list(self.notes),
            warnings=self.plugin_guard.warnings() if self.plugin_guard is not None else [],
            reliability=self.reliability.record() if self.reliability is not None else None,
            judged_ends=self._judged_ends())

    def _judged_ends(self) -> dict[str, float]:
        """The policy's :meth:`~simcluster.policies.base.Policy.judged_ends`, checked: each a finished job of this
        run and a finite time (a plug-in's slip would otherwise change deadline figures without a word)."""
        judged = self.policy.judged_ends()
        if not judged:
            return {}
        finished = {job.job_id for job in self.jobs if job.end_time is not None}
        for job_id, when in judged.items():
            if job_id not in finished or isinstance(when, bool) or not isinstance(when, (int, float)) \
                    or not math.isfinite(when):
                raise ValueError(f"policy {self.policy.name!r}: judged_ends() gave {when!r} for job {job_id!r}; "
                                 "it must map finished jobs' ids to finite times")
        return {job_id: float(when) for job_id, when in judged.items()}

    def finished_every_job(self) -> bool:
        """Whether the run ended with every job finished (no horizon cut it short, no job was given up on or
        declined)."""
        return not self._unfinished and not self.abandoned and not self.declined

    def unfinished(self) -> list[Job]:
        """Jobs submitted but not finished when the run ended (a horizon, or abandoned), in the jobs' order."""
        if self.finished_every_job():
            return []
        submitted = set(self._arrivals[:self._submitted])
        return [j for j in self.jobs if j.state is not JobState.FINISHED and j in submitted]

    def _arrive(self, jobs: list[Job], first: int) -> None:
        """Submits ``jobs[first:]`` (sorted by submit time) at their submit times: those due now, then a call
        again at the next submit time (a call per distinct submit time, no process to resume)."""
        now = self.clock()
        submit = self._submit
        for i in range(first, len(jobs)):
            job = jobs[i]
            if job.submit_time > now:
                self._submitted = i
                self._call_at(job.submit_time - now, partial(self._arrive, jobs, i))
                return
            submit(job)
        self._submitted = len(jobs)

    def _submit(self, job: Job) -> None:
        """Queue a job at its submit time; the policy may route it through a partition of its own first."""
        vcs, now = self.cluster.vcs, self.clock()
        vcs[job.queue_vc].to_arrive -= 1
        if self._policy_on_submit and (partition := self.policy.on_submit(job, now)):
            if partition not in vcs:
                raise PluginFailed(f"{self.label} routed job {job.job_id} to {partition!r}, which is "
                                   f"no VC or partition ({at(now)})")
            job.queue_vc = partition
        vc = vcs[job.queue_vc]
        self._enqueue(job, vc)
        self._request_pass(vc)
        for hook in self._on_submit:
            hook(job, now)

    def _scheduler_pass(self) -> None:
        """Runs the policy on each VC where something changed (LATE: after everything else of the instant).

        A plain call, not a process: a pass keeps no state between wake-ups."""
        self._pass_due = False  # from here on, a change asks for another pass at this instant
        dirty, self._dirty = self._dirty, {}
        vcs, contexts, schedule = self.cluster.vcs, self._contexts, self.policy.schedule
        for name in dirty:
            schedule(vcs[name], contexts[name])
            for step in self._pass_steps:
                step(vcs[name], self._own_contexts[name])
        if self._on_sample:
            counts, now = self.cluster.counts, self.clock()
            for hook in self._on_sample:
                hook(now, counts.used, counts.shared, self.running, self.pending)

    def wake_at(self, vc: VirtualCluster, when: float) -> None:
        """Run the policy on ``vc`` again at ``when`` (a policy's own timer; duplicates are merged)."""
        key = (vc.name, when)
        timers = self._timers
        if key in timers:
            return
        timers.add(key)
        self._call_at(max(0.0, when - self.clock()), partial(self._ring, vc, key), LATE)

    def _ring(self, vc: VirtualCluster, key: tuple[str, float]) -> None:
        """A policy's timer is due: forget it, and ask for a pass on its VC."""
        self._timers.discard(key)
        self._request_pass(vc)

    def _request_pass(self, vc: VirtualCluster) -> None:
        self._dirty[vc.name] = None
        if not self._pass_due:
            self._pass_due = True
            self._call_at(0.0, self._scheduler_pass, LATE)

    def node_down(self, node: Node, reclaim: bool = False) -> None:
        """``node`` failed (``reclaim``: its provider took it back, a spot node): each of its jobs goes on at once on
        free nodes of its domain where the run replaces failed nodes and finds some
        (:class:`~simcluster.engine.failures.DomainReplacement`), else back to its queue.  A node down for a fault
        and a reclaim at once loses its jobs once, as it goes down, and comes back when both have ended
        (:meth:`node_up`).  Observers hear of faults only: a reclaim is the spot feature's to count."""
        self._down_reasons(node).add("reclaim" if reclaim else "fault")
        if node.up:
            replacement = self._replacement
            for job in list(node.jobs):
                plan = replacement.replace(job, node) if replacement is not None else None
                self.interrupt(job, NodeFailed(node.name) if plan is None else Replaced(node.name, plan))
            node.set_up(False)
        if not reclaim:
            for hook in self._on_node_down:
                hook(node.name, self.clock())

    def swap_out(self, node: Node, jobs: list[Job], pause: float) -> None:
        """A spare took failed ``node``'s place: its ``jobs`` go back to their checkpoints where they run."""
        for job in jobs:
            if job.state is JobState.RUNNING:
                self.interrupt(job, Swapped(node.name, pause))
        for hook in self._on_swap:
            hook(node.name, self.clock())

    def call_after(self, delay: float, call: Callable[[], None]) -> None:
        """Call ``call`` ``delay`` seconds from now (a spare seated in a vacant node)."""
        self._call_at(delay, call)

    def node_up(self, node: Node, reclaim: bool = False) -> None:
        """``node``'s fault is repaired (``reclaim``: its provider gave it back): up again, and a pass asked for in
        its VC, unless it is still down for the other reason (:meth:`node_down`)."""
        reasons = self._down_reasons(node)
        reasons.discard("reclaim" if reclaim else "fault")
        back = not reasons
        if back:
            del self._down_for[node]
            node.set_up(True)
        if not reclaim:
            for hook in self._on_node_up:
                hook(node.name, self.clock())
        if back:
            self._request_pass(node.vc)

    def _down_reasons(self, node: Node) -> set[str]:
        """Why ``node`` is down now: ``fault``, ``reclaim`` (kept only while it is down)."""
        return self._down_for.setdefault(node, set())

    # --- placing -------------------------------------------------------------
    def try_start(self, job: Job, vc: VirtualCluster) -> bool:
        """Start ``job`` where the placement puts it, on idle GPUs; False if it has none now.

        A job that cannot run on every GPU type of its VC is placed by the placement within one type
        it runs on at a time (in the VC's type order); a job asking for GPU fractions gets the fullest
        GPUs that hold its fraction (:func:`~simcluster.placement.fraction_plan`) unless the placement
        declares ``places_fractions``.
        """
        return self.try_start_in(vc, job)

    def try_start_in(self, vc: VirtualCluster, job: Job, gpu_type: str | None = None) -> bool:
        """:meth:`try_start`, VC first (what a VC's context binds); ``gpu_type``: on that type's nodes only (a
        Kueue flavor's), where the job runs on it."""
        fraction = job.gpu_milli < 1000
        if gpu_type is not None:
            pool = vc.pools.get(gpu_type)
            if pool is None or job.speed_on(gpu_type) <= 0 or (job.gpu_num > pool.free_gpus and not fraction):
                return False
            plan = fraction_plan(job, [pool]) if fraction and not self.placement.places_fractions else \
                self.placement.place(job, pool)
        elif fraction and not self.placement.places_fractions:
            plan = fraction_plan(job, self._pools_of(job, vc))
        elif job.gpu_num > vc.free_gpus and not fraction:
            return False  # no placement finds more idle GPUs than the VC has (a blocked head of queue, mostly)
        elif job.speeds is None:  # any GPU will do
            if job.gpu_num >= vc.unplaceable:
                return False  # the placement found no room for as many GPUs since GPUs were last freed
            if self._room_class is not None:  # the same, within the job's class only
                room = self._room_class(job, vc)
                if job.gpu_num >= vc.unplaceable_by.get(room, NO_LIMIT):
                    return False
            plan = self.placement.place(job, vc)
            if plan is None and self._monotone_placement:
                vc.unplaceable = job.gpu_num
            elif plan is None and self._room_class is not None:
                vc.unplaceable_by[room] = job.gpu_num
        elif self.placement.chooses_types:
            plan = self.placement.place(job, vc)
        else:
            plan = next((p for pool in self._pools_of(job, vc) if (p := self.placement.place(job, pool))), None)
        if plan is None:
            return False
        self.start(job, vc, plan)
        return True

    def _pools_of(self, job: Job, vc: VirtualCluster) -> list[Pool]:
        """Where ``job`` may run in ``vc``: the whole VC if every type of it will do, else its types' pools."""
        key = (id(job.speeds), vc.name)
        pools = self._pools.get(key)
        if pools is None:
            allowed = [t for t in vc.gpu_types if job.speed_on(t) > 0]
            pools = self._pools[key] = [vc] if len(allowed) == len(vc.gpu_types) else [vc.pools[t] for t in allowed]
        return pools
