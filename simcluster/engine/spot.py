"""Spot nodes in the engine: where jobs may be placed, reclaims that take nodes away, and what they cost.

A VC's spot nodes are its last K nodes, or those a spot column names.  Each such VC gets two :class:`NodeSubset`
pools, its spot nodes and its other (on-demand) nodes, and so does each GPU type's pool of a VC of several types
(:func:`split_pools`), kept up to date by the nodes themselves (a node files its free count in its pool as it does
in its VC: :class:`~simcluster.cluster.Node`), so a placement searches either at the cost it searches the VC.
:class:`SpotPlacement` wraps the run's placement: a preemptible job tries the spot nodes first, then the whole VC (or
type); a guaranteed job the on-demand nodes only (``--spot-jobs any``: then the whole VC).  Kueue does the same with
a spot ResourceFlavor whose taint guaranteed workloads do not tolerate.

Reclaims are a failure model's outages (the fault model's machinery: a rate per spot node, or a replayed log) over
the spot nodes, replayed by one SimPy process (:meth:`SpotCapacity.reclaims_process`): at a reclaim every job on the
node is evicted (:class:`~simcluster.engine.causes.Evicted`: it loses its work since its last checkpoint and waits
again in its queue), owes the eviction cost, and the node is down until its return and, where it failed too, its
repair (:meth:`~simcluster.engine.simulation.Simulation.node_down` counts why a node is down).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

from simcluster.cluster import Fractions, Pool, VirtualCluster
from simcluster.engine.causes import Evicted
from simcluster.engine.reliability import replay_order
from simcluster.metrics.observer import Observer
from simcluster.placement.base import Placement, Plan

if TYPE_CHECKING:  # pragma: no cover
    import simpy

    from simcluster.cluster import Cluster, Node
    from simcluster.engine.simulation import Simulation
    from simcluster.faults.models import FailureModel
    from simcluster.job import Job


class MemberNodes(list):
    """A VC's nodes as a subset of them shows them: indexed by the VC's positions (the bits of the subset's
    buckets), iterated over the subset's members only (a placement that walks a pool's nodes sees only those).

    >>> nodes = MemberNodes(["a", "b", "c"], members={0, 2})
    >>> nodes[1], list(nodes), len(nodes)
    ('b', ['a', 'c'], 3)
    """

    def __init__(self, nodes: list[Any], members: set[int]) -> None:
        super().__init__(nodes)
        self.members = sorted(members)

    def __iter__(self) -> Iterator[Any]:
        return (list.__getitem__(self, i) for i in self.members)


class NodeSubset(Pool):
    """Some nodes of a pool as a pool of their own (the spot ones, or the others), at the pool's positions: a
    node's bit is its bit there (``node.index`` in a VC, ``node.slot`` in a GPU type's pool of a VC of several
    types), so a placement's positions keep their meaning.

    A VC of one type is its nodes' pool: its subsets take the nodes over (``node.pool``: they file their free counts
    there, and the VC hears of them itself).  In a VC of several types each type's subsets take the nodes over and
    pass each change on (``passed_to``) to the type's pool and to the VC's subset the node is in (:meth:`_move`),
    whose subsets do not take them (``owns`` false)."""

    def __init__(self, parent: Pool, members: list[Node], passed_to: tuple[Pool, NodeSubset] | None = None,
                 owns: bool = True) -> None:
        self.whole_vc = isinstance(parent, VirtualCluster)
        self.gpu_type = parent.gpu_type
        self.name = parent.name if isinstance(parent, VirtualCluster) else passed_to[1].name if passed_to else ""
        self.nodes = MemberNodes(parent.nodes, {self.position(node) for node in members})
        self.gpus_per_node = parent.gpus_per_node
        self.total_gpus = sum(node.gpu_count for node in members)
        self.free_gpus = sum(node.free_gpus for node in members)
        self.fractions = Fractions()
        self.topology_levels, self.topology_block_sizes = parent.topology_levels, parent.topology_block_sizes
        self.free_log = None
        self.buckets = [0] * (self.gpus_per_node + 1)
        self.pools: dict[str, Pool] = {self.gpu_type: self}
        self.gpu_types = getattr(parent, "gpu_types", (self.gpu_type,))  # (a type's pool has one)
        self.fastest_first = getattr(parent, "fastest_first", self.gpu_types)
        self.passed_to = passed_to  # (a type's subset: its type's pool, the VC's subset)
        for node in members:
            if node.bucket is not None:
                self.buckets[node.bucket] |= 1 << self.position(node)
            if owns:
                node.pool = self

    def position(self, node: Node) -> int:
        return node.index if self.whole_vc else node.slot

    def _move(self, position: int, before: int | None, after: int | None) -> None:
        super()._move(position, before, after)
        if self.passed_to is not None:
            pool, vc_subset = self.passed_to
            pool._move(position, before, after)
            vc_subset._move(self.nodes[position].index, before, after)


class SpotPlacement(Placement):
    """The run's placement with spot nodes: each job placed only where it may run (module docstring).

    Not monotone for all jobs (a guaranteed job finds no room where a preemptible one does), but within a class of
    jobs as the inner placement is: its :attr:`room_class` says the class, so the engine still skips searches it
    knows would fail."""

    def __init__(self, inner: Placement, split: dict[VirtualCluster, tuple[NodeSubset, NodeSubset]],
                 guaranteed_anywhere: bool) -> None:
        self.inner, self.split, self.guaranteed_anywhere = inner, split, guaranteed_anywhere
        self.spot_ids = {id(node) for spot, _ in split.values() for node in spot.nodes}
        self.name = inner.name
        self.chooses_types, self.places_fractions = inner.chooses_types, inner.places_fractions
        self.monotone = False
        self.rng = getattr(inner, "rng", None)
        if inner.monotone:
            self.room_class = self._kind
        elif inner.room_class is not None:
            self.room_class = self._kind_and_inner

    def _kind(self, job: Job, vc: Pool) -> bool:
        return job.preemptible

    def _kind_and_inner(self, job: Job, vc: Pool) -> Any:
        return job.preemptible, self.inner.room_class(job, vc)  # type: ignore[misc]

    def may_use(self, job: Job, node: Node) -> bool:
        """Whether ``job`` may run on ``node`` (what an eviction for it asks before freeing the node).

        >>> from simcluster.cluster import Cluster
        >>> from simcluster.job import Job
        >>> from simcluster.placement.consolidate import Consolidate
        >>> capacity = SpotCapacity({"a": [1]}, None, 0.0, False, 3600.0, 0, 0.0)
        >>> placement = capacity.wrap(Consolidate(), Cluster({"a": 2}, 8))
        >>> guaranteed = Job(index=0, job_id="g", vc="a", gpu_num=8, submit_time=0, duration=60)
        >>> [placement.may_use(guaranteed, node) for node in capacity.nodes], placement.may_use(guaranteed, None)
        ([False], True)
        """
        return job.preemptible or self.guaranteed_anywhere or id(node) not in self.spot_ids

    def place(self, job: Job, vc: Pool) -> Plan | None:
        split = self.split.get(vc)  # type: ignore[call-overload]
        if split is None:  # (a VC without spot nodes, or a policy's own partition)
            return self.inner.place(job, vc)
        spot, on_demand = split
        first = spot if job.preemptible else on_demand
        if first.free_gpus >= job.gpu_num and (plan := self.inner.place(job, first)) is not None:
            return plan
        if job.preemptible or self.guaranteed_anywhere:
            return self.inner.place(job, vc)
        return None


def split_pools(vc: VirtualCluster, spot: list[Node]) -> dict[Pool, tuple[NodeSubset, NodeSubset]]:
    """``vc``'s pools each as (its spot nodes, its others): the VC itself and, in a VC of several GPU types, each
    type's pool, whose subsets are the VC subsets' pools of that type (what a placement that chooses types searches).

    >>> from simcluster.cluster import VirtualCluster
    >>> vc = VirtualCluster("c", groups=[("v100", 2, 4, 16384), ("k80", 2, 4, 12288)])
    >>> split = split_pools(vc, [vc.nodes[1], vc.nodes[3]])  # (the last node of each type)
    >>> spot, others = split[vc]
    >>> [n.name for n in spot.nodes], [n.name for n in spot.pools["k80"].nodes], spot.free_gpus
    (['c/n1', 'c/n3'], ['c/n3'], 8)
    >>> _ = vc.nodes[3].allocate(object(), 3)  # (a k80 spot node: its type's subsets, pool and the VC hear of it)
    >>> spot.free_gpus, spot.pools["k80"].free_gpus, vc.pools["k80"].free_gpus, others.free_gpus, vc.free_gpus
    (5, 1, 5, 8, 13)
    """
    taken = {id(node) for node in spot}
    others = [node for node in vc.nodes if id(node) not in taken]
    one_type = len(vc.pools) == 1
    whole = NodeSubset(vc, spot, owns=one_type), NodeSubset(vc, others, owns=one_type)
    split: dict[Pool, tuple[NodeSubset, NodeSubset]] = {vc: whole}
    if one_type:
        return split
    for gpu_type, pool in vc.pools.items():
        halves = []
        for vc_subset, members in zip(whole, (spot, others)):
            subset = NodeSubset(pool, [node for node in members if node.gpu_type == gpu_type], (pool, vc_subset))
            vc_subset.pools[gpu_type] = subset
            halves.append(subset)
        split[pool] = (halves[0], halves[1])
    for vc_subset in whole:
        del vc_subset.pools[vc_subset.gpu_type]  # (a VC of several types: its subsets' pools are by type only)
    return split


class SpotCapacity(Observer):
    """One simulation's spot nodes: the placement that keeps jobs where they may run, the process that reclaims
    nodes, and what it all cost (the feature's figures).  ``positions``: spot nodes per VC, by their positions
    there; ``model``: what reclaims them (None: nothing does)."""

    def __init__(self, positions: dict[str, list[int]], model: FailureModel | None, cost: float,
                 guaranteed_anywhere: bool, horizon: float, seed: int, start: float) -> None:
        self.positions, self.model, self.cost = positions, model, cost
        self.guaranteed_anywhere, self.horizon, self.seed = guaranteed_anywhere, horizon, seed
        self.nodes: list[Node] = []  # the spot nodes, VC by VC, the order of the model's servers
        self._spot: set[int] = set()  # their ids
        self._by_name: dict[str, Node] = {}
        self._down: set[int] = set()  # ids of the spot nodes counted down (reclaimed, failed, or both)
        self.reclaims = self.returns = self.evictions = 0
        self.gpu_seconds_lost = 0.0
        self.evicted: dict[Job, int] = {}  # job → its evictions by reclaims
        self._held: dict[Job, int] = {}  # running job → the spot GPUs it holds
        self._busy = self._up = 0  # spot GPUs busy, spot GPUs up
        self._busy_seconds = self._up_seconds = 0.0
        self._since = start

    # --- the engine's hooks ------------------------------------------------------------------------------------
    def wrap(self, placement: Placement, cluster: Cluster) -> Placement:
        """The run's placement wrapped (:class:`SpotPlacement`), each VC's spot nodes split off as it starts."""
        split = {}
        for name, positions in self.positions.items():
            vc = cluster.vcs[name]
            # (a policy may have taken some of the VC's last nodes for itself)
            spot = [vc.nodes[i] for i in positions if i < len(vc.nodes)]
            if spot:
                split |= split_pools(vc, spot)
                self.nodes += spot
        self._spot = {id(node) for node in self.nodes}
        self._by_name = {node.name: node for node in self.nodes}
        self._down = {id(node) for node in self.nodes if not node.up}
        self._up = sum(node.gpu_count for node in self.nodes if node.up)
        return SpotPlacement(placement, split, self.guaranteed_anywhere)

    def reclaims_process(self, sim: Simulation) -> Generator[simpy.Event, Any, None]:
        """A SimPy process: the model's outages of the spot nodes in time order, each a reclaim and a return."""
        if self.model is None or not self.nodes:
            return
        env = sim.env
        start = env.now
        outages = self.model.outages(len(self.nodes), sim.config.gpus_per_node, self.horizon, self.seed)
        for at, index, taken in replay_order(iter(outages)):
            yield env.timeout(max(0.0, start + at - env.now))
            if taken:
                self.reclaim(sim, self.nodes[index])
            else:
                self.give_back(sim, self.nodes[index])

    def reclaim(self, sim: Simulation, node: Node) -> None:
        """The provider takes ``node``: its jobs are evicted (their work since their checkpoint lost, the eviction
        cost owed), then it is down.  A node down for a fault has no jobs left to evict: the reclaim is counted, and
        the node comes back only once both have ended (:meth:`~simcluster.engine.simulation.Simulation.node_up`)."""
        self.reclaims += 1
        for job in list(node.jobs):
            lost = job.lost_work
            sim.interrupt(job, Evicted(f"reclaim of {node.name}"))
            self.gpu_seconds_lost += (job.lost_work - lost) * job.gpus
            self.evictions += 1
            self.evicted[job] = self.evicted.get(job, 0) + 1
            if self.cost:
                job.owe(self.cost)
        sim.node_down(node, reclaim=True)
        self._sync(node, sim.clock())

    def give_back(self, sim: Simulation, node: Node) -> None:
        """``node`` returns: up again, and a pass asked for in its VC, unless a fault still holds it down."""
        self.returns += 1
        sim.node_up(node, reclaim=True)
        self._sync(node, sim.clock())

    def _sync(self, node: Node, now: float) -> None:
        """Count ``node``'s GPUs up or down as it now is (a reclaim, a return, or a fault of a spot node)."""
        if node.up == (id(node) in self._down):
            if node.up:
                self._down.discard(id(node))
            else:
                self._down.add(id(node))
            self._count_up(now, node.gpu_count if node.up else -node.gpu_count)

    def on_node_down(self, node_name: str, now: float) -> None:  # (faults: reclaims sync themselves)
        node = self._by_name.get(node_name)
        if node is not None:
            self._sync(node, now)

    on_node_up = on_node_down

    # --- the spot GPUs' use over time (observer hooks) --------------------------------------------------------
    def _advance(self, now: float) -> None:
        span = now - self._since
        if span > 0:
            self._busy_seconds += self._busy * span
            self._up_seconds += self._up * span
            self._since = now

    def _count_up(self, now: float, delta: int) -> None:
        self._advance(now)
        self._up += delta

    def on_start(self, job: Job, now: float) -> None:
        spot = self._spot
        held = sum(len(ids) for node, ids in job.allocation if id(node) in spot)
        if held:
            self._advance(now)
            self._busy += held
            self._held[job] = held

    def _left(self, job: Job, now: float) -> None:
        held = self._held.pop(job, 0)
        if held:
            self._advance(now)
            self._busy -= held

    on_finish = on_preempt = on_move = _left

    def on_restart(self, job: Job, now: float) -> None:  # (a failure: back in its queue unless it kept its GPUs)
        if not job.allocation:
            self._left(job, now)

    def figures(self, end: float) -> dict[str, Any]:
        """The spot nodes' figures: reclaims, evictions by them and the work they threw away, and the spot GPUs'
        allocation (GPU-time busy over GPU-time up)."""
        self._advance(end)
        gpus = sum(node.gpu_count for node in self.nodes)
        return {"spot_nodes": len(self.nodes), "spot_gpus": gpus, "reclaims": self.reclaims,
                "evictions": self.evictions, "jobs_evicted": len(self.evicted),
                "gpu_hours_lost": round(self.gpu_seconds_lost / 3600.0, 4),
                "gpu_hours_up": round(self._up_seconds / 3600.0, 4),
                "gpu_hours_busy": round(self._busy_seconds / 3600.0, 4),
                "allocation": round(self._busy_seconds / self._up_seconds, 4) if self._up_seconds > 0 else None,
                "eviction_cost_s": self.cost, "guaranteed_jobs": "allowed" if self.guaranteed_anywhere else "kept off"}
