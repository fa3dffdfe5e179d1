"""Slurm's topology-aware placements: topology/tree (``slurm-tree``) and topology/block (``slurm-block``) as
placements of a run, each by its rule in :mod:`simcluster.topology.slurm_select`.

Slurm gives a job whole nodes, so here a job of g GPUs on nodes of G GPUs takes ⌈g/G⌉ nodes whose GPUs are all
free (a node with one GPU busy is not free for Slurm, whoever holds it): G GPUs on each, and on the last (the
highest-placed of its nodes) the g - (n-1)·G left over, the rest of that node staying idle as under
``--exclusive``.  A job of at most one node's GPUs takes one free node with room for it; on nodes of different
sizes a job of several nodes takes nodes of the largest size (G is theirs).

``slurm-tree``'s switches are the topology's levels, its leaf switches the lowest named level (rack, ASW,
Slurm's ``switchK``).  On a Slurm tree-form topology.conf (levels ``switch1`` to ``switchK``) several top switches
are separate fabrics, as in Slurm: a job never spans two (one that no tree could hold stalls the run).  Any other
topology's top level is taken to hang from one network, as a cluster's racks or blocks do, so the rule may go
above it.  ``slurm-block``'s base blocks are the lowest named level: the blocks of a block-form topology.conf
(its only level), the racks or ASWs of any other topology; a level-k block is 2**k consecutive base blocks.  The
planning base block size is the smallest base block of the pool (Slurm refuses a base block below it), and the
enforced block levels Slurm's default, 1, 2, 4, 8 and 16 base blocks: the run's nodes do not carry a
topology.conf's own ``BlockSizes``.

A job's topology request (``--topology-request``, the trace's columns): ``required:LEVEL`` keeps all its nodes in
one domain of LEVEL (Slurm's ``--switches=1`` waiting as long as it takes): Slurm's own choice where it lies in
one, else Slurm's rule inside the domain of LEVEL with the fewest free nodes that hold the job, else the job waits.
``preferred:LEVEL`` changes nothing: Slurm's rule already keeps a job in as few switches or blocks as it can.
Pods (``pod_gpus``) mean nothing to Slurm, which has none: a job takes whole nodes whatever its pods, and under
``slurm-block`` pods of whole nodes are its segments (``--segment``: each in one base block where it fits).  On a
cluster without a topology (no ``--topology``) the nodes hang from one switch, as Slurm sees a cluster without a
topology plugin: a job takes the first free nodes, in node order.

>>> from dataclasses import replace
>>> from simcluster.cluster import Cluster
>>> from simcluster.cluster_spec import ClusterSpec
>>> from simcluster.topology.costs import ClusterTopology
>>> from simcluster.topology.model import Topology
>>> racks = Topology.from_labels(("rack",), [f"a/n{i}" for i in range(5)], [["r0", "r0", "r0", "r1", "r1"]])
>>> vc = Cluster(replace(ClusterSpec.uniform({"a": 5}), topology=ClusterTopology(racks, (0.0, 0.0)))).vcs["a"]
>>> job = Job(index=0, job_id="j", vc="a", gpu_num=12, submit_time=0, duration=1)
>>> [(node.name, gpus) for node, gpus in SlurmTree().place(job, vc)]   # r1 holds 2 nodes, all r0 has is 3
[('a/n3', 8), ('a/n4', 4)]
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simcluster.cluster import Node, Pool
from simcluster.job import Job
from simcluster.placement.base import PLACEMENTS, Placement, Plan
from simcluster.placement.domain_free import tree_of_pool
from simcluster.placement.topology_aware import free_counts
from simcluster.topology.arrays import NODE
from simcluster.topology.kueue import Tree
from simcluster.topology.slurm_select import DEFAULT_BLOCK_LEVELS, block_select, tree_select

FABRIC = "(fabric)"  # the level slurm-tree puts above a topology's top domains where one network joins them


@dataclass(frozen=True, eq=False)
class PoolView:
    """What Slurm's rules need of one pool, built once (its nodes never change): the nodes, each one's GPUs, the
    pool's topology tree (for requests) and the tree the rule walks (switches, or the base blocks side by side)."""

    nodes: list[Node]
    gpus: np.ndarray
    topology: Tree
    walked: Tree
    base: int  # topology/block's planning base block size: the smallest base block (nodes)

    def domains_at(self, level: str) -> np.ndarray:
        """Each node's domain at ``level`` of the pool's topology (``node``: the node itself)."""
        if level == NODE:
            return np.arange(len(self.nodes))
        domain = self.topology.parents[-1]
        for k in range(len(self.topology.levels) - 2, self.topology.level(level), -1):
            domain = self.topology.parents[k][domain]
        return domain


