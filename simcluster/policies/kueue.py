"""``kueue``: Kueue's admission decisions over an operator's ClusterQueues, cohorts and priority classes (``--kueue``).

Kueue admits a workload when its ClusterQueue has GPU quota for it on one of its flavors — its own nominal quota,
or quota borrowed from its cohort within the limits the queues set — and otherwise may preempt admitted workloads
by the queue's rules: lower priorities in the queue (``withinClusterQueue``), workloads of other queues of the
cohort that borrow (``reclaimWithinCohort``), or, under fair sharing, the queues whose dominant resource share is
above the admitting one's.  The arithmetic is :mod:`simcluster.tiers.quota_tree`'s; this policy is the scheduler
around it, one pass at a time:

* each ClusterQueue orders its waiting jobs by priority (higher first), then by the time they were queued (a
  preempted job is queued again when evicted, as Kueue's default ``requeuingTimestamp: Eviction``), then trace
  order;
* a scheduling cycle takes each queue's head, sorts the heads as Kueue's scheduler does (classical: those that
  fit without borrowing first, then priority, then time; fair sharing: the lowest share after admission first),
  and admits each that fits, in order, after preempting its targets where it does not;
* a ``StrictFIFO`` queue whose head cannot be admitted admits nothing behind it; a ``BestEffortFIFO`` queue sets it
  aside until quota is freed in its cohort (Kueue's inadmissible workloads, requeued when the cohort changes) and
  tries the next;
* cycles repeat within the pass until one admits nothing.

Where the simulator differs from Kueue, on purpose (docs/tiers.md): quota reserved is GPUs placed at once (no
pods pending after admission: a job whose quota fits but whose nodes do not is set aside like one without quota);
an evicted job's GPUs are free at the instant of its eviction, so its preemptor starts in the same pass.  On a
cluster of several GPU types a flavor's jobs are placed on the nodes of the type its node labels name
(:mod:`simcluster.tiers.flavors`); a flavor without labels, and every flavor on a cluster of one type, is a quota
account over all the nodes.  A flavor with a ``topologyName`` is placed by TAS: as Kueue's flavor assigner, a job
asking for a topology (``job.topology``: a level or slices) takes only its queue's TAS flavors, and the run's
topology-aware placement honours its level; a job asking for none takes the others, or, in a queue of TAS flavors
only, those, unconstrained (:func:`~simcluster.tiers.flavors.flavor_choices`).  For a job that requires a level (or
slices) on a TAS flavor, victims are chosen by topology as Kueue's ``workloadFits`` does: candidates go, in Kueue's
order, until the quota fits *and* a domain would hold the job, and the fill-back keeps only those it cannot do without
(:func:`~simcluster.tiers.preemption.preemption_targets`' ``room``).

>>> Kueue.preemptive, Kueue.reads
(True, frozenset({'kueue'}))
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from simcluster.job import JobState
from simcluster.placement.room import fits_once_freed
from simcluster.placement.room_topology import fits_in_topology_once_freed, needs_topology_room
from simcluster.policies.base import POLICIES, Policy, SchedulingContext
from simcluster.settings.fields import ConfigError, setting
from simcluster.tiers.flavors import check_tas_run, flavor_choices, flavor_types, tas_flavors
from simcluster.tiers.loaded import fair_sharing_of, kueue_of
from simcluster.tiers.model import ClusterQueueSpec, FlavorQuota, KueueConfig
from simcluster.tiers.preemption import Room, preemption_targets
from simcluster.tiers.preemption_bound import PreemptionBound
from simcluster.tiers.quota_tree import QuotaTree, Workload
from simcluster.views import ClusterView, JobView, VCView

DEFAULT_FLAVOR = "default"  # the one flavor of the queues made of VCs (no --kueue)
Entry = tuple[int, float, int, JobView]  # a waiting job in its queue's heap: (−priority, queued at, trace row, job)


@dataclass(frozen=True)
class KueueSettings:
    cycle: str = setting(
        "one", "What one scheduling cycle admits. one: the first head in Kueue's order, then the heads are taken "
        "again (Kueue's cycles are far faster than jobs come and go: the jobs ending at one whole second of a "
        "trace, Kueue sees one by one). heads: every head that fits, in order, as Kueue does for the events it "
        "sees together.", choices=("one", "heads"))


@POLICIES.register("kueue")
class Kueue(Policy):
    """Kueue's ClusterQueues: admission by quota, borrowing in cohorts, preemption and fair sharing."""

    preemptive = True
    reads = frozenset({"kueue"})
    Settings = KueueSettings

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.given: KueueConfig | None = kueue_of(self.config.kueue) if self.config.kueue else None
        self._lines: dict[str, WaitingLine] = {}  # ClusterQueue → its waiting jobs
        self._entries: dict[int, Entry] = {}  # job index → its entry in its line while it waits
        self._admitted: dict[int, Workload] = {}  # job index → its workload while it holds quota
        self._holding: dict[int, JobView] = {}  # job index → the job, while it holds quota (a victim's by its key)
        self._placement_failed = False  # (the last _admit's quota fit, its placement did not)
        self._vc: Any = None  # the VC of the pass under way (schedule)
        self._retry: set[str] = set()  # queues whose jobs set aside are tried again at the next cycle
        self._admissions = 0  # (workloads made so far: the order of admissions at one instant)
        self._one_per_cycle = self.settings.cycle == "one"

    def attach(self, cluster: ClusterView) -> None:
        """The queues: ``--kueue``'s, all over the run's one pool; without it, one ClusterQueue per VC holding the
        VC's GPUs as its nominal quota, in no cohort (each VC's jobs by priority, best-effort FIFO)."""
        self.kueue = self.given if self.given is not None else KueueConfig(
            {name: ClusterQueueSpec(name, quotas=(FlavorQuota(DEFAULT_FLAVOR, vc.total_gpus),))
             for name, vc in cluster.vcs.items()})
        self.fair = fair_sharing_of(self.config.fair_sharing, self.kueue)
        self.tree = QuotaTree(self.kueue)
        self._bound = PreemptionBound(self.tree)
        self._stats = QueueStats(self.kueue)
        self._flavors = self._stats.flavors  # (each queue's flavors, in its order)
        types = tuple(dict.fromkeys(t for vc in cluster.vcs.values() for t in vc.gpu_types))
        self._flavor_type = flavor_types(self.kueue.flavors, types)  # (None: any node; else one type's nodes)
        self._tas = tas_flavors(self.kueue.flavors)  # (the flavors placed by TAS: a topologyName)
        if self._tas:
            check_tas_run(self.kueue.flavors, self.kueue.topologies, self.config.topology, *_placement_of(self.config))
        self._choices = flavor_choices(self._flavors, self._tas)  # (queue, asks for a topology) → its flavors
        self._strict_queues = {name for name, spec in self.kueue.cluster_queues.items()
                               if spec.queueing_strategy == "StrictFIFO"}
        self._vc_of: dict[str, str] = {}  # ClusterQueue → its VC (as jobs arrive: a queue's jobs are in one VC)
        self._open: dict[str, dict[str, None]] = defaultdict(dict)  # VC → its queues that may have a head

    def _queue_of(self, job: JobView) -> str:
        """The job's ClusterQueue: its LocalQueue's (--kueue), else its VC's."""
        return job.cluster_queue or job.queue_vc

    # --- the jobs' lives, as the engine tells them -----------------------------------------------------------

    def on_submit(self, job: JobView, now: float) -> str | None:
        queue = self._queue_of(job)
        if queue not in self.kueue.cluster_queues:
            raise ValueError(f"job {job.job_id} reaches ClusterQueue {queue!r}, which --kueue's files do not define")
        if self._tas and not self._choices[queue, self._asks_topology(job)]:
            raise ConfigError(self._no_tas_flavor(job, queue))
        if queue not in self._lines:
            self._lines[queue] = WaitingLine(self._entries)
            self._vc_of[queue] = job.queue_vc
        self._wait(job, now)
        return None

    def on_run_stop(self, job: JobView, vc: VCView) -> None:
        if job.allocation:  # (its speed changes; it keeps its GPUs and its quota)
            return
        workload = self._admitted.pop(job.index, None)
        self._holding.pop(job.index, None)
        if workload is not None:
            self._stats.changed(self.tree, workload.cluster_queue, self.now)
            self.tree.release(workload)
            self._bound.release(workload)
            self._freed(workload.cluster_queue)
        if job.state is JobState.PENDING:  # (evicted: preempted, or its node failed) queued again from now
            self._wait(job, self.now)

    def _asks_topology(self, job: JobView) -> bool:
        """Whether ``job`` asks for a topology (a level or slices: Kueue's TAS annotations), where some flavor is
        placed by TAS; its pods' size alone is no request."""
        request = job.topology
        return bool(self._tas) and request is not None and bool(request.mode or request.slice_size)

    def _no_tas_flavor(self, job: JobView, queue: str) -> str:
        request = job.topology
        asked = f"{request.mode}:{request.level}" if request.mode else f"slices of {request.slice_size} pods"
        given = " (--topology-request gives it to every job without one of its own)" \
            if self.config.topology_request else ""
        return (f"job {job.job_id} asks for a topology ({asked}){given} but ClusterQueue {queue!r} has no flavor with "
                f"a topologyName (its flavors: {', '.join(self._flavors[queue]) or 'none'}): Kueue admits such a job "
                "only on a TAS flavor, so it would wait forever; give topology requests only to the jobs of queues "
                "with a TAS flavor (the trace's topology_required or topology_preferred column), or a topologyName "
                f"to one of {queue}'s flavors")

    def _wait(self, job: JobView, now: float) -> None:
        entry = (-job.priority, now, job.index, job)
        self._entries[job.index] = entry
        queue = self._queue_of(job)
        self._lines[queue].push(entry, kind=self._asks_topology(job))
        self._open[self._vc_of[queue]][queue] = None

    def _freed(self, cluster_queue: str) -> None:
        """Quota came free in ``cluster_queue``'s cohort tree: the jobs set aside there are tried again at the next
        cycle (Kueue requeues its inadmissible workloads when the cohort changes), and GPUs came free, so jobs whose
        quota fitted but whose GPUs were not found may fit now."""
        for name in self._bound.tree_mates[cluster_queue]:
            line = self._lines.get(name)
            if line is not None and line.too_big:
                self._retry.add(name)
        for name, line in self._lines.items():
            if line.no_room:
                self._reopen(name, line)

    def _reopen(self, queue: str, line: WaitingLine) -> None:
        line.reopen()
        self._open[self._vc_of[queue]][queue] = None

    def _retried(self) -> None:
        """The lines to try again: each reopened where the smallest job it set aside could fit now, by quota or
        preemption (:class:`PreemptionBound`); where it could not, no job it set aside could, and trying them
        would set them aside again."""
        for name in self._retry:
            line = self._lines[name]
            if line.too_big and self._may_fit(name, line):
                self._reopen(name, line)
        self._retry.clear()

    def _may_fit(self, queue: str, line: WaitingLine) -> bool:
        """Whether the smallest job ``line`` set aside (of each kind: asking for a topology or not) could be
        admitted on one of the flavors its kind may take."""
        return any(self._bound.could_fit(Workload(None, queue, flavor, gpus, line.aside_priority), self.fair.enabled)
                   for kind, gpus in line.too_big.items() for flavor in self._choices[queue, kind])

    # --- a pass -------------------------------------------------------------------------------------------------

    def schedule(self, vc: VCView, ctx: SchedulingContext) -> None:
        blocked: set[str] = set()  # StrictFIFO queues whose head waits
        self._vc = vc  # (where this pass places: what _admit asks before it reserves quota or preempts)
        queues = self._open[vc.name]
        while self._cycle(queues, ctx, blocked):
            pass

    def _cycle(self, queues: dict[str, None], ctx: SchedulingContext, blocked: set[str]) -> bool:
        """One scheduling cycle: each queue's head, in Kueue's order, admitted where it can be; whether any was
        (or was set aside, giving its queue's next job a turn)."""
        if self._retry:
            self._retried()
        heads, lines, strict = [], self._lines, self._strict_queues
        for name in list(queues):
            if name in blocked:
                continue
            entry = lines[name].head(name in strict)
            if entry is None:
                del queues[name]  # (nothing to try there until a job joins it or it is reopened)
            else:
                heads.append(entry)
        if not heads:
            return False
        changed = False
        for entry in self._in_order(heads, ctx.now):
            job = entry[3]
            queue = self._queue_of(job)
            if self._admit(job, queue, ctx):
                del self._entries[job.index]
                self._lines[queue].taken()
                if self._one_per_cycle:
                    return True
                changed = True
            elif queue in self._strict_queues:
                blocked.add(queue)
            else:  # (every job of its queue at least as large waits too, until quota or GPUs come free)
                self._lines[queue].set_aside(job.gpu_num, job.priority, self._placement_failed,
                                             self._asks_topology(job))
                changed = True
        return changed

    def _in_order(self, heads: list[Entry], now: float) -> Iterator[Entry]:
        """The heads in the order Kueue's scheduler takes them.  Classical: those that fit without borrowing first,
        then priority, then queueing time.  Fair sharing: a tournament (:meth:`QuotaTree.fair_pick`), asked again
        after each head is taken, since admitting one changes the shares the next is picked by."""
        tree = self.tree
        if len(heads) == 1:
            yield heads[0]
            return
        if not self.fair.enabled:
            would_borrow, first_flavor = tree.would_borrow, self._first_flavor

            def classical(entry: Entry) -> Any:
                job = entry[3]
                return (would_borrow(job.cluster_queue or job.queue_vc, first_flavor(job), job.gpu_num),
                        -job.priority, job.pending_since, job.index)
            yield from sorted(heads, key=classical)
            return
        left = {entry[2]: entry for entry in heads}
        while left:
            picked = tree.fair_pick([self._workload(e[3], self._first_flavor(e[3]), now) for e in left.values()])
            yield left.pop(picked.key)

    def _first_flavor(self, job: JobView) -> str:
        """The flavor a head would be admitted on: the first of its queue's where it fits, else the first."""
        queue = self._queue_of(job)
        flavors = self._choices[queue, self._asks_topology(job)]
        if len(flavors) == 1:
            return flavors[0]  # (whether it fits or not: asking would cost a walk up the tree per head per cycle)
        return next((f for f in flavors if self.tree.fits(queue, f, job.gpu_num)), flavors[0] if flavors else "")

    def _workload(self, job: JobView, flavor: str, now: float) -> Workload:
        self._admissions += 1
        return Workload(job.index, self._queue_of(job), flavor, job.gpu_num, job.priority, now, self._admissions)

    def _admit(self, job: JobView, queue: str, ctx: SchedulingContext) -> bool:
        """Admit ``job`` of ClusterQueue ``queue`` on the first of the queue's flavors where its quota fits, else on
        the first where preempting makes it fit (Kueue's default flavor fungibility); whether it started."""
        flavors = self._choices[queue, self._asks_topology(job)]
        tree, now = self.tree, ctx.now
        self._placement_failed = False
        chosen = None
        for flavor in flavors:
            if tree.fits(queue, flavor, job.gpu_num):
                chosen = flavor
                break
        victims: list[Workload] = []
        if chosen is None:
            chosen, victims = self._preempting_flavor(job, flavors)
            if chosen is None:
                return False
        gpu_type = self._flavor_type.get(chosen)
        room = self._pool_of(chosen)
        if not self._room_once_freed(job, chosen, [self._holding[victim.key] for victim in victims], room):
            # the quota fits but the GPUs would not: no victim loses its work for nothing, and the job waits for
            # GPUs to come free (Kueue admits by quota; the pods of a workload that found no node would wait)
            self._stats.no_room += 1
            self._placement_failed = True
            return False
        for victim in victims:
            victim_job = self._holding[victim.key]
            self._stats.preempted(victim.cluster_queue, queue)
            ctx.preempt(victim_job)  # (its quota comes back through on_run_stop)
        workload = self._workload(job, chosen, now)
        self._stats.changed(tree, queue, now)
        tree.admit(workload)
        self._bound.admit(workload)
        self._admitted[job.index] = workload
        if ctx.try_start(job) if gpu_type is None else ctx.try_start(job, gpu_type):
            self._holding[job.index] = job
            return True
        self._admitted.pop(job.index)
        tree.release(workload)
        self._bound.release(workload)
        self._stats.no_room += 1
        self._placement_failed = True
        return False

    def _preempting_flavor(self, job: JobView, flavors: tuple[str, ...]) -> tuple[str | None, list[Workload]]:
        """The first of ``flavors`` where preempting admits ``job``, and its victims (Kueue's default flavor
        fungibility); (None, []) where none does.  On a TAS flavor a job that requires a level (or slices) takes
        victims until its quota fits *and* a domain would hold it (:meth:`_room_test`).  Where that search finds none
        but the quota's alone found some, the job waits for GPUs, as one whose victims' GPUs would not hold it."""
        tree, quota_victims = self.tree, False
        for flavor in flavors:
            incoming = self._workload(job, flavor, job.pending_since)
            if not self._bound.could_fit(incoming, self.fair.enabled):
                continue
            room = self._room_test(job, flavor)
            targets = tree.preemption_targets(incoming, self.fair) if room is None else preemption_targets(
                tree, incoming, self.fair, room)
            if targets:
                return flavor, targets
            # (the quota's search is remembered: asking it again costs a look-up)
            quota_victims |= room is not None and bool(tree.preemption_targets(incoming, self.fair))
        if quota_victims:  # (the quota would have victims, the topology no domain: more GPUs may give one)
            self._stats.no_room += 1
            self._placement_failed = True
        return None, []

    def _room_test(self, job: JobView, flavor: str) -> Room | None:
        """For a job on a TAS flavor that requires a level or slices, whether it finds a domain once the victims
        leave (what Kueue's ``workloadFits`` asks of the topology assignment); None for any other job (the quota
        alone, as before: its room is asked of the victims found, :meth:`_room_once_freed`)."""
        if flavor not in self._tas or not needs_topology_room(job.topology):
            return None
        pool, holding = self._pool_of(flavor), self._holding
        return lambda victims: fits_in_topology_once_freed(job, [holding[v.key] for v in victims], pool)

    def _pool_of(self, flavor: str) -> Any:
        """Where a flavor's jobs are placed in the pass's VC: its GPU type's nodes, or all of them."""
        gpu_type = self._flavor_type.get(flavor)
        return self._vc if gpu_type is None else self._vc.pools.get(gpu_type, self._vc)

    def _room_once_freed(self, job: JobView, flavor: str, leaving: list[JobView], room: Any) -> bool:
        """Whether ``job`` finds GPUs in ``room`` once ``leaving`` have left.  A job that requires a level (or slices)
        where its request is honoured (a TAS flavor; any flavor in a run without one) needs a domain there with room
        for its pods, as Kueue takes victims only where the topology assignment then succeeds, and as the placement
        will place it (a whole-node test would evict victims on two racks for a job that needs one, and two such jobs
        could evict each other's victims forever at one instant); any other job, whole-node room."""
        honoured = flavor in self._tas if self._tas else bool(room.topology_levels)
        if honoured and needs_topology_room(job.topology):
            return fits_in_topology_once_freed(job, leaving, room)
        return fits_once_freed(job, leaving, room)

    def report(self) -> dict[str, Any]:
        self._stats.close(self.tree, self.now)
        return {"kueue": {"fair_sharing": self.fair.enabled, "quota_fit_but_no_room": self._stats.no_room,
                          "cluster_queues": self._stats.figures()}}


