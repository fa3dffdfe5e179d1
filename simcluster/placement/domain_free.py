"""A pool's free GPUs per domain of its topology, kept up to date as GPUs are taken and freed.

Kueue's assignment (:mod:`simcluster.topology.kueue`) reads how many pods fit in every domain of every level.
Summing them from the nodes at each decision costs every node of the cluster; a large run takes tens of
thousands of decisions.  Here each level keeps, per domain, how many of its nodes have each free count (a
``domains × (GPUs per node + 1)`` array), updated from the pool's log of the nodes whose free count changed
(:meth:`~simcluster.cluster.Pool.watch_free`): a change costs its node's levels, and the pods of ``p`` GPUs
that fit in a level's domains are one product with ``f // p`` over the free counts ``f``.

The commonest decision, a job of one pod, then needs no assignment at all: Kueue puts it on the domain with the
fewest such pods at the requested level, then likewise level by level down to a node (both BestFit and
LeastFreeCapacity: every domain holding a pod fits it whole), and an unrequested one on the node with the fewest,
which the pool's free-count buckets name directly.  :meth:`DomainFree.one_pod` is that path;
:meth:`DomainFree.balanced_one_pod` is BalancedPlacement's (the candidates under the first domain one level up
with room, the fewest pods, the most even children).  A job of several pods with a level and no slices is
:meth:`DomainFree.place_pods`: Kueue's BestFit, LeastFreeCapacity and BalancedPlacement over the tallies, reading
one level's domains at once and then only the children of the domains chosen (or, for BalancedPlacement, of
those that hold the job one level up).  Tests hold each path equal to :func:`~simcluster.topology.kueue.assign`
on random trees; jobs in slices still go through it.

>>> from simcluster.cluster import Cluster
>>> from simcluster.job import Job
>>> vc = Cluster({"a": 4}, 8).vcs["a"]
>>> tree = pool_tree([(0,), (0,), (1,), (1,)], ("rack",))
>>> state = DomainFree(vc, tree)
>>> job = Job(index=0, job_id="j", vc="a", gpu_num=6, submit_time=0, duration=1)
>>> _ = vc.nodes[2].allocate(job, 6)
>>> state.pods_per_domain(0, 2).tolist()   # pods of 2 GPUs per rack: 4 + 4, then 1 + 4
[8, 5]
>>> state.one_pod(2, 0)                   # the rack with fewer, then its node with the fewest
2
>>> state.place_pods(2, 6, "preferred", 0, "balanced")  # 6 pods of 2: 3 + 3 on the two whole nodes of rack 0
{0: 3, 1: 3}
"""

from __future__ import annotations

import functools
import itertools
import operator
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from simcluster.cluster import Pool
from simcluster.topology.kueue import Tree, evenness
from simcluster.topology.request import pool_tree

__all__ = ["DomainFree", "pool_tree", "tree_of_pool"]


def tree_of_pool(pool: Pool, who: str) -> Tree:
    """The topology tree over ``pool``'s nodes (its leaves, in the pool's order); on a cluster without a topology,
    its nodes side by side under one domain.  A pool only partly in the topology is an error naming ``who``.

    >>> from simcluster.cluster import Cluster
    >>> tree_of_pool(Cluster({"a": 3}, 8).vcs["a"], "placement x").sizes
    (1, 3)
    """
    nodes = pool.nodes
    outside = sum(node.domains is None for node in nodes)
    if 0 < outside < len(nodes):
        raise ValueError(f"{who}: {outside} of the {len(nodes)} nodes of {getattr(pool, 'name', '') or 'a pool'} "
                         "are not in the cluster's topology")
    if outside:
        return pool_tree([()] * len(nodes), ())
    return pool_tree([node.domains for node in nodes], pool.topology_levels)  # type: ignore[misc]


