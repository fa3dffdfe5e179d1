"""Kueue's Topology Aware Scheduling (TAS): which hosts of a topology tree take the pods of one PodSet.

Kueue admits a PodSet only once it has chosen, host by host, where every pod will run, so that pods which
talk a lot share a rack or a block.  A simulator that compares schedulers needs that choice exactly as Kueue
makes it, without Kubernetes: these are its algorithms as pure functions over arrays, held to KEP-2724
(keps/2724-topology-aware-scheduling: "Computing the assignment", "Two-level" and "Multi-level Topology
Aware scheduling", "Balanced placement") and to the code that implements it (pkg/cache/scheduler/
tas_flavor_snapshot.go and tas_balanced_placement.go, read to settle what the KEP leaves open).

A decision costs the domains it looks at: free slots are summed bottom-up with one ``np.bincount`` per level,
then only the chosen domains' children are walked.  Ties between equal domains go to the lower index, where
Kueue compares the domains' label values.

>>> tree, free = Tree.from_nested({"b1": {"r1": [3, 3, 2, 1]}})
>>> assign(tree, free, 7, required="rack")                          # BestFit: 3 + 3, then the tightest host
{0: 3, 1: 3, 3: 1}
>>> assign(tree, free, 7, required="rack", algorithm="least-free")  # LeastFreeCapacity: 1 + 2 + 3 + 1
{0: 3, 1: 1, 2: 2, 3: 1}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["ALGORITHMS", "Tree", "assign", "evenness", "kueue_tas"]

ALGORITHMS = ("best-fit", "least-free", "balanced")
DEFAULT_LEVELS = ("zone", "block", "rack", "host")  # from_nested names the lowest levels of a tree with these


@dataclass(frozen=True, eq=False)
class Tree:
    """A topology tree as arrays, so that a tree of 131,072 hosts costs a few integer arrays, not objects.

    ``levels`` run top-down and the last one holds the hosts (leaves).  ``parents[k][d]`` is the index, at
    level ``k - 1``, of domain ``d`` of level ``k``; ``parents[0]`` holds ``-1`` once per top-level domain, so
    that every level's size is the length of its array.  Free capacity is not part of the tree: it changes
    with every decision and is passed per call, one integer per host.

    >>> tree = Tree(("rack", "host"), (np.array([-1, -1]), np.array([0, 0, 1])))
    >>> tree.sizes, tree.children_of(0, np.array([0]))[0].tolist()
    ((2, 3), [0, 1])
    """

    levels: tuple[str, ...]
    parents: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        levels = tuple(self.levels)
        parents = tuple(np.asarray(p, dtype=np.int64) for p in self.parents)
        if not levels or len(parents) != len(levels) or len(set(levels)) != len(levels):
            raise ValueError(f"a tree needs distinct levels and one parents array per level, got {levels}")
        if parents[0].ndim != 1 or (parents[0] != -1).any():
            raise ValueError("parents[0] holds -1 for each top-level domain")
        for k in range(1, len(parents)):
            if parents[k].ndim != 1 or ((parents[k] < 0) | (parents[k] >= len(parents[k - 1]))).any():
                raise ValueError(f"parents[{k}] must index the {len(parents[k - 1])} domains of "
                                 f"{levels[k - 1]!r}")
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "parents", parents)

    @cached_property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(p) for p in self.parents)  # (asked at every level of every decision: kept)

    def level(self, name: str) -> int:
        """The index of a level by name, with the known names in the error."""
        if name not in self.levels:
            raise ValueError(f"no level {name!r} in this tree; its levels are {self.levels}")
        return self.levels.index(name)

    def totals(self, per_leaf: np.ndarray) -> list[np.ndarray]:
        """``per_leaf`` summed up every level: one ``np.bincount`` per level, never a loop over hosts."""
        sums = [np.asarray(per_leaf, dtype=np.int64)]
        for k in range(len(self.levels) - 1, 0, -1):
            sums.append(np.bincount(self.parents[k], weights=sums[-1], minlength=self.sizes[k - 1])
                        .astype(np.int64))
        return sums[::-1]

    @cached_property
    def _child_lists(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        # per level k above the leaves: level k+1's domains sorted by parent, and where each parent's run
        # starts, so that a domain's children are one slice of an array
        lists = []
        for k in range(len(self.levels) - 1):
            order = np.argsort(self.parents[k + 1], kind="stable")
            counts = np.bincount(self.parents[k + 1], minlength=self.sizes[k])
            lists.append((order, np.concatenate(([0], np.cumsum(counts)))))
        return tuple(lists)

    def children_of(self, level: int, domains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The children of ``domains`` (at ``level``), parent by parent, and the position of each one's
        parent in ``domains``."""
        order, starts = self._child_lists[level]
        domains = np.asarray(domains, dtype=np.int64)
        counts = starts[domains + 1] - starts[domains]
        owner = np.repeat(np.arange(len(domains)), counts)
        first = np.repeat(starts[domains] - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
        return order[first + np.arange(len(owner))], owner

    @classmethod
    def from_nested(cls, nested: Mapping | Sequence,
                    levels: Sequence[str] | None = None) -> tuple[Tree, np.ndarray]:
        """A tree and its hosts' free slots from nested dicts or lists, whose innermost lists hold the hosts.

        Without ``levels`` the lowest levels are named ``zone``, ``block``, ``rack``, ``host``.

        >>> tree, free = Tree.from_nested({"b1": {"r1": [3, 3], "r2": [2]}, "b2": {"r3": [1]}})
        >>> tree.levels, tree.sizes, free.tolist()
        (('block', 'rack', 'host'), (2, 3, 4), [3, 3, 2, 1])
        """
        depth, node = 1, nested
        while not isinstance(node, int | np.integer):
            node = next(iter(node.values() if isinstance(node, Mapping) else node))
            depth += 1
        depth -= 1  # the innermost list is the host level itself
        if levels is None:
            if depth > len(DEFAULT_LEVELS):
                raise ValueError(f"name the {depth} levels of this tree")
            levels = DEFAULT_LEVELS[-depth:]
        if len(levels) != depth:
            raise ValueError(f"{len(levels)} level names for a tree {depth} levels deep")
        parents: list[list[int]] = [[] for _ in range(depth)]
        free: list[int] = []

        def walk(node: Mapping | Sequence, k: int, parent: int) -> None:
            items = list(node.values() if isinstance(node, Mapping) else node)
            for item in items:
                parents[k].append(parent)
                if k == depth - 1:
                    if not isinstance(item, int | np.integer):
                        raise ValueError("a tree's innermost lists hold hosts' free slots (integers)")
                    free.append(int(item))
                elif isinstance(item, Mapping | Sequence) and not isinstance(item, str):
                    walk(item, k + 1, len(parents[k]) - 1)
                else:
                    raise ValueError(f"uneven tree: {item!r} sits where a {levels[k]} holds domains")

        walk(nested, 0, -1)
        tree = cls(tuple(levels), tuple(np.array(p, dtype=np.int64) for p in parents))
        return tree, np.array(free, dtype=np.int64)


@dataclass(frozen=True)
class _Request:
    """A PodSet's topology request, resolved once: levels as indices, counts in slices."""

    search: int  # the level Kueue searches first
    mode: str  # "required", "preferred" or "unconstrained" (never climbs)
    slice_level: int
    slice_size: int
    inner: dict[int, int]  # level → group size of the inner slice layers (Kueue's sliceSizeAtLevel)
    slices: int  # the PodSet's pods ÷ slice_size


def _resolve(tree: Tree, pods: int, required: str | None, preferred: str | None, slice_level: str | None,
             slice_size: int | None, inner_slices: Sequence[tuple[str, int]]) -> _Request:
    if required is not None and preferred is not None:
        raise ValueError("required and preferred topology are mutually exclusive")
    if (slice_level is None) != (slice_size is None):
        raise ValueError("a slice needs both its level and its size")
    if inner_slices and slice_level is None:
        raise ValueError("inner slice layers need an outer slice_level and slice_size")
    leaf = len(tree.levels) - 1
    size = slice_size or 1
    slice_idx = leaf if slice_level is None else tree.level(slice_level)
    if size < 1 or pods % size:
        raise ValueError(f"slice size {size} must be at least 1 and divide the PodSet's {pods} pods")
    level = required if required is not None else preferred
    if level is not None:
        search, mode = tree.level(level), "required" if required is not None else "preferred"
    else:  # Kueue: a slice-only request searches from the top, an unconstrained one among the hosts
        search, mode = (0 if slice_level is not None else leaf), "unconstrained"
    if search > slice_idx:
        raise ValueError(f"the slice level {slice_level!r} is above the PodSet's level {level!r}")
    inner: dict[int, int] = {}
    previous_level, previous_size = slice_idx, size
    for name, group in inner_slices:
        idx = tree.level(name)
        if idx <= previous_level or group < 1 or previous_size % group:
            raise ValueError(f"inner slice ({name!r}, {group}) must lie below the layer above it and divide "
                             f"its size {previous_size}")
        inner.update(dict.fromkeys(range(previous_level + 1, idx + 1), group))
        previous_level, previous_size = idx, group
    return _Request(search, mode, slice_idx, size, inner, pods // size)


def _capacities(tree: Tree, free: np.ndarray, request: _Request) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Kueue's phase 1: pods and slices that fit in every domain.

    A domain's slices are its pods ÷ slice size at the slice level, the sum of its children's above it, and
    0 below it.  Where an inner slice layer applies, a child contributes only whole groups to its parent.
    """
    pods = [np.asarray(free, dtype=np.int64)]
    for k in range(len(tree.levels) - 1, 0, -1):
        child = pods[-1]
        if k in request.inner:
            child = child // request.inner[k] * request.inner[k]
        pods.append(np.bincount(tree.parents[k], weights=child, minlength=tree.sizes[k - 1]).astype(np.int64))
    pods.reverse()
    slices = [np.zeros_like(p) for p in pods]
    slices[request.slice_level] = pods[request.slice_level] // request.slice_size
    for k in range(request.slice_level, 0, -1):
        slices[k - 1] = np.bincount(tree.parents[k], weights=slices[k],
                                    minlength=tree.sizes[k - 1]).astype(np.int64)
    return pods, slices


def _take(units: np.ndarray, key: np.ndarray, pods: np.ndarray, ids: np.ndarray, need: int,
          least_free: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """Kueue's greedy fill of ``need`` units over domains, as positions and units taken, or None if short.

    Domains are ordered by ``key`` (descending for BestFit, ascending for LeastFreeCapacity), then fewest free
    pods, then index.  Each is filled until one can hold the rest; BestFit then gives the rest to the domain,
    of those left, with the fewest units that still hold it (the "optimized last domain").
    """
    keep = np.flatnonzero(units > 0)
    order = keep[np.lexsort((ids[keep], pods[keep], key[keep] if least_free else -key[keep]))]
    held = units[order]
    before = np.cumsum(held) - held
    enough = held >= need - before
    if not enough.any():
        return None
    first = int(np.argmax(enough))
    rest = need - int(before[first])
    last = first
    if not least_free:
        last += int(np.argmin(np.where(held[first:] >= rest, held[first:], np.iinfo(np.int64).max)))
    return np.append(order[:first], order[last]), np.append(held[:first], rest)


def _fit_domains(tree: Tree, caps: tuple[list[np.ndarray], list[np.ndarray]], request: _Request,
                 least_free: bool) -> tuple[int, np.ndarray, np.ndarray] | None:
    """Kueue's phase 2a: the level and domains that take the PodSet, with the pods each takes.

    One domain if any at the level holds every slice: the one with the fewest slices that does (both
    algorithms).  Otherwise ``required`` fails, ``preferred`` climbs a level, and at the top, or for an
    unconstrained request at once, the slices are spread over the level's domains by :func:`_take`.
    """
    pods, slices = caps
    level = request.search
    while True:
        fits = np.flatnonzero(slices[level] >= request.slices)
        if fits.size:
            best = fits[np.lexsort((fits, pods[level][fits], slices[level][fits]))[0]]
            return level, np.array([best]), np.array([request.slices * request.slice_size])
        if request.mode == "required":
            return None
        if request.mode == "preferred" and level > 0:
            level -= 1
            continue
        ids = np.arange(tree.sizes[level])
        taken = _take(slices[level], slices[level], pods[level], ids, request.slices, least_free)
        return None if taken is None else (level, taken[0], taken[1] * request.slice_size)


def _descend(tree: Tree, caps: tuple[list[np.ndarray], list[np.ndarray]], request: _Request, level: int,
             domains: np.ndarray, assigned: np.ndarray, least_free: bool,
             pooled: bool) -> dict[int, int] | None:
    """Kueue's phase 2b: from the chosen domains down to the hosts, level by level.

    Above the slice level the children of all chosen domains are pooled and filled with every slice at once
    (Kueue does not split by parent there); from the slice level down each domain splits its own pods among
    its children, in groups of the inner layer's size or one by one.  Kueue orders those children by their
    phase-1 slice counts, which are 0 below the slice level, so both algorithms fill the children with the
    fewest free pods first (BestFit still picks the tightest last one).
    """
    pods, slices = caps
    leaf = len(tree.levels) - 1
    while pooled and level < min(leaf, request.slice_level):
        kids, _ = tree.children_of(level, domains)
        below = slices[level + 1][kids]
        taken = _take(below, below, pods[level + 1][kids], kids, request.slices, least_free)
        if taken is None:
            return None
        domains, assigned, level = kids[taken[0]], taken[1] * request.slice_size, level + 1
    while level < leaf:
        unit = request.slice_size if level < request.slice_level else request.inner.get(level + 1, 1)
        next_domains, next_assigned = [], []
        for domain, count in zip(domains.tolist(), assigned.tolist(), strict=True):
            kids, _ = tree.children_of(level, np.array([domain]))
            kid_pods, key = pods[level + 1][kids], slices[level + 1][kids]
            # a level above the slices is split here only after balanced placement: its units are slices
            units = key if level < request.slice_level else kid_pods // unit
            taken = _take(units, key, kid_pods, kids, count // unit, least_free)
            if taken is None:
                return None
            next_domains.append(kids[taken[0]])
            next_assigned.append(taken[1] * unit)
        domains, assigned, level = np.concatenate(next_domains), np.concatenate(next_assigned), level + 1
    placed = sorted((int(d), int(n)) for d, n in zip(domains, assigned, strict=True) if n > 0)
    return dict(placed)


def _greedy_count(slices: np.ndarray, need: int) -> tuple[int, int] | None:
    """How many domains a greedy fill, largest first, uses for ``need`` slices, and the last one's slices."""
    held = np.sort(slices[slices > 0])[::-1]
    reached = np.searchsorted(np.cumsum(held), need)
    return None if reached == len(held) else (int(reached) + 1, int(held[reached]))


def _fewest_smallest(pods: np.ndarray, slices: np.ndarray, order: np.ndarray, need: int,
                     slice_size: int) -> np.ndarray | None:
    """Balanced placement's domain set: as few domains as a greedy fill needs, then the least spare pods.

    Kueue's dynamic programme over (domains used, pods still missing), keeping the first set found for each
    state while it walks the domains in ``order``; here a boolean array per row, with the position of the
    domain that first reached each state, so the set can be walked back exactly.
    """
    counted = _greedy_count(slices, need)
    if counted is None:
        return None
    rows, target = counted[0], need * slice_size
    low = 1 - int(pods.max())  # the most pods over: a set 1 pod short, then the largest domain
    width = target - low + 1
    reached = np.zeros((rows + 1, width), dtype=bool)
    reached[0, target - low] = True
    first = np.full((rows + 1, width), -1, dtype=np.int64)
    for position in order.tolist():
        held = int(pods[position])
        if slices[position] == 0 or held == 0:
            continue
        source = reached[:-1].copy()
        source[:, : 1 - low] = False  # a set that already holds the PodSet grows no further
        grown = np.zeros_like(source)
        grown[:, : width - held] = source[:, held:]
        new = grown & ~reached[1:]
        first[1:][new] = position
        reached[1:] |= grown
    done = np.flatnonzero(reached[rows, : 1 - low])
    if not done.size:
        return None
    column, chosen = int(done[-1]), []
    for row in range(rows, 0, -1):
        position = int(first[row, column])
        chosen.append(position)
        column += int(pods[position])
    return np.array(chosen[::-1], dtype=np.int64)


def evenness(values: Sequence[int]) -> float:
    """Balanced placement's tie-break between domains: the Shannon entropy, in bits, of their children's free
    pods (higher: more even).  Summed in the order given, so that every caller gets the same float.

    >>> evenness([4, 4]), round(evenness([1, 2, 1]), 3), evenness([6, 2]) < evenness([4, 4])
    (1.0, 1.5, True)
    """
    counts = [int(v) for v in values]
    total = sum(counts)
    return -sum(v / total * math.log2(v / total) for v in counts if v > 0) if total else 0.0


def _balanced(tree: Tree, caps: tuple[list[np.ndarray], list[np.ndarray]],
              request: _Request) -> tuple[int, np.ndarray, np.ndarray] | None:
    """Kueue's BalancedPlacement (KEP "Balanced placement", steps 1-7), or None to fall back to BestFit.

    With L the preferred level: for each domain at L-1 whose children can hold the PodSet, T is the largest
    smallest share a domain at L+1 could get (slices ÷ domains a greedy fill uses, capped by the last one);
    domains at L+1 below T are pruned.  The L-1 domain with the highest T wins, then the one needing the
    fewest domains at L.  Its domains at L, then their children, are narrowed to as few as a greedy fill needs
    with the least spare capacity (at L, ties go to the most even children); each chosen one takes T slices
    and the rest go to the largest first.  When L is the slice level above the hosts, every child counts 0
    slices and is pruned, so Kueue falls back, as here.
    """
    pods, slices = caps
    need, size, top = request.slices, request.slice_size, request.search
    leaf, below = len(tree.levels) - 1, top < request.slice_level
    if top == 0:
        groups = [np.arange(tree.sizes[0])]
    else:
        holders = np.flatnonzero(slices[top - 1] >= need)
        groups = [tree.children_of(top - 1, np.array([g]))[0] for g in holders.tolist()]
    best = None
    for domains in groups:
        kids, owner = tree.children_of(top, domains) if top < leaf else (domains[:0], domains[:0])
        lower = slices[top + 1][kids] if below else slices[top][domains]
        counted = _greedy_count(lower, need)
        if counted is None:
            continue
        threshold = min(need // counted[0], counted[1])
        if best is not None and threshold < best[0]:
            continue
        keep = slices[top + 1][kids] >= threshold if top < leaf else np.zeros(0, dtype=bool)
        if top < leaf:
            kept_pods = np.bincount(owner, weights=pods[top + 1][kids] * keep, minlength=len(domains))
            group_pods = kept_pods.astype(np.int64)
            group_slices = group_pods // size if top == request.slice_level else np.bincount(
                owner, weights=slices[top + 1][kids] * keep, minlength=len(domains)).astype(np.int64)
        else:
            group_pods, group_slices = pods[top][domains], slices[top][domains]
        alive = group_slices >= threshold
        group_pods, group_slices = group_pods * alive, group_slices * alive
        used = _greedy_count(group_slices, need)
        if used is None:
            continue
        if best is None or threshold > best[0] or used[0] < best[1]:
            best = (threshold, used[0], domains, group_pods, group_slices, kids, owner, keep)
    if best is None:
        return None
    threshold, _, domains, group_pods, group_slices, kids, owner, keep = best
    if below:
        evenness_of = np.array([evenness(pods[top + 1][kids][(owner == i) & keep].tolist())
                                for i in range(len(domains))])
        order = np.lexsort((domains, -evenness_of, -group_slices))
        chosen = _fewest_smallest(group_pods, group_slices, order, need, size)
        if chosen is None:
            return None
        picked = np.isin(owner, chosen) & keep
        lower = kids[picked]
        lower_pods, lower_slices = pods[top + 1][lower], slices[top + 1][lower]
    else:
        lower, lower_pods, lower_slices = domains, group_pods, group_slices
    chosen = _fewest_smallest(lower_pods, lower_slices, np.argsort(lower, kind="stable"), need, size)
    if chosen is None or need < len(chosen) * threshold:
        return None
    chosen = chosen[np.lexsort((lower[chosen], lower_pods[chosen], -lower_slices[chosen]))]
    spare = lower_slices[chosen] - threshold
    extra = np.clip(need - len(chosen) * threshold - (np.cumsum(spare) - spare), 0, spare)
    if int(extra.sum()) < need - len(chosen) * threshold:
        return None
    return top + 1 if below else top, lower[chosen], (threshold + extra) * size


def assign(tree: Tree, free: np.ndarray, pods: int, *, required: str | None = None,
           preferred: str | None = None, slice_level: str | None = None, slice_size: int | None = None,
           inner_slices: Sequence[tuple[str, int]] = (),
           algorithm: str = "best-fit", level_pods: Sequence[np.ndarray] | None = None) -> dict[int, int] | None:
    """Where Kueue puts ``pods`` pods: host index → pods, or None when the PodSet cannot be placed now.

    ``free[h]`` is how many pods of this PodSet fit on host ``h`` now.  ``required`` keeps every pod in one
    domain of that level; ``preferred`` tries that level, then each level above, then spreads over the whole
    tree; with neither, the request is unconstrained and spreads at once.  With ``slice_level`` and
    ``slice_size`` the pods come in slices, each inside one domain of that level; ``inner_slices``, as
    ``(level, size)`` pairs from coarse to fine, are Kueue's further slice layers (multi-level scheduling).

    ``algorithm`` is applied as given, whatever the request: ``"best-fit"`` (BestFit), ``"least-free"``
    (LeastFreeCapacity) or ``"balanced"`` (BalancedPlacement, which Kueue applies to preferred requests only,
    falling back to BestFit; so does this).  :func:`kueue_tas` picks them as Kueue's profiles do.

    >>> tree, free = Tree.from_nested({"b1": {"r1": [4, 2], "r2": [3, 3]}})
    >>> assign(tree, free, 7, required="rack") is None, assign(tree, free, 7, preferred="rack")
    (True, {0: 4, 2: 3})
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
    free = np.asarray(free, dtype=np.int64)
    if free.shape != (tree.sizes[-1],) or (free < 0).any():
        raise ValueError(f"free needs one count ≥ 0 per host ({tree.sizes[-1]}), got shape {free.shape}")
    if pods < 0:
        raise ValueError(f"a PodSet has at least 0 pods, got {pods}")
    request = _resolve(tree, pods, required, preferred, slice_level, slice_size, inner_slices)
    if pods == 0:
        return {}
    if level_pods is not None and request.slice_size == 1 and not request.inner:
        caps = (list(level_pods), list(level_pods))  # (one pod a slice: the slices are the pods)
    else:
        caps = _capacities(tree, free, request)
    least_free = algorithm == "least-free"
    if algorithm == "balanced" and request.mode == "preferred":
        balanced = _balanced(tree, caps, request)
        if balanced is not None:
            return _descend(tree, caps, request, *balanced, least_free=False, pooled=False)
    fit = _fit_domains(tree, caps, request, least_free)
    return None if fit is None else _descend(tree, caps, request, *fit, least_free=least_free, pooled=True)


def kueue_tas(tree: Tree, free: np.ndarray, pods: int, *, required: str | None = None,
              preferred: str | None = None, slice_level: str | None = None, slice_size: int | None = None,
              inner_slices: Sequence[tuple[str, int]] = (), balanced: bool = False,
              level_pods: Sequence[np.ndarray] | None = None) -> dict[int, int] | None:
    """Kueue's default profile (since v0.15): BestFit when a level is required or preferred,
    LeastFreeCapacity when none is (a slice-only request counts as unconstrained, as in Kueue).

    ``balanced=True`` is the TASBalancedPlacement feature gate: BalancedPlacement for preferred requests.

    >>> tree, free = Tree.from_nested({"r1": [3, 3, 2, 1]})
    >>> kueue_tas(tree, free, 7, required="rack"), kueue_tas(tree, free, 7)
    ({0: 3, 1: 3, 3: 1}, {0: 3, 1: 1, 2: 2, 3: 1})
    """
    if required is None and preferred is None:
        algorithm = "least-free"
    else:
        algorithm = "balanced" if balanced and preferred is not None else "best-fit"
    return assign(tree, free, pods, required=required, preferred=preferred, slice_level=slice_level,
                  slice_size=slice_size, inner_slices=inner_slices, algorithm=algorithm, level_pods=level_pods)