def _placement_of(config: Any) -> tuple[str, bool]:
    """The run's placement, named, and whether it reads a topology (what a TAS flavor's jobs need)."""
    # (imported when needed: the resolver knows every policy)
    from simcluster.plugins import resolve_placement

    cls = resolve_placement(config.placement)
    return getattr(cls, "name", cls.__name__), bool(getattr(cls, "topology_aware", False))


class WaitingLine:
    """A ClusterQueue's waiting jobs, in queue order within each GPU count, and what BestEffortFIFO has set aside.

    Kueue sets an inadmissible head aside until its cohort changes and tries the next.  A job of the same queue as
    large or larger, of no higher priority, cannot be admitted either (a quota that lacks g GPUs lacks more; its
    preemption targets are no more), so the line keeps, instead of the jobs set aside, the smallest GPU count that
    failed since quota last came free (``too_big``): a head is the first job among the smaller counts, and a pass
    costs the GPU counts, not the waiting jobs.  Where some flavor is placed by TAS, the jobs that ask for a topology
    and the others may take different flavors of the queue: each kind keeps its own count.

    >>> from simcluster.job import Job
    >>> big, small = Job(0, "big", "vc0", 8, 0, 60), Job(1, "small", "vc0", 1, 1, 60)
    >>> line = WaitingLine({})
    >>> for entry in [(0, 0.0, 0, big), (0, 1.0, 1, small)]:
    ...     line.entries[entry[2]] = entry; line.push(entry)
    >>> line.head(strict=False)[3].job_id
    'big'
    >>> line.set_aside(8, 0, no_room=False); line.head(strict=False)[3].job_id, line.head(strict=True)[3].job_id
    ('small', 'big')
    >>> racked = Job(2, "racked", "vc0", 16, 0, 60)  # (asks for a topology: its own kind, not set aside)
    >>> line.entries[2] = (1, 0.0, 2, racked); line.push(line.entries[2], kind=True)
    >>> line.set_aside(1, 0, no_room=False); line.head(strict=False)[3].job_id
    'racked'
    """

    def __init__(self, entries: dict[int, Entry]) -> None:
        self.entries = entries  # (the policy's: an entry is live while it is its job's)
        self.by_size: dict[tuple[bool, int], list[Entry]] = {}  # (asks for a topology, GPUs) → its jobs
        self.too_big: dict[bool, int] = {}  # the smallest GPUs set aside, by kind (asks for a topology or not)
        self.aside_priority = -(2**31)  # (the highest priority of the jobs set aside)
        self.no_room = False  # (a head was set aside for want of GPUs, not quota: any release reopens it)
        self._heads: dict[bool, Entry | None] = {}  # (strict or not → the head, until the line changes)

    def push(self, entry: Entry, gpus: int | None = None, kind: bool = False) -> None:
        size = entry[3].gpu_num if gpus is None else gpus
        heapq.heappush(self.by_size.setdefault((kind, size), []), entry)
        self._heads.clear()

    def head(self, strict: bool) -> Entry | None:
        """The first waiting job (strict: whatever its size; else among the sizes not set aside)."""
        if strict in self._heads:
            cached = self._heads[strict]
            if cached is None or (self.entries.get(cached[2]) is cached and cached[3].state is JobState.PENDING):
                return cached
        best, too_big = None, self.too_big
        for key, heap in list(self.by_size.items()):
            if not strict and too_big and key[1] >= too_big.get(key[0], math.inf):
                continue
            while heap and (self.entries.get(heap[0][2]) is not heap[0] or heap[0][3].state is not JobState.PENDING):
                heapq.heappop(heap)  # (taken, queued again since, or gone: a stale entry)
            if not heap:
                del self.by_size[key]
            elif best is None or heap[0] < best:
                best = heap[0]
        self._heads[strict] = best
        return best

    def taken(self) -> None:
        """Its head was admitted."""
        self._heads.clear()

    def set_aside(self, gpus: int, priority: int, no_room: bool, kind: bool = False) -> None:
        """Its head of ``gpus`` was set aside; ``kind``: it asks for a topology (in a queue with TAS flavors, such
        jobs and the others take different flavors, so one kind's failure says nothing of the other's)."""
        self.too_big[kind] = min(self.too_big.get(kind, gpus), gpus)
        self.aside_priority = max(self.aside_priority, priority)
        self.no_room |= no_room
        self._heads.clear()

    def reopen(self) -> None:
        if self.too_big:
            self.too_big, self.aside_priority, self.no_room = {}, -(2**31), False
            self._heads.clear()


