"""The cluster model: virtual clusters (VCs) of nodes of GPUs, each node with a GPU type.

State only; the life of a node (failures, repairs) is a SimPy process in
:mod:`simcluster.engine`.  Every node sits in exactly one *free-count
bucket* of its VC, a bit mask over node indices, so placement finds "the
lowest-indexed node with exactly k free GPUs" in O(1) big-int operations
instead of sorting every node on every attempt.

A VC may hold nodes of several GPU types (``v100``, ``k80``; ``gpu`` for traces that name none).
The VC's own buckets span all its nodes, so a heterogeneity-agnostic placement sees one pool of
GPUs; a VC of several types also keeps a :class:`Pool` per type, with buckets of its own, for
placements and policies that choose the type.  A single-type VC is its own and only pool, so
clusters without types pay nothing for them.

Jobs asking for a fraction of a GPU (``gpu_milli`` < 1000, the openb trace) share GPUs by fraction:
when a run has such jobs, each node counts the thousandths in use on each GPU and each pool files
its partly used GPUs by use (:class:`Fractions`), for best-fit placement.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from simcluster.cluster_spec import DEFAULT_GPU_TYPE, ClusterSpec
from simcluster.job import Job
from simcluster.queue import JobQueue

if TYPE_CHECKING:
    from simcluster.topology.model import Topology

WHOLE = 1000  # thousandths of a GPU
NO_LIMIT = 1 << 62  # VirtualCluster.unplaceable when nothing is known to be unplaceable


@dataclass(eq=False, slots=True)
class Node:
    """A machine with ``gpu_count`` GPUs of one type; ``gpus[i]`` lists the jobs on GPU i.

    A GPU holds one job, or several when a sharing policy colocates them
    (``attach``) or jobs take fractions of it; ``free_gpus`` counts idle GPUs only.
    """

    vc: VirtualCluster
    index: int  # position inside its VC (placement tie-break order)
    name: str
    gpu_count: int
    gpu_type: str = DEFAULT_GPU_TYPE
    gpu_memory: float = 0.0  # MiB per GPU; 0: not known (sharing policies then use --gpu-memory)
    pool: Pool | None = None  # the pool of its GPU type (the VC itself when the VC has one type)
    slot: int = 0  # position inside its pool
    free_ids: list[int] = field(default_factory=list)  # idle GPU indices, ascending
    jobs: dict[Job, list[int]] = field(default_factory=dict)
    up: bool = True
    used: int = 0  # GPUs holding at least one job
    shared: int = 0  # GPUs holding two or more
    extra: int = 0  # jobs beyond the first on each GPU, summed over GPUs
    version: int = 0  # counts changes of which jobs hold its GPUs (what SpeedModel.of keeps per node goes by it)
    bucket: int | None = None  # the free-count bucket the node is filed under
    unshared_bucket: int | None = None  # its VC's bucket of nodes by GPUs not holding two or more jobs
    milli: list[int] | None = None  # thousandths in use per GPU, kept only when jobs take fractions
    bit: int = field(init=False, repr=False)  # 1 << index: the node's bit in its VC's buckets
    # its domain at each level of the cluster's topology, top-down (None: a cluster without one, or a node the
    # topology does not list, such as a policy's own partition's)
    domains: tuple[int, ...] | None = None
    # the jobs on each GPU, built when first asked for (sharing, fractions) and kept from then on;
    # None until then: a run that never shares counts GPUs and keeps no per-GPU lists
    _gpus: list[list[Job]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.free_ids = list(range(self.gpu_count))
        self.bit = 1 << self.index

    @property
    def gpus(self) -> list[list[Job]]:
        """``gpus[i]``: the jobs on GPU i (built from :attr:`jobs` on first use, then kept up to date)."""
        if self._gpus is None:
            gpus: list[list[Job]] = [[] for _ in range(self.gpu_count)]
            for job, ids in self.jobs.items():
                for i in ids:
                    gpus[i].append(job)
            self._gpus = gpus
        return self._gpus

    @property
    def free_gpus(self) -> int:
        return self.gpu_count - self.used if self.up else 0

    def memory_used(self, gpu: int) -> float:
        return sum(job.memory for job in self.gpus[gpu])

    def allocate(self, job: Job, count: int) -> list[int]:
        """Give ``count`` idle GPUs (lowest indices first) to ``job``."""
        used = self.used
        before = self.gpu_count - used
        assert self.up and 0 < count <= before, (self.name, count, self.free_gpus)
        free = self.free_ids
        if count == before:  # every idle GPU (a multi-node job's whole nodes, mostly): the list itself, no copy
            taken, self.free_ids = free, []
        else:
            taken = free[:count]
            del free[:count]
        self.jobs[job] = taken
        self.version += 1
        if self._gpus is not None:
            gpus = self._gpus
            for i in taken:
                gpus[i].append(job)
        self.used = used + count
        # (VirtualCluster._refile for an up node whose free count went down, inlined: a multi-node start takes
        # node after node)
        vc, after = self.vc, before - count
        buckets, bit = vc.buckets, self.bit
        buckets[before] ^= bit  # (its bit is set in bucket ``before`` and clear in ``after``: one operation each)
        buckets[after] ^= bit
        self.bucket = after
        vc.free_gpus -= count
        vc.used_gpus += count
        vc.totals.used += count
        if vc.free_log is not None:
            vc.free_log.append(self.index)
        if self.pool is not vc:
            self.pool._move(self.slot, before, after)  # type: ignore[union-attr]
        if self.milli is not None:
            self._use_fractions(taken, job.gpu_milli)
        return taken

    def attach(self, job: Job, ids: list[int]) -> list[int]:
        """Put ``job`` on exactly these GPUs, idle or already running other jobs (sharing, fractions)."""
        assert self.up and job not in self.jobs
        self.version += 1
        newly_used = newly_shared = extra = 0
        gpus = self.gpus
        for i in ids:
            holders = gpus[i]
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
        if self.milli is not None:
            self._use_fractions(ids, job.gpu_milli)
        return list(ids)

    def release(self, job: Job) -> None:
        taken = self.jobs.pop(job)
        self.version += 1
        if self.milli is not None:
            self._use_fractions(taken, -job.gpu_milli)
        if self.shared:
            self._release_shared(job, taken)
            return
        # every GPU of the job was its alone: the common, fast case
        if self._gpus is not None:
            gpus = self._gpus
            for i in taken:
                gpus[i].clear()
        free = self.free_ids
        if free:
            free += taken  # (in place: no new list per release)
            free.sort()
        else:
            self.free_ids = taken
        count, used = len(taken), self.used
        before = self.gpu_count - used
        self.used = used - count
        if self.bucket != before:  # a down node has no bucket
            self.vc._refile(self, -count)
            return
        # (VirtualCluster._refile for an up node whose free count went up, inlined: the hot path)
        vc, after = self.vc, before + count
        buckets, bit = vc.buckets, self.bit
        buckets[before] ^= bit  # (its bit is set in bucket ``before`` and clear in ``after``: one operation each)
        buckets[after] ^= bit
        self.bucket = after
        vc.free_gpus += count
        vc.used_gpus -= count
        vc.totals.used -= count
        vc.unplaceable = NO_LIMIT
        if vc.unplaceable_by:
            vc.unplaceable_by.clear()
        if vc.free_log is not None:
            vc.free_log.append(self.index)
        if self.pool is not vc:
            self.pool._move(self.slot, before, after)  # type: ignore[union-attr]

    def _release_shared(self, job: Job, taken: list[int]) -> None:
        """:meth:`release` on a node where some GPU holds two or more jobs: GPU by GPU."""
        freed: list[int] = []
        unshared = extra = 0
        gpus = self.gpus
        for i in taken:
            holders = gpus[i]
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

    def _use_fractions(self, ids: list[int], delta: int) -> None:
        assert self.milli is not None and self.pool is not None
        for i in ids:
            before = self.milli[i]
            self.milli[i] = before + delta
            self.pool.fractions.move(self, i, before, before + delta)

    def partners(self, job: Job) -> set[Job]:
        """Other jobs sharing a GPU of this node with ``job``."""
        if not self.shared:
            return set()
        return {other for i in self.jobs[job] for other in self.gpus[i] if other is not job}

    def set_up(self, up: bool) -> None:
        """Take the node out of (or back into) service; it must be empty to go down."""
        assert up or not self.jobs, "evict jobs before taking a node down"
        self.up = up
        self.vc._refile(self, 0)
        if self.milli is not None and self.pool is not None:
            self.pool.fractions.node_up(self, up)


class Fractions:
    """A pool's GPUs that hold fractional jobs and have room left, filed by thousandths in use.

    :meth:`best_fit` finds the fullest GPU that still holds a fraction (the one leaving least room
    idle), ties by node order and GPU index.

    >>> fr = Fractions()
    >>> vc = VirtualCluster("v", nodes=1, gpus_per_node=2)
    >>> node = vc.nodes[0]
    >>> fr.move(node, 0, 0, 300); fr.move(node, 1, 0, 600)
    >>> fr.best_fit(400), fr.best_fit(300), fr.best_fit(800)
    ((0, 1), (0, 1), None)
    """

    __slots__ = ("at", "down", "levels")

    def __init__(self) -> None:
        self.levels: list[int] = []  # thousandths in use that some GPU here has, ascending
        self.at: dict[int, dict[tuple[int, int], Node]] = {}  # thousandths in use → (node slot, GPU) → node
        self.down: set[int] = set()  # slots of nodes that are down

    def move(self, node: Node, gpu: int, before: int, after: int) -> None:
        key = (node.slot, gpu)
        if 0 < before < WHOLE:
            level = self.at[before]
            del level[key]
            if not level:
                del self.at[before]
                self.levels.remove(before)
        if 0 < after < WHOLE:
            if after not in self.at:
                self.at[after] = {}
                insort(self.levels, after)
            self.at[after][key] = node

    def node_up(self, node: Node, up: bool) -> None:
        (self.down.discard if up else self.down.add)(node.slot)

    def best_fit(self, milli: int, avoid: set[tuple[int, int]] = frozenset()) -> tuple[int, int] | None:  # type: ignore[assignment]
        """(node slot, GPU) of the fullest partly used GPU with room for ``milli``, or None."""
        for k in range(bisect_right(self.levels, WHOLE - milli) - 1, -1, -1):
            found = [key for key in self.at[self.levels[k]] if key not in avoid and key[0] not in self.down]
            if found:
                return min(found)
        return None


class Pool:
    """Nodes (of one GPU type, or all of a VC's) with free-count buckets: what a placement searches.

    ``nodes[i]`` is the node of bit i of the buckets; ``gpus_per_node`` the largest node's GPUs.
    """

    def __init__(self, gpu_type: str, nodes: list[Node]) -> None:
        self.gpu_type = gpu_type
        self.nodes = nodes
        self.gpus_per_node = max((n.gpu_count for n in nodes), default=0)
        self.total_gpus = sum(n.gpu_count for n in nodes)
        self.free_gpus = self.total_gpus
        self.fractions = Fractions()
        self.topology_levels: tuple[str, ...] = ()  # the names of its nodes' domains' levels (Node.domains)
        self.topology_block_sizes: tuple[int, ...] = ()  # a block-form topology.conf's BlockSizes (nodes)
        self.free_log: list[int] | None = None  # positions of nodes whose free count changed (watch_free)
        # buckets[k]: bit i set <=> nodes[i] is up and has exactly k free GPUs
        self.buckets = [0] * (self.gpus_per_node + 1)
        for slot, node in enumerate(nodes):
            node.pool, node.slot = self, slot
            node.bucket = node.gpu_count
            self.buckets[node.gpu_count] |= 1 << slot

    def _move(self, position: int, before: int | None, after: int | None) -> None:
        """Move the node at bit ``position`` from free-count bucket ``before`` to ``after`` (None: down)."""
        bit = 1 << position
        if self.free_log is not None:
            self.free_log.append(position)
        if before is not None:
            self.buckets[before] &= ~bit
            self.free_gpus -= before
        if after is not None:
            self.buckets[after] |= bit
            self.free_gpus += after

    def watch_free(self) -> list[int]:
        """From now on, the position of every node whose free count changes is appended to the list returned
        (the same list for every watcher; a watcher that reads it clears it): what a placement that keeps its own
        tallies of free GPUs reads to bring them up to date at the cost of what changed."""
        if self.free_log is None:
            self.free_log = []
        return self.free_log

    def nodes_with_free(self, k: int) -> Iterator[Node]:
        """Up nodes with exactly ``k`` free GPUs, in node order."""
        return self._nodes_in(self.buckets[k] if k < len(self.buckets) else 0)

    def _nodes_in(self, mask: int) -> Iterator[Node]:
        """The nodes of the bits of ``mask``, in node order."""
        while mask:
            low = mask & -mask
            yield self.nodes[low.bit_length() - 1]
            mask ^= low


class VirtualCluster(Pool):
    """A tenant's share of the cluster: its nodes and its jobs.

    ``groups`` gives its nodes as (GPU type, nodes, GPUs per node, GPU memory) rows; without them it
    has ``nodes`` nodes of ``gpus_per_node`` untyped GPUs.

    >>> vc = VirtualCluster("vc1", nodes=2, gpus_per_node=8)
    >>> vc.total_gpus, vc.free_gpus, vc.gpu_types
    (16, 16, ('gpu',))
    >>> mixed = VirtualCluster("c", groups=[("v100", 1, 4, 16384), ("k80", 2, 4, 12288)])
    >>> mixed.gpu_types, mixed.pools["k80"].total_gpus, [n.slot for n in mixed.nodes]
    (('v100', 'k80'), 8, [0, 0, 1])
    """

    def __init__(self, name: str, nodes: int = 0, gpus_per_node: int = 8, totals: GpuCounts | None = None,
                 groups: list[tuple[str, int, int, float]] | None = None) -> None:
        self.name = name
        self.totals = totals or GpuCounts()  # the whole cluster's counts, kept up to date by every VC
        rows = groups if groups is not None else [(DEFAULT_GPU_TYPE, nodes, gpus_per_node, 0.0)]
        members: list[Node] = []
        for gpu_type, count, per_node, memory in rows:
            members += [Node(self, len(members) + i, "", per_node, gpu_type, memory) for i in range(count)]
        for node in members:
            node.name = f"{name}/n{node.index}"
        self.gpu_types: tuple[str, ...] = tuple(dict.fromkeys(n.gpu_type for n in members)) or (DEFAULT_GPU_TYPE,)
        if len(self.gpu_types) > 1:  # a pool per type first: the VC-wide pool below makes itself theirs too
            self.pools: dict[str, Pool] = {t: Pool(t, [n for n in members if n.gpu_type == t]) for t in self.gpu_types}
            typed = [(n.pool, n.slot) for n in members]
        super().__init__(self.gpu_types[0] if len(self.gpu_types) == 1 else "", members)
        if len(self.gpu_types) > 1:
            for node, (pool, slot) in zip(members, typed):
                node.pool, node.slot = pool, slot
        else:
            self.pools = {self.gpu_types[0]: self}
        self.used_gpus = 0  # GPUs holding at least one job
        self.shared_gpus = 0  # GPUs holding two or more
        self.extra_jobs = 0  # jobs beyond the first on each GPU
        self.clock: Callable[[], float] = lambda: 0.0  # the simulation sets its own clock here
        self.shared_gpu_seconds = self.extra_gpu_seconds = 0.0
        self._since = 0.0
        self.pending: JobQueue = JobQueue()
        self.running: RunningJobs = RunningJobs()  # insertion-ordered set
        self.to_arrive = 0  # jobs of this VC not submitted yet (the simulation counts them down)
        # the fewest GPUs a monotone placement found no room for since GPUs were last freed here: no job asking
        # for as many or more can be placed until then (the engine skips the search)
        self.unplaceable = NO_LIMIT
        # the same per class of jobs, for a placement monotone within each class only (Placement.room_class)
        self.unplaceable_by: dict[object, int] = {}
        self.fractional = False  # whether jobs may take fractions of its GPUs (track_fractions)
        self.fastest_first = self.gpu_types  # its GPU types, fastest first (the cluster sets it)
        # unshared[k]: bit i set <=> node i is up and k of its GPUs hold fewer than two jobs (what a job may share)
        self.unshared = [0] * (self.gpus_per_node + 1)
        for node in members:
            node.unshared_bucket = node.gpu_count
            self.unshared[node.gpu_count] |= node.bit

    def nodes_with_unshared(self, k: int) -> Iterator[Node]:
        """Up nodes with exactly ``k`` GPUs that hold fewer than two jobs (idle or held by one), in node order."""
        return self._nodes_in(self.unshared[k] if k < len(self.unshared) else 0)

    def track_fractions(self) -> None:
        """Count thousandths in use per GPU from now on (a run with jobs that take GPU fractions)."""
        self.fractional = True
        for node in self.nodes:
            if node.milli is None:
                node.milli = [WHOLE if holders else 0 for holders in node.gpus]

    def _refile(self, node: Node, used_delta: int, shared_delta: int = 0, extra_delta: int = 0) -> None:
        """Move ``node`` to the bucket of its current free count and update the VC's counts."""
        before, after = node.bucket, (node.gpu_count - node.used if node.up else None)  # (free_gpus, inlined)
        if before != after:
            if after is not None and (before is None or after > before):
                self.unplaceable = NO_LIMIT
                self.unplaceable_by.clear()
            self._move(node.index, before, after)
            node.bucket = after
            if node.pool is not self:
                node.pool._move(node.slot, before, after)  # type: ignore[union-attr]
        unshared = node.gpu_count - node.shared if node.up else None
        if unshared != node.unshared_bucket:
            if node.unshared_bucket is not None:
                self.unshared[node.unshared_bucket] &= ~node.bit
            if unshared is not None:
                self.unshared[unshared] |= node.bit
            node.unshared_bucket = unshared
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


class RunningJobs(dict[Job, None]):
    """A VC's running jobs in start order (an insertion-ordered set), iterated over a snapshot: a policy may
    preempt the jobs it walks."""

    __slots__ = ()

    def __iter__(self) -> Iterator[Job]:
        return iter(tuple(dict.__iter__(self)))


@dataclass
class GpuCounts:
    used: int = 0  # GPUs holding at least one job
    shared: int = 0  # GPUs holding two or more


class Cluster:
    """All virtual clusters, built from a :class:`~simcluster.cluster_spec.ClusterSpec` or a
    ``{vc: node count}`` mapping (untyped nodes of ``gpus_per_node`` GPUs).

    ``fastest_first``: GPU types by descending speed (heterogeneity-aware policies fill them in this
    order); by default the cluster's own type order.
    """

    def __init__(self, vcs: Mapping[str, int] | ClusterSpec, gpus_per_node: int = 8,
                 fastest_first: tuple[str, ...] = ()) -> None:
        if gpus_per_node <= 0:
            raise ValueError("gpus_per_node must be positive")
        spec = vcs if isinstance(vcs, ClusterSpec) else ClusterSpec.uniform(vcs, gpus_per_node)
        self.spec = spec
        self.gpus_per_node = gpus_per_node
        self.counts = GpuCounts()
        self.vcs = {name: VirtualCluster(name, totals=self.counts, groups=spec.groups_of(name)) for name in spec.vcs}
        self.total_gpus = sum(vc.total_gpus for vc in self.vcs.values())
        ranked = [t for t in fastest_first if t in spec.gpu_types]
        self.fastest_first = tuple(ranked + [t for t in spec.gpu_types if t not in ranked])
        for vc in self.vcs.values():
            vc.fastest_first = tuple(t for t in self.fastest_first if t in vc.pools)
        if spec.topology is not None:
            self._place_in_topology(spec.topology.topology)

    def _place_in_topology(self, topology: Topology) -> None:
        """Give each node its domains, by its name (nodes the topology does not list keep none), and each pool
        the names of their levels."""
        known = set(topology.node_names)
        columns = [level.tolist() for level in topology.membership]
        for node in self.nodes:
            if node.name in known:
                i = topology.node_index(node.name)
                node.domains = tuple(column[i] for column in columns)
        for vc in self.vcs.values():
            for pool in {id(p): p for p in (vc, *vc.pools.values())}.values():
                pool.topology_levels = topology.levels
                pool.topology_block_sizes = topology.block_sizes

    @property
    def nodes(self) -> Iterator[Node]:
        for vc in self.vcs.values():
            yield from vc.nodes