class DomainFree:
    """Per level of ``tree`` (whose leaves are ``pool``'s nodes, in its order; its named levels' domains numbered
    by parent, as :func:`pool_tree` numbers them), how many nodes of each domain have each free count; and each
    node's free GPUs (0 while down).  Read it after :meth:`sync`."""

    def __init__(self, pool: Pool, tree: Tree) -> None:
        self.pool, self.tree = pool, tree
        self.leaf = len(tree.levels) - 1
        width = pool.gpus_per_node + 1
        self.width = width
        free = np.zeros(len(pool.nodes), dtype=np.int64)
        for count, mask in enumerate(pool.buckets):
            for position in _bits(mask):
                free[position] = count
        # each node's domain at each level above it, top-down, and the levels' node-count tables
        above = [tree.parents[self.leaf]]
        for k in range(self.leaf - 1, 0, -1):
            above.append(tree.parents[k][above[-1]])
        self.domain_of: list[np.ndarray] = above[::-1]
        tables = [np.bincount(d * width + free, minlength=tree.sizes[k] * width) for k, d in enumerate(self.domain_of)]
        # numpy reads the tallies through arrays that share the memory of Python arrays, which sync updates an
        # item at a time (a numpy item costs several times more): the tables end to end, then the free counts
        self._cells = array("q", np.concatenate([*tables, free]).tobytes())
        shared = np.frombuffer(self._cells, dtype=np.int64)
        starts = np.cumsum([0] + [len(t) for t in tables]).tolist()
        self.counts = [shared[a:b].reshape(-1, width) for a, b in itertools.pairwise(starts)]
        self.free = shared[starts[-1]:]
        self._free_at = starts[-1]
        # per node, the cell of its free count 0 in each level's table (its domain's row)
        rows = [start + d * width for start, d in zip(starts[:-1], self.domain_of, strict=True)]
        self._rows_of_node = list(zip(*(r.tolist() for r in rows), strict=True))
        # a named level's domains are numbered by parent (pool_tree), so a domain's children are one range
        self.child_start = [np.searchsorted(tree.parents[k + 1], np.arange(tree.sizes[k] + 1))
                            for k in range(self.leaf - 1)]
        self.child_start = [s.tolist() for s in self.child_start]
        self._parents = [p.tolist() for p in tree.parents]
        order = np.argsort(tree.parents[self.leaf], kind="stable")  # the nodes of each lowest domain, in order
        bounds = np.searchsorted(tree.parents[self.leaf][order], np.arange(tree.sizes[self.leaf - 1] + 1))
        self.nodes_of = [order[bounds[d]:bounds[d + 1]] for d in range(tree.sizes[self.leaf - 1])]
        self.node_lists = [nodes.tolist() for nodes in self.nodes_of]
        self._node_masks = [sum(1 << node for node in nodes) for nodes in self.node_lists]  # as the pool's buckets
        self.weights = [np.arange(width) // max(p, 1) for p in range(width)]  # pods of p in each free count
        self.changes = pool.watch_free()
        self._drift = 4 * len(pool.nodes)

    def sync(self) -> None:
        """Take in the nodes whose free count changed since the last call."""
        changes = self.changes
        if not changes:
            return
        nodes, cells, free_at, rows_of_node = self.pool.nodes, self._cells, self._free_at, self._rows_of_node
        for position in changes:  # (a node logged twice is up to date the second time)
            after = nodes[position].bucket or 0  # (None: down, no free GPU)
            before = cells[free_at + position]
            if after == before:
                continue
            cells[free_at + position] = after
            for row in rows_of_node[position]:
                cells[row + before] -= 1
                cells[row + after] += 1
        changes.clear()

    def pods_per_domain(self, level: int, pod: int, first: int = 0, stop: int | None = None) -> np.ndarray:
        """Pods of ``pod`` GPUs that fit in each domain ``first`` … ``stop - 1`` of ``level`` (a named level)."""
        self.sync()
        return self.counts[level][first:stop] @ self.weights[pod]

    def node_pods(self, pod: int) -> np.ndarray:
        """Pods of ``pod`` GPUs that fit on each node (Kueue's free slots per host)."""
        self.sync()
        return self.free // pod

    def level_pods(self, pod: int) -> list[np.ndarray]:
        """Pods of ``pod`` GPUs that fit in each domain of each level, top-down, the nodes' last: what Kueue's
        assignment sums from the nodes (:func:`~simcluster.topology.kueue.assign`'s ``level_pods``)."""
        self.sync()
        weights = self.weights[pod]
        return [table @ weights for table in self.counts] + [self.free // pod]

    def spread(self, pod: int, pods: int, least_free: bool) -> dict[int, int] | None:
        """Where Kueue puts ``pods`` pods of ``pod`` GPUs that may go anywhere (node position → pods), or None:
        on the node with the fewest such pods free that holds them all, else over the nodes in Kueue's order
        (fewest pods first for LeastFreeCapacity, most first for BestFit; then the lower index) until one holds
        the rest, which BestFit gives to the node, of those left, with the fewest pods that holds it.  Read off
        the pool's free-count buckets: a node at a time, never every node."""
        groups = self._pod_groups(pod)
        for held in range(pods, len(groups)):
            if groups[held]:
                return {_lowest(groups[held]): pods}
        taken: dict[int, int] = {}
        left = pods
        for held in (range(1, len(groups)) if least_free else range(len(groups) - 1, 0, -1)):
            mask = groups[held]
            while mask:
                position = _lowest(mask)
                mask &= mask - 1
                if held < left:
                    taken[position] = held
                    left -= held
                    continue
                if not least_free:  # the tightest node left that holds the rest: a smaller group, else this node
                    tighter = next((g for g in range(left, held) if groups[g]), None)
                    if tighter is not None:
                        position = _lowest(groups[tighter])
                taken[position] = left
                return taken
        return None

    def total_pods(self, pod: int) -> int:
        """Pods of ``pod`` GPUs that fit in the whole pool: a bit count per free count, off the pool's buckets.
        A job of more pods has no room anywhere, whatever its request (the commonest failed decision)."""
        return sum(count // pod * mask.bit_count() for count, mask in enumerate(self.pool.buckets) if count >= pod)

    def place_pods(self, pod: int, pods: int, mode: str, level: int, algorithm: str) -> dict[int, int] | None:
        """Where Kueue puts ``pods`` pods of ``pod`` GPUs that ``mode`` (required or preferred) ``level`` (an
        index of the tree's levels), without slices: node position → pods, or None.  The same answer as
        :func:`~simcluster.topology.kueue.assign` with ``algorithm`` (best-fit, least-free or balanced) over
        :meth:`node_pods`, read off the tallies: each level's domains once, then the chosen domains' children
        only (BalancedPlacement: the children of the domains that hold the job one level up)."""
        if algorithm == "balanced" and mode == "preferred" and pods == 1:
            position = self.balanced_one_pod(pod, level)
            return None if position is None else {position: 1}
        view = _Pods(self, pod)
        if algorithm == "balanced" and mode == "preferred":
            start = _balanced(view, pods, level)
            if start is not None:
                return _split_down(view, *start)
        return _fit(view, pods, mode, level, algorithm == "least-free")

    def _pod_groups(self, pod: int) -> list[int]:
        """Per count ``s`` of pods of ``pod`` GPUs, the mask of the nodes that hold exactly ``s`` (0: none)."""
        buckets = self.pool.buckets
        groups = [0] * (len(buckets) // pod + 1)
        for count, mask in enumerate(buckets):
            groups[count // pod] |= mask
        groups[0] = 0
        return groups

    def one_pod(self, pod: int, level: int) -> int | None:
        """Where Kueue puts a job of one pod of ``pod`` GPUs that requires or prefers ``level`` (an index of the
        tree's levels): the node's position in the pool, or None when no node has room.  At ``level`` the domain
        with the fewest such pods that holds one, then so on down; ties go to the lower index, as in
        :func:`~simcluster.topology.kueue.assign`."""
        if level >= self.leaf:
            return self.best_node(pod)
        self.sync()
        domain = _fewest(self.counts[level] @ self.weights[pod])
        return None if domain is None else self._down_to_node(pod, level, domain)

    def balanced_one_pod(self, pod: int, level: int) -> int | None:
        """Where Kueue's BalancedPlacement puts a job of one pod of ``pod`` GPUs that prefers ``level``: the node's
        position, or None.  :meth:`place_pods` with one pod comes to this: the first domain one level up with
        room holds the candidates (the top level: all of its domains), of which the one with the fewest such
        pods wins, the most even children breaking ties (then the lower index); then as :meth:`one_pod`."""
        self.sync()
        weights, leaf = self.weights[pod], self.leaf
        if level == leaf:
            holder = _first_with_room(self.counts[leaf - 1] @ weights)
            return None if holder is None else self._fewest_node(pod, holder)
        pods = (self.counts[level] @ weights).tolist()
        first = 0
        if level:  # domains are numbered by parent: the first one with room is a child of the first holder
            some = next((d for d, p in enumerate(pods) if p), None)
            if some is None:
                return None
            holder = self._parents[level][some]
            first, stop = self.child_start[level - 1][holder], self.child_start[level - 1][holder + 1]
            pods = pods[first:stop]
        fewest = min(filter(None, pods), default=0)
        if not fewest:
            return None
        domain = first + pods.index(fewest)
        if pods.count(fewest) > 1:
            tied = [first + i for i, p in enumerate(pods) if p == fewest]
            domain = max(tied, key=lambda d: (evenness(self._children_pods(pod, level, d)), -d))
        return self._down_to_node(pod, level, domain)

    def _children_pods(self, pod: int, level: int, domain: int) -> list[int]:
        """Pods of ``pod`` GPUs in each child of ``domain`` (of ``level``), in index order."""
        if level + 1 < self.leaf:
            first, stop = self.child_start[level][domain], self.child_start[level][domain + 1]
            return (self.counts[level + 1][first:stop] @ self.weights[pod]).tolist()
        cells, at = self._cells, self._free_at
        return [cells[at + node] // pod for node in self.node_lists[domain]]

    def _down_to_node(self, pod: int, level: int, domain: int) -> int:
        """From ``domain`` (of ``level``, with room for a pod) down to a node: at each level the child with the
        fewest pods of ``pod`` GPUs that holds one, then the lower index."""
        for k in range(level + 1, self.leaf):
            first = self.child_start[k - 1][domain]
            pods = self._children_pods(pod, k - 1, domain)
            domain = first + pods.index(min(filter(None, pods)))
        return self._fewest_node(pod, domain)  # type: ignore[return-value]

    def _fewest_node(self, pod: int, domain: int) -> int | None:
        """The node of ``domain`` (of the lowest named level) with the fewest pods of ``pod`` GPUs that holds one,
        then the lowest position: the pool's buckets of such pods, masked to the domain's nodes."""
        within, buckets = self._node_masks[domain], self.pool.buckets
        for count in range(pod, len(buckets)):
            if buckets[count] & within:  # the fewest pods: every free count that holds as many, lowest node
                fewest = count // pod * pod
                return _lowest(within & functools.reduce(operator.or_, buckets[fewest:fewest + pod]))
        return None

    def best_node(self, pod: int) -> int | None:
        """The node an unrequested pod of ``pod`` GPUs goes to: the fewest such pods free, then the lowest
        index; read off the pool's buckets (nodes with free counts of the same pods, lowest bit first)."""
        if len(self.changes) > self._drift:  # (read nowhere else now: keep the log short)
            self.sync()
        return next((_lowest(mask) for mask in self._pod_groups(pod) if mask), None)


def _fewest(pods: np.ndarray, at_least: int = 1) -> int | None:
    """The index of the smallest entry of at least ``at_least`` (the first of equals), or None if there is none.
    (Read as unsigned, an entry below ``at_least`` less it wraps round to the largest values.)"""
    if not len(pods):
        return None
    where = int((pods - at_least).view(np.uint64).argmin())
    return where if pods[where] >= at_least else None


def _first_with_room(pods: np.ndarray) -> int | None:
    """The index of the first non-zero entry, or None."""
    where = int((pods > 0).argmax())
    return where if pods[where] > 0 else None


def _lowest(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _bits(mask: int) -> list[int]:
    positions = []
    while mask:
        low = mask & -mask
        positions.append(low.bit_length() - 1)
        mask ^= low
    return positions


class _Pods:
    """Pods of one size that fit in the domains of a :class:`DomainFree`, read off its tallies as a decision asks
    for them: a named level's domains at once (one product per level), a node's children one by one."""

    def __init__(self, state: DomainFree, pod: int) -> None:
        state.sync()
        self.state, self.pod, self.leaf = state, pod, state.leaf
        self._arrays: dict[int, np.ndarray] = {}
        self._lists: dict[int, list[int]] = {}

    def array(self, level: int) -> np.ndarray:
        """Pods in each domain of ``level`` (the leaves: each node)."""
        known = self._arrays.get(level)
        if known is None:
            state = self.state
            known = self._arrays[level] = (state.counts[level] @ state.weights[self.pod] if level < self.leaf
                                           else state.free // self.pod)
        return known

    def listed(self, level: int) -> list[int]:
        """:meth:`array` of a named level as a list (read item by item)."""
        known = self._lists.get(level)
        if known is None:
            known = self._lists[level] = self.array(level).tolist()
        return known

    def children(self, level: int, domain: int) -> tuple[Sequence[int], list[int]]:
        """The children of ``domain`` (of ``level``) one level down, in index order, and the pods in each."""
        state = self.state
        if level + 1 < self.leaf:
            first, stop = state.child_start[level][domain], state.child_start[level][domain + 1]
            return range(first, stop), self.listed(level + 1)[first:stop]
        nodes, cells, at, pod = state.node_lists[domain], state._cells, state._free_at, self.pod
        return nodes, [cells[at + node] // pod for node in nodes]

    def children_of_all(self, level: int, domains: Sequence[int]) -> list[tuple[Sequence[int], list[int]]]:
        """:meth:`children` of each of ``domains``; where they are a run of a named level's domains (as the
        children of one domain are), their children are one run too, sliced at once."""
        if level + 1 < self.leaf and isinstance(domains, range) and domains:
            below, starts = self.listed(level + 1), self.state.child_start[level]
            bounds = starts[domains.start:domains.stop + 1]
            return [(range(a, b), below[a:b]) for a, b in itertools.pairwise(bounds)]
        return [self.children(level, domain) for domain in domains]


def _fit(view: _Pods, need: int, mode: str, level: int, least_free: bool) -> dict[int, int] | None:
    """BestFit or LeastFreeCapacity with one pod a slice (``kueue._fit_domains`` then ``_descend``): the domain
    of ``level`` with the fewest pods that holds ``need``, climbing while a preferred request fits nowhere, or
    spread over the top level; then, level by level, the children of the chosen domains filled as one pool."""
    while True:
        where = _fewest(view.array(level), need)
        if where is not None:
            chosen: list[tuple[int, int]] | None = [(where, need)]
            break
        if mode == "required":
            return None
        if level == 0:
            top = view.listed(0)
            chosen = _take(range(len(top)), top, need, least_free)
            break
        level -= 1
    while chosen is not None and level < view.leaf:
        ids: list[int] = []
        held: list[int] = []
        for domain, _ in chosen:
            kids, pods = view.children(level, domain)
            ids.extend(kids)
            held.extend(pods)
        chosen, level = _take(ids, held, need, least_free), level + 1
    return None if chosen is None else dict(sorted((d, n) for d, n in chosen if n))


def _split_down(view: _Pods, level: int, domains: list[int], counts: list[int]) -> dict[int, int] | None:
    """From balanced placement's domains down to the nodes (``kueue._descend``, not pooled): each domain's pods
    split among its own children by BestFit, level by level."""
    chosen = list(zip(domains, counts, strict=True))
    while level < view.leaf:
        split: list[tuple[int, int]] = []
        for domain, count in chosen:
            taken = _take(*view.children(level, domain), count, least_free=False)
            if taken is None:
                return None
            split += taken
        chosen, level = split, level + 1
    return dict(sorted((d, n) for d, n in chosen if n))


def _balanced(view: _Pods, need: int, top: int) -> tuple[int, list[int], list[int]] | None:
    """Kueue's BalancedPlacement with one pod a slice (``kueue._balanced``, steps 1-7), or None to fall back to
    BestFit: the level, domains and pods that :func:`_split_down` takes down to the nodes.

    Each domain one level above ``top`` (``L``) that holds the job is a group of candidates; per group, the
    threshold T (the smallest share a domain at L+1 gets when a greedy fill spreads the job over as few as it
    needs) and the domains at L kept once those below T are pruned.  Highest T wins, then fewest domains.  A
    group where one child holds the job whole cannot be beaten: the search stops there.  The entropy that breaks
    ties between domains at L is worked out only between domains with equal pods, where it decides.
    """
    leaf = view.leaf
    if top == 0:
        groups: Iterable[tuple[Sequence[int], list[int]]] = [(range(len(view.listed(0))), view.listed(0))]
    else:
        groups = (view.children(top - 1, g) for g, held in enumerate(view.listed(top - 1)) if held >= need)
    best = None
    for domains, held_at_top in groups:
        kids = view.children_of_all(top, domains) if top < leaf else None
        lower = list(itertools.chain.from_iterable(pods for _, pods in kids)) if kids is not None else held_at_top
        counted = _domains_needed(lower, need)
        if counted is None:
            continue
        threshold = min(need // counted[0], counted[1])
        if best is not None and threshold < best[0]:
            continue
        group = [sum(h for h in pods if h >= threshold) for _, pods in kids] if kids is not None else lower
        group = [h if h >= threshold else 0 for h in group]
        used = _domains_needed(group, need)
        if used is None:
            continue
        if best is None or threshold > best[0] or used[0] < best[1][0]:
            best = (threshold, used, domains, group, kids)
            if threshold == need and used[0] == 1:
                break
    if best is None:
        return None
    threshold, used, domains, group, kids = best
    if kids is not None:  # the domains at L, then their kept children at L+1
        def even(i: int) -> float:
            return evenness([h for h in kids[i][1] if h >= threshold])

        if used[0] == 1:  # one domain at L holds the job: the tightest, the most even of equals, the lower index
            fewest = min(h for h in group if h >= need)
            tied = [i for i, h in enumerate(group) if h == fewest]
            chosen: list[int] | None = [max(tied, key=lambda i: (even(i), -domains[i])) if len(tied) > 1
                                        else tied[0]]
        else:  # most pods first, the most even of equals (worked out only where equals decide), lower index
            ties = Counter(filter(None, group))
            order = sorted((i for i, h in enumerate(group) if h),
                           key=lambda i: (-group[i], -even(i) if ties[group[i]] > 1 else 0.0, domains[i]))
            chosen = _fewest_smallest(group, order, need)
        if chosen is None:
            return None
        lower_domains = sorted((kid, h) for i in chosen for kid, h in zip(*kids[i], strict=True) if h >= threshold)
        level = top + 1
    else:
        lower_domains, level = sorted(zip(domains, group, strict=True)), top
    ids, held = [d for d, _ in lower_domains], [h for _, h in lower_domains]
    picked = _fewest_smallest(held, range(len(held)), need)
    if picked is None or need < len(picked) * threshold:
        return None
    picked.sort(key=lambda c: (-held[c], ids[c]))
    rest, before, counts = need - len(picked) * threshold, 0, []
    for c in picked:  # T each, the rest to the largest first
        spare = held[c] - threshold
        counts.append(threshold + min(max(rest - before, 0), spare))
        before += spare
    if sum(counts) - len(picked) * threshold < rest:
        return None
    return level, [ids[c] for c in picked], counts


def _take(ids: Sequence[int], held: Sequence[int], need: int, least_free: bool) -> list[tuple[int, int]] | None:
    """Kueue's greedy fill with one pod a slice (``kueue._take``): (domain, pods) pairs, or None if short.
    Most pods first for BestFit, fewest for LeastFreeCapacity (then the lower index), until one holds the rest;
    BestFit gives the rest to the domain, of those left, with the fewest pods that holds it."""
    order = sorted((-h if not least_free else h, i) for i, h in zip(ids, held, strict=True) if h > 0)
    taken: list[tuple[int, int]] = []
    for j, (key, domain) in enumerate(order):
        pods = key if least_free else -key
        if pods < need:
            taken.append((domain, pods))
            need -= pods
            continue
        if not least_free:  # (order runs from the most pods down: the tightest is the last block that holds it)
            domain = min((-k, d) for k, d in order[j:] if -k >= need)[1]
        taken.append((domain, need))
        return taken
    return None


def _domains_needed(held: Sequence[int], need: int) -> tuple[int, int] | None:
    """How many domains a greedy fill, most pods first, takes to hold ``need`` pods, and the last one's pods
    (``kueue._greedy_count``), or None if all of them fall short."""
    most = max(held, default=0)
    if most >= need:  # (the commonest case: one domain holds them all)
        return 1, most
    total = 0
    for count, pods in enumerate(sorted(filter(None, held), reverse=True), 1):
        total += pods
        if total >= need:
            return count, pods
    return None


def _fewest_smallest(held: Sequence[int], order: Iterable[int], need: int) -> list[int] | None:
    """Balanced placement's domain set (``kueue._fewest_smallest``): as few domains as a greedy fill needs, then
    the fewest pods over ``need``; of equal sets, the first reached walking ``order``.  The same dynamic
    programme with each row of states (pods still missing) as the bits of one integer."""
    counted = _domains_needed(held, need)
    if counted is None:
        return None
    rows = counted[0]
    if rows == 1:  # one domain: the first in order with the fewest pods that hold them all
        best = None
        for position in order:
            if held[position] >= need and (best is None or held[position] < held[best]):
                best = position
        return [best] if best is not None else None
    low = 1 - max(held)  # bit b stands for b + low pods still missing (≤ 0: the set holds the job)
    holds = (1 << (1 - low)) - 1
    reached = [1 << (need - low)] + [0] * rows
    first: list[list[tuple[int, int]]] = [[] for _ in range(rows + 1)]  # per row: (position, states it reached first)
    for position in order:
        pods = held[position]
        if not pods:
            continue
        grown = [(states & ~holds) >> pods for states in reached[:-1]]  # a set that holds the job grows no more
        for row, states in enumerate(grown, 1):
            new = states & ~reached[row]
            if new:
                first[row].append((position, new))
                reached[row] |= new
    done = reached[rows] & holds
    if not done:
        return None
    column, chosen = done.bit_length() - 1, []
    for row in range(rows, 0, -1):
        position = next(p for p, new in first[row] if new >> column & 1)
        chosen.append(position)
        column += held[position]
    return chosen[::-1]
