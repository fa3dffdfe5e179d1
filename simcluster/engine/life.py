"""A job's life in the simulation, in one place: submitted, queued, started, cut short, finished.

::

    submit ─▶ queued ─▶ start ─▶ running ──(its run's end fires)──▶ finish
                ▲                   │
                └── interrupt ◀─────┘  Preempted · NodeFailed · Evicted · Moved   (RateChanged, Stalled: it goes on, re-timed)
                      │
                      └─▶ Abandoned (the no-progress guard gave up on it)

Jobs are callbacks, not SimPy processes.  A running job has one event in SimPy's queue, due at the end of its
run at its current speed (:attr:`~simcluster.job.Job.run_end`); when it fires the job finishes.  Anything
that cuts the run short comes through :meth:`JobLife.interrupt` with a typed cause
(:mod:`~simcluster.engine.causes`), which disarms that event (it stays in the queue and fires with no one
listening) and changes the job's state at once.  A process per job (SimPy's style) would tell the same story
with a generator, but an interrupt reaches a process only through an event of its own, later in the instant,
while the policy that preempted a job needs its GPUs free now: the state change was never the process's to
make, and the process cost an event per interrupt and a generator per job.  Order is unchanged by this:
those interrupt events changed nothing, and SimPy's sequence numbers keep the other events' order.

An elastic job (``job.elastic``: :mod:`simcluster.elastic.state`) lives the same life with two more turns:
its run's end is the end of its current *stage* (an epoch, the last one's end its finish), where the engine
re-times it at its new speed (:meth:`JobLife._stage_end`), and its policy may change its GPUs or batch while
it runs, an interrupt like the others (:class:`~simcluster.engine.causes.Resized`): its run segment closes,
its GPUs change, it owes its restart delay (no progress), and it is re-timed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import simpy

from simcluster.cluster import VirtualCluster
from simcluster.engine.causes import (
    Abandoned,
    Cause,
    Declined,
    Evicted,
    Moved,
    NodeFailed,
    Preempted,
    RateChanged,
    Replaced,
    Resized,
    Stalled,
    Swapped,
)
from simcluster.engine.events import AFTER_PASS, NORMAL, Due
from simcluster.job import RUNNING, Job
from simcluster.placement import Plan
from simcluster.placement.base import holds_exactly

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.cluster import Cluster, Node
    from simcluster.config import SimConfig
    from simcluster.engine.failures import NoProgressGuard
    from simcluster.engine.reliability import Reliability
    from simcluster.engine.speed import SpeedModel
    from simcluster.engine.terms import SpeedTerm
    from simcluster.policies import Policy

_BY_INDEX = attrgetter("index")  # trace order
Hook = Callable[[Job, float], None]


class JobLife:
    """The job-life half of :class:`~simcluster.engine.simulation.Simulation` (which sets these attributes)."""

    env: simpy.Environment
    clock: Callable[[], float]
    config: SimConfig
    cluster: Cluster
    policy: Policy
    speed: SpeedModel
    _speed_terms: tuple[SpeedTerm, ...]  # what slows jobs through other running jobs (jobs sharing an uplink)
    guard: NoProgressGuard
    reliability: Reliability | None  # failures by model, checkpoint and restart costs, spares (else None)
    running: int
    pending: int
    abandoned: dict[Job, float]
    declined: dict[Job, float]
    _whole_seconds: bool  # elastic jobs' stage ends fall on whole seconds (Pollux's simulator)
    _unfinished: int
    _all_done: simpy.Event
    _solo_speed: Callable[[Job], float]
    _policy_on_finish: bool
    _policy_on_run_start: bool
    _policy_on_run_stop: bool
    _policy_on_epoch: bool
    _on_start: list[Hook]
    _on_preempt: list[Hook]
    _on_restart: list[Hook]
    _on_finish: list[Hook]
    _on_move: list[Hook]
    _on_speed: list[Hook]
    _on_resize: list[Hook]
    _preempted: dict[tuple[float, bool], Preempted]  # the policy's preemption causes by (overhead, moving)

    def _request_pass(self, vc: VirtualCluster) -> None: ...

    def start(self, job: Job, vc: VirtualCluster, plan: Plan, batch: Any = None, delay: float | None = None) -> None:
        """Start ``job`` on ``plan``: (node, count) takes idle GPUs, (node, [ids]) exactly those (sharing).
        An elastic job takes as many GPUs as the plan gives, runs at ``batch`` (None: its user's) and first owes
        ``delay`` seconds without progress (None: the run's restart delay)."""
        now = self.clock()
        if len(plan) == 1:  # most jobs fit on one node
            node, where = plan[0]
            job.allocation = ((node, node.allocate(job, where) if isinstance(where, int) else node.attach(job, where)),)
        else:
            job.allocation = tuple([(node, node.allocate(job, where) if isinstance(where, int) else node.attach(job, where))
                                    for node, where in plan])
        vc.pending.remove(job)
        vc.running[job] = None
        job.start(now)
        if job.elastic is None:
            if self._speed_terms:
                self._terms_start(job, now)
            else:
                job.speed = self._solo_speed(job) if job.speeds is not None or self.speed.spread_penalty else 1.0
        else:
            self._begin_elastic(job, now, batch, self.config.restart_delay if delay is None else delay)
        self.running += 1
        self.pending -= 1
        if self._policy_on_run_start:  # before the re-timing below, which tells the policy of a new speed
            self.policy.on_run_start(job, vc)
        if vc.shared_gpus:
            self._retime({job, *self.speed.partners(job)})
        if job.run_end is None:  # a partner's start inside the policy's hook may have timed it already
            self._time_run(job)
        for hook in self._on_start:
            hook(job, now)

    def preempt(self, job: Job, vc: VirtualCluster, overhead: float | None = None, moving: bool = False) -> None:
        """The policy takes ``job``'s GPUs back (``overhead``: restore seconds it owes; default the configured
        overhead); ``moving``: it restarts elsewhere at once, which counts as a migration."""
        if overhead is None:  # (an elastic job's restore is the delay of its next start)
            overhead = self.config.preemption_overhead(job.gpu_num) if job.elastic is None else 0.0
        causes = self._preempted
        cause = causes.get((overhead, moving))
        if cause is None:  # (a record that never changes: one per overhead, not one per preemption)
            cause = causes[overhead, moving] = Preempted(self.policy.name, overhead, moving)
        self.interrupt(job, cause, vc)

    def resize(self, job: Job, vc: VirtualCluster, plan: Plan, batch: Any = None, delay: float | None = None) -> None:
        """Give running elastic ``job`` the GPUs of ``plan`` (those it holds count as free) and ``batch``."""
        self.interrupt(job, Resized(job.gpu_num, _plan_gpus(plan), tuple(plan), batch, delay), vc)

    def stall(self, job: Job, vc: VirtualCluster, seconds: float) -> None:
        """Charge running fixed-size ``job`` ``seconds`` without progress from now, on the GPUs it holds."""
        if job.elastic is not None:
            raise ValueError(f"job {job.job_id} is elastic: charge it a pause with resize(job, its plan, delay=...)")
        self.interrupt(job, Stalled(self.policy.name, seconds), vc)

    def _new_segment(self, job: Job, vc: VirtualCluster, now: float, speed: float, sharing: bool, timed: bool,
                     pause: float = 0.0) -> None:
        """A new segment of ``job``'s run from ``now`` at ``speed``, owing ``pause`` seconds first: to the policy, a
        stop and a start; re-timed if its run's end was set (``timed``)."""
        if self._policy_on_run_stop:
            self.policy.on_run_stop(job, vc)
        job.change_speed(now, speed, sharing)
        if pause:
            job.owe(pause)
        if self._policy_on_run_start:
            self.policy.on_run_start(job, vc)
        if timed:
            self._time_run(job)

    def decline(self, job: Job, vc: VirtualCluster) -> None:
        """Turn waiting ``job`` away for good (it is reported unfinished and declined)."""
        self.interrupt(job, Declined(self.policy.name), vc)

    def move(self, job: Job, partition: str) -> None:
        """Send ``job`` to the queue of another partition; a running job keeps its progress."""
        here, there = self.cluster.vcs[job.queue_vc], self.cluster.vcs[partition]
        if job.state is RUNNING:
            self.interrupt(job, Moved(partition), here)
        else:
            here.pending.remove(job)
            job.queue_vc = partition  # before the push: the queue key may depend on the partition
            there.pending.push(job)
        self._request_pass(there)

    def interrupt(self, job: Job, cause: Cause, vc: VirtualCluster | None = None) -> None:
        """Cut ``job``'s run short for ``cause`` (``vc``: the one it runs in, if the caller has it at hand)."""
        vc = vc or self.cluster.vcs[job.queue_vc]
        now = self.clock()
        timed = _disarm(job)  # not yet timed while the job is being started: start() times it
        match cause:  # (the most frequent first: the cases are tried in order)
            case Preempted(overhead=overhead, moving=moving):
                self._stop(job, vc, overhead=overhead)
                if self.reliability is not None and job.elastic is None:
                    self.reliability.preempted(job)
                if moving:
                    job.migrations += 1
                else:
                    job.preemptions += 1
                for hook in self._on_preempt:
                    hook(job, now)
            case RateChanged(speed=speed, sharing=sharing):
                self._new_segment(job, vc, now, speed, sharing, timed)
                for hook in self._on_speed:
                    hook(job, now)
            case Stalled(seconds=seconds):
                self._new_segment(job, vc, now, job.speed, job.sharing, timed, pause=seconds)
            case NodeFailed():
                nodes = len(job.allocation)
                self._stop_at_checkpoint(job, vc, now)
                job.restarts += 1
                if self.guard.gives_up_on(job, nodes, now):
                    self.interrupt(job, Abandoned(), vc)
                for hook in self._on_restart:
                    hook(job, now)
                self._request_pass(vc)
            case Swapped(pause=pause):
                self._swapped(job, vc, now, pause)
            case Evicted():  # (to observers, a preemption: it left its GPUs and waits again)
                self._stop_at_checkpoint(job, vc, now)
                job.evictions += 1
                for hook in self._on_preempt:
                    hook(job, now)
                self._request_pass(vc)
            case Moved(partition=partition):
                job.stop(now)
                self._release(job, vc)
                job.queue_vc = partition
                self._enqueue(job, self.cluster.vcs[partition])
                for hook in self._on_move:
                    hook(job, now)
            case Resized(plan=plan, batch=batch, delay=delay):
                self._resize(vc, now, [(job, plan, batch, delay)])
            case Declined():  # a queued job turned away: it is reported unfinished and declined
                vc.pending.remove(job)
                self.pending -= 1
                self.declined[job] = now
                self._one_less()
            case Abandoned():  # a queued job taken out for good: it is reported unfinished
                vc.pending.remove(job)
                self.pending -= 1
                self.abandoned[job] = now
                self.guard.forget(job)
                self._one_less()
            case Replaced(node=failed, plan=plan):  # (last: the rarest, so the others never test for it)
                self._replaced(job, vc, now, failed, plan)

    def _stop_at_checkpoint(self, job: Job, vc: VirtualCluster, now: float) -> None:
        """Stop ``job`` without a checkpoint (a failure, an eviction): it loses what it did since its last one, back
        in its queue, owing its restart where the run models restarts."""
        reliability = self.reliability
        if reliability is None:
            self._stop(job, vc, lose_since_checkpoint=self.config.checkpoint_interval)  # type: ignore[arg-type]
            return
        reliability.before_failure(job, now)
        self._stop(job, vc, lose_since_checkpoint=reliability.grid(job))
        if job.elastic is None:
            reliability.after_failure(job)
        else:
            reliability.costs_of(job).interruptions += 1

    def evict(self, job: Job, vc: VirtualCluster, by: Job) -> None:
        """Take running ``job``'s GPUs for ``by``, a job of a higher tier, without a checkpoint."""
        self.interrupt(job, Evicted(by.job_id), vc)

    def _swapped(self, job: Job, vc: VirtualCluster, now: float, pause: float) -> None:
        """:class:`Swapped`: back to its last checkpoint where it runs, owing ``pause`` and its restart."""
        nodes = len(job.allocation)
        self._back_to_checkpoint(job, vc, now, pause)
        self.reliability.costs_of(job).swaps += 1  # type: ignore[union-attr]
        self._go_on_after_failure(job, vc, now, nodes)

    def _back_to_checkpoint(self, job: Job, vc: VirtualCluster, now: float, pause: float = 0.0) -> None:
        """A job that keeps running through a failure loses what it did since its last checkpoint and owes
        ``pause`` and its restart (a spare's swap, a node's replacement)."""
        reliability = self.reliability
        assert reliability is not None
        if self._policy_on_run_stop:
            self.policy.on_run_stop(job, vc)
        job.change_speed(now, job.speed, job.sharing)
        reliability.lose_in_place(job, now)
        reliability.after_failure(job, pause)
        job.restarts += 1

    def _go_on_after_failure(self, job: Job, vc: VirtualCluster, now: float, nodes: int) -> bool:
        """A job that keeps its GPUs through a failure (a spare swapped in, a node replaced) timed again, unless
        the guard gives up on it; observers hear a restart.  Whether it goes on."""
        if self._policy_on_run_start:
            self.policy.on_run_start(job, vc)
        self._time_run(job)
        given_up = self.guard.gives_up_on(job, nodes, now)
        if given_up:
            _disarm(job)
            self._stop(job, vc, lose_since_checkpoint=0.0)
            self.interrupt(job, Abandoned(), vc)
            self._request_pass(vc)
        for hook in self._on_restart:
            hook(job, now)
        return not given_up

    def _replaced(self, job: Job, vc: VirtualCluster, now: float, failed: str, plan: list[tuple[Node, int]]) -> None:
        """:class:`Replaced`: back to its last checkpoint, its GPUs on node ``failed`` moved to ``plan``'s, owing its
        restart; observers hear a restart (the failure), then a resize (its GPUs changed while it runs)."""
        nodes = len(job.allocation)
        self._back_to_checkpoint(job, vc, now)
        if self._speed_terms:  # (its old nodes' links are free of it; its new ones count it below)
            self._terms_stop(job)
        kept = []
        for node, ids in job.allocation:
            if node.name == failed:
                node.release(job)
            else:
                kept.append((node, ids))
        job.allocation = (*kept, *((node, node.allocate(job, count)) for node, count in plan))
        if self._speed_terms:
            self._terms_start(job, now)
        else:
            job.speed, job.sharing = self.speed.of(job)  # (its span, and so its speed, may have changed)
        if self._go_on_after_failure(job, vc, now, nodes):
            for hook in self._on_resize:
                hook(job, now)

    def _checkpoint_due(self, job: Job, _run_end: simpy.Event | None = None) -> None:
        """Running ``job`` reached a checkpoint boundary: it writes a checkpoint (no progress) and goes on."""
        reliability = self.reliability
        assert reliability is not None
        now = self.clock()
        vc = self.cluster.vcs[job.queue_vc]
        job.run_end = None
        if self._policy_on_run_stop:
            self.policy.on_run_stop(job, vc)
        job.change_speed(now, job.speed, job.sharing)
        job.work_left = job.duration - reliability.costs_of(job).boundary  # (its progress: the boundary, exactly)
        reliability.checkpoint_begins(job, now)
        if self._policy_on_run_start:
            self.policy.on_run_start(job, vc)
        self._time_run(job)

    def _time_run_checkpointed(self, job: Job) -> None:
        """:meth:`_time_run` where checkpoints cost time: a fixed-size job's run is timed to its next checkpoint
        boundary when that comes before its end."""
        if job.elastic is None:
            boundary = self.reliability.next_boundary(job)  # type: ignore[union-attr]
            if boundary is not None:
                ahead = (boundary - (job.duration - job.work_left)) / job.speed
                job.run_end = Due(self.env, job.overhead_left + max(0.0, ahead), NORMAL,
                                  partial(self._checkpoint_due, job))
                return
        JobLife._time_run(self, job)

    def _finish(self, job: Job, _run_end: simpy.Event | None = None) -> None:
        """Its run's end fired: the job is done."""
        now = self.clock()
        vc = self.cluster.vcs[job.queue_vc]
        job.finish(now)
        if self.reliability is not None:
            self.reliability.finished(job)
        self._release(job, vc)
        job.run_end = None
        if self.guard.futile:
            self.guard.forget(job)
        if self._policy_on_finish:
            self.policy.on_finish(job, now)
        for hook in self._on_finish:
            hook(job, now)
        self._request_pass(vc)
        self._one_less()

    def _one_less(self) -> None:
        self._unfinished -= 1
        if not self._unfinished:
            self._all_done.succeed()

    def _stop(self, job: Job, vc: VirtualCluster, overhead: float = 0.0,
              lose_since_checkpoint: float | None = None) -> None:
        job.stop(self.clock(), overhead, lose_since_checkpoint)
        if job.elastic is not None:
            _after_elastic_stop(job, overhead)
        self._release(job, vc)
        self._enqueue(job, vc)

    def _enqueue(self, job: Job, vc: VirtualCluster) -> None:
        """Queue ``job``; the caller asks for a pass if one is needed (a preemption is the pass's own doing)."""
        vc.pending.push(job)
        self.pending += 1

    def _time_run(self, job: Job) -> None:
        """Give ``job`` its run's end: an event due when the run ends at its current speed (an elastic job's:
        when its current stage ends)."""
        elastic = job.elastic
        if elastic is None:
            job.run_end = Due(self.env, job.time_left(), NORMAL, partial(self._finish, job))
            return
        left = job.work_left - elastic.work_after_stage(job.duration)
        seconds = left / job.speed if left > 0 else 0.0
        if not self._whole_seconds:
            job.run_end = Due(self.env, job.overhead_left + seconds, NORMAL, partial(self._stage_end, job))
            return
        whole = round(seconds)  # (Pollux's simulator: an epoch rounded back to t ends after t's decisions)
        job.run_end = Due(self.env, job.overhead_left + whole, AFTER_PASS if whole < seconds else NORMAL,
                          partial(self._stage_end, job))

    def _release(self, job: Job, vc: VirtualCluster) -> None:
        if job.elastic is not None:
            job.elastic.stop(self.clock())
        partners = self.speed.partners(job) if vc.shared_gpus else ()
        for node, _ in job.allocation:
            node.release(job)
        job.allocation = ()
        job.speed, job.sharing = 1.0, False
        del vc.running[job]
        self.running -= 1
        if self._policy_on_run_stop:
            self.policy.on_run_stop(job, vc)
        if self.speed.kept:  # (what of() kept for it, if its speed was ever asked)
            self.speed.forget(job)
        if partners:
            self._retime(partners)
        if self._speed_terms:
            self._terms_stop(job)

    def _terms_start(self, job: Job, now: float) -> None:
        """Started ``job`` counted by the speed terms, timed at its speed under them, and the running jobs it
        slows re-timed."""
        for term in self._speed_terms:
            term.on_start(job, now)
        job.speed = self._solo_speed(job)
        self._retime({other for term in self._speed_terms for other in term.affected(job)})

    def _terms_stop(self, job: Job) -> None:
        """Stopped ``job`` forgotten by the speed terms, and the running jobs it slowed re-timed."""
        now = self.clock()
        affected = {other for term in self._speed_terms for other in term.affected(job)}
        for term in self._speed_terms:
            term.on_stop(job, now)
        self._retime(affected)

    def _retime(self, jobs: Iterable[Job]) -> None:
        """Give running ``jobs`` their current speed; a job whose speed changed is interrupted (RateChanged)."""
        speed_of, vcs = self.speed.of, self.cluster.vcs
        for job in sorted(jobs, key=_BY_INDEX):  # a deterministic order of re-timings
            if job.state is not RUNNING:
                continue
            speed, sharing = speed_of(job)
            if speed != job.speed or sharing != job.sharing:
                self.interrupt(job, RateChanged(speed, sharing), vcs[job.queue_vc])

    # --- elastic jobs ---------------------------------------------------------------------------------------
    def _begin_elastic(self, job: Job, now: float, batch: Any, delay: float) -> None:
        """A started elastic job: its GPU count is its allocation's, its batch ``batch`` (None: its user's), and
        it owes ``delay`` seconds of restart before progress."""
        elastic = job.elastic
        assert elastic is not None
        layout = tuple([len(ids) for _, ids in job.allocation])
        job.gpu_num = sum(layout)
        elastic.batch = elastic.model.default_batch(layout) if batch is None else batch
        job.owe(delay)
        job.speed = elastic.speed(layout)
        elastic.begin(now, layout, job.overhead_left)

    def resize_many(self, vc: VirtualCluster, changes: list[tuple[Job, Plan, Any, float | None]]) -> None:
        """:class:`Resized` for several running elastic jobs at one instant, each (job, plan, batch, delay): every
        job leaves the GPUs it gives up before any takes new ones, so jobs may move onto each other's GPUs."""
        for job, _plan, _batch, _delay in changes:
            _disarm(job)
        self._resize(vc, self.clock(), changes)

    def _resize(self, vc: VirtualCluster, now: float, changes: list[tuple[Job, Plan, Any, float | None]]) -> None:
        """Carry out :class:`Resized` for each of ``changes``: close the run segments, release the GPUs of the
        jobs whose GPUs change, then give each its plan (keeping the GPUs it holds where the plan keeps them) and
        batch, charge the restart delay, re-time."""
        moved = []
        for job, plan, _batch, _delay in changes:
            elastic = job.elastic
            assert elastic is not None, f"job {job.job_id} is not elastic"
            if self._policy_on_run_stop:
                self.policy.on_run_stop(job, vc)
            job.change_speed(now, job.speed, job.sharing)
            elastic.close(now)
            same = holds_exactly(job, plan)
            if not same:
                for node, _ in job.allocation:
                    node.release(job)
            moved.append(same)
        for (job, plan, batch, delay), same in zip(changes, moved, strict=True):
            elastic = job.elastic
            assert elastic is not None
            if not same:
                job.allocation = tuple([(node, node.allocate(job, where) if isinstance(where, int) else
                                         node.attach(job, where)) for node, where in plan])
                job.gpu_num = _plan_gpus(plan)
                elastic.resizes += 1
                if delay is None:
                    delay = self.config.restart_delay
            if delay is not None:  # a new restart: what was left of the one before is not owed any more
                job.overhead_total += delay - job.overhead_left
                job.overhead_left = delay
            layout = tuple([len(ids) for _, ids in job.allocation])
            if batch is not None:
                elastic.batch = batch
            elif not same:
                elastic.batch = elastic.model.default_batch(layout)
            job.speed = elastic.speed(layout)
            elastic.begin(now, layout, job.overhead_left)
            if self._policy_on_run_start:
                self.policy.on_run_start(job, vc)
            self._time_run(job)
            for hook in self._on_resize:
                hook(job, now)

    def _stage_end(self, job: Job, _run_end: simpy.Event | None = None) -> None:
        """An elastic job's stage ended: it finishes after its last; else its policy may give it a new batch
        (``on_epoch``) and it goes on at the next stage's speed."""
        elastic = job.elastic
        assert elastic is not None
        now = self.clock()
        if elastic.stage >= elastic.model.last_stage():
            job.work_left = 0.0  # (its progress: the last stage's end, whatever the rounding of times)
            self._finish(job)
            return
        vc = self.cluster.vcs[job.queue_vc]
        job.run_end = None
        if self._policy_on_run_stop:
            self.policy.on_run_stop(job, vc)
        job.change_speed(now, job.speed, job.sharing)
        job.work_left = elastic.work_after_stage(job.duration)  # (its progress: the stage's end, exactly)
        elastic.close(now)
        elastic.stage += 1
        if self._policy_on_epoch:
            batch = self.policy.on_epoch(job, now)
            if batch is not None:
                elastic.batch = batch
        job.speed = elastic.speed(elastic.layout)
        elastic.begin(now, elastic.layout, job.overhead_left)
        if self._policy_on_run_start:
            self.policy.on_run_start(job, vc)
        self._time_run(job)
        for hook in self._on_speed:
            hook(job, now)


def _plan_gpus(plan: Plan) -> int:
    return sum(where if isinstance(where, int) else len(where) for _, where in plan)


def _disarm(job: Job) -> bool:
    """Disarm ``job``'s run's end, if it has one (it stays in SimPy's queue and fires with no one listening);
    whether it had one."""
    run_end = job.run_end
    if run_end is None:
        return False
    run_end.callbacks.clear()
    job.run_end = None
    return True


def _after_elastic_stop(job: Job, overhead: float) -> None:
    """A stopped elastic job owes only the stop's ``overhead`` (the rest of a restart it did not finish is
    not owed: its next start restarts it), and is back in the stage its progress is in (a failure may have
    lost work across a stage's end)."""
    elastic = job.elastic
    assert elastic is not None
    unpaid = job.overhead_left - overhead
    if unpaid > 0:
        job.overhead_left -= unpaid
        job.overhead_total -= unpaid
    progress = (job.duration - job.work_left) * elastic.per_work
    model = elastic.model
    while elastic.stage > 0 and model.stage_end(elastic.stage - 1) > progress + 1e-9:
        elastic.stage -= 1
