"""Failures from a fault model, what they cost a job, hot spares and excluded servers: the engine's side.

On when a run is given any of ``--faults``, ``--checkpoint-cost``, ``--restart-cost``, ``--checkpoint-interval
young-daly``, ``--spare-nodes`` or ``--exclude-after``, or ``--node-mtbf`` on a cluster with a topology
(:func:`~simcluster.settings.reliability.reliability_mode`); a run without them takes none of these paths, and
its results are those of before.

**Faults.** One SimPy process per run (:meth:`Reliability.replay`) walks the model's cluster-wide stream of
outages in time order (:meth:`~simcluster.faults.FailureModel.outages`) and calls ``down`` and ``up`` for the
server concerned: nodes that never fail cost nothing.  The model's nodes are *servers*: the cluster's nodes
(*slots*) hold servers 0 … N−1 at the start, the K spares are servers N … N+K−1.  A fault stops every job on
the slot that holds the server; a job on several nodes stops whole.  Every fault of a slot is told to the
simulation as it strikes, even where the slot's node is down already for a spot reclaim
(:meth:`~simcluster.engine.simulation.Simulation.node_down` records both): the node comes back only once both ended,
and the replay's own count of the slots it holds down (``down_slots``, ``up_gpus``) never reads the node's state,
which a reclaim changes too.

**Spares.** When a spare is ready, it takes the failed server's slot: the slot's jobs keep their GPUs, lose
what they did since their last checkpoint and resume after ``--spare-swap`` plus ``--restart-cost`` seconds
without progress (:class:`~simcluster.engine.causes.Swapped`); an idle slot is down for ``--spare-swap``
seconds.  The failed server, once repaired, is a spare (a spare fails too, and is out while repaired).  With
no spare ready (or an elastic job on the slot) the slot goes down and its jobs are requeued (``NodeFailed``)
and owe the restart cost when they start again; the slot comes back with its own server's repair or with the
first spare that becomes ready (a repaired server), whichever is first, slots down longest first.  A spare
that fails while swapped in leaves its slot down, and the next spare ready takes it.  So with the swap free, one
job on N slots and K spares sees what it would see on N + K nodes: it stops at a fault of a server it is on and
waits only while fewer than N servers are up.

**Replacement from the domain.** On a cluster with a topology under a topology-aware placement
(``--replace-failed-nodes``, on by default), a running job whose node failed with no spare ready goes on at once on
free nodes of its domain at its required level, as Kueue replaces a failed node
(:class:`~simcluster.engine.failures.DomainReplacement`, :class:`~simcluster.engine.causes.Replaced`): it keeps
its other GPUs, loses what it did since its last checkpoint and owes the restart cost; where none is free it is
requeued.  A ready spare comes first: it takes the failed server's slot, the node's place in the topology, so the
job stays where it was.

**Exclusion.** ``--exclude-after N/DAYS``: a server's N-th fault within DAYS days takes it out for good; its
slot takes a spare when one is ready (after the swap time), else stays down.

**A run that can never end.** Where the waiting job that needs the most GPUs cannot start, the model's outages
are read ahead (:class:`Hopeless`, :class:`ReadAhead`): if they never leave enough up in a VC large enough for it
before the faults' horizon, the run stops at once with the no-progress error it would have reached there.  Under a
rate model, a job whose every run must outlast its nodes' faults for so long that it finishes before the horizon
with probability at most 1e-9 (:class:`FinishChance`) stops the run as soon as a fault stops it, or while it waits.

**Checkpoints.** A fixed-size job checkpoints after every τ seconds of progress (``--checkpoint-interval``, or
``young-daly``: Daly's interval for the rate λ × its nodes and the cost δ), never at its end.  With a cost
δ > 0 it makes no progress for δ seconds at each (an event at each boundary); a failure during those δ
seconds loses that checkpoint.  A preemption checkpoints and owes δ when the job resumes.

**What a job paid.** The seconds a job holds GPUs without progress are owed in order (``overhead_left``) and
paid first thing when it runs; :class:`Costs` attributes what was paid, first owed first paid, to
checkpointing, restarting or other overhead (preemption restores, a policy's stalls).  A failure cancels the
checkpoint and restart seconds not yet paid (that checkpoint or restart is lost; a new restart is owed).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING, Any

import simpy

from simcluster.config import SimConfig
from simcluster.faults.models import MAX_HORIZON_S, FailureModel, Outage
from simcluster.job import Job, JobState
from simcluster.settings.reliability import exclusion_rule

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.cluster import Node
    from simcluster.engine.failures import DomainReplacement
    from simcluster.engine.simulation import Simulation

CHECKPOINT, RESTART, OTHER = 0, 1, 2  # kinds of seconds without progress
_EPS = 1e-6  # progress within this of a checkpoint boundary is at it (floating-point rounding of progress)


@dataclass(slots=True, eq=False)
class Costs:
    """One job's checkpoints and restarts: what it owes, in order, and what it paid, by kind."""

    interval: float = 0.0  # its checkpoint interval at its last start (s of progress; 0: none)
    owed: deque[list[Any]] = field(default_factory=deque)  # [kind, seconds] not yet paid, first owed first
    added: float = 0.0  # seconds without progress owed so far (what its overhead_total should be)
    seen: float = 0.0  # seconds without progress paid so far, as last seen
    paid: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])  # by kind
    boundary: float = 0.0  # the progress at which its current run's next checkpoint starts
    pending: tuple[float, float] | None = None  # (progress, when it completes) of a checkpoint being written
    checkpoints: int = 0  # periodic checkpoints begun
    interruptions: int = 0  # failures that stopped it (evictions and swaps)
    swaps: int = 0

    def sync(self, job: Job) -> None:
        """Attribute what ``job`` paid since last seen (first owed first paid); overhead others added (a
        preemption's restore, a policy's stall) is owed as OTHER."""
        untracked = job.overhead_total - self.added
        if untracked > 1e-9:
            self.owed.append([OTHER, untracked])
        elif untracked < -1e-9:  # (overhead taken back: an elastic job's restart not owed any more)
            self._drop_last(-untracked)
        self.added = job.overhead_total
        paid = job.overhead_total - job.overhead_left
        self._pay(paid - self.seen)
        self.seen = paid

    def paid_now(self, job: Job, now: float) -> list[float]:
        """Paid by kind up to ``now``, a running job's current segment included (its accounts unchanged)."""
        self.sync(job)
        paid = list(self.paid)
        extra = min(now - job.run_started_at, job.overhead_left) if job.state is JobState.RUNNING else 0.0
        for kind, seconds in self.owed:
            if extra <= 0:
                break
            take = min(seconds, extra)
            paid[kind] += take
            extra -= take
        return paid

    def owe(self, job: Job, kind: int, seconds: float) -> None:
        if seconds > 0:
            job.owe(seconds)
            self.owed.append([kind, seconds])
            self.added = job.overhead_total

    def cancel(self, job: Job, kinds: tuple[int, ...]) -> None:
        """Not owed any more: the unpaid seconds of ``kinds`` (a checkpoint or restart a failure cut short)."""
        dropped = 0.0
        kept: deque[list[Any]] = deque()
        for entry in self.owed:
            if entry[0] in kinds:
                dropped += entry[1]
            else:
                kept.append(entry)
        if dropped:
            self.owed = kept
            job.overhead_left -= dropped
            job.overhead_total -= dropped
            self.added = job.overhead_total

    def _pay(self, seconds: float) -> None:
        owed, paid = self.owed, self.paid
        while seconds > 1e-12 and owed:
            entry = owed[0]
            take = min(entry[1], seconds)
            paid[entry[0]] += take
            entry[1] -= take
            seconds -= take
            if entry[1] <= 1e-12:
                owed.popleft()

    def _drop_last(self, seconds: float) -> None:
        while seconds > 1e-12 and self.owed:
            entry = self.owed[-1]
            take = min(entry[1], seconds)
            entry[1] -= take
            seconds -= take
            if entry[1] <= 1e-12:
                self.owed.pop()


