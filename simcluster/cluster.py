"""The cluster model: virtual clusters (VCs) of nodes of GPUs.

State only; the life of a node (failures, repairs) is a SimPy process in
:mod:`simcluster.engine`.  Every node sits in exactly one *free-count
bucket* of its VC, a bit mask over node indices, so placement finds "the
lowest-indexed node with exactly k free GPUs" in O(1) big-int operations
instead of sorting every node on every attempt.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from simcluster.job import Job
from simcluster.queue import JobQueue


@dataclass(eq=False)
class Node:
    """A machine with ``gpu_count`` GPUs; ``gpus[i]`` is the job on GPU i."""

    vc: VirtualCluster
    index: int  # position inside its VC (placement tie-break order)
    name: str
    gpu_count: int
    gpus: list[Job | None] = field(default_factory=list)
    free_ids: list[int] = field(default_factory=list)  # free GPU indices, ascending
    jobs: dict[Job, list[int]] = field(default_factory=dict)
    up: bool = True
    used: int = 0
    bucket: int | None = None  # the free-count bucket the node is filed under

    def __post_init__(self) -> None:
        self.gpus = [None] * self.gpu_count
        self.free_ids = list(range(self.gpu_count))

    @property
    def free_gpus(self) -> int:
        return self.gpu_count - self.used if self.up else 0

    def allocate(self, job: Job, count: int) -> list[int]:
        """Give ``count`` free GPUs (lowest indices first) to ``job``."""
        assert count <= self.free_gpus, (self.name, count, self.free_gpus)
        taken = self.free_ids[:count]
        del self.free_ids[:count]
        for i in taken:
            self.gpus[i] = job
        self.jobs[job] = taken
        self.used += count
        self.vc._refile(self, used_delta=count)
        return taken

    def release(self, job: Job) -> None:
        taken = self.jobs.pop(job)
        for i in taken:
            assert self.gpus[i] is job
            self.gpus[i] = None
        self.free_ids = sorted(self.free_ids + taken)
        self.used -= len(taken)
        self.vc._refile(self, used_delta=-len(taken))

    def set_up(self, up: bool) -> None:
        """Take the node out of (or back into) service; it must be empty to go down."""
        assert up or not self.jobs, "evict jobs before taking a node down"
        self.up = up
        self.vc._refile(self, used_delta=0)


class VirtualCluster:
    """A tenant's share of the cluster: its nodes and its jobs.

    >>> vc = VirtualCluster("vc1", nodes=2, gpus_per_node=8)
    >>> vc.total_gpus, vc.free_gpus
    (16, 16)
    """

    def __init__(self, name: str, nodes: int, gpus_per_node: int = 8) -> None:
        self.name = name
        self.gpus_per_node = gpus_per_node
        self.nodes = [Node(self, i, f"{name}/n{i}", gpus_per_node) for i in range(nodes)]
        self.total_gpus = nodes * gpus_per_node
        self.free_gpus = self.total_gpus
        # buckets[k]: bit i set <=> node i is up and has exactly k free GPUs
        self.buckets = [0] * (gpus_per_node + 1)
        self.buckets[gpus_per_node] = (1 << nodes) - 1
        for node in self.nodes:
            node.bucket = gpus_per_node
        self.used_gpus = 0
        self.pending: JobQueue = JobQueue()
        self.running: dict[Job, None] = {}  # insertion-ordered set

    def _refile(self, node: Node, used_delta: int) -> None:
        """Move ``node`` to the bucket of its current free count."""
        bit = 1 << node.index
        if node.bucket is not None:
            self.buckets[node.bucket] &= ~bit
            self.free_gpus -= node.bucket
        node.bucket = node.free_gpus if node.up else None
        if node.bucket is not None:
            self.buckets[node.bucket] |= bit
            self.free_gpus += node.bucket
        self.used_gpus += used_delta

    def nodes_with_free(self, k: int) -> Iterator[Node]:
        """Up nodes with exactly ``k`` free GPUs, in node order."""
        mask = self.buckets[k]
        while mask:
            low = mask & -mask
            yield self.nodes[low.bit_length() - 1]
            mask ^= low


class Cluster:
    """All virtual clusters, built from a ``{vc: node count}`` mapping."""

    def __init__(self, vc_nodes: Mapping[str, int], gpus_per_node: int = 8) -> None:
        if gpus_per_node <= 0:
            raise ValueError("gpus_per_node must be positive")
        self.gpus_per_node = gpus_per_node
        self.vcs = {name: VirtualCluster(name, n, gpus_per_node) for name, n in vc_nodes.items()}
        self.total_gpus = sum(vc.total_gpus for vc in self.vcs.values())

    @property
    def nodes(self) -> Iterator[Node]:
        for vc in self.vcs.values():
            yield from vc.nodes

    @property
    def free_gpus(self) -> int:
        return sum(vc.free_gpus for vc in self.vcs.values())

    @property
    def used_gpus(self) -> int:
        return sum(vc.used_gpus for vc in self.vcs.values())
