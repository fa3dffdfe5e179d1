"""The simulation: SimPy processes for jobs, nodes and arrivals; scheduler passes on late wake-ups.

Event-driven throughout: the clock jumps from one arrival, completion,
failure or repair to the next, so the cost grows with the number of events,
never with simulated time.

Order within one instant.  Completions and arrivals are ordinary SimPy
events; the scheduler's pass is due with a *later* priority than any of them
(:data:`LATE`), so at time t every job finishing at t has freed its GPUs and
every job submitted at t has joined its queue before the policy runs — once,
for every VC where something changed.  The pass, the arrivals and the
policies' timers are not events in SimPy's queue: the run's loop
(:meth:`Simulation._loop`, SimPy's own, less those events) runs each where
SimPy would have popped its event; a job's process ends without an event
(:class:`JobProcess`).

Three optional limits, all off by default so the published simulators' figures hold:

- ``spread_penalty`` (network locality): a job whose GPUs span k > 1 nodes runs at speed
  1/(1 + penalty) for as long as it holds them (times its sharing slowdown, if any), so a placement
  that spreads jobs costs time.  The penalty does not depend on k: one slower interconnect hop.
- ``until`` (a horizon): the run stops ``until`` seconds after the first submission, once
  everything of that instant has happened (:data:`HORIZON`); jobs not finished are left as they
  are and reported unfinished (:meth:`Simulation.unfinished`).
- ``restart_limit`` (no progress under failures): see :meth:`Simulation._gives_up_on`.

GPU types.  A job runs at the pace of its slowest GPU: its speed on that GPU's type
(:meth:`~simcluster.job.Job.speed_on`, 1 for jobs of traces without per-type speeds), times its
sharing factor there (beside a partner: the throughput table's pair speed for jobs that have one,
else the colocation model's; a fraction of a GPU runs at full speed), times the spread penalty.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from heapq import heappop, heappush
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import simpy
from simpy.events import PENDING

from simcluster.cluster import Cluster, Node, Pool, VirtualCluster
from simcluster.cluster_spec import ClusterSpec, NodeGroup
from simcluster.colocation.loader import ColocationModel, load_colocation_model
from simcluster.config import SimConfig
from simcluster.guard import POLICY_HOOKS, CheckedContext, CheckedPlacement, PluginFailed, at, guard_hooks
from simcluster.job import UNKNOWN_WORKLOAD as UNKNOWN
from simcluster.job import Job, JobState, table_keys
from simcluster.metrics.observer import Observer, overridden_hooks
from simcluster.placement import Placement, Plan, fraction_plan
from simcluster.plugins import display_name, resolve
from simcluster.policies import Policy, SchedulingContext
from simcluster.queue import JobQueue
from simcluster.registry import implements

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.throughputs import ThroughputTable

URGENT, NORMAL = 0, 1  # SimPy's own priorities: a process's start and interrupts; ordinary events (a timeout's)
LATE = 2
HORIZON = 3  # the --until stop: after everything else of its instant, the scheduler's pass included
Process = Generator[simpy.Event, Any, None]  # the life story of a SimPy process
_BY_INDEX = attrgetter("index")  # trace order


def trigger_late(event: simpy.Event, delay: float = 0.0, priority: int = LATE) -> None:
    """Succeed ``event`` after ``delay``, but after every ordinary event of that instant.

    SimPy's public ``succeed`` always uses NORMAL priority; this mirrors what
    SimPy itself does for its URGENT events (Initialize, Interruption).
    """
    event._ok = True
    event._value = None
    event.env.schedule(event, priority, delay)  # type: ignore[arg-type]  # (SimPy types it as an EventPriority)


class JobProcess(simpy.Process):
    """A job's SimPy process, which ends without an event of its own when no one waits for it.

    SimPy schedules a process as an event when its generator returns, so that whoever yields it
    resumes.  Nothing waits for a job's process (its end is the engine's to record, in the job's own
    life story), so that event would be popped with no callback: a million-job run made a million
    of them.  The end is marked here instead: the process is triggered and processed at once.
    Everything else is :meth:`simpy.Process._resume` as SimPy 4.1 writes it (one step per call:
    a job's life never yields an event that has already been processed; if it did, SimPy's own
    loop takes over).
    """

    def _resume(self, event: simpy.Event) -> None:
        env = self.env
        env._active_proc = self  # type: ignore[attr-defined]
        try:
            if event._ok:
                target = self._generator.send(event._value)
            else:  # an interrupt: SimPy's handling of a failed event, verbatim
                event._defused = True  # type: ignore[attr-defined]
                exc = type(event._value)(*event._value.args)
                exc.__cause__ = event._value
                target = self._generator.throw(exc)
        except StopIteration as end:
            self._ok, self._value = True, (end.args[0] if end.args else None)
            if self.callbacks:  # someone waits for this job's end after all: SimPy's way
                env.schedule(self)
            else:
                self.callbacks = None  # type: ignore[assignment]  # processed: there is no one to tell
            self._target = None  # type: ignore[assignment]
            env._active_proc = None  # type: ignore[attr-defined]
            return
        except BaseException as failure:  # noqa: BLE001  # (as SimPy: the run's loop raises it)
            self._ok, self._value = False, failure
            env.schedule(self)
            self._target = None  # type: ignore[assignment]
            env._active_proc = None  # type: ignore[attr-defined]
            return
        if target.callbacks is None:  # already processed: SimPy's loop sends its value on
            simpy.Process._resume(self, target)
            return
        target.callbacks.append(self._resume)
        self._target = target
        env._active_proc = None  # type: ignore[attr-defined]


def started_process(env: simpy.Environment, generator: Process) -> JobProcess:
    """``env.process(generator)`` (a :class:`JobProcess`) with its first step already taken, here and now.

    SimPy starts a process through an URGENT *Initialize* event that runs the generator's first step
    before anything else of the instant.  Where the caller runs at that instant and nothing can come
    between (a job's submission at its arrival), taking the step inline is the same story
    without the event: a million-job run then has a million fewer events.
    """
    process = JobProcess.__new__(JobProcess)  # Process.__init__ would schedule the Initialize event
    process.env, process.callbacks, process._generator = env, [], generator
    target = next(generator)
    target.callbacks.append(process._resume)
    process._target = target
    return process


@dataclass(frozen=True)
class Preempted:
    """Interrupt cause: the policy took the GPUs back."""

    policy: str
    overhead: float


@dataclass(frozen=True)
class RateChanged:
    """Interrupt cause: a GPU partner arrived or left, so the job runs at a new speed."""

    speed: float


@dataclass(frozen=True)
class Moved:
    """Interrupt cause: the policy sent the job to another partition's queue (lucid's profiler → its VC)."""

    partition: str


@dataclass(frozen=True)
class NodeFailed:
    """Interrupt cause: a node the job ran on went down."""

    node: str


@dataclass(frozen=True)
class Abandoned:
    """Interrupt cause: the no-progress guard gave up on the job (``--on-no-progress abandon``)."""


class SimulationStalled(RuntimeError):
    pass


class _NoEvents(RuntimeError):
    """The run's loop found nothing left to happen before its end."""