@dataclass(frozen=True)
class ReliabilityRecord:
    """A run's failures and costs as it ended: ``report`` (summary figures), each job's :class:`Costs`, the
    rate at which one node fails (per second) and GPUs per node."""

    report: dict[str, Any]
    costs: dict[Job, Costs]
    node_rate: float
    gpus_per_node: int
    interval_of: Callable[[Job], float]  # a job's checkpoint interval (young-daly: for the nodes its GPUs fill)


class Reliability:
    """The run's failures by model, costs, spares and exclusion (module docstring); the simulation owns one in
    :func:`~simcluster.settings.reliability.reliability_mode` runs."""

    def __init__(self, sim: Simulation, config: SimConfig, model: FailureModel | None) -> None:
        self.sim, self.config, self.model = sim, config, model
        self.cost, self.restart = config.checkpoint_cost, config.restart_cost
        self.swap_s = config.spare_swap
        self.young_daly = config.checkpoint_interval == "young-daly"
        self.fixed_interval = 0.0 if self.young_daly else float(config.checkpoint_interval)
        gpus = config.gpus_per_node
        if model is not None:
            from simcluster.faults.spec import node_rate

            self.node_rate = node_rate(model, gpus)
        else:
            self.node_rate = 1.0 / config.node_mtbf if config.node_mtbf > 0 else 0.0
        self.source = (f"--faults {config.faults}" if config.faults else f"--node-mtbf {config.node_mtbf:g}"
                       if config.node_mtbf > 0 else f"the failure model {type(model).__name__}")
        self.costs: dict[Job, Costs] = {}
        self._intervals: dict[int, float] = {}  # nodes → Daly's interval
        self.slots: list[Node] = list(sim.cluster.nodes)
        n, k = len(self.slots), config.spare_nodes
        self.servers = n + k
        self.spares = k
        self.slot_of: list[int] = list(range(n)) + [-1] * k  # server → slot holding it (-1: spare, or out)
        self.holds: list[int] = list(range(n))  # slot → server
        self.pool: dict[int, None] = dict.fromkeys(range(n, n + k))  # spares ready, longest ready first
        self.broken: set[int] = set()  # servers under repair (a server's outages never overlap)
        self.waiting: dict[int, None] = {}  # slots down, first down first: each takes the first spare ready
        self.seating: dict[int, int] = {}  # slot → the spare being swapped into it (the slot is down meanwhile)
        self.rule = exclusion_rule(config.exclude_after) if config.exclude_after else None
        self.fault_times: dict[int, deque[float]] = {}
        self.excluded: dict[int, tuple[float, str]] = {}  # server → when, and where it was
        self.faults = self.swaps = self.spare_faults = 0
        self.down_slots: set[int] = set()  # slots the replay told the simulation are down (not a node only reclaimed)
        self.replacement = _replacement_of(sim, config)
        self.up_gpus: dict[str, int] = {}  # VC → GPUs of its slots up (what a run that may never end watches)
        for node in self.slots:
            self.up_gpus[node.vc.name] = self.up_gpus.get(node.vc.name, 0) + (node.gpu_count if node.up else 0)
        self.replay_start = sim.env.now  # when the model's faults begin (its horizon counts from here)
        self.chance = FinishChance(self)
        self._doubt: list[str | None] = []  # the fleet warning, once worked out

    # --- checkpoints ---------------------------------------------------------------------------------
    def costs_of(self, job: Job) -> Costs:
        found = self.costs.get(job)
        if found is None:
            found = self.costs[job] = Costs()
        return found

    def interval(self, job: Job) -> float:
        """``job``'s checkpoint interval now: the fixed one, or Daly's for the nodes it spans (0: none)."""
        if not self.young_daly:
            return self.fixed_interval
        nodes = len(job.allocation) or -(-job.gpu_num // self.config.gpus_per_node)
        found = self._intervals.get(nodes)
        if found is None:
            from simcluster.faults.ettr import daly_interval

            rate = self.node_rate * nodes
            found = self._intervals[nodes] = daly_interval(self.cost, rate) if rate > 0 else 0.0
        return found

    def next_boundary(self, job: Job) -> float | None:
        """The progress at which running ``job`` next starts a checkpoint (None: none before its end)."""
        tau = self.interval(job)
        costs = self.costs_of(job)
        costs.interval = tau
        if tau <= 0 or job.elastic is not None:
            return None
        progress = job.duration - job.work_left
        boundary = (math.floor((progress + _EPS) / tau) + 1) * tau
        if boundary >= job.duration - _EPS:
            return None
        costs.boundary = boundary
        return boundary

    def checkpoint_begins(self, job: Job, now: float) -> None:
        """``job`` reached its boundary (its progress set exactly there): it writes a checkpoint for δ seconds."""
        costs = self.costs_of(job)
        self._complete(job, costs, now)
        costs.sync(job)
        costs.pending = (costs.boundary, now + self.cost)
        costs.checkpoints += 1
        costs.owe(job, CHECKPOINT, self.cost)

    def _complete(self, job: Job, costs: Costs, now: float) -> None:
        if costs.pending is not None and now >= costs.pending[1] - 1e-9:
            job.progress_at_checkpoint = max(job.progress_at_checkpoint, costs.pending[0])
            costs.pending = None

    def grid(self, job: Job) -> float:
        """What ``lose_since_checkpoint`` a failure passes to :meth:`Job.stop`: the interval when checkpoints cost
        nothing (they lie on its grid), else 0 (they are tracked one by one)."""
        return 0.0 if self.cost else self.interval(job)

    # --- what a stop costs -----------------------------------------------------------------------------
    def before_failure(self, job: Job, now: float) -> None:
        costs = self.costs_of(job)
        self._complete(job, costs, now)
        costs.pending = None

    def after_failure(self, job: Job, pause: float = 0.0) -> None:
        """``job`` was stopped by a failure (its progress back at its checkpoint): the checkpoint and restart
        it had not finished are lost; it owes ``pause`` (a spare's swap) and the restart cost."""
        costs = self.costs_of(job)
        costs.sync(job)
        costs.cancel(job, (CHECKPOINT, RESTART))
        costs.owe(job, RESTART, pause + self.restart)
        costs.interruptions += 1

    def lose_in_place(self, job: Job, now: float) -> None:
        """A swapped job keeps its GPUs but goes back to its last checkpoint (its run segment closed)."""
        self.before_failure(job, now)
        tau = self.grid(job)
        periodic = (job.progress // tau) * tau if tau > 0 else 0.0
        kept = max(job.progress_at_checkpoint, periodic)
        if kept < job.progress:
            job.lost_work += job.progress - kept
            job.work_left = job.duration - kept
        job.progress_at_checkpoint = kept

    def preempted(self, job: Job) -> None:
        """A preemption checkpoints (its progress kept): a periodic checkpoint it was writing is not owed any
        more, the preemption's own is (δ, paid when it resumes)."""
        costs = self.costs_of(job)
        costs.pending = None
        costs.sync(job)
        costs.cancel(job, (CHECKPOINT,))
        costs.owe(job, CHECKPOINT, self.cost)

    def finished(self, job: Job) -> None:
        costs = self.costs.get(job)
        if costs is not None:
            costs.sync(job)

    # --- faults ----------------------------------------------------------------------------------------
    def outages(self) -> Iterator[Outage]:
        assert self.model is not None
        horizon = self.config.until if self.config.until > 0 else MAX_HORIZON_S
        return iter(self.model.outages(self.servers, self.config.gpus_per_node, horizon, self.config.seed))

    def replay(self, env: simpy.Environment, start: float) -> Generator[simpy.Event, Any, None]:
        """A SimPy process: the model's outages in time order, each server's fault and repair (repairs first
        among events of one instant).  Where a waiting job needs more servers than can be up, the outages ahead
        are read (:class:`Hopeless`): if they never leave enough up, the run stops at once."""
        self.replay_start = start
        hopeless = Hopeless(self, start) if self.config.until <= 0 else None  # (with --until no error comes)
        for replayed, (at, server, failed) in enumerate(replay_order(self.outages())):
            yield env.timeout(max(0.0, start + at - env.now))
            if failed:
                self.down(server)
            else:
                self.up(server)
            if hopeless is not None and hopeless.blocked():
                hopeless.check(replayed, env.now)
        if self.config.until <= 0 and env.now >= MAX_HORIZON_S / 2 and not self.sim.finished_every_job():
            self._starved(env.now)  # (a model whose faults end early, a log replayed once, proves nothing)

    def doubt_text(self) -> str:
        """The fleet warning of a replayed CSV log whose failing servers were taken for the fleet
        (:func:`~simcluster.faults.spec.fleet_doubt`), as a sentence to end an error with; empty where none.  A
        run that ends in an error writes no summary.json, where the warning is otherwise given."""
        if not self._doubt:
            from simcluster.faults.spec import LogReading, fleet_doubt

            self._doubt.append(fleet_doubt(self.model, LogReading.of(self.config), len(self.slots)))
        doubt = self._doubt[0]
        return f" Note: {doubt}" if doubt else ""

    def _starved(self, now: float) -> None:
        """The model's horizon passed with jobs unfinished: a job the faults stopped again and again never got
        through a run (named as such), or at no moment in a century of faults were enough servers up for the
        largest (a job on every server of a fleet, without spares).  Running on past the faults would report them
        finished a century late, as if that were a result."""
        from simcluster.engine.failures import NoProgressError

        waiting = [j for j in self.sim.unfinished() if j.state is not JobState.FINISHED]
        horizon = f"the fault model's horizon ({now / 86_400 / 365:,.0f} years) passed with {len(waiting):,} job(s) unfinished"
        stopped = [j for j in waiting if j in self.costs and self.costs[j].interruptions]
        if stopped:
            job = max(stopped, key=lambda j: (self.costs[j].interruptions, -j.index))
            tau = self.interval(job)
            finding = (f"no progress under faults: {horizon}; job {job.job_id} ({job.gpu_num:,} GPUs, "
                       f"{job.progress:,.0f} of {job.duration:,.0f} s done, "
                       f"{f'checkpoints every {tau:,.0f} s of work' if tau > 0 else 'no checkpoints'}) was stopped "
                       f"{self.costs[job].interruptions:,} times by faults under {self.source}: its runs seldom last "
                       f"long enough without a fault to keep progress.")
            advice = (" Shorten --checkpoint-interval, lower --restart-cost or --checkpoint-cost, give a lower fault "
                      "rate, or --until SECONDS.")
        else:
            largest = max(waiting, key=lambda j: (j.gpu_num, -j.index), default=None)
            which = (f"; the largest, job {largest.job_id} of {largest.gpu_num:,} GPUs, was submitted at "
                     f"t={largest.submit_time:,.0f} s" if largest is not None else "")
            finding = (f"no progress under faults: {horizon}{which}; at no moment were enough of the cluster's "
                       f"{len(self.slots):,} servers up at once for them.")
            advice = (" Give --spare-nodes K (a job on every server of a fleet needs spares: in the InfiniteHBD log "
                      "about 2.3 % of the servers are down at any moment), smaller jobs, or --until SECONDS.")
        raise NoProgressError(finding + advice + self.doubt_text(), finding=finding)

    def down(self, server: int) -> None:
        """``server`` failed: a spare ready takes its slot at once; else the slot is down until its server is
        repaired or a spare becomes ready, whichever comes first (:meth:`up`)."""
        if server in self.excluded:
            return
        now = self.sim.clock()
        self.faults += 1
        self.broken.add(server)
        out = self._counts_out(server, now)
        slot = self.slot_of[server]
        if out:
            self.excluded[server] = (now, self.slots[slot].name if slot >= 0 else f"spare server {server}")
        if slot < 0:  # a spare (ready, or swapped out and under repair)
            self.spare_faults += 1
            self.pool.pop(server, None)
            return
        node = self.slots[slot]
        jobs = list(node.jobs)
        if node.up and jobs and self.pool and all(job.elastic is None for job in jobs):
            self._fill(slot)  # the spare takes the slot at once: its jobs keep their GPUs and wait for the swap
            self.sim.swap_out(node, jobs, self.swap_s)
            return
        if slot not in self.down_slots:  # (a node down for a reclaim only: the fault is recorded now, not later)
            self._slot_down(slot)
        self.seating.pop(slot, None)  # (a spare that failed while swapped in: the swap is void)
        if self.pool:
            self._fill(slot)
        else:
            self.waiting[slot] = None

    def up(self, server: int) -> None:
        """``server`` is repaired: its slot comes back if it still holds it, else it is a spare, and the slot
        down longest takes it."""
        self.broken.discard(server)
        if server in self.excluded:
            return
        slot = self.slot_of[server]
        if slot >= 0:
            if slot not in self.seating:  # (a spare swapped in comes up when its swap is done)
                self._slot_up(slot)
        elif self.spares:
            self.pool[server] = None
            if self.waiting:
                self._fill(next(iter(self.waiting)))

    def _counts_out(self, server: int, now: float) -> bool:
        """Whether this fault is ``server``'s N-th within the window (it is then taken out for good)."""
        if self.rule is None:
            return False
        return nth_within(self.fault_times.setdefault(server, deque()), now, self.rule)

    def _fill(self, slot: int) -> None:
        """The spare ready longest takes ``slot``; the server it held, once repaired, is a spare.  A slot that is
        down comes up when the swap is done, if the spare is still sound (a running job's slot stays up: its jobs
        wait for the swap on their GPUs)."""
        spare = next(iter(self.pool))
        del self.pool[spare]
        self.waiting.pop(slot, None)
        held = self.holds[slot]
        if self.slot_of[held] == slot:
            self.slot_of[held] = -1
        self.slot_of[spare] = slot
        self.holds[slot] = spare
        self.swaps += 1
        if slot not in self.down_slots:
            return
        self.seating[slot] = spare

        def seated() -> None:
            if self.seating.get(slot) == spare:
                del self.seating[slot]
                if spare not in self.broken:
                    self._slot_up(slot)

        self.sim.call_after(self.swap_s, seated)

    def _slot_down(self, slot: int) -> None:
        """Tell the simulation ``slot``'s node failed, whether it is up or reclaimed (it then stays down for both)."""
        node = self.slots[slot]
        self.down_slots.add(slot)
        self.sim.node_down(node)
        self.up_gpus[node.vc.name] -= node.gpu_count

    def _slot_up(self, slot: int) -> None:
        """``slot``'s fault ended (repaired, or a spare seated): the simulation hears of it where it was told of
        the fault; the node is up again unless a reclaim still holds it."""
        self.waiting.pop(slot, None)
        if slot in self.down_slots:
            self.down_slots.discard(slot)
            node = self.slots[slot]
            self.up_gpus[node.vc.name] += node.gpu_count
            self.sim.node_up(node)

    def record(self) -> ReliabilityRecord:
        """What the run's metrics read once it ended."""
        return ReliabilityRecord(self.report(), self.costs, self.node_rate, self.config.gpus_per_node, self.interval)

    def report(self) -> dict[str, Any]:
        """The run's figures of its failures (for summary.json)."""
        found: dict[str, Any] = {"faults": self.faults, "node_rate_per_day": self.node_rate * 86_400.0}
        offset = getattr(self.model, "offset_s", None)  # a replayed log: where in it the run started (random: drawn)
        if offset is not None:
            found["faults_offset_s"] = offset
        if self.spares:
            found |= {"spare_nodes": self.spares, "spare_swaps": self.swaps, "spare_faults": self.spare_faults}
        if self.replacement is not None:
            found |= self.replacement.report()
        if self.rule is not None:
            found["excluded_servers"] = [{"server": server, "node": where, "at": at}
                                         for server, (at, where) in self.excluded.items()]
            found["excluded"] = len(self.excluded)
        return found


Event = tuple[float, int, bool]  # (at, server, failed): a fault, or its repair, seconds from the run's start


def replay_order(outages: Iterable[Outage]) -> Iterator[Event]:
    """Each outage as a fault at its start and a repair at its end, in the order a run replays them: by time,
    repairs first among the events of one instant, faults in the stream's order.

    >>> list(replay_order([Outage(0, 0.0, 5.0, "GPU"), Outage(1, 5.0, 6.0, "NIC")]))
    [(0.0, 0, True), (5.0, 0, False), (5.0, 1, True), (6.0, 1, False)]
    """
    stream = iter(outages)
    ups: list[tuple[float, int, int]] = []  # (up at, order, server)
    following = next(stream, None)
    order = 0
    while following is not None or ups:
        if ups and (following is None or ups[0][0] <= following.down_at):
            at, _, server = heapq.heappop(ups)
            yield at, server, False
        else:
            assert following is not None
            yield following.down_at, following.node, True
            heapq.heappush(ups, (following.up_at, order, following.node))
            order += 1
            following = next(stream, None)


def nth_within(times: deque[float], now: float, rule: tuple[int, float]) -> bool:
    """``--exclude-after``'s test: note a server's fault at ``now`` among its faults ``times`` and say whether it is
    its N-th within the window, ``rule`` being (N, window in seconds).

    >>> times: deque[float] = deque()
    >>> [nth_within(times, t, (2, 10.0)) for t in (0.0, 20.0, 25.0)]
    [False, False, True]
    """
    count, window = rule
    times.append(now)
    while times and times[0] < now - window:
        times.popleft()
    return len(times) >= count


class ReadAhead:
    """The run's faults and repairs read ahead of its replay: the most GPUs that can be up at once within one of
    ``vcs`` after each event.  It reads the model a second time (a model is seeded: the same outages again), in
    the replay's order (:func:`replay_order`, inlined: it reads a century of faults where a run is hopeless), and
    keeps only what bounds the slots up: the servers down or taken out for good (``--exclude-after``, whose test
    depends on fault times only).  A slot up holds a sound server, and a spare's swap only delays it: without
    spares a slot holds its own server, so a VC's GPUs up are at most those of its slots whose servers are sound;
    with spares any sound server may hold any slot, so a VC has at most as many slots up as servers are sound
    (its largest slots, at most all of them).

    The state after the last event never counts: where the faults run to the horizon (half a century or more)
    the replay raises the no-progress error at once after it, before any pass.  The states from the last fault
    on (only repairs follow: the *drain*) are kept apart, with their times, since a job that starts there must
    also end before the last repair.  Reading stops at the first state before the drain that leaves ``need``
    GPUs up, so a run that waits for a repair reads no further than it; the drain (at most one repair per
    server) is read to its end.

    >>> from simcluster.cluster import Cluster
    >>> slots = list(Cluster({"a": 2}, 8).nodes)
    >>> outages = [Outage(0, 0.0, 50.0, "GPU"), Outage(1, 40.0, 90.0, "GPU")]
    >>> ahead = ReadAhead(iter(outages), slots, ["a"], spares=0, rule=None, start=0.0)
    >>> ahead.most_from(0, need=16), ahead.drain, ahead.ended_at  # 8 GPUs up before the last fault (at 40 s)
    (8, [(1, 40.0, 0), (2, 50.0, 8)], 90.0)
    """

    def __init__(self, outages: Iterator[Outage], slots: list[Node], vcs: list[str], spares: int,
                 rule: tuple[int, float] | None, start: float) -> None:
        self.stream, self.rule, self.vcs, self.spares = outages, rule, vcs, spares
        self.following = next(outages, None)
        self.ups: list[tuple[float, int, int]] = []  # (up at, order, server), as the replay keeps them
        self.order = 0
        self.clock = start  # as the replay's clock reads after each event (its own arithmetic: the same float)
        self.start = start
        self.index = -1  # the last event read
        self.gone = 0  # servers down or out for good
        self.excluded: set[int] = set()
        self.fault_times: dict[int, deque[float]] = {}
        self.peaks: deque[tuple[int, int]] = deque()  # (event, GPUs up) of the states read before the drain,
        # each more than any after it: the first from an event on is the most from there
        self.last_fault = -1 if self.following is None else None  # the event of the last fault, once read
        self.drain: list[tuple[int, float, int]] = []  # (event, time, GPUs up) of the states from it on
        self.ended_at: float | None = None  # the clock at the last event, once read
        place = {name: i for i, name in enumerate(vcs)}
        tables = [largest_first(slots, name) for name in vcs]
        # with spares: sound servers → the most GPUs up in one of vcs
        self.most = [max((table[min(x, len(table) - 1)] for table in tables), default=-1)
                     for x in range(len(slots) + spares + 1)]
        # without: each server stays in its slot, and a VC's sound GPUs are counted exactly
        self.where = [place.get(node.vc.name, -1) for node in slots]  # server → its VC's place in vcs
        self.gpus = [node.gpu_count for node in slots]
        self.sound = [table[-1] for table in tables]
        self.up = self.most[-1]  # the most GPUs up in one of vcs after the last event read

    def most_from(self, index: int, need: int) -> int:
        """The most GPUs that can be up at once within one of the VCs in the states before the drain from event
        ``index`` on (the replay's, just replayed), reading on until ``need`` can be or the faults end; -1 where
        none is left."""
        if self.index < index:
            self._read(index - self.index, need=None)
        peaks = self.peaks
        while peaks and peaks[0][0] < index:
            peaks.popleft()
        if not peaks or peaks[0][1] < need:
            self._read(-1, need)
        return peaks[0][1] if peaks else -1

    def drained(self, index: int, need: int) -> tuple[int, float | None]:
        """In the drain's states from event ``index`` on (once read to the end): the most GPUs up short of
        ``need``, and when ``need`` first are (None: never).

        >>> from simcluster.cluster import Cluster
        >>> ahead = ReadAhead(iter([Outage(0, 0.0, 50.0, "GPU"), Outage(1, 40.0, 90.0, "GPU")]),
        ...                   list(Cluster({"a": 2}, 8).nodes), ["a"], spares=0, rule=None, start=0.0)
        >>> _ = ahead.most_from(0, need=16)
        >>> ahead.drained(0, need=8), ahead.drained(0, need=16)
        ((0, 50.0), (8, None))
        """
        states = [(at, up) for event, at, up in self.drain if event >= index]
        return max((up for _, up in states if up < need), default=-1), next((at for at, up in states if up >= need),
                                                                             None)

    def _read(self, count: int, need: int | None) -> None:
        """Read ``count`` events (-1: any), or until a state before the drain leaves ``need`` GPUs up, or to the
        end.  One loop over locals: the hot path of a hopeless run."""
        stream, ups, peaks, excluded, rule = self.stream, self.ups, self.peaks, self.excluded, self.rule
        spares, most, where, gpus, sound = self.spares, self.most, self.where, self.gpus, self.sound
        following, order, clock, start = self.following, self.order, self.clock, self.start
        index, gone, up, servers = self.index, self.gone, self.up, len(self.most) - 1
        hit = False
        while count and not hit:
            if ups and (following is None or ups[0][0] <= following.down_at):
                at, _, server = heapq.heappop(ups)
                failed = False
            elif following is not None:
                at, server, failed = following.down_at, following.node, True
                heapq.heappush(ups, (following.up_at, order, server))
                order += 1
                following = next(stream, None)
                if following is None:
                    self.last_fault = index + 1
            else:
                self.ended_at = clock
                break
            if index >= 0:  # the state before counts now: it was not the last
                if self.last_fault is not None and index >= self.last_fault:
                    self.drain.append((index, clock, up))
                else:
                    while peaks and peaks[-1][1] <= up:
                        peaks.pop()
                    peaks.append((index, up))
                    hit = need is not None and up >= need
            delay = start + at - clock
            clock += max(0.0, delay)
            if server not in excluded:  # (an excluded server's faults are not replayed, and it stays out)
                gone += 1 if failed else -1
                if not spares and where[server] >= 0:
                    sound[where[server]] += -gpus[server] if failed else gpus[server]
                if failed and rule is not None and nth_within(self.fault_times.setdefault(server, deque()), clock,
                                                              rule):
                    excluded.add(server)
            index += 1
            up = most[servers - gone] if spares else max(sound)
            count -= 1
        self.following, self.order, self.clock, self.index, self.gone, self.up = following, order, clock, index, gone, up


def largest_first(slots: list[Node], vc: str) -> list[int]:
    """The GPUs of ``vc``'s k largest slots, k = 0 … its slots.

    >>> from simcluster.cluster import Cluster
    >>> largest_first(Cluster({"a": 3}, 8).nodes, "a")
    [0, 8, 16, 24]
    """
    return list(accumulate(sorted((node.gpu_count for node in slots if node.vc.name == vc), reverse=True),
                           initial=0))


def job_need(job: Job) -> int:
    """The fewest GPUs ``job`` can start on: an elastic job's one, a job of GPU fractions as many whole GPUs as
    its fractions fill, else its GPUs.

    >>> job_need(Job(index=0, job_id="j", vc="a", gpu_num=16, submit_time=0, duration=10))
    16
    """
    if job.elastic is not None:
        return 1
    if job.gpu_milli < 1000:
        return max(1, -(-job.gpu_num * job.gpu_milli // 1000))
    return job.gpu_num


class Hopeless:
    """Stops a run that can only end in the no-progress error at the faults' horizon, as soon as that is certain:
    the unfinished job that needs the most GPUs, waiting (submitted before now: a pass has seen it), can never
    have them up at once within one VC under the model, read ahead to its end (:class:`ReadAhead`), before the
    faults end, nor for as long as its work left (at most 1× speed: alone on its fastest GPU type) while the last
    of them are repaired.  Without it such a run replays a century of faults, one scheduler pass per repair.

    The caller asks :meth:`blocked` after each replayed event (no VC able to hold that job has its GPUs up now)
    and :meth:`check` only then, so a run whose jobs fit never reads ahead.  A job that needs fewer GPUs can
    never start only where this one cannot either, so this one is the only one to check.  Any VC counts whose
    slots hold the job's :func:`job_need` (a policy may move a job to another VC: fifo-backfill lends them,
    lucid profiles in a partition).  Not made with ``--until``, where no such error comes.  A plug-in policy
    that would turn the job away later (``decline``) is not waited for.
    """

    def __init__(self, reliability: Reliability, start: float) -> None:
        self.reliability, self.start = reliability, start
        self.sizes: dict[str, int] = {}  # VC → its GPUs
        for node in reliability.slots:
            self.sizes[node.vc.name] = self.sizes.get(node.vc.name, 0) + node.gpu_count
        self.jobs: list[Job] | None = None  # by need, the most first (sorted at the first check)
        self.next = 0  # the first of them not finished
        self.need = 0  # that job's GPUs (a bound until sorted), and the VCs that can hold them
        self.vcs: list[str] = []
        self._needs(max((job.gpu_num for job in reliability.sim.jobs), default=0))
        self.ahead: ReadAhead | None = None
        self._fewest: dict[tuple[int, tuple[str, ...]], int] = {}

    def _needs(self, gpus: int) -> None:
        self.need = gpus
        self.vcs = [name for name, size in self.sizes.items() if size >= gpus]

    def blocked(self) -> bool:
        """Whether no VC that can hold that job has as many GPUs up now (then it cannot start now)."""
        up, need = self.reliability.up_gpus, self.need
        for name in self.vcs:
            if up[name] >= need:
                return False
        return need > 0

    def check(self, index: int, now: float) -> None:
        """After the replay's event ``index``, at ``now``: raise :class:`NoProgressError` where it is certain, or
        where the job could start but practically never finish (:class:`FinishChance`; abandoned instead under
        ``--on-no-progress abandon``)."""
        job = self._candidate()
        if job is None or job.state is JobState.RUNNING or job.submit_time >= now or not self.blocked():
            return  # (a job not yet seen by a pass may yet be turned away: ElasticFlow's admission)
        if self._never_finishes(job, now):
            return
        ahead = self._ahead()
        most = ahead.most_from(index, self.need)
        ended = ahead.ended_at
        if ended is None or most >= self.need:
            return  # enough GPUs can be up before the faults end
        if ended < MAX_HORIZON_S / 2:
            self._needs(0)  # the faults end early and every sound server comes back: never certain, never again
            self.next = len(self.jobs or ())
            return
        drained, late = ahead.drained(index, self.need)
        if late is not None and (job.elastic is not None or ended - late >= job.work_left):
            return  # (it may start as the last faults are repaired, and end before the last repair)
        if max(most, drained) >= 0:  # (else this is the last event: the replay says so next)
            raise self._error(job, max(most, drained), now, late)

    def _never_finishes(self, job: Job, now: float) -> bool:
        """Whether waiting ``job`` was given up on (abandoned) as one that can practically never finish, on the
        fewest servers that hold it (raises under ``--on-no-progress stop``)."""
        reliability = self.reliability
        if not reliability.chance.on:
            return False
        chance = reliability.chance.judge(job, self._servers(job_need(job)), now)
        if chance is None:
            return False
        if reliability.config.on_no_progress != "abandon":
            raise reliability.chance.error(chance, now)
        from simcluster.engine.causes import Abandoned

        reliability.sim.interrupt(job, Abandoned(), reliability.sim.cluster.vcs[job.queue_vc])
        return True

    def _ahead(self) -> ReadAhead:
        """The read-ahead for the VCs that can hold the job checked (read again from the start where they
        changed: a smaller job has more of them, at most once per VC)."""
        if self.ahead is None or self.ahead.vcs != self.vcs:
            reliability = self.reliability
            self.ahead = ReadAhead(reliability.outages(), reliability.slots, self.vcs,
                                   reliability.spares, reliability.rule, self.start)
        return self.ahead

    def _candidate(self) -> Job | None:
        """The unfinished job that needs the most GPUs (its need and VCs set); None where all ended."""
        sim = self.reliability.sim
        if self.jobs is None:
            self.jobs = sorted(sim.jobs, key=lambda job: (-job_need(job), job.index))
        jobs = self.jobs
        while self.next < len(jobs):
            job = jobs[self.next]
            if job.state is not JobState.FINISHED and job not in sim.abandoned and job not in sim.declined:
                if job_need(job) != self.need:
                    self._needs(job_need(job))
                return job
            self.next += 1
        self._needs(0)
        return None

    def _error(self, job: Job, most: int, now: float, late: float | None) -> Exception:
        """Why it is certain, in words: the job, what it needs, the most that can be up (``late``: when enough
        are, once the faults ended)."""
        from simcluster.engine.failures import NoProgressError

        reliability, ahead = self.reliability, self.ahead
        assert ahead is not None and ahead.ended_at is not None
        where = (f"its VC {self.vcs[0]!r}" if len(self.vcs) == 1 else
                 f"any of the {len(self.vcs):,} VCs large enough" if self.vcs else "any VC")
        sizes = {node.gpu_count for node in reliability.slots if node.vc.name in self.vcs}
        servers = f" ({_servers_text(most // sizes.pop())})" if len(sizes) == 1 else ""
        spares = f", its {_servers_text(reliability.spares, 'spare')} counted," if reliability.spares else ""
        out = (f"; --exclude-after takes {len(ahead.excluded):,} server(s) out for good" if ahead.excluded else "")
        drain = ("" if late is None else
                 f" until the last faults are repaired, from t={late:,.0f} s: {ahead.ended_at - late:,.0f} s before the "
                 f"last repair, less than its {job.work_left:,.0f} s of work left")
        finding = (
            f"no progress under faults: job {job.job_id} ({job.gpu_num:,} GPUs, on at least "
            f"{_servers_text(self._servers(job_need(job)))}), submitted at t={job.submit_time:,.0f} s, can never "
            f"{'start' if late is None else 'finish'}: the fault model's outages, read ahead to its horizon ({MAX_HORIZON_S / 86_400 / 365:,.0f} "
            f"years), leave at most {most:,} GPUs{servers} up at once in {where}{spares} from t={now:,.0f} s "
            f"on{drain}{out}, so the run could only end there with this error; it stops now.")
        advice = (" Give --spare-nodes K (a job on every server of a fleet needs spares: in the InfiniteHBD log about "
                  "2.3 % of the servers are down at any moment), smaller jobs, or --until SECONDS.")
        return NoProgressError(finding + advice + reliability.doubt_text(), finding=finding)

    def _servers(self, gpus: int) -> int:
        """The fewest slots of one VC whose GPUs hold ``gpus`` (of the cluster's largest where no VC's do); worked
        out once per need (asked after every event while the job waits)."""
        key = (gpus, tuple(self.vcs))
        found = self._fewest.get(key)
        if found is None:
            slots = self.reliability.slots
            fewest = [bisect_left(largest_first(slots, name), gpus) for name in self.vcs]
            found = self._fewest[key] = min(fewest, default=-(-gpus // max(node.gpu_count for node in slots)))
        return found


def _servers_text(count: int, kind: str = "") -> str:
    """``3 servers``, ``1 spare server``."""
    return f"{count:,} {kind + ' ' if kind else ''}server{'' if count == 1 else 's'}"


def _replacement_of(sim: Simulation, config: SimConfig) -> DomainReplacement | None:
    """The run's replacement of failed nodes from their jobs' domains: where ``--replace-failed-nodes`` is on, the
    cluster has a topology and Kueue's placements place the jobs (its TAS workloads; Slurm has no such
    replacement); else None."""
    placement, resolved = sim.resolved.placement.cls, sim.resolved
    if not (config.replace_failed_nodes and resolved.cluster.topology is not None
            and getattr(placement, "replaces_failed_nodes", False) and sim.policy.own_placement is None):
        return None
    from simcluster.engine.failures import DomainReplacement

    return DomainReplacement(getattr(placement, "algorithm", "best-fit"))


NEVER_FINISHES = 1e-9  # a job whose chance to finish before the faults end is at most this is given up on at once


def longest_stretch(progress: float, duration: float, interval: float, cost: float) -> float:
    """The longest stretch a job at ``progress`` of ``duration`` seconds of work must still run without a fault:
    from a checkpoint it keeps to its next one (``interval`` seconds of work apart, each written in ``cost``
    seconds, never at its end), or to its end; ``interval`` 0: none, the whole work left in one go.

    >>> longest_stretch(0, 86_400, 0, 60)  # no checkpoints: a day in one go
    86400
    >>> longest_stretch(0, 7_200, 1_800, 60)  # four half hours, the first three each with its checkpoint
    1860
    >>> longest_stretch(1_000, 2_000, 1_800, 60)  # off its grid (a preemption kept 1,000 s): 800 s + δ, then 200 s
    860
    """
    left = duration - progress
    if interval <= 0:
        return left
    boundary = (math.floor((progress + _EPS) / interval) + 1) * interval
    if boundary >= duration - _EPS:
        return left
    after = interval + cost if boundary + interval < duration - _EPS else duration - boundary
    return max(boundary - progress + cost, after)


def finish_chance(rate: float, exposed: float, horizon_left: float) -> float:
    """At most the chance that a job whose every run must last ``exposed`` seconds without a fault, on nodes that
    fail at ``rate`` per second together, finishes within ``horizon_left`` seconds.

    A run survives with probability p = exp(−rate·exposed) whatever came before (the faults are a Poisson
    process: memoryless).  A run begins at the job's start and after each fault that stops it, so the runs begun
    within the horizon are at most 1 + its nodes' faults there, rate·H + 1 on average; by Wald's identity the runs
    that survive are (rate·H + 1)·p at most on average, and the chance that one does is no more than that.

    >>> f"{finish_chance(1 / 3600, 86_400, 100 * 365 * 86_400):.2g}"  # 1 node, MTBF 1 h, a day without checkpoints
    '3.3e-05'
    >>> f"{finish_chance(2 / 3600, 86_400, 100 * 365 * 86_400):.2g}"  # 2 nodes
    '2.5e-15'
    """
    if rate <= 0:
        return 1.0
    survives = math.exp(-rate * exposed)
    return min(1.0, (rate * max(0.0, horizon_left) + 1.0) * survives)


@dataclass(frozen=True)
class Chance:
    """Why a job can practically never finish: the seconds each of its runs must last without a fault (restart,
    work, checkpoint), its nodes' fault rate, the chance that one run survives and that it ever finishes."""

    job: Job
    nodes: int
    restart: float
    work: float
    checkpoint: float
    rate: float  # faults per second of its nodes together
    survives: float
    finishes: float
    horizon_left: float

    @property
    def exposed(self) -> float:
        return self.restart + self.work + self.checkpoint


class FinishChance:
    """Gives up on a job that can practically never finish under a rate model of faults (:func:`finish_chance` at
    most :data:`NEVER_FINISHES` before the faults' horizon): a day-long job without checkpoints on nodes that fail
    hourly restarts for a century of simulated faults, one scheduler pass per fault, and then ends in the
    no-progress error anyway.  Judged at each fault that stops a job (the no-progress guard asks, whatever
    ``--restart-limit``) and for a waiting job that cannot start (:class:`Hopeless`).

    Sound only where a job keeps progress at its checkpoints alone and runs begin only at faults, so it applies
    only where: the faults are a Poisson process (a rate model of Weibull shape 1: a replayed log or a Weibull
    model is not memoryless, and is left to the guard and the read-ahead); the run has no ``--until`` (where an
    unfinished job is a result, not an error); the policy is built in and never stops a running job to keep its
    progress (not ``preemptive``, not elastic, not Gavel's rounds); the job is fixed-size, waits in its own VC
    (lucid's profiler moves a job on with its progress) and is not one a tier may evict (each eviction begins a
    run too).
    """

    def __init__(self, reliability: Reliability) -> None:
        self.reliability = reliability
        self._on: bool | None = None  # (worked out at the first question: the run's policy is made by then)
        config = reliability.config
        # (spot nodes' reclaims only add interruptions: a bound counting faults alone stays an upper bound)
        self.evicts_any = config.evict == "lower-priority"
        self.evicts_preemptible = config.evict == "preemptible"

    @property
    def on(self) -> bool:
        """Whether the rule applies in this run (the class docstring says where)."""
        if self._on is None:
            rel = self.reliability
            self._on = _memoryless(rel.model) and rel.config.until <= 0 and _keeps_only_checkpoints(rel.sim)
        return self._on

    def judge(self, job: Job, nodes: int, now: float) -> Chance | None:
        """``job``'s :class:`Chance` where it can practically never finish from ``now`` on ``nodes`` nodes (the
        fewest it can run on, for a job that waits); None where it may."""
        if not self.on or job.elastic is not None or job.queue_vc != job.vc or nodes <= 0 or self._evictable(job):
            return None
        rel = self.reliability
        interval = rel.interval(job)
        work = longest_stretch(job.progress, job.duration, interval, 0.0)
        stretch = longest_stretch(job.progress, job.duration, interval, rel.cost)
        restart = rel.restart if rel.costs_of(job).interruptions else 0.0  # (its first run owes none)
        rate = rel.node_rate * nodes
        left = rel.replay_start + MAX_HORIZON_S - now
        finishes = finish_chance(rate, restart + stretch, left)
        if finishes > NEVER_FINISHES:
            return None
        return Chance(job, nodes, restart, work, stretch - work, rate, math.exp(-rate * (restart + stretch)),
                      finishes, left)

    def _evictable(self, job: Job) -> bool:
        return self.evicts_any or (self.evicts_preemptible and job.preemptible)

    def error(self, chance: Chance, now: float) -> Exception:
        """The no-progress error, in words: the job, the seconds it must survive, the chances, what helps."""
        from simcluster.engine.failures import NoProgressError

        rel, job = self.reliability, chance.job
        parts = [f"{chance.restart:,.0f} s restart" if chance.restart else "",
                 f"{chance.work:,.0f} s of work", f"{chance.checkpoint:,.0f} s checkpoint" if chance.checkpoint else ""]
        what = ", ".join(part for part in parts if part)
        checkpoints = (f"its checkpoints every {rel.interval(job):,.0f} s of work" if rel.interval(job) > 0 else
                       "no checkpoints")
        finding = (
            f"no progress under faults: job {job.job_id} ({job.gpu_num:,} GPU(s) on {chance.nodes:,} node(s), "
            f"{job.progress:,.0f} of {job.duration:,.0f} s done, {checkpoints}) can practically never finish "
            f"(t={now:,.0f} s): each of its runs must last {chance.exposed:,.0f} s without a fault ({what}); under "
            f"{rel.source} its {chance.nodes:,} node(s) fail {chance.rate * 86_400:.3g} times a day, so a run survives "
            f"with probability exp(-{chance.rate * chance.exposed:.4g}) = {chance.survives:.2g}, and within the "
            f"{chance.horizon_left / 86_400 / 365:,.0f} years of faults left (at most {chance.rate * chance.horizon_left + 1:,.3g} "
            f"runs on average) it finishes with probability at most {chance.finishes:.2g}, below {NEVER_FINISHES:g}: "
            f"the run could only end in this error when the faults end, so it stops now.")
        rate = "a lower fault rate in --faults" if rel.config.faults else "a higher --node-mtbf"
        advice = (f" Shorten --checkpoint-interval (young-daly: Daly's interval for its nodes), lower --restart-cost "
                  f"or --checkpoint-cost, give {rate}, --on-no-progress abandon (such jobs are reported unfinished) "
                  f"or --until SECONDS.")
        return NoProgressError(finding + advice + rel.doubt_text(), finding=finding)


def _memoryless(model: FailureModel | None) -> bool:
    """Whether ``model``'s faults are a Poisson process: a rate model of Weibull shape 1."""
    from simcluster.faults.models import RateModel

    return isinstance(model, RateModel) and model.shape == 1.0 and model.node_rate() > 0


def _keeps_only_checkpoints(sim: Simulation) -> bool:
    """Whether the run's policy never stops a running job but to lose its work (a fault, an eviction): a built-in
    policy that is not preemptive, not elastic and not one of Gavel's rounds (which preempt at no cost without
    declaring it).  A plug-in may do anything."""
    from simcluster.policies.gavel.rounds import RoundPolicy

    policy, resolved = sim.policy, sim.resolved.policy
    return (resolved.builtin and type(policy) is resolved.cls and not policy.preemptive and not policy.elastic
            and not isinstance(policy, RoundPolicy))
