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
(its only level), the racks or ASWs of any other topology; a level-k block is 2**k consecutive base blocks.  A
block-form topology.conf's block sizes are Slurm's: its ``BlockSizes`` (the first the planning base block size,
each next a power-of-two multiple of it, which its reader checks; a block smaller than the planning size is
refused there, as Slurm refuses it), or without them Slurm's default, the first block's size times 1, 2, 4, 8
and 16, up to the first that covers every block.  A VC holding only part of a block sees it as a base block with
fewer nodes, planned at the file's size, as a Slurm partition sees one.  Any other topology has no block sizes:
the planning base block size is then the smallest base block of the pool and the enforced levels 1, 2, 4, 8 and
16 base blocks.

A job's topology request (``--topology-request``, the trace's columns): ``required:LEVEL`` keeps all its nodes in
one domain of LEVEL (Slurm's ``--switches=1`` waiting as long as it takes): Slurm's own choice where it lies in
one, else Slurm's rule inside the domain of LEVEL with the fewest free nodes that hold the job, else the job waits.
``preferred:LEVEL`` changes nothing: Slurm's rule already keeps a job in as few switches or blocks as it can.
Pods (``pod_gpus``) mean nothing to Slurm, which has none: a job takes whole nodes whatever its pods, and under
``slurm-block`` pods of whole nodes are its segments (``--segment``: each in one base block where it fits).  On a
cluster without a topology (no ``--topology``) the nodes hang from one switch, as Slurm sees a cluster without a
topology plugin: a job takes the first free nodes, in node order.

A decision costs the domains it reads, not the pool's nodes: each pool's whole free nodes per domain are kept up
to date as nodes are taken and freed (:class:`WholeFree`), and the rules read them (:func:`tree_choice`,
:func:`block_choice`).  A job needing more whole free nodes than the pool has is refused without a search, and a
search that found nothing is not made again before a node becomes whole free or stops being (its answer cannot
change).  :meth:`SlurmTopology.place_plainly` is the same decision read off every node's free GPUs, which the
tests hold equal to it.

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
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from simcluster.cluster import Node, Pool
from simcluster.job import Job
from simcluster.placement.base import PLACEMENTS, Placement, Plan
from simcluster.placement.domain_free import tree_of_pool
from simcluster.placement.topology_aware import free_counts
from simcluster.topology.arrays import NODE
from simcluster.topology.kueue import Tree
from simcluster.topology.slurm_select import (
    DEFAULT_BLOCK_LEVELS,
    block_choice,
    block_levels,
    block_select,
    tree_choice,
    tree_select,
)

FABRIC = "(fabric)"  # the level slurm-tree puts above a topology's top domains where one network joins them


class WholeFree:
    """A pool's whole free nodes (up, every GPU free: the nodes Slurm counts) per domain of its topology ``tree``,
    by node size, kept up to date from the pool's log of the nodes whose free GPUs changed
    (:meth:`~simcluster.cluster.Pool.watch_free`, as :class:`~simcluster.placement.domain_free.DomainFree` keeps
    free GPUs).  The lowest named level's counts are kept (a node that changes costs one entry); a level above is
    summed from them when read (its domains, never the nodes), which the rules rarely need: most jobs fit in one
    leaf switch or base block.  Read it after :meth:`sync`.

    >>> from simcluster.cluster import Cluster
    >>> from simcluster.topology.request import pool_tree
    >>> vc = Cluster({"a": 4}, 8).vcs["a"]
    >>> state = WholeFree(vc, pool_tree([(0, 0), (0, 0), (0, 1), (0, 1)], ("block", "rack")))
    >>> _ = vc.nodes[2].allocate(Job(index=0, job_id="j", vc="a", gpu_num=1, submit_time=0, duration=1), 1)
    >>> state.sync()
    >>> state.at(1, 8).tolist(), state.at(0, 8).tolist(), state.first_free(1, 1, 8)
    ([2, 1], [3], [3])
    """

    def __init__(self, pool: Pool, tree: Tree) -> None:
        self.pool, self.tree = pool, tree
        nodes = pool.nodes
        self.gpus = np.array([node.gpu_count for node in nodes], dtype=np.int64)
        self.sizes: list[int] = sorted(set(self.gpus.tolist()))  # the pool's node sizes: a column of counts each
        size_of = np.searchsorted(self.sizes, self.gpus)
        self._size_of: list[int] = size_of.tolist()
        self._whole = [node.bucket == node.gpu_count for node in nodes]  # (bucket None: down)
        self.whole = np.array(self._whole, dtype=bool)  # (the same as an array, to read a domain's nodes at once)
        self.named = named = len(tree.levels) - 1
        self.lowest = named - 1  # the index of the lowest named level: leaf switches, base blocks
        domain_of = [tree.parents[named]]
        for k in range(named - 1, 0, -1):
            domain_of.append(tree.parents[k][domain_of[-1]])
        self.domain_of: list[np.ndarray] = domain_of[::-1]  # each node's domain at each named level, top-down
        self._domain: list[int] = self.domain_of[-1].tolist()
        width = len(self.sizes)
        self.counts = (np.bincount(self.domain_of[-1] * width + size_of, weights=self.whole,
                                   minlength=tree.sizes[self.lowest] * width)
                       .astype(np.int64).reshape(tree.sizes[self.lowest], width))
        self.total: list[int] = self.counts.sum(axis=0).tolist()
        # each lowest domain's domain at each named level (its own last), to sum a level from the lowest
        above = [np.arange(tree.sizes[self.lowest])]
        for k in range(self.lowest, 0, -1):
            above.append(tree.parents[k][above[-1]])
        self._above = above[::-1]
        # a named level's domains are numbered by parent (pool_tree), so a domain's children are one range
        self._child_start = [np.searchsorted(tree.parents[k + 1], np.arange(tree.sizes[k] + 1)).tolist()
                             for k in range(self.lowest)]
        order = np.argsort(tree.parents[named], kind="stable")  # the nodes of each lowest domain, in pool order
        bounds = np.searchsorted(tree.parents[named][order], np.arange(tree.sizes[self.lowest] + 1))
        self.nodes_of = [order[bounds[d]:bounds[d + 1]] for d in range(tree.sizes[self.lowest])]
        # one node size (the common case): the lowest domains filed by their whole free nodes, as the pool files
        # nodes by free GPUs, so that the tightest one holding a job is a few integer operations
        self.uniform = width == 1
        self._held: list[int] = self.counts[:, 0].tolist() if self.uniform else []
        self._holding = [0] * (max(len(members) for members in self.nodes_of) + 1)  # bit d: domain d holds v
        for domain, held in enumerate(self._held):
            self._holding[held] |= 1 << domain
        self._some = sum(1 << held for held, mask in enumerate(self._holding) if mask)  # bit v: a domain holds v
        # a lowest domain's nodes where they are a run of positions (a topology matched in node order): their
        # whole free ones are a slice of the pool's bucket of nodes with every GPU free
        self._run = [(int(members[0]), (1 << len(members)) - 1) if members[-1] - members[0] == len(members) - 1
                     else None for members in self.nodes_of]
        self.changes = pool.watch_free()
        self.version = 0  # counts changes: a decision read off the same version is the same decision

    def sync(self) -> None:
        """Take in the nodes whose free GPUs changed since the last call: only a node that became whole free, or
        stopped being, changes a count."""
        changes = self.changes
        if not changes:
            return
        nodes, was, whole, counts, total = self.pool.nodes, self._whole, self.whole, self.counts, self.total
        for position in set(changes):
            node = nodes[position]
            now = node.bucket == node.gpu_count
            if now is not was[position]:
                was[position] = whole[position] = now
                self.version += 1
                step, size, domain = (1 if now else -1), self._size_of[position], self._domain[position]
                counts[domain, size] += step
                total[size] += step
                if self.uniform:
                    self._refile(domain, step)
        changes.clear()

    def _refile(self, domain: int, step: int) -> None:
        before = self._held[domain]
        after = self._held[domain] = before + step
        holding, bit = self._holding, 1 << domain
        holding[before] ^= bit
        if not holding[before]:
            self._some ^= 1 << before
        holding[after] |= bit
        self._some |= 1 << after

    def tightest(self, nodes: int, last: bool) -> int | None:
        """(One node size only) the lowest named level's domain with the fewest whole free nodes of those that
        hold ``nodes``: the last of equals if ``last``, else the first; None where none holds them."""
        some = self._some >> nodes
        if not some:
            return None
        mask = self._holding[nodes + (some & -some).bit_length() - 1]
        return mask.bit_length() - 1 if last else (mask & -mask).bit_length() - 1

    def at(self, level: int, least: int) -> np.ndarray:
        """Whole free nodes of at least ``least`` GPUs in each domain of named ``level`` (read-only)."""
        column = bisect_left(self.sizes, least)
        lowest = self.counts[:, column] if column == len(self.sizes) - 1 else self.counts[:, column:].sum(axis=1)
        if level == self.lowest:
            return lowest
        return np.bincount(self._above[level], weights=lowest, minlength=self.tree.sizes[level]).astype(np.int64)

    def levels(self, least: int, above: int = 0) -> LevelCounts:
        """:meth:`at` for every named level, each summed when first read, under ``above`` levels of one domain
        (slurm-tree's fabric)."""
        return LevelCounts(self, least, above)

    def available(self, least: int) -> int:
        """Whole free nodes of at least ``least`` GPUs in the pool."""
        return sum(self.total[bisect_left(self.sizes, least):])

    def first_free(self, domain: int, take: int, least: int, skip: int = 0) -> list[int]:
        """The lowest ``take`` whole free nodes of at least ``least`` GPUs of ``domain`` (of the lowest named
        level) after its first ``skip`` such nodes, by position in the pool."""
        run = self._run[domain] if self.uniform else None
        if run is not None:  # its bits of the pool's nodes with every GPU free, lowest first
            first, width = run
            mask, found = (self.pool.buckets[self.sizes[0]] >> first) & width, []
            while mask and len(found) < skip + take:
                low = mask & -mask
                found.append(first + low.bit_length() - 1)
                mask ^= low
            return found[skip:]
        members = self.nodes_of[domain]
        keep = self.whole[members] & (self.gpus[members] >= least)
        return members[keep][skip:skip + take].tolist()

    def lowest_span(self, level: int, domain: int) -> tuple[int, int]:
        """The range of lowest named level domains (base blocks) under ``domain`` of named ``level``."""
        low, high = domain, domain + 1
        for k in range(level, self.lowest):
            low, high = self._child_start[k][low], self._child_start[k][high]
        return low, high


class LevelCounts(Sequence[np.ndarray]):
    """Whole free nodes per domain of each level of the tree a rule walks, each level summed when first read
    (:meth:`WholeFree.levels`): topology/tree climbs above the leaf switches only for a job none of them holds."""

    def __init__(self, state: WholeFree, least: int, above: int) -> None:
        self.state, self.least, self.above = state, least, above
        self._known: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return self.above + self.state.named

    def __getitem__(self, level: int) -> np.ndarray:  # type: ignore[override]
        known = self._known.get(level)
        if known is None:
            known = self._known[level] = self._count(level)
        return known

    def _count(self, level: int) -> np.ndarray:
        if level < self.above:  # the fabric above the top: one domain
            return np.array([self[self.above].sum()])
        return self.state.at(level - self.above, self.least)


@dataclass(frozen=True, eq=False)
class PoolView:
    """What Slurm's rules need of one pool, built once (its nodes never change): the nodes, each one's GPUs, the
    pool's topology tree (for requests), the tree the rule walks (switches, or the base blocks side by side), the
    block sizes and the whole free nodes per domain, kept up to date."""

    nodes: list[Node]
    gpus: np.ndarray
    topology: Tree
    walked: Tree
    base: int  # topology/block's planning base block size (nodes)
    levels: tuple[int, ...]  # ... and its enforced block levels: a level-k block is 2**k base blocks
    free: WholeFree
    above: int  # levels the walked tree has above the topology's (FABRIC)
    failed: dict[tuple, int] = field(default_factory=dict)  # searches that found nothing → WholeFree.version then

    def domains_at(self, level: str) -> np.ndarray:
        """Each node's domain at ``level`` of the pool's topology (``node``: the node itself)."""
        if level == NODE:
            return np.arange(len(self.nodes))
        return self.free.domain_of[self.topology.level(level)]


class SlurmTopology(Placement):
    """Slurm's selection by a topology plugin, on whole nodes (the module's docstring says how it is read).

    It reads the topology and jobs' requests (``topology_aware``) but keeps its own tallies, not
    :class:`~simcluster.placement.topology_aware.TopologyAware`'s of free pods per domain: Slurm counts whole free
    nodes (:class:`WholeFree`).

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
        least = min(job.gpu_num, per_node)  # a node's GPUs, at least
        state = view.free
        state.sync()
        if state.available(least) < count:  # no rule finds more whole free nodes than the pool has
            return None
        segment = _segment(job, per_node)
        request = job.topology
        within = request.level if request is not None and request.mode == "required" else None
        search = (count, least, segment, within)
        if view.failed.get(search) == state.version:  # the same search on the same free nodes: the same answer
            return None
        chosen = self._choose(view, count, least, segment)
        if chosen is not None and within is not None:
            chosen = self._choose_within(view, count, least, segment, chosen, within)
        if chosen is None:
            view.failed[search] = state.version
            return None
        return _plan(view, job, chosen, count, per_node)

    def _choose(self, view: PoolView, count: int, least: int, segment: int | None,
                inside: tuple[int, int] | None = None) -> list[int] | None:
        """The ``count`` nodes Slurm's plugin chooses, sorted, or None, read off the whole free nodes per domain;
        ``inside`` (topology/block only): (level, domain) of the topology, the only nodes to choose from, as a
        topology of their own."""
        state = view.free
        if self.plugin == "tree":
            if state.uniform:  # tree_choice's first step: the tightest leaf switch that holds the job
                leaf = state.tightest(count, last=False)
                if leaf is not None:
                    return state.first_free(leaf, count, least)
            picked = tree_choice(view.walked, state.levels(least, view.above), count)
            if picked is None:
                return None
            return sorted(node for leaf, take in zip(*(part.tolist() for part in picked), strict=True)
                          for node in state.first_free(leaf, take, least))
        if inside is None and state.uniform and count <= view.base and (segment or count) >= count:
            # one base block holds it, and it may use one only: the tightest, ties to the last (_place_segment)
            block = state.tightest(count, last=True)
            return None if block is None else state.first_free(block, count, least)
        on_base, first = state.at(state.lowest, least), 0
        if inside is not None:  # the domain's base blocks, counted from its first
            first, stop = state.lowest_span(*inside)
            on_base = on_base[first:stop]
        plan = block_choice(on_base, count, view.base, view.levels, segment=segment)
        if plan is None:
            return None
        taken: dict[int, int] = {}  # nodes taken from each base block by earlier segments
        picked: list[int] = []
        for used, takes in plan:
            for block, take in zip(used.tolist(), takes.tolist(), strict=True):
                block += first
                picked += state.first_free(block, take, least, skip=taken.get(block, 0))
                taken[block] = taken.get(block, 0) + take
        return sorted(picked)

    def _choose_within(self, view: PoolView, count: int, least: int, segment: int | None, chosen: list[int],
                       level_name: str) -> list[int] | None:
        """``chosen`` where it lies in one domain of ``level_name``, else Slurm's rule inside the tightest domain
        that holds the job (fewest whole free nodes, ties to the first), else the next, else None."""
        if level_name == NODE:  # (a domain of one node holds a job of one node only)
            return chosen if len(chosen) == 1 else None
        level = view.topology.level(level_name)
        domain = view.free.domain_of[level]
        if (domain[chosen] == domain[chosen[0]]).all():
            return chosen
        if self.plugin == "tree":  # (Slurm's own choice lies under the lowest switch that holds the job: were a
            return None  # domain of the level to hold it, that switch would lie inside one)
        room = view.free.at(level, least)
        for candidate in sorted(np.flatnonzero(room >= count).tolist(), key=lambda d: (room[d], d)):
            inside = self._choose(view, count, least, segment, inside=(level, candidate))
            if inside is not None:
                return inside
        return None

    def place_plainly(self, job: Job, vc: Pool) -> Plan | None:
        """:meth:`place`'s decision read off every node's free GPUs: a mask of the whole free nodes, given to
        :func:`~simcluster.topology.slurm_select.tree_select` or
        :func:`~simcluster.topology.slurm_select.block_select` as Slurm's plugins take it.  The reference the
        tests hold :meth:`place` equal to, at a cost that grows with the pool."""
        if job.gpu_num > vc.free_gpus:
            return None
        view = self._view_of(vc)
        per_node = vc.gpus_per_node
        count = -(-job.gpu_num // per_node)
        free = (free_counts(vc) == view.gpus) & (view.gpus >= min(job.gpu_num, per_node))
        if np.count_nonzero(free) < count:
            return None
        segment = _segment(job, per_node)
        chosen = self._select(view, free, count, segment)
        request = job.topology
        if chosen is not None and request is not None and request.mode == "required":
            chosen = self._within(view, free, count, segment, chosen, view.domains_at(request.level))
        return None if chosen is None else _plan(view, job, chosen.tolist(), count, per_node)

    def _within(self, view: PoolView, free: np.ndarray, count: int, segment: int | None, chosen: np.ndarray,
                domain: np.ndarray) -> np.ndarray | None:
        """(:meth:`_choose_within` on the mask ``free``)"""
        if (domain[chosen] == domain[chosen[0]]).all():
            return chosen
        room = np.bincount(domain, weights=free)
        for candidate in sorted(np.flatnonzero(room >= count).tolist(), key=lambda d: (room[d], d)):
            inside = self._select(view, free, count, segment, among=np.flatnonzero(domain == candidate))
            if inside is not None:
                return inside
        return None

    def _select(self, view: PoolView, free: np.ndarray, count: int, segment: int | None,
                among: np.ndarray | None = None) -> np.ndarray | None:
        """The ``count`` nodes Slurm's plugin chooses among ``free`` ones, sorted, or None; ``among``: only these
        nodes, as a topology of their own (a block's base blocks then count from the first of theirs)."""
        if self.plugin == "tree":
            if among is not None:
                free = np.isin(np.arange(len(free)), among) & free
            return tree_select(view.walked, free, count)
        blocks, members = view.walked, np.arange(len(free))
        if among is not None:
            kept, local = np.unique(blocks.parents[-1][among], return_inverse=True)
            blocks, members = Tree(("block", NODE), (np.full(len(kept), -1), local.reshape(-1))), among
        segments = block_select(blocks, free[members], count, segment=segment,
                                block_sizes=[view.base << k for k in view.levels], partial_blocks=True)
        return None if segments is None else members[np.sort(np.concatenate(segments))]

    def _view_of(self, vc: Pool) -> PoolView:
        known = self._views.get(id(vc))
        if known is None:
            nodes = list(vc.nodes)
            tree = tree_of_pool(vc, f"placement {self.name}")  # (no topology: one switch above every node)
            gpus = np.array([node.gpu_count for node in nodes], dtype=np.int64)
            walked = self._walked(tree)
            sizes = vc.topology_block_sizes
            if sizes:  # a block-form topology.conf's: its BlockSizes, or Slurm's default for it
                base, levels = block_levels(sizes, sizes[0])
            else:
                base, levels = int(np.bincount(tree.parents[-1]).min()), DEFAULT_BLOCK_LEVELS
            known = self._views[id(vc)] = PoolView(nodes, gpus, tree, walked, base, levels, WholeFree(vc, tree),
                                                   len(walked.levels) - len(tree.levels))
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


def _segment(job: Job, per_node: int) -> int | None:
    """A job's pods as Slurm's segments (nodes each): only pods of whole nodes are."""
    pod = job.topology.pod_gpus if job.topology is not None else 0
    return pod // per_node if pod and pod % per_node == 0 else None


def _plan(view: PoolView, job: Job, chosen: list[int], count: int, per_node: int) -> Plan:
    """Whole nodes, the last (highest-placed) taking what is left of the job."""
    plan: Plan = [(view.nodes[i], per_node) for i in chosen[:-1]]
    plan.append((view.nodes[chosen[-1]], job.gpu_num - (count - 1) * per_node))
    return plan


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
