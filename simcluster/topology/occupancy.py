"""What a topology costs in queueing: GPUs stranded at each level, and jobs that fit the free GPUs but waited.

A job that needs more GPUs than a domain has free cannot lie within that domain.  At each level (the topology's
named levels, then ``node``) a free GPU is *stranded* while its domain (its VC's nodes of that domain) has fewer
free GPUs than the smallest job waiting in its VC: no waiting job could be placed inside that domain.  A VC with
no job waiting strands nothing.  The same smallest job counts at every level, whatever the jobs' requests: the
figure says what free capacity a job kept within one domain of that level could not use (a ``required:rack``
job's case exactly where it is the smallest waiting; a job without a request may still span domains).

A job *fit the free GPUs but waited* while its VC had at least its GPUs free and it was not running: the
queueing that the free GPUs alone do not explain.  It is an upper bound on the queueing caused by topology: a
policy that chose not to start a job that fits (a FIFO head blocking those behind it, a reservation) counts too;
the same run under ``consolidate`` without topology requests tells that share apart (docs/topology.md).

Both are kept up to date as jobs start and stop, never by a walk over the nodes or the jobs: each domain's free
GPUs per level and VC; per VC and level, sums of free GPUs by how many a domain has free (a Fenwick tree, or a
plain list for a few hundred positions: the GPUs in domains with fewer than *m* free is one prefix sum; a level
of a VC with a few dozen domains or fewer, zones or blocks, is read domain by domain instead); per VC the waiting
jobs' GPU counts (a counted heap: the smallest is at its top); and per VC a clock of how long it had at least *g*
GPUs free, for every *g* (a Fenwick tree), so that a job's time fitting while it waited is two reads of that
clock.  The nodes that jobs started or stopped on are read once per instant, at its sample (a node one job left
and another took has not changed): O(levels) per node changed, O(log GPUs) per job that starts or stops waiting,
and O(levels × log GPUs) per VC changed at each instant.  Everything is integrated over time exactly: each new
instant first adds the state held since the last one.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from simcluster.job import JobState
from simcluster.metrics.observer import Observer
from simcluster.topology.model import Topology

PENDING = JobState.PENDING

if TYPE_CHECKING:
    from simcluster.cluster import Node
    from simcluster.cluster_spec import ClusterSpec
    from simcluster.job import Job


class Sums:
    """Sums of amounts by position ``0..size-1`` (a Fenwick tree): one amount added, or the sum of all positions
    below one, each in O(log size).

    >>> sums = Sums(10)
    >>> sums.add(3, 5); sums.add(7, 2); sums.add(3, 1)
    >>> sums.below(3), sums.below(4), sums.below(100)
    (0, 6, 8)
    """

    __slots__ = ("tree",)

    def __init__(self, size: int) -> None:
        self.tree: list[float] = [0] * (size + 1)

    def add(self, position: int, amount: float) -> None:
        tree = self.tree
        i, n = position + 1, len(tree)
        while i < n:
            tree[i] += amount
            i += i & -i

    def below(self, position: int) -> float:
        """The sum of the amounts at positions below ``position``."""
        tree = self.tree
        i = min(position, len(tree) - 1)
        total: float = 0  # (an int while the amounts are: GPUs)
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total


class SmallSums:
    """:class:`Sums` over a few positions (a node's GPUs, a small rack's): a plain list, whose adds cost one step
    and whose sums below a position one C-level sum of at most ``size`` numbers, cheaper than a tree's steps.

    >>> sums = SmallSums(9)
    >>> sums.add(3, 6); sums.add(8, 8)
    >>> sums.below(4), sums.below(100)
    (6, 14)
    """

    __slots__ = ("amounts",)

    SIZE = 256  # the most positions kept in a plain list

    def __init__(self, size: int) -> None:
        self.amounts: list[float] = [0] * size

    def add(self, position: int, amount: float) -> None:
        self.amounts[position] += amount

    def below(self, position: int) -> float:
        return sum(self.amounts[:position])


FEW_DOMAINS = 32  # a level of a VC with at most so many domains is read domain by domain (zones, blocks)


def sums_of(size: int) -> Sums | SmallSums:
    """Sums by position over ``size`` positions, in a plain list where they are few, else a Fenwick tree.

    >>> type(sums_of(9)).__name__, type(sums_of(10_000)).__name__
    ('SmallSums', 'Sums')
    """
    return SmallSums(size) if size <= SmallSums.SIZE else Sums(size)


class VcState:
    """One VC's share of the topology: its domains' free GPUs per level and its waiting jobs' GPU counts."""

    __slots__ = ("by_free", "counts", "fit_clock", "fit_seconds", "fit_since", "free", "frees", "heap", "heaped",
                 "stranded", "total")

    def __init__(self, sizes: list[dict[int, int]], now: float = 0.0) -> None:
        self.total = sum(sizes[-1].values())  # (the node level: every node of the VC once)
        self.free = self.total
        self.frees = [dict(level) for level in sizes[:-1]]  # per named level: domain → free GPUs (all at first)
        # per level: free GPUs summed by how many their domain has free; None for a level of few domains, whose
        # free GPUs are read one by one when asked (cheaper than keeping sums up to date for them)
        self.by_free: list[Sums | SmallSums | None] = []
        for k, level in enumerate(sizes):
            if k < len(self.frees) and len(level) <= FEW_DOMAINS:
                self.by_free.append(None)
                continue
            sums = sums_of(max(level.values()) + 1)
            for gpus in level.values():
                sums.add(gpus, gpus)
            self.by_free.append(sums)
        self.counts: dict[int, int] = {}  # waiting jobs by GPUs
        self.heap: list[int] = []  # the GPU counts of `counts` (and some no longer there: dropped when on top)
        self.heaped: set[int] = set()  # those in the heap, each once
        self.stranded = [0.0] * len(sizes)  # per level, as of the last time it was worked out
        # fit_clock at position g: the seconds the VC had exactly g GPUs free; the seconds with at least g free
        # are the sum from g up
        self.fit_clock = Sums(self.total + 1)
        self.fit_since, self.fit_seconds = now, 0.0  # (fit_seconds: the clock's whole sum)

    def smallest_waiting(self) -> int | None:
        heap, counts = self.heap, self.counts
        while heap and heap[0] not in counts:
            self.heaped.discard(heapq.heappop(heap))
        return heap[0] if heap else None

    def add_waiting(self, gpus: int) -> None:
        self.counts[gpus] = self.counts.get(gpus, 0) + 1
        if gpus not in self.heaped:
            self.heaped.add(gpus)
            heapq.heappush(self.heap, gpus)

    def remove_waiting(self, gpus: int) -> None:
        if self.counts[gpus] == 1:
            del self.counts[gpus]  # (left in the heap until it comes to the top)
        else:
            self.counts[gpus] -= 1

    def seconds_fitting(self, gpus: int, now: float) -> float:
        """Seconds so far with at least ``gpus`` GPUs free (the clock read at ``now``)."""
        self.tick(now)
        return self.fit_seconds - self.fit_clock.below(gpus) if gpus <= self.total else 0.0

    def tick(self, now: float) -> None:
        """Add the time since the clock last ran at today's free GPUs (before they change).  While no job waits
        the clock stands still: a job reads it only from its entering the queue to its leaving."""
        if now > self.fit_since:
            if self.counts:
                self.fit_clock.add(self.free, now - self.fit_since)
                self.fit_seconds += now - self.fit_since
            self.fit_since = now

    def work_out_stranded(self) -> list[float]:
        """Per level, the free GPUs in domains with fewer free than the smallest waiting job (none: 0)."""
        smallest = self.smallest_waiting()
        if smallest is None:
            return [0.0] * len(self.by_free)
        return [float(sums.below(smallest)) if sums is not None else self._read_few(k, smallest)
                for k, sums in enumerate(self.by_free)]

    def _read_few(self, level: int, smallest: int) -> float:
        """A level of few domains, read domain by domain."""
        return float(sum(free for free in self.frees[level].values() if free < smallest))