class SlurmTopology(Placement):
    """Slurm's selection by a topology plugin, on whole nodes (the module's docstring says how it is read).

    It reads the topology and jobs' requests (``topology_aware``) but keeps its own trees, not
    :class:`~simcluster.placement.topology_aware.TopologyAware`'s tallies of free pods per domain: Slurm counts
    whole free nodes, read off the pool's buckets at each decision (:func:`free_counts`).

    >>> from simcluster.cluster import Cluster
    >>> vc = Cluster({"a": 3}, 8).vcs["a"]
    >>> _ = vc.nodes[0].allocate(Job(index=0, job_id="busy", vc="a", gpu_num=1, submit_time=0, duration=1), 1)
    >>> job = Job(index=1, job_id="j", vc="a", gpu_num=2, submit_time=0, duration=1)
    >>> [(node.name, gpus) for node, gpus in SlurmBlock().place(job, vc)]   # a/n0 has a GPU busy: not free
    [('a/n1', 2)]
    """

    topology_aware: ClassVar[bool] = True
    plugin: ClassVar[str] = "tree"  # or block

    def __init__(self, rng: random.Random | None = None) -> None:
        super().__init__(rng)
        self._views: dict[int, PoolView] = {}  # by the pool (its nodes never change)

    def place(self, job: Job, vc: Pool) -> Plan | None:
        if job.gpu_num > vc.free_gpus:
            return None
        view = self._view_of(vc)
        per_node = vc.gpus_per_node
        count = -(-job.gpu_num // per_node)
        free = (free_counts(vc) == view.gpus) & (view.gpus >= min(job.gpu_num, per_node))
        if np.count_nonzero(free) < count:
            return None
        chosen = self._select(view, free, count, job, per_node)
        request = job.topology
        if chosen is not None and request is not None and request.mode == "required":
            chosen = self._within(view, free, count, job, per_node, chosen, view.domains_at(request.level))
        if chosen is None:
            return None
        plan: Plan = [(view.nodes[i], per_node) for i in chosen[:-1].tolist()]
        plan.append((view.nodes[int(chosen[-1])], job.gpu_num - (count - 1) * per_node))  # the last: what is left
        return plan

    def _within(self, view: PoolView, free: np.ndarray, count: int, job: Job, per_node: int, chosen: np.ndarray,
                domain: np.ndarray) -> np.ndarray | None:
        """``chosen`` where it lies in one domain, else Slurm's rule inside the tightest domain that holds the job
        (fewest free nodes, ties to the first), the domain taken as a topology of its own, else the next, else
        None."""
        if (domain[chosen] == domain[chosen[0]]).all():
            return chosen
        room = np.bincount(domain, weights=free)
        for candidate in sorted(np.flatnonzero(room >= count).tolist(), key=lambda d: (room[d], d)):
            inside = self._select(view, free, count, job, per_node, among=np.flatnonzero(domain == candidate))
            if inside is not None:
                return inside
        return None

    def _select(self, view: PoolView, free: np.ndarray, count: int, job: Job, per_node: int,
                among: np.ndarray | None = None) -> np.ndarray | None:
        """The ``count`` nodes Slurm's plugin chooses among ``free`` ones, sorted, or None; ``among``: only these
        nodes, as a topology of their own (a block's base blocks then count from the first of theirs)."""
        if self.plugin == "tree":
            if among is not None:
                free = np.isin(np.arange(len(free)), among) & free
            return tree_select(view.walked, free, count)
        pod = job.topology.pod_gpus if job.topology is not None else 0
        segment = pod // per_node if pod and pod % per_node == 0 else None  # pods of whole nodes: segments
        blocks, members = view.walked, np.arange(len(free))
        if among is not None:
            kept, local = np.unique(blocks.parents[-1][among], return_inverse=True)
            blocks, members = Tree(("block", NODE), (np.full(len(kept), -1), local.reshape(-1))), among
        segments = block_select(blocks, free[members], count, segment=segment,
                                block_sizes=[view.base << k for k in DEFAULT_BLOCK_LEVELS])
        return None if segments is None else members[np.sort(np.concatenate(segments))]

    def _view_of(self, vc: Pool) -> PoolView:
        known = self._views.get(id(vc))
        if known is None:
            nodes = list(vc.nodes)
            tree = tree_of_pool(vc, f"placement {self.name}")  # (no topology: one switch above every node)
            gpus = np.array([node.gpu_count for node in nodes], dtype=np.int64)
            walked = self._walked(tree)
            base = int(np.bincount(walked.parents[-1]).min())
            known = self._views[id(vc)] = PoolView(nodes, gpus, tree, walked, base)
        return known

    def _walked(self, tree: Tree) -> Tree:
        """The tree Slurm's rule walks: the base blocks side by side (block); the switches (tree), under one
        more switch where the top holds several domains that are not a Slurm forest."""
        if self.plugin == "block":
            return Tree(("block", NODE), (np.full(tree.sizes[-2], -1), tree.parents[-1]))
        named = tree.levels[:-1]
        forest = named == tuple(f"switch{k + 1}" for k in range(len(named)))
        if forest or tree.sizes[0] == 1:
            return tree
        return Tree((FABRIC, *tree.levels), (np.array([-1]), np.zeros(tree.sizes[0], dtype=np.int64),
                                             *tree.parents[1:]))


@PLACEMENTS.register("slurm-tree")
class SlurmTree(SlurmTopology):
    """Slurm's topology/tree: the lowest switch that holds the job's whole nodes, best fit among its leaf switches.

    >>> from simcluster.cluster import Cluster
    >>> vc = Cluster({"a": 3}, 8).vcs["a"]
    >>> job = Job(index=0, job_id="j", vc="a", gpu_num=12, submit_time=0, duration=1)
    >>> [(node.name, gpus) for node, gpus in SlurmTree().place(job, vc)]   # no topology: the first free nodes
    [('a/n0', 8), ('a/n1', 4)]
    """

    name = "slurm-tree"
    plugin = "tree"

    def room_class(self, job: Job, vc: Pool) -> tuple:
        """Jobs among which finding no room is monotone in their GPUs (:class:`Placement`): topology/tree finds none
        only where no switch holds the free nodes a job needs (no domain of its required level, for a required
        one), and more GPUs need as many nodes or more, of at least as many GPUs each."""
        request = job.topology
        return ("required", request.level) if request is not None and request.mode == "required" else ("anywhere",)


@PLACEMENTS.register("slurm-block")
class SlurmBlock(SlurmTopology):
    """Slurm's topology/block: whole nodes in the fewest base blocks of the smallest block that holds the job.

    >>> from simcluster.cluster import Cluster
    >>> vc = Cluster({"a": 3}, 8).vcs["a"]
    >>> job = Job(index=0, job_id="j", vc="a", gpu_num=16, submit_time=0, duration=1)
    >>> [(node.name, gpus) for node, gpus in SlurmBlock().place(job, vc)]   # no topology: the first free nodes
    [('a/n0', 8), ('a/n1', 8)]
    """

    name = "slurm-block"
    plugin = "block"
    # (no room_class: not monotone, as Slurm's block levels are not: a job that must fit in one base block may
    # wait while a larger one, allowed two, starts)
