"""Failures from a fault model, what they cost a job, hot spares and excluded servers: the engine's side.

On when a run is given any of ``--faults``, ``--checkpoint-cost``, ``--restart-cost``, ``--checkpoint-interval
young-daly``, ``--spare-nodes`` or ``--exclude-after``, or ``--node-mtbf`` on a cluster with a topology
(:func:`~simcluster.settings.reliability.reliability_mode`); a run without them takes none of these paths, and
its results are those of before.

**Faults.** One SimPy process per run (:meth:`Reliability.replay`) walks the model's cluster-wide stream of
outages in time order (:meth:`~simcluster.faults.FailureModel.outages`) and calls ``down`` and ``up`` for the
server concerned: nodes that never fail cost nothing.  The model's nodes are *servers*: the cluster's nodes
(*slots*) hold servers 0 … N−1 at the start, the K spares are servers N … N+K−1.  A fault stops every job on
the slot that holds the server; a job on several nodes stops whole.

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
from collections import deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
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
            job.overhead_left += seconds
            job.overhead_total += seconds
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
        self.down_slots = 0
        self.replacement = _replacement_of(sim, config)

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
        among events of one instant)."""
        stream = self.outages()
        ups: list[tuple[float, int, int]] = []  # (up at, order, server)
        following = next(stream, None)
        order = 0
        while following is not None or ups:
            if ups and (following is None or ups[0][0] <= following.down_at):
                at, _, server = heapq.heappop(ups)
                yield env.timeout(max(0.0, start + at - env.now))
                self.up(server)
            else:
                assert following is not None
                yield env.timeout(max(0.0, start + following.down_at - env.now))
                self.down(following.node)
                heapq.heappush(ups, (following.up_at, order, following.node))
                order += 1
                following = next(stream, None)
        if self.config.until <= 0 and env.now >= MAX_HORIZON_S / 2 and not self.sim.finished_every_job():
            self._starved(env.now)  # (a model whose faults end early, a log replayed once, proves nothing)

    def _starved(self, now: float) -> None:
        """The model's horizon passed with jobs still waiting: at no moment in a century of faults were enough
        servers up for them (a job on every server of a fleet, without spares).  Running on past the faults
        would report them finished a century late, as if that were a result."""
        from simcluster.engine.failures import NoProgressError

        waiting = [j for j in self.sim.unfinished() if j.state is not JobState.FINISHED]
        largest = max(waiting, key=lambda j: (j.gpu_num, -j.index), default=None)
        which = (f"; the largest, job {largest.job_id} of {largest.gpu_num:,} GPUs, was submitted at "
                 f"t={largest.submit_time:,.0f} s" if largest is not None else "")
        raise NoProgressError(
            f"no progress under faults: the fault model's horizon ({now / 86_400 / 365:,.0f} years) passed with "
            f"{len(waiting):,} job(s) unfinished{which}; at no moment were enough of the cluster's "
            f"{len(self.slots):,} servers up at once for them. Give --spare-nodes K (a job on every server of a "
            f"fleet needs spares: in the InfiniteHBD log about 2.3 % of the servers are down at any moment), "
            f"smaller jobs, or --until SECONDS.")

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
        if node.up:
            self.sim._node_down(node)
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
        count, window = self.rule
        times = self.fault_times.setdefault(server, deque())
        times.append(now)
        while times and times[0] < now - window:
            times.popleft()
        return len(times) >= count

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
        if self.slots[slot].up:
            return
        self.seating[slot] = spare

        def seated() -> None:
            if self.seating.get(slot) == spare:
                del self.seating[slot]
                if spare not in self.broken:
                    self._slot_up(slot)

        self.sim.call_after(self.swap_s, seated)

    def _slot_up(self, slot: int) -> None:
        self.waiting.pop(slot, None)
        if not self.slots[slot].up:
            self.sim._node_up(self.slots[slot])

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