class QueueStats:
    """Each ClusterQueue's borrowed GPU-time (its usage above its nominal quota, integrated over time) and the
    preemptions it suffered and caused, kept as its usage changes (a change costs the queue it touches)."""

    def __init__(self, kueue: KueueConfig) -> None:
        self.kueue = kueue
        self.borrowed_gpu_seconds: dict[str, float] = dict.fromkeys(kueue.cluster_queues, 0.0)
        self.since: dict[str, float] = dict.fromkeys(kueue.cluster_queues, 0.0)
        self.flavors = {name: spec.flavors for name, spec in kueue.cluster_queues.items()}
        self.preempted_in: dict[str, int] = dict.fromkeys(kueue.cluster_queues, 0)
        self.preempted_by: dict[str, int] = dict.fromkeys(kueue.cluster_queues, 0)
        self.no_room = 0

    def changed(self, tree: QuotaTree, cluster_queue: str, now: float) -> None:
        """``cluster_queue``'s usage is about to change: what it borrowed since its last change is counted."""
        borrowed = sum(tree.borrowing(cluster_queue, f) for f in self.flavors[cluster_queue])
        self.borrowed_gpu_seconds[cluster_queue] += borrowed * (now - self.since[cluster_queue])
        self.since[cluster_queue] = now

    def preempted(self, victim_queue: str, by_queue: str) -> None:
        self.preempted_in[victim_queue] += 1
        self.preempted_by[by_queue] += 1

    def close(self, tree: QuotaTree, now: float) -> None:
        for name in self.kueue.cluster_queues:
            self.changed(tree, name, now)

    def figures(self) -> dict[str, dict[str, Any]]:
        return {name: {"borrowed_gpu_hours": round(self.borrowed_gpu_seconds[name] / 3600, 3),
                       "preempted": self.preempted_in[name], "preemptions_caused": self.preempted_by[name]}
                for name in self.kueue.cluster_queues}