class NoProgressError(ValueError):
    """A job keeps being evicted by node failures without its checkpointed progress advancing: under
    these settings (failure rate, checkpoint interval) the run would not end.  A ValueError, as bad
    settings are: the command line reports it with exit code 2, a sweep records the run as failed."""


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


class _VcContext:
    """What a policy may do to one VC at one instant."""

    __slots__ = ("sim", "try_start", "vc", "wake_at")

    def __init__(self, sim: Simulation, vc: VirtualCluster) -> None:
        self.sim, self.vc = sim, vc
        # try_start(job): the engine's, bound to this VC (policies call it for every job they start)
        self.try_start: Callable[[Job], bool] = partial(sim.try_start_in, vc)  # (positional: no kwargs dict per call)
        # wake_at(when): run the policy on this VC again at ``when`` (tiresias asks at every pass, for every crossing)
        self.wake_at: Callable[[float], None] = partial(sim.wake_at, vc)

    @property
    def now(self) -> float:
        return self.sim.env._now  # type: ignore[attr-defined]  # (SimPy's own attribute: this runs at every pass)

    def start_on(self, job: Job, plan: Plan) -> None:
        self.sim.start(job, self.vc, plan)

    @property
    def throughputs(self) -> ThroughputTable | None:
        return self.sim.throughputs

    def pair_speeds(self, a: Job, b: Job) -> tuple[float, float]:
        return self.sim.pair_speeds(a, b, self.vc)

    @property
    def colocation(self) -> ColocationModel:
        assert self.sim.colocation is not None, "only sharing policies ask for the colocation model"
        return self.sim.colocation

    @property
    def config(self) -> SimConfig:
        return self.sim.config

    def preempt(self, job: Job, overhead: float | None = None, moving: bool = False) -> None:
        self.sim.preempt(job, self.vc, overhead, moving)

    def requeue(self, job: Job) -> None:
        queue = self.vc.pending
        queue.remove(job)
        queue.push(job)

    def reorder(self) -> None:
        self.vc.pending.rekey()

    def move(self, job: Job, partition: str) -> None:
        self.sim.move(job, partition)

    def partition_names(self) -> list[str]:
        return list(self.sim.cluster.vcs)


