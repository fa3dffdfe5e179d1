"""The cluster model: virtual clusters (VCs) of nodes of GPUs.

State only; the life of a node (failures, repairs) is a SimPy process in
:mod:`simcluster.engine`.  Every node sits in exactly one *free-count
bucket* of its VC, a bit mask over node indices, so placement finds "the
lowest-indexed node with exactly k free GPUs" in O(1) big-int operations
instead of sorting every node on every attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from simcluster.job import Job
from simcluster.queue import JobQueue


@dataclass(eq=False)
class Node:
    """A machine with ``gpu_count`` GPUs; ``gpus[i]`` lists the jobs on GPU i.

    A GPU holds one job, or several when a sharing policy colocates them
    (``attach``); ``free_gpus`` counts idle GPUs only.
    """

    vc: VirtualCluster
    index: int  # position inside its VC (placement tie-break order)
    name: str
    gpu_count: int
    gpus: list[list[Job]] = field(default_factory=list)
    free_ids: list[int] = field(default_factory=list)  # idle GPU indices, ascending
    jobs: dict[Job, list[int]] = field(default_factory=dict)
    up: bool = True
    used: int = 0  # GPUs holding at least one job
    shared: int = 0  # GPUs holding two or more
    extra: int = 0  # jobs beyond the first on each GPU, summed over GPUs
    bucket: int | None = None  # the free-count bucket the node is filed under

    def __post_init__(self) -> None:
        self.gpus = [[] for _ in range(self.gpu_count)]
        self.free_ids = list(range(self.gpu_count))

    @property
    def free_gpus(self) -> int:
        return self.gpu_count - self.used if self.up else 0

    def memory_used(self, gpu: int) -> float:
        return sum(job.memory for job in self.gpus[gpu])

    def allocate(self, job: Job, count: int) -> list[int]:
        """Give ``count`` idle GPUs (lowest indices first) to ``job``."""
        assert count <= self.free_gpus, (self.name, count, self.free_gpus)
        taken = self.free_ids[:count]
        del self.free_ids[:count]
        for i in taken:
            self.gpus[i].append(job)
        self.jobs[job] = taken
        self.used += count
        self.vc._refile(self, count)
        return taken

    def attach(self, job: Job, ids: list[int]) -> list[int]:
        """Put ``job`` on exactly these GPUs, idle or already running other jobs (sharing)."""
        assert self.up and job not in self.jobs
        newly_used = newly_shared = extra = 0
        for i in ids:
            holders = self.gpus[i]
            if not holders:
                self.free_ids.remove(i)
                newly_used += 1
            else:
                extra += 1
                newly_shared += len(holders) == 1
            holders.append(job)
        self.jobs[job] = list(ids)
        self.used += newly_used
        self.shared += newly_shared
        self.extra += extra
        self.vc._refile(self, newly_used, newly_shared, extra)
        return list(ids)

    def release(self, job: Job) -> None:
        taken = self.jobs.pop(job)
        if not self.shared:  # every GPU of the job was its alone: the common, fast case
            for i in taken:
                self.gpus[i].clear()
            self.free_ids = sorted(self.free_ids + taken) if self.free_ids else taken
            self.used -= len(taken)
            self.vc._refile(self, -len(taken))
            return
        freed: list[int] = []
        unshared = extra = 0
        for i in taken:
            holders = self.gpus[i]
            holders.remove(job)
            if not holders:
                freed.append(i)
            else:
                extra += 1
                unshared += len(holders) == 1
        if freed:
            self.free_ids = sorted(self.free_ids + freed)
        self.used -= len(freed)
        self.shared -= unshared
        self.extra -= extra
        self.vc._refile(self, -len(freed), -unshared, -extra)

    def partners(self, job: Job) -> set[Job]:
        """Other jobs sharing a GPU of this node with ``job``."""
        return {other for i in self.jobs[job] for other in self.gpus[i] if other is not job}

    def set_up(self, up: bool) -> None:
        """Take the node out of (or back into) service; it must be empty to go down."""
        assert up or not self.jobs, "evict jobs before taking a node down"
        self.up = up
        self.vc._refile(self, 0)


class VirtualCluster:
    """A tenant's share of the cluster: its nodes and its jobs.

    >>> vc = VirtualCluster("vc1", nodes=2, gpus_per_node=8)
    >>> vc.total_gpus, vc.free_gpus
    (16, 16)
    """

    def __init__(self, name: str, nodes: int, gpus_per_node: int = 8, totals: GpuCounts | None = None) -> None:
        self.name = name
        self.totals = totals or GpuCounts()  # the whole cluster's counts, kept up to date by every VC
        self.gpus_per_node = gpus_per_node
        self.nodes = [Node(self, i, f"{name}/n{i}", gpus_per_node) for i in range(nodes)]
        self.total_gpus = nodes * gpus_per_node
        self.free_gpus = self.total_gpus
        # buckets[k]: bit i set <=> node i is up and has exactly k free GPUs
        self.buckets = [0] * (gpus_per_node + 1)
        self.buckets[gpus_per_node] = (1 << nodes) - 1
        for node in self.nodes:
            node.bucket = gpus_per_node
        self.used_gpus = 0  # GPUs holding at least one job
        self.shared_gpus = 0  # GPUs holding two or more
        self.extra_jobs = 0  # jobs beyond the first on each GPU
        self.clock: Callable[[], float] = lambda: 0.0  # the simulation sets its own clock here
        self.shared_gpu_seconds = self.extra_gpu_seconds = 0.0
        self._since = 0.0
        self.pending: JobQueue = JobQueue()
        self.running: dict[Job, None] = {}  # insertion-ordered set

    def _refile(self, node: Node, used_delta: int, shared_delta: int = 0, extra_delta: int = 0) -> None:
        """Move ``node`` to the bucket of its current free count and update the VC's counts."""
        bit = 1 << node.index
        if node.bucket is not None:
            self.buckets[node.bucket] &= ~bit
            self.free_gpus -= node.bucket
        node.bucket = node.free_gpus if node.up else None
        if node.bucket is not None:
            self.buckets[node.bucket] |= bit
            self.free_gpus += node.bucket
        self.used_gpus += used_delta
        self.totals.used += used_delta
        if shared_delta or extra_delta:  # only sharing changes these: integrate them over time
            self.totals.shared += shared_delta
            now = self.clock()
            self.shared_gpu_seconds += self.shared_gpus * (now - self._since)
            self.extra_gpu_seconds += self.extra_jobs * (now - self._since)
            self._since = now
            self.shared_gpus += shared_delta
            self.extra_jobs += extra_delta

    def sharing_seconds(self, now: float) -> tuple[float, float]:
        """Up to ``now``: GPU-seconds of GPUs holding two or more jobs, and job-seconds beyond
        the first job of a GPU (what summing jobs' GPU-time counts twice)."""
        return (self.shared_gpu_seconds + self.shared_gpus * (now - self._since),
                self.extra_gpu_seconds + self.extra_jobs * (now - self._since))

    def nodes_with_free(self, k: int) -> Iterator[Node]:
        """Up nodes with exactly ``k`` free GPUs, in node order."""
        mask = self.buckets[k]
        while mask:
            low = mask & -mask
            yield self.nodes[low.bit_length() - 1]
            mask ^= low


@dataclass
class GpuCounts:
    used: int = 0  # GPUs holding at least one job
    shared: int = 0  # GPUs holding two or more


class Cluster:
    """All virtual clusters, built from a ``{vc: node count}`` mapping."""

    def __init__(self, vc_nodes: Mapping[str, int], gpus_per_node: int = 8) -> None:
        if gpus_per_node <= 0:
            raise ValueError("gpus_per_node must be positive")
        self.gpus_per_node = gpus_per_node
        self.counts = GpuCounts()
        self.vcs = {name: VirtualCluster(name, n, gpus_per_node, self.counts) for name, n in vc_nodes.items()}
        self.total_gpus = sum(vc.total_gpus for vc in self.vcs.values())

    @property
    def nodes(self) -> Iterator[Node]:
        for vc in self.vcs.values():
            yield from vc.nodes