class Place:
    """A node of the topology as the observer tracks it: its VC, GPUs, domains per level and free GPUs."""

    __slots__ = ("domains", "free", "gpus", "node", "vc")

    def __init__(self, vc: VcState, gpus: int, domains: tuple[int, ...]) -> None:
        self.vc, self.gpus, self.domains, self.free = vc, gpus, domains, gpus
        self.node: Node | None = None  # the engine's node, once a job ran on it


class TopologyOccupancy(Observer):
    """GPUs stranded per level and the queueing of jobs that fit the free GPUs, over a run (module docstring).

    ``nodes``: the topology's nodes by name, each with its VC and GPUs (:meth:`of` takes them from a cluster).
    Two racks of two 8-GPU nodes, an 8-GPU job in each rack and a 16-GPU job waiting: 16 GPUs free, all
    stranded at both levels, and the job fits them all the while it waits.

    >>> from simcluster.cluster import VirtualCluster
    >>> from simcluster.job import Job
    >>> vc = VirtualCluster("a", nodes=4, gpus_per_node=8)
    >>> racks = Topology.from_labels(("rack",), [n.name for n in vc.nodes], [["r0", "r0", "r1", "r1"]])
    >>> occupancy = TopologyOccupancy(racks, {n.name: ("a", n.gpu_count) for n in vc.nodes})
    >>> jobs = [Job(index=i, job_id=str(i), vc="a", gpu_num=gpus, submit_time=0, duration=9)
    ...         for i, gpus in enumerate([8, 8, 16])]
    >>> for job, node in zip(jobs, [vc.nodes[0], vc.nodes[2]]):
    ...     job.allocation = ((node, node.allocate(job, 8)),)
    ...     job.start(0.0)
    ...     occupancy.on_start(job, 0.0)
    >>> occupancy.on_submit(jobs[2], 0.0)
    >>> occupancy.on_sample(100.0, 16, 0, 2, 1)
    >>> occupancy.figures(100.0)  # doctest: +NORMALIZE_WHITESPACE
    {'stranded_gpus': {'rack': 16.0, 'node': 16.0}, 'stranded_share': {'rack': 1.0, 'node': 1.0},
     'fit_but_waited': {'job_seconds': 100.0, 'share_of_queueing': 1.0, 'jobs': 1}}
    """

    def __init__(self, topology: Topology, nodes: Mapping[str, tuple[str, int]]) -> None:
        self.levels = topology.all_levels
        named = len(topology.levels)
        columns = [level.tolist() for level in topology.membership]
        sizes: dict[str, list[dict[int, int]]] = {}  # per VC, per level: domain → GPUs
        where: dict[str, tuple[str, int, tuple[int, ...]]] = {}
        for name, (vc, gpus) in nodes.items():
            i = topology.node_index(name)
            domains = (*(column[i] for column in columns), i)  # (the node level: each node its own domain)
            levels = sizes.setdefault(vc, [{} for _ in range(named + 1)])
            for k, domain in enumerate(domains):
                levels[k][domain] = levels[k].get(domain, 0) + gpus
            where[name] = (vc, gpus, domains)
        self.vcs = {vc: VcState(levels) for vc, levels in sizes.items()}
        self.places = {name: Place(self.vcs[vc], gpus, domains) for name, (vc, gpus, domains) in where.items()}
        self.free = sum(vc.total for vc in self.vcs.values())
        self.stranded = [0.0] * len(self.levels)  # summed over the VCs
        self.stranded_seconds = [0.0] * len(self.levels)
        self.free_seconds = self.waiting_seconds = 0.0
        self.fit_seconds: dict[Job, float] = {}  # of each job that fit the free GPUs while it waited
        self._waiting: dict[Job, tuple[VcState | None, int, float]] = {}  # its VC, GPUs and fitting clock then
        self._held: dict[Job, tuple[Node, ...]] = {}  # the nodes of each running job
        self._changed: dict[VcState, None] = {}  # VCs whose stranded GPUs are to be worked out again
        self._partitions: dict[str, Any] = {}  # a policy's own partitions (not in the topology), by name
        self._lost = 0  # waiting jobs gone from a queue that the last look could not find (their queue unseen)
        # the nodes jobs started or stopped on at this instant, read at its end (its sample)
        self._touched: set[Node] = set()
        self._start: float | None = None
        self._clock = math.nan  # the last instant (NaN equals nothing)

    @classmethod
    def of(cls, spec: ClusterSpec) -> TopologyOccupancy:
        """The observer of a cluster with a topology (matched to its nodes: :class:`ClusterTopology`).

        >>> from dataclasses import replace
        >>> from simcluster.cluster_spec import ClusterSpec
        >>> from simcluster.topology.costs import ClusterTopology
        >>> spec = ClusterSpec.uniform({"a": 2, "b": 1})
        >>> racks = Topology.from_labels(("rack",), spec.node_names, [["r0", "r1", "r1"]])
        >>> occupancy = TopologyOccupancy.of(replace(spec, topology=ClusterTopology(racks, (0.0, 0.0))))
        >>> occupancy.free, {vc: state.total for vc, state in occupancy.vcs.items()}
        (24, {'a': 16, 'b': 8})
        """
        assert spec.topology is not None, "a cluster with a topology"
        topology = spec.topology.topology
        listed = set(topology.node_names)
        nodes = {}
        for vc in spec.vcs:
            index = 0
            for _type, count, per_node, _memory in spec.groups_of(vc):
                for _ in range(count):
                    name = f"{vc}/n{index}"  # (the engine's names: ClusterSpec.node_gpus)
                    if name in listed:
                        nodes[name] = (vc, per_node)
                    index += 1
        return cls(topology, nodes)

    # --- the hooks ------------------------------------------------------------------------------------------
    def on_submit(self, job: Job, now: float) -> None:
        """Any change of a job (submitted, started, stopped, finished, moved, resized): its nodes' free GPUs
        read again, and whether it waits."""
        if now != self._clock:
            self._advance(now)
        held = self._held.pop(job, None)
        if held:
            self._touched.update(held)
        if job.allocation:
            nodes = self._held[job] = tuple([node for node, _ in job.allocation])
            self._touched.update(nodes)
        waiting = job.state is PENDING
        if waiting and job not in self._waiting:
            self._wait(job, now)
        elif not waiting and job in self._waiting:
            self._stop_waiting(job, now)

    on_start = on_preempt = on_restart = on_finish = on_move = on_resize = on_submit

    def on_node_down(self, node_name: str, now: float) -> None:
        # read at once, with its jobs' nodes: a failure whose jobs go on on other nodes (a replacement), or that
        # finds the node without jobs, is followed by no sample
        place = self.places.get(node_name)
        if place is not None:
            if now != self._clock:
                self._advance(now)
            if self._touched:
                self._read_touched()
            self._set_frees([(place, 0)])

    def on_node_up(self, node_name: str, now: float) -> None:
        place = self.places.get(node_name)
        if place is not None:
            if now != self._clock:
                self._advance(now)
            self._set_frees([(place, place.node.free_gpus if place.node is not None else place.gpus)])

    def on_sample(self, now: float, used_gpus: int, shared_gpus: int, running: int, pending: int) -> None:
        if now != self._clock:
            self._advance(now)
        if self._touched:
            self._read_touched()
        if len(self._waiting) - pending > self._lost:  # a job left its queue without a hook (declined, abandoned)
            self._forget_gone(now)
            self._lost = len(self._waiting) - pending

    # --- the figures ----------------------------------------------------------------------------------------
    def figures(self, end: float) -> dict[str, Any]:
        """``summary.json``'s figures over the run, from its first submission to ``end``: the mean GPUs stranded
        per level, their share of the free GPU-time, and the jobs that fit the free GPUs but waited (their
        job-seconds, share of all the queueing, and count), the jobs still waiting at ``end`` included."""
        if end != self._clock:
            self._advance(end)
        if self._touched:
            self._read_touched()
        fit = dict(self.fit_seconds)
        for job, (vc, gpus, since) in self._waiting.items():
            if vc is not None and (seconds := vc.seconds_fitting(gpus, end) - since) > 0:
                fit[job] = fit.get(job, 0.0) + seconds
        span = end - self._start if self._start is not None else 0.0
        fit_total = sum(fit.values())
        return {
            "stranded_gpus": {level: (s / span if span > 0 else 0.0)
                              for level, s in zip(self.levels, self.stranded_seconds, strict=True)},
            "stranded_share": {level: (s / self.free_seconds if self.free_seconds > 0 else 0.0)
                               for level, s in zip(self.levels, self.stranded_seconds, strict=True)},
            "fit_but_waited": {"job_seconds": float(fit_total),
                               "share_of_queueing": fit_total / self.waiting_seconds if self.waiting_seconds else 0.0,
                               "jobs": sum(1 for seconds in fit.values() if seconds > 0)},
        }

    # --- keeping up -----------------------------------------------------------------------------------------
    def _advance(self, now: float) -> None:
        """Add the state held since the last instant, up to ``now`` (before anything changes at ``now``)."""
        if self._start is None:
            self._start = self._clock = now
        if self._touched:  # (changes that no sample followed, which the engine does not make: read now)
            self._read_touched()
        seconds = now - self._clock
        if seconds <= 0:
            return
        if self._changed:
            stranded = self.stranded
            for vc in self._changed:
                new = vc.work_out_stranded()
                for k, (before, after) in enumerate(zip(vc.stranded, new, strict=True)):
                    stranded[k] += after - before
                vc.stranded = new
            self._changed.clear()
        if any(self.stranded):
            for k, gpus in enumerate(self.stranded):
                self.stranded_seconds[k] += gpus * seconds
        self.free_seconds += self.free * seconds
        self.waiting_seconds += len(self._waiting) * seconds
        self._clock = now

    def _read_touched(self) -> None:
        """Read again the free GPUs of the nodes that jobs started or stopped on, once per instant: a node that a
        job left and another took at the same instant (the common case under load) has changed by nothing."""
        places, found = self.places, []
        nodes, self._touched = self._touched, set()
        for node in nodes:
            place = places.get(node.name)
            if place is None:  # a policy's own partition: kept only to tell whether its jobs still wait
                self._partitions[node.vc.name] = node.vc
                continue
            place.node = node
            if node.free_gpus != place.free:
                found.append((place, node.free_gpus))
        if found:
            self._set_frees(found)

    def _set_frees(self, found: list[tuple[Place, int]]) -> None:
        """Give each place its free GPUs now, and each domain above it the change."""
        changed, clock = self._changed, self._clock
        for place, free in found:
            change = free - place.free
            if not change:
                continue
            vc = place.vc
            if vc not in changed:
                changed[vc] = None
            vc.tick(clock)
            place.free = free
            for frees, sums, domain in zip(vc.frees, vc.by_free, place.domains, strict=False):
                before = frees[domain]
                after = frees[domain] = before + change
                if sums is not None:
                    if before:
                        sums.add(before, -before)
                    if after:
                        sums.add(after, after)
            by_node, before = vc.by_free[-1], free - change
            assert by_node is not None  # (the node level: never few domains)
            if before:
                by_node.add(before, -before)
            if free:
                by_node.add(free, free)
            vc.free += change
            self.free += change

    def _wait(self, job: Job, now: float) -> None:
        vc, gpus = self.vcs.get(job.vc), max(1, job.gpu_num)
        if vc is None:  # (a VC without topology nodes: its queueing counts, nothing else)
            self._waiting[job] = (None, gpus, 0.0)
            return
        self._waiting[job] = (vc, gpus, vc.seconds_fitting(gpus, now))
        vc.add_waiting(gpus)
        self._changed[vc] = None

    def _stop_waiting(self, job: Job, now: float) -> None:
        vc, gpus, since = self._waiting.pop(job)
        if vc is None:
            return
        seconds = vc.seconds_fitting(gpus, now) - since
        if seconds > 0:
            self.fit_seconds[job] = self.fit_seconds.get(job, 0.0) + seconds
        vc.remove_waiting(gpus)
        self._changed[vc] = None

    def _forget_gone(self, now: float) -> None:
        """Stop counting the jobs no longer in their queue that no hook told of (a policy's decline, a job given
        up on after failures): rare, so the waiting jobs are walked, each asked of its queue."""
        queues = {**{p.node.vc.name: p.node.vc for p in self.places.values() if p.node is not None},
                  **self._partitions}
        for job in list(self._waiting):
            queue = queues.get(job.queue_vc)
            if queue is not None and job not in queue.pending:
                self._stop_waiting(job, now)


__all__ = ["SmallSums", "Sums", "TopologyOccupancy", "sums_of"]