class Simulation:
    """Replays ``jobs`` on a cluster of ``vc_nodes`` under ``config``.

    >>> from simcluster.job import Job
    >>> jobs = [Job(index=i, job_id=str(i), vc="a", gpu_num=8, submit_time=0, duration=100) for i in range(3)]
    >>> sim = Simulation(jobs, {"a": 2}, SimConfig(policy="fifo"))
    >>> sim.run()
    >>> [(j.start_time, j.end_time) for j in jobs]
    [(0.0, 100.0), (0.0, 100.0), (100.0, 200.0)]
    """

    def __init__(
        self,
        jobs: list[Job],
        cluster: Mapping[str, int] | ClusterSpec,
        config: SimConfig | None = None,
        observers: Iterable[Observer] = (),
        colocation: ColocationModel | None = None,
        throughputs: ThroughputTable | None = None,
        policy: Policy | None = None,
        placement: Placement | None = None,
        wrap_context: Callable[[SchedulingContext, VirtualCluster], SchedulingContext] | None = None,
    ) -> None:
        """``cluster``: nodes per VC (untyped, ``config.gpus_per_node`` GPUs each) or a :class:`ClusterSpec`.
        ``colocation`` overrides the model that ``config.colocation`` names (for sharing policies);
        ``throughputs``: the table the jobs' per-type speeds come from, whose pairs time jobs sharing GPUs.
        ``policy`` and ``placement``: instances to use instead of the ones ``config`` names, and ``wrap_context``
        what wraps each VC's context (the conformance kit's checks, :mod:`simcluster.testing`)."""
        self.config = config = config or SimConfig()
        self.jobs = jobs
        start = min(map(attrgetter("submit_time"), jobs), default=0)  # (map and attrgetter: no frame per job)
        self.env = simpy.Environment(initial_time=start)
        policy_class, origin = resolve(config.policy, "policy")
        self.policy = policy if policy is not None else policy_class(config)
        guarded = origin.source != "built-in" and policy is None  # a plug-in: its hooks and decisions are checked
        if guarded:
            label = f"policy {display_name(config.policy)}"
            guard_hooks(self.policy, Policy, POLICY_HOOKS, label, self._now, origin.location)
        spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec.uniform(cluster, config.gpus_per_node)
        partitions = self.policy.partitions()
        if clash := set(partitions) & set(spec.vcs):
            raise ValueError(f"the trace has a VC named like {config.policy}'s own partition: {sorted(clash)}")
        spec = without_borrowed(spec, self.policy.borrowed_nodes(), config.policy)
        kind = spec.gpu_types[0] if spec.groups else "gpu"  # a partition's nodes: the cluster's first GPU type
        spec = spec.with_vcs(NodeGroup(name, kind, n, config.gpus_per_node) for name, n in partitions.items())
        self.throughputs = throughputs
        self.cluster = Cluster(spec, config.gpus_per_node, throughputs.type_order() if throughputs else ())
        placement_class, placement_origin = resolve(config.placement, "placement")
        self.placement = placement if placement is not None else placement_class(random.Random(config.seed))
        if placement_origin.source != "built-in" and placement is None:
            self.placement = CheckedPlacement(self.placement, f"placement {display_name(config.placement, 'placement')}",
                                              self._now, source_file=placement_origin.location)
        fractions = min(map(attrgetter("gpu_milli"), jobs), default=1000) < 1000
        arriving = Counter(map(attrgetter("queue_vc"), jobs))
        for vc in self.cluster.vcs.values():
            vc.pending = JobQueue(key=self.policy.pending_key)
            vc.clock = self._now
            vc._since = float(start)
            vc.to_arrive = arriving[vc.name]
            if fractions:
                vc.track_fractions()
        self.policy.clock = self._now
        self.policy.attach(self.cluster)
        self._pools: dict[tuple[int, str], list[Pool]] = {}  # (id of a job's speeds, VC) → the pools it may use
        self.colocation: ColocationModel | None = None
        if self.policy.shares_gpus:
            self.colocation = colocation or load_colocation_model(config.colocation, spec.gpu_types)
            for job in jobs:
                if not job.memory:
                    job.memory = self.colocation.memory_mib(job.workload or UNKNOWN, job.gpu_num)
        observers = list(observers)
        # per hook, only the observers that implement it (most hooks are no-ops for most observers)
        self._on_submit = overridden_hooks(observers, "on_submit")
        self._on_start = overridden_hooks(observers, "on_start")
        self._on_preempt = overridden_hooks(observers, "on_preempt")
        self._on_restart = overridden_hooks(observers, "on_restart")
        self._on_finish = overridden_hooks(observers, "on_finish")
        self._on_move = overridden_hooks(observers, "on_move")
        self._on_speed = overridden_hooks(observers, "on_speed")
        self._on_node_down = overridden_hooks(observers, "on_node_down")
        self._on_node_up = overridden_hooks(observers, "on_node_up")
        self._on_sample = overridden_hooks(observers, "on_sample")
        self._contexts: dict[str, SchedulingContext] = {name: _VcContext(self, vc) for name, vc in self.cluster.vcs.items()}
        if guarded:
            wrap_context = partial(CheckedContext, label=label, shares=self.policy.shares_gpus)
        if wrap_context is not None:
            self._contexts = {name: wrap_context(ctx, self.cluster.vcs[name]) for name, ctx in self._contexts.items()}
        # the policy's job hooks and the spread penalty, looked up once: most runs have neither
        self._policy_on_submit = implements(self.policy, Policy, "on_submit")
        self._policy_on_finish = implements(self.policy, Policy, "on_finish")
        self._policy_on_run_start = implements(self.policy, Policy, "on_run_start")
        self._policy_on_run_stop = implements(self.policy, Policy, "on_run_stop")
        self._spread_penalty = config.spread_penalty
        self._dirty: dict[str, None] = {}
        self._timers: set[tuple[str, float]] = set()  # (VC, time) of policy wake-ups already set
        self._pass_due = False  # a scheduler pass is due at this instant
        # the engine's own calls (scheduler passes, arrivals, policies' timers), ordered with SimPy's events:
        # (time, priority, SimPy event id, call), in a heap beside SimPy's queue (see _loop)
        self._calls: list[tuple[float, int, int, Callable[[], None]]] = []
        self._unfinished = len(jobs)
        self._all_done = self.env.event()
        self.running = self.pending = 0
        # no-progress guard: job → (checkpointed progress after its last eviction, evictions in a row
        # that did not advance it); jobs the guard gave up on, with when
        self._futile: dict[Job, tuple[float, int]] = {}
        self.abandoned: dict[Job, float] = {}

    def _now(self) -> float:
        return self.env.now

    # --- the run -----------------------------------------------------------
    def run(self) -> None:
        env = self.env
        # by submit time, then trace order: jobs listed in trace order (a trace's own) keep it among equal submit
        # times in a stable sort by submit time alone, which is half the work of a (time, index) key on a million
        indices = list(map(_BY_INDEX, self.jobs))
        by_submit = attrgetter("submit_time") if indices == sorted(indices) else attrgetter("submit_time", "index")
        arrivals = sorted(self.jobs, key=by_submit)
        self._call_at(0.0, lambda: self._arrive(arrivals, 0), URGENT)  # first, as a process would start
        for node in self.cluster.nodes if self.config.node_mtbf > 0 else ():  # (a node that never fails has no life)
            env.process(self._node_life(node, random.Random(f"{self.config.seed}:{node.name}")))
        if not self._unfinished:
            return
        stop: simpy.Event = self._all_done
        if self.config.until > 0:
            horizon = env.event()
            trigger_late(horizon, self.config.until, HORIZON)
            stop = env.any_of([self._all_done, horizon])
        try:
            self._loop(stop)
        except _NoEvents as exc:  # no events left, yet jobs remain
            stuck = [j.job_id for j in self.jobs if j.state is not JobState.FINISHED][:5]
            raise SimulationStalled(f"simulation stalled at t={env.now}: jobs {stuck} can never run") from exc

    def _loop(self, stop: simpy.Event) -> None:
        """SimPy's ``env.run(until=stop)``, with the engine's own calls kept out of its event queue.

        A scheduler pass would be an event with one callback at every scheduling instant, an arrival or a
        policy's timer one more: each only calls the engine.  Instead each takes the place such an event
        would have in the queue — (time, priority, the next event id), as :meth:`simpy.Environment.schedule`
        would give it — in the heap :attr:`_calls` (:meth:`_call_at`); the loop runs whichever of the calls
        and of the queue's events comes first: the same order, without the events' making and stepping.
        Otherwise this is :meth:`simpy.Environment.step` as SimPy 4 does it.
        """
        env = self.env
        queue, calls = env._queue, self._calls  # type: ignore[attr-defined]
        stopped: list[simpy.Event] = []
        stop.callbacks.append(stopped.append)  # type: ignore[union-attr]
        while not stopped:
            # (an event and a call never tie on (time, priority, id): their last items are never compared)
            if queue and (not calls or queue[0] < calls[0]):  # type: ignore[operator]
                env._now, _, _, event = heappop(queue)  # type: ignore[attr-defined]
                # (a processed event's callbacks are None, as SimPy's own step sets them)
                callbacks, event.callbacks = event.callbacks, None  # type: ignore[assignment]
                for callback in callbacks:
                    callback(event)
                if not event._ok and not hasattr(event, "_defused"):  # a process failed, and no one handled it
                    exc = type(event._value)(*event._value.args)
                    exc.__cause__ = event._value
                    raise exc
            elif not calls:
                raise _NoEvents(f"no scheduled events left but {stop} was not triggered")
            else:
                env._now, _, _, call = heappop(calls)  # type: ignore[attr-defined]
                call()
        if not stop._ok:
            raise stop._value

    # --- processes -----------------------------------------------------------
    def _arrive(self, jobs: list[Job], first: int) -> None:
        """Submits ``jobs[first:]`` (sorted by submit time, then trace order) at their submit times.

        Submits the jobs due now and starts their processes, then calls itself again at the next submit
        time: a call per distinct submit time, and no generator to resume."""
        env = self.env
        now = env._now  # type: ignore[attr-defined]
        submit, life = self._submit, self._job_life
        for i in range(first, len(jobs)):
            job = jobs[i]
            if job.submit_time > now:
                self._call_at(job.submit_time - now, partial(self._arrive, jobs, i))
                return
            submit(job)
            job.process = started_process(env, life(job))

    def _call_at(self, delay: float, call: Callable[[], None], priority: int = NORMAL) -> None:
        """Call ``call`` ``delay`` seconds from now, ordered among that instant's events by ``priority``: where
        an event scheduled now would be, without the event (see :meth:`_loop`)."""
        env = self.env
        heappush(self._calls, (env._now + delay, priority, next(env._eid), call))  # type: ignore[attr-defined]

    def _submit(self, job: Job) -> None:
        """Queue a job at its submit time.

        The policy may route the job through a partition of its own first (``on_submit`` names it)."""
        vcs, now = self.cluster.vcs, self.env._now  # type: ignore[attr-defined]
        vcs[job.queue_vc].to_arrive -= 1
        if self._policy_on_submit and (partition := self.policy.on_submit(job, now)):
            self._route(job, partition)
        vc = vcs[job.queue_vc]
        self._enqueue(job, vc)
        self._request_pass(vc)
        for hook in self._on_submit:
            hook(job, now)

    def _route(self, job: Job, partition: str) -> None:
        """Queue an arriving job in a partition of the policy's own first (what ``on_submit`` returned)."""
        if partition not in self.cluster.vcs:
            raise PluginFailed(f"policy {self.policy.name} routed job {job.job_id} to {partition!r}, which is no "
                               f"VC or partition ({at(self.env.now)})")
        job.queue_vc = partition

    def _job_life(self, job: Job) -> Process:
        """Wait for GPUs, run; a preemption or failure sends it back to waiting (it was queued at submission)."""
        while True:
            try:
                yield job.run_end  # pending while it waits; once it has GPUs, due at the end of its run
            except simpy.Interrupt as stop:
                if isinstance(stop.cause, Abandoned):
                    return
                continue  # preempted, evicted, moved or re-timed: whoever did it already updated our state
            self._finish(job, self.cluster.vcs[job.queue_vc])
            return

    def _scheduler_pass(self) -> None:
        """Runs the policy on each VC where something changed (a LATE call, after everything else of the instant).

        A plain call, not a process: a pass needs no state of its own between wake-ups, and resuming
        a generator at every scheduling instant cost more than the pass itself on a FIFO queue."""
        self._pass_due = False  # from here on, a change asks for another pass at this instant
        dirty, self._dirty = self._dirty, {}
        vcs, contexts, schedule = self.cluster.vcs, self._contexts, self.policy.schedule
        for name in dirty:
            schedule(vcs[name], contexts[name])
        if self._on_sample:
            counts = self.cluster.counts
            for hook in self._on_sample:
                hook(self.env._now, counts.used, counts.shared, self.running, self.pending)

    def _node_life(self, node: Node, rng: random.Random) -> Process:
        """Fails after an exponential time with mean ``node_mtbf``, is repaired, and so on."""
        mtbf, env = self.config.node_mtbf, self.env
        while mtbf > 0:
            yield env.timeout(rng.expovariate(1.0 / mtbf))
            for job in list(node.jobs):
                self._evict(job, NodeFailed(node.name))
            node.set_up(False)
            for hook in self._on_node_down:
                hook(node.name, env.now)
            yield env.timeout(self.config.node_repair)
            node.set_up(True)
            for hook in self._on_node_up:
                hook(node.name, env.now)
            self._request_pass(node.vc)

    # --- state changes -------------------------------------------------------
    def try_start(self, job: Job, vc: VirtualCluster) -> bool:
        """Start ``job`` where the placement puts it, on idle GPUs; False if it has none now.

        A job that cannot run on every GPU type of its VC is placed by the placement within one type
        it runs on at a time (in the VC's type order); a job asking for GPU fractions gets the fullest
        GPUs that hold its fraction (:func:`~simcluster.placement.fraction_plan`) unless the placement
        declares ``places_fractions``.
        """
        return self.try_start_in(vc, job)

    def try_start_in(self, vc: VirtualCluster, job: Job) -> bool:
        """:meth:`try_start`, VC first (what a VC's context binds)."""
        fraction = job.gpu_milli < 1000
        if fraction and not self.placement.places_fractions:
            plan = fraction_plan(job, self._pools_of(job, vc))
        elif job.gpu_num > vc.free_gpus and not fraction:
            return False  # no placement finds more idle GPUs than the VC has (a blocked head of queue, mostly)
        elif job.speeds is None or self.placement.chooses_types:  # None: any GPU will do
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

    def start(self, job: Job, vc: VirtualCluster, plan: Plan) -> None:
        """Start ``job`` on ``plan``: (node, count) takes idle GPUs, (node, [ids]) exactly those (sharing)."""
        now = self.env._now  # type: ignore[attr-defined]
        if len(plan) == 1:  # (most jobs fit on one node)
            node, where = plan[0]
            job.allocation = ((node, node.allocate(job, where) if isinstance(where, int) else node.attach(job, where)),)
        else:
            job.allocation = tuple([(node, node.allocate(job, where) if isinstance(where, int) else node.attach(job, where))
                                    for node, where in plan])
        vc.pending.remove(job)
        vc.running[job] = None
        job.start(now)
        job.speed = self._solo_speed(job) if job.speeds is not None or self._spread_penalty else 1.0
        self.running += 1
        self.pending -= 1
        if self._policy_on_run_start:  # (before the re-timing below, which tells the policy of a new speed)
            self.policy.on_run_start(job, vc)
        if vc.shared_gpus:
            self._retime({job, *self._partners(job)})
        if job.run_end._value is PENDING:  # (not triggered: a partner's arrival above may have timed it already)
            trigger_late(job.run_end, job.time_left(), NORMAL)
        for hook in self._on_start:
            hook(job, now)

    def preempt(self, job: Job, vc: VirtualCluster, overhead: float | None = None, moving: bool = False) -> None:
        """Checkpoint ``job`` (``overhead``: restore seconds it owes; default the configured overhead), free
        its GPUs and queue it again.  ``moving``: the policy restarts it elsewhere at once (a round policy
        changing its GPU type), which counts as a migration, not a preemption."""
        if overhead is None:
            overhead = self.config.preemption_overhead(job.gpu_num)
        self._stop(job, vc, overhead=overhead)
        if moving:
            job.migrations += 1
        else:
            job.preemptions += 1
        job.process.interrupt(Preempted(self.policy.name, overhead))
        for hook in self._on_preempt:
            hook(job, self.env.now)

    def move(self, job: Job, partition: str) -> None:
        """Send ``job`` to the queue of another partition; a running job keeps its progress.

        A waiting job keeps its ``run_end`` event, which its process is waiting on.
        """
        here, there = self.cluster.vcs[job.queue_vc], self.cluster.vcs[partition]
        if job.state is JobState.RUNNING:
            job.stop(self.env.now)
            self._release(job, here)
            job.process.interrupt(Moved(partition))
            job.queue_vc = partition
            self._enqueue(job, there)
            for hook in self._on_move:
                hook(job, self.env.now)
        else:
            here.pending.remove(job)
            job.queue_vc = partition  # before the push: the queue key may depend on the partition
            there.pending.push(job)
        self._request_pass(there)

    def _evict(self, job: Job, cause: NodeFailed) -> None:
        vc = self.cluster.vcs[job.queue_vc]
        nodes = len(job.allocation)
        self._stop(job, vc, lose_since_checkpoint=self.config.checkpoint_interval)
        job.restarts += 1
        if self._gives_up_on(job, nodes):
            self._abandon(job, vc)
        else:
            job.process.interrupt(cause)
        for hook in self._on_restart:
            hook(job, self.env.now)
        self._request_pass(vc)

    def _gives_up_on(self, job: Job, nodes: int) -> bool:
        """The no-progress guard, after an eviction by a node failure.

        A job is *making no progress* when ``restart_limit`` evictions in a row left its checkpointed
        progress (what it keeps: its last periodic checkpoint or preemption) no further than after
        the eviction before (or than 0, before its first).  Then ``on_no_progress`` decides:
        ``stop`` raises :class:`NoProgressError`, ``abandon`` returns True (the job is taken out).
        """
        limit = self.config.restart_limit
        if not limit:
            return False
        kept = job.progress  # what the eviction left it: its checkpointed progress
        last, in_a_row = self._futile.get(job, (0.0, 0))
        in_a_row = in_a_row + 1 if kept <= last else 0
        self._futile[job] = (max(kept, last), in_a_row)
        if in_a_row < limit:
            return False
        if self.config.on_no_progress == "stop":
            raise NoProgressError(self._no_progress_message(job, nodes, in_a_row))
        return True

    def _no_progress_message(self, job: Job, nodes: int, evictions: int) -> str:
        c = self.config
        need = min(c.checkpoint_interval or job.work_left, job.work_left)  # failure-free seconds it needs
        survives = math.exp(-nodes * need / c.node_mtbf)
        return (f"no progress under node failures: job {job.job_id} ({job.gpu_num} GPUs on {nodes} node(s)) was "
                f"evicted {evictions} times in a row (t={self.env.now:,.0f} s) without its checkpointed progress "
                f"advancing beyond {job.progress:,.0f} of {job.duration:,} s. A run must last {need:,.0f} s to "
                f"keep progress; with --node-mtbf {c.node_mtbf:g} it survives on {nodes} node(s) with probability "
                f"exp(-{nodes}×{need:.0f}/{c.node_mtbf:g}) = {survives:.2g}. Raise --node-mtbf, shorten "
                f"--checkpoint-interval, or give --on-no-progress abandon (such jobs are reported unfinished) or "
                f"--until SECONDS; --restart-limit {c.restart_limit} sets this guard (0: off).")

    def _abandon(self, job: Job, vc: VirtualCluster) -> None:
        """Take an evicted (queued) job out of the simulation for good; it is reported unfinished."""
        vc.pending.remove(job)
        self.pending -= 1
        self.abandoned[job] = self.env.now
        job.process.interrupt(Abandoned())
        self._futile.pop(job, None)
        self._unfinished -= 1
        if not self._unfinished:
            self._all_done.succeed()

    def finished_every_job(self) -> bool:
        """Whether the run ended with every job finished (no horizon cut it short, no job was given up on)."""
        return not self._unfinished and not self.abandoned

    def unfinished(self) -> list[Job]:
        """Jobs submitted but not finished when the run ended (a horizon, or abandoned), in trace order."""
        return [j for j in self.jobs if j.state is not JobState.FINISHED and (j.process is not None)]

    def _stop(self, job: Job, vc: VirtualCluster, overhead: float = 0.0,
              lose_since_checkpoint: float | None = None) -> None:
        job.stop(self.env._now, overhead, lose_since_checkpoint)
        self._release(job, vc)
        self._enqueue(job, vc)

    def _enqueue(self, job: Job, vc: VirtualCluster) -> None:
        """Queue ``job``; the caller asks for a pass if one is needed (a preemption is the pass's own doing)."""
        job.run_end = simpy.Event(self.env)  # (not env.event(): that makes a bound method first)
        vc.pending.push(job)
        self.pending += 1

    def _time_run(self, job: Job, run_end: simpy.Event) -> None:
        """Make ``run_end`` (the event the job's process waits on) due when the job's run ends at its speed.

        One event per run, scheduled as SimPy schedules a timeout: the process sleeps from submission
        to the end of its run, unless interrupted (a stale ``run_end`` then fires with no one waiting)."""
        trigger_late(run_end, job.time_left(), NORMAL)
        job.run_end = run_end

    def _release(self, job: Job, vc: VirtualCluster) -> None:
        partners = self._partners(job) if vc.shared_gpus else ()
        for node, _ in job.allocation:
            node.release(job)
        job.allocation = ()
        job.speed, job.sharing = 1.0, False
        del vc.running[job]
        self.running -= 1
        if self._policy_on_run_stop:
            self.policy.on_run_stop(job, vc)
        if partners:
            self._retime(partners)

    # --- GPU sharing -----------------------------------------------------------
    @staticmethod
    def _partners(job: Job) -> set[Job]:
        return {other for node, _ in job.allocation for other in node.partners(job)}

    def _spread_speed(self, job: Job) -> float:
        """1/(1 + spread_penalty) for a job holding GPUs on more than one node, else 1."""
        penalty = self.config.spread_penalty
        if penalty and len({id(node) for node, _ in job.allocation}) > 1:
            return 1.0 / (1.0 + penalty)
        return 1.0

    def _solo_speed(self, job: Job) -> float:
        """The job's speed on its GPUs were none of them shared: its slowest GPU type's, times its spread speed."""
        if job.speeds is None:
            return self._spread_speed(job)
        speed = min(job.speeds.on(node.gpu_type) for node, _ in job.allocation) * self._spread_speed(job)
        if speed <= 0:
            raise RuntimeError(f"job {job.job_id} was started on a GPU type it cannot run on "
                               f"({', '.join(sorted({n.gpu_type for n, _ in job.allocation}))})")
        return speed

    def _speed_of(self, job: Job) -> tuple[float, bool]:
        """A job runs at the pace of its slowest GPU: its speed on the GPU's type, times, on a GPU it
        shares with whole-GPU jobs, the product of its pairwise speeds with each partner there
        (:meth:`_pair_speed`); times its spread speed (:meth:`_spread_speed`).  A job holding a fraction
        of a GPU runs at full speed beside the others there."""
        slowest, sharing = math.inf, False
        whole = job.gpu_milli >= 1000
        factors: dict[Job, float]  # (a declaration only: no code)
        for node, ids in job.allocation:
            alone = job.speed_on(node.gpu_type)
            slowest = min(slowest, alone)
            gpus, factors = node.gpus, {}  # (a partner's factor, looked up once per node however many GPUs they share)
            for i in ids:
                holders = gpus[i]
                if len(holders) < 2:
                    continue
                sharing = True
                if whole:
                    speed = alone
                    for other in holders:
                        if other is not job:
                            factor = factors.get(other)
                            if factor is None:
                                factor = factors[other] = self._pair_speed(job, other, node.gpu_type)
                            speed *= factor
                    slowest = min(slowest, speed)
        # (times 1.0 without a spread penalty: the same float)
        return (slowest * self._spread_speed(job) if self._spread_penalty else slowest), sharing

    def _pair_speed(self, job: Job, other: Job, gpu_type: str) -> float:
        """``job``'s speed beside ``other`` on a GPU of ``gpu_type`` ÷ its speed alone there."""
        # (runs for every re-timed job, for each of its shared GPUs: no table, no key lookup)
        keys = table_keys(self.throughputs, job, other) if self.throughputs is not None else None
        if keys is not None:
            return self.throughputs.pair_factor(*keys, gpu_type)  # type: ignore[union-attr]
        assert self.colocation is not None, "jobs without a throughput table share GPUs under sharing policies only"
        return self.colocation.pair_speeds(job.workload or UNKNOWN, job.gpu_num, other.workload or UNKNOWN,
                                           other.gpu_num)[0]

    def pair_speeds(self, a: Job, b: Job, vc: VirtualCluster) -> tuple[float, float]:
        """The speeds (shared ÷ alone) ``a`` and ``b`` are predicted to have sharing GPUs of ``vc``: the
        throughput table's, averaged over the VC's GPU types where they can share, for jobs that have it;
        else the colocation model's."""
        keys = table_keys(self.throughputs, a, b)
        if keys is not None:
            return self.throughputs.mean_pair_factors(*keys, vc.gpu_types)  # type: ignore[union-attr]
        assert self.colocation is not None, "only sharing policies ask for pair speeds"
        return self.colocation.pair_speeds(a.workload or UNKNOWN, a.gpu_num, b.workload or UNKNOWN, b.gpu_num)

    def _retime(self, jobs: Iterable[Job]) -> None:
        """Give running ``jobs`` their current speed; a job whose speed changed is re-timed by interrupt."""
        now = self.env.now
        for job in sorted(jobs, key=_BY_INDEX):  # deterministic order of interrupts
            if job.state is not JobState.RUNNING:
                continue
            speed, sharing = self._speed_of(job)
            if speed != job.speed or sharing != job.sharing:
                if self._policy_on_run_stop:  # a new segment of the run: to the policy, a stop and a start
                    self.policy.on_run_stop(job, self.cluster.vcs[job.queue_vc])
                job.change_speed(now, speed, sharing)
                if self._policy_on_run_start:
                    self.policy.on_run_start(job, self.cluster.vcs[job.queue_vc])
                if job.run_end.triggered:  # else it is being started and :meth:`start` times its run
                    self._time_run(job, self.env.event())
                    job.process.interrupt(RateChanged(speed))
                for hook in self._on_speed:
                    hook(job, now)

    def _finish(self, job: Job, vc: VirtualCluster) -> None:
        now = self.env._now  # type: ignore[attr-defined]
        job.finish(now)
        self._release(job, vc)
        job.process = job.run_end = None  # a finished job keeps no SimPy objects alive
        if self._futile:
            self._futile.pop(job, None)
        if self._policy_on_finish:
            self.policy.on_finish(job, now)
        for hook in self._on_finish:
            hook(job, now)
        self._request_pass(vc)
        self._unfinished -= 1
        if not self._unfinished:
            self._all_done.succeed()

    def wake_at(self, vc: VirtualCluster, when: float) -> None:
        """Run the policy on ``vc`` again at ``when`` (a policy's own timer; duplicates are merged)."""
        key = (vc.name, when)
        timers = self._timers
        if key in timers:
            return
        timers.add(key)
        self._call_at(max(0.0, when - self.env._now), partial(self._ring, vc, key), LATE)

    def _ring(self, vc: VirtualCluster, key: tuple[str, float]) -> None:
        """A policy's timer is due: forget it, and ask for a pass on its VC."""
        self._timers.discard(key)
        self._request_pass(vc)

    def _request_pass(self, vc: VirtualCluster) -> None:
        self._dirty[vc.name] = None
        if not self._pass_due:
            self._pass_due = True
            self._call_at(0.0, self._scheduler_pass, LATE)
