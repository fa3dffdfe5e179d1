"""Slurm's topology-aware node selection: topology/tree's switches and topology/block's base blocks.

Slurm gives a job whole nodes, and with a topology plugin it keeps them under as few switches, or inside
as few blocks, as it can; a simulator of Slurm clusters must pick the same nodes or its waiting times and
fragmentation mean nothing.  These are the two plugins' selection rules as pure functions over the arrays
of :class:`~simcluster.topology.kueue.Tree` (the lowest level holds the nodes, the one above the leaf
switches or base blocks), held to the topology guide (https://slurm.schedmd.com/topology.html) and
topology.conf(5), with the ties read from src/plugins/topology/tree/eval_nodes_tree.c and
block/eval_nodes_block.c.  Node weights, CPUs, GRES and required nodes are left out: every free node is
equal here.

>>> tree, free = Tree.from_nested({"s4": {"s0": [1, 1], "s1": [1, 1]}, "s5": {"s2": [1, 1], "s3": [1, 1]}},
...                               levels=("spine", "leaf", "node"))
>>> tree_select(tree, free, 3).tolist()   # s4 is the lowest switch that holds 3 nodes: all of s0, one of s1
[0, 1, 2]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache

import numpy as np

from simcluster.topology.kueue import Tree

__all__ = ["block_choice", "block_levels", "block_select", "tree_choice", "tree_select"]

MAX_BLOCK_LEVEL = 15  # topology/block: a block size is at most 2**15 base blocks
DEFAULT_BLOCK_LEVELS = (0, 1, 2, 3, 4)  # without BlockSizes, Slurm enforces 1, 2, 4, 8 and 16 base blocks
_NONE = np.iinfo(np.int64).max  # (masks what does not fit out of an argmin)


def _free_nodes(tree: Tree, free: np.ndarray) -> np.ndarray:
    """A mask of free nodes from a mask or from counts: Slurm allocates whole nodes, so any count > 0 frees
    its node."""
    free = np.asarray(free)
    if len(tree.levels) < 2 or free.shape != (tree.sizes[-1],):
        raise ValueError(f"need levels above the nodes and one entry per node ({tree.sizes[-1]}), "
                         f"got {len(tree.levels)} levels and shape {free.shape}")
    return free > 0


def _first_free(tree: Tree, avail: np.ndarray, groups: np.ndarray, takes: np.ndarray) -> np.ndarray:
    """The first ``takes[i]`` free nodes of each group ``groups[i]`` (one level above the nodes), by index."""
    kids, owner = tree.children_of(len(tree.levels) - 2, groups)
    kids, owner = kids[avail[kids]], owner[avail[kids]]
    rank = np.arange(len(kids)) - np.searchsorted(owner, owner)
    return np.sort(kids[rank < takes[owner]])


def tree_select(tree: Tree, free: np.ndarray, nodes: int, *,
                max_leaf_switches: int | None = None) -> np.ndarray | None:
    """The nodes topology/tree gives a job of ``nodes`` nodes, by index, or None when it cannot start now.

    The guide: "identify the lowest level switch in the hierarchy that can satisfy a job's request and then
    allocate resources on its underlying leaf switches using a best-fit algorithm".  Here exactly:

    1. the switch: at the lowest level where some switch has ``nodes`` free nodes, the one with the fewest
       (best fit; ties to the lowest index).  None anywhere gives None: "Jobs can only span nodes connected
       by the same switch fabric" (topology.conf(5)), so top-level switches without a common parent are never
       combined;
    2. its leaf switches, until the job is whole: the one with the fewest free nodes that holds all the nodes
       still missing, else the one with the most (so as few leaf switches as possible); ties to the lowest
       index.  These are eval_nodes_tree.c's comparisons between two leaf switches when both, one or neither
       fit; its steering by hop distance to the leaf switches already chosen is left out;
    3. in each leaf switch its free nodes in index order, as Slurm does ("in order of bitmap position").

    ``max_leaf_switches`` is ``--switches=count``: a placement on more leaf switches gives None, and the
    caller decides how long the job waits for a better one (Slurm's ``@time``).
    ``free`` is a mask of free nodes, or counts of which any above 0 frees its node.

    >>> leaves = {"s0": [1, 1, 1, 1], "s1": [1, 0], "s2": [1, 1, 1], "s3": [1, 1]}
    >>> tree, free = Tree.from_nested({"top": leaves}, levels=("spine", "leaf", "node"))
    >>> tree_select(tree, free, 6).tolist()   # all 4 of s0, then s3's 2: the leaf switch that fits the rest
    [0, 1, 2, 3, 9, 10]
    >>> tree_select(tree, free, 6, max_leaf_switches=1) is None
    True
    """
    avail = _free_nodes(tree, free)
    chosen = tree_choice(tree, tree.totals(avail.astype(np.int64))[:-1], nodes, max_leaf_switches=max_leaf_switches)
    return None if chosen is None else _first_free(tree, avail, *chosen)


def tree_choice(tree: Tree, counts: Sequence[np.ndarray], nodes: int, *,
                max_leaf_switches: int | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`tree_select`'s switches read off counts of free nodes, not off the nodes: the leaf switches chosen
    and how many nodes each gives (its lowest free ones), or None.  ``counts[k]`` holds each domain's free nodes
    at level k, for every level above the nodes: a caller that keeps them up to date as nodes are taken and
    freed makes a decision cost the tree's domains, not its nodes.

    >>> tree, _ = Tree.from_nested({"top": {"s0": [1, 1, 1], "s1": [1, 1]}}, levels=("spine", "leaf", "node"))
    >>> leaves, takes = tree_choice(tree, [np.array([4]), np.array([2, 2])], 3)   # 2 free left in each
    >>> leaves.tolist(), takes.tolist()   # no leaf switch holds 3: the fullest first (ties: lowest), then the rest
    ([0, 1], [2, 1])
    """
    if nodes < 1:
        raise ValueError(f"a job needs at least 1 node, got {nodes}")
    leaf_level = len(tree.levels) - 2
    for level in range(leaf_level, -1, -1):
        held = counts[level]
        fitting = np.where(held >= nodes, held, _NONE)  # (those that do not fit: never the least)
        best = fitting.argmin()
        if fitting[best] != _NONE:
            break
    else:
        return None
    leaves = best[None]
    if level == leaf_level:  # one leaf switch holds the job: its lowest free nodes (the commonest decision)
        return leaves, np.array([nodes])
    for k in range(level, leaf_level):
        leaves = tree.children_of(k, leaves)[0]
    held = np.asarray(counts[leaf_level])[leaves]
    order = np.lexsort((leaves, -held))
    held = held[order]
    before = np.cumsum(held) - held
    first = int(np.argmax(held >= nodes - before))
    rest = nodes - int(before[first])
    last = first + int(np.argmin(np.where(held[first:] >= rest, held[first:], _NONE)))
    if max_leaf_switches is not None and first + 1 > max_leaf_switches:
        return None
    return np.append(leaves[order[:first]], leaves[order[last]]), np.append(held[:first], rest)


def block_levels(block_sizes: Sequence[int] | None, first_block: int) -> tuple[int, tuple[int, ...]]:
    """BlockSizes as (planning base block size, enforced levels): a level k block is 2**k base blocks.  Without
    BlockSizes (None), Slurm's default: the first base block's size and levels 0 to 4.

    >>> block_levels([18, 36, 144], 18), block_levels(None, 18)
    ((18, (0, 1, 3)), (18, (0, 1, 2, 3, 4)))
    """
    if block_sizes is None:
        return first_block, DEFAULT_BLOCK_LEVELS
    base = block_sizes[0]
    levels: list[int] = []
    for size in block_sizes:
        multiple, remainder = divmod(size, base) if base > 0 else (0, 1)
        level = multiple.bit_length() - 1
        growing = not levels or level > levels[-1]
        if remainder or multiple & (multiple - 1) or level > MAX_BLOCK_LEVEL or not growing:
            raise ValueError(f"BlockSizes {list(block_sizes)}: each must be the first times a growing "
                             "power of 2")
        levels.append(level)
    return base, tuple(levels)


@cache
def _level_for(nodes: int, base: int, levels: tuple[int, ...]) -> tuple[int | None, int]:
    """eval_nodes_block.c's _get_block_level: the smallest enforced block level that can hold ``nodes``
    (None: only the whole topology can) and the largest enforced level below it (its "llblocks")."""
    wanted = (math.ceil(nodes / base) - 1).bit_length()  # ⌈log2(base blocks needed)⌉
    lower = max((level for level in levels if level <= wanted - 1), default=0) if wanted else 0
    return min((level for level in levels if level >= wanted), default=None), lower


def _one_base_block(on_base: np.ndarray, nodes: int,
                    block_ok: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_place_segment` where the smallest enforced block is one base block (its blocks and the lower-level
    blocks are the base blocks themselves, and one is all it may use): of the base blocks that hold ``nodes``,
    the one with the fewest free nodes, ties to the last; its own comparisons then take them all from it."""
    fitting = on_base >= nodes
    if block_ok is not None:
        fitting &= block_ok[: len(on_base)]
    held = np.where(fitting, on_base, _NONE)
    last = len(held) - 1 - int(held[::-1].argmin())
    if not fitting[last]:
        return None
    return np.array([last], dtype=np.int64), np.array([nodes], dtype=np.int64)


def _place_segment(on_base: np.ndarray, nodes: int, base: int, levels: tuple[int, ...],
                   block_ok: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """One job (or segment) of ``nodes`` nodes inside one block: the base blocks it takes nodes from, in the
    order chosen, and how many from each; ``on_base`` holds each base block's free nodes.

    ``block_ok`` marks the blocks allowed (``--consolidate-segments``); None allows all.
    """
    count = len(on_base)
    level, lower = _level_for(nodes, base, levels)
    if level == 0:  # one base block holds it and it may use one only (the commonest decision)
        return _one_base_block(on_base, nodes, block_ok)
    per_block, per_lower = (count if level is None else 1 << level), 1 << lower
    lower_left = math.ceil(nodes / (per_lower * base))  # at most this many lower-level blocks (llblocks)
    track = per_block != per_lower * lower_left
    blocks = math.ceil(count / per_block)
    on_block = np.add.reduceat(on_base, np.arange(0, count, per_block))
    if on_block.max() < nodes:  # (no block holds the job: none of their parts can)
        return None
    usable = on_block
    if track:  # a block is usable if its lower_left fullest lower-level blocks hold the job
        on_lower = np.add.reduceat(on_base, np.arange(0, count, per_lower))
        slots = np.zeros(blocks * (per_block // per_lower))
        slots[: min(len(slots), len(on_lower))] = on_lower[: len(slots)]
        usable = -np.sort(-slots.reshape(blocks, -1), axis=1)[:, :lower_left].sum(axis=1)
    eligible = np.flatnonzero((usable >= nodes) & (True if block_ok is None else block_ok[:blocks]))
    if not eligible.size:
        return None
    # the block with the fewest free nodes, "to minimize fragmentation"; Slurm's ties go to the last one
    block = int(eligible[np.flatnonzero(on_block[eligible] == on_block[eligible].min())[-1]])
    members = np.arange(block * per_block, min((block + 1) * per_block, count))
    lower_of = members >> lower
    lower_nodes = np.bincount(lower_of - lower_of[0], weights=on_base[members])[lower_of - lower_of[0]]
    held = on_base[members]
    open_ = held > 0  # Slurm may pick an empty base block and then stall; empty ones are skipped here
    used_lower = np.zeros(len(members), dtype=bool)
    used: list[int] = []
    takes: list[int] = []
    missing = nodes
    while missing > 0 and open_.any():
        # eval_nodes_block.c's _choose_best_bblock, scanned in order with ties to the later base block, is a
        # lexicographic maximum: first a lower-level block already used, then one that holds the rest (the
        # smallest such) or else the fullest, then the same two rules for the base block itself
        fit, lower_fit = held >= missing, lower_nodes >= missing
        keys = [np.arange(len(members)), np.where(fit, -held, held), fit]
        if track:
            keys += [np.where(lower_fit, -lower_nodes, lower_nodes), lower_fit, used_lower]
        candidates = np.flatnonzero(open_)
        best = int(candidates[np.lexsort([key[candidates] for key in keys])[-1]])
        if track and not used_lower[best]:
            if lower_left <= 0:
                return None
            lower_left -= 1
        take = min(missing, int(held[best]))
        used.append(int(members[best]))
        takes.append(take)
        used_lower |= lower_of == lower_of[best]
        open_[best] = False
        missing -= take
    if missing > 0:
        return None
    return np.array(used, dtype=np.int64), np.array(takes, dtype=np.int64)


def block_select(tree: Tree, free: np.ndarray, nodes: int, *, block_sizes: Sequence[int] | None = None,
                 segment: int | None = None, spread_segments: bool = False, consolidate_segments: bool = False,
                 partial_blocks: bool = False) -> tuple[np.ndarray, ...] | None:
    """The nodes topology/block gives a job, one sorted array per segment, or None when it cannot start now.

    The level above the nodes holds the base blocks, in configured order; a block of level k is 2**k
    consecutive base blocks, and ``block_sizes`` (BlockSizes, in nodes; the first is the planning base block
    size) says which levels are enforced.  As the guide lists it: "Identify the smallest block level ... that
    can satisfy the job's resource request", "Select a suitable subset of lower-level blocks", "Allocate
    resources from the underlying base blocks ... employing a best-fit algorithm".  Here, as in
    eval_nodes_block.c: the job may use at most ⌈nodes ÷ llblock size⌉ blocks of the enforced level below
    (⌈nodes ÷ base size⌉ base blocks when that level is the base), the block chosen is the one with the
    fewest free nodes among those that can (ties to the last), and base blocks are then filled by
    :func:`_place_segment`'s comparisons, each from its lowest free node up (:func:`block_choice` reads the
    blocks off counts of free nodes, this function off a mask of them).

    ``segment`` is ``--segment``: the job comes as segments of that many nodes, each placed in turn as a job
    of its own, so each lies inside one block of the smallest enforced level that holds it (one base block
    when it is no larger); a segment larger than the job is ignored, as in Slurm.  ``spread_segments``
    (``--spread-segments``) keeps later segments off the base blocks of earlier ones; ``consolidate_segments``
    (``--consolidate-segments``) keeps all segments inside one block of the level that holds the whole job.

    A base block smaller than the planning base block size is refused, as Slurm refuses it, unless
    ``partial_blocks``: the tree is then a share of a cluster whose blocks were checked (a VC's, as a Slurm
    partition holds part of a block), and a base block here may hold only some of its nodes.

    >>> tree, free = Tree.from_nested({f"b{b}": [1] * 4 for b in range(4)}, levels=("bblock", "node"))
    >>> [s.tolist() for s in block_select(tree, free, 4, block_sizes=[4, 8, 16])]   # ties: the last block
    [[12, 13, 14, 15]]
    >>> spread = block_select(tree, free, 4, block_sizes=[4, 8, 16], segment=2, spread_segments=True)
    >>> [s.tolist() for s in spread]   # segments of 2, each in its own base block
    [[12, 13], [8, 9]]
    """
    if nodes < 1 or (segment is not None and segment < 1):
        raise ValueError(f"a job needs at least 1 node and segments at least 1, got {nodes} and {segment}")
    avail = _free_nodes(tree, free)
    sizes = np.bincount(tree.parents[-1], minlength=tree.sizes[-2])
    base, levels = block_levels(block_sizes, int(sizes[0]))
    if (sizes < base).any() and not partial_blocks:
        small = int(np.argmax(sizes < base))
        planned = f"the first of BlockSizes {list(block_sizes)}" if block_sizes is not None else "the first block's"
        raise ValueError(f"each base block needs at least the planning base block size, {base} nodes ({planned}), "
                         f"but base block {small} has {sizes[small]}: Slurm refuses a base block below it")
    on_base = np.bincount(tree.parents[-1], weights=avail, minlength=tree.sizes[-2]).astype(np.int64)
    plan = block_choice(on_base, nodes, base, levels, segment=segment, spread_segments=spread_segments,
                        consolidate_segments=consolidate_segments)
    if plan is None:
        return None
    segments = []
    for used, takes in plan:
        chosen = _first_free(tree, avail, used, takes)
        avail[chosen] = False  # (a later segment in the same base block takes the next free nodes)
        segments.append(chosen)
    return tuple(segments)


def block_choice(on_base: np.ndarray, nodes: int, base: int, levels: tuple[int, ...], *, segment: int | None = None,
                 spread_segments: bool = False,
                 consolidate_segments: bool = False) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """:func:`block_select`'s base blocks read off each base block's free nodes (``on_base``), not off the
    nodes: per segment, the base blocks it takes nodes from and how many from each (the lowest free ones not
    taken by an earlier segment), or None.  ``base`` and ``levels`` are :func:`block_levels`'s.  A caller that
    keeps ``on_base`` up to date as nodes are taken and freed makes a decision cost the base blocks, not the
    nodes.

    >>> base, levels = block_levels([4, 8, 16], 4)
    >>> free = np.array([4, 3, 4, 1])   # base blocks of 4 nodes, one node busy in b1 and three in b3
    >>> [(used.tolist(), takes.tolist()) for used, takes in block_choice(free, 3, base, levels)]   # the tightest
    [([1], [3])]
    >>> [(used.tolist(), takes.tolist()) for used, takes in block_choice(free, 5, base, levels)]   # a pair: b2, b3
    [([2, 3], [4, 1])]
    """
    if nodes < 1 or (segment is not None and segment < 1):
        raise ValueError(f"a job needs at least 1 node and segments at least 1, got {nodes} and {segment}")
    size = nodes if segment is None or segment > nodes else segment
    if nodes % size:
        raise ValueError(f"--segment={size} must divide the job's {nodes} nodes")
    count, blocks, levels = nodes // size, len(on_base), tuple(levels)
    on_base = np.array(on_base, dtype=np.int64) if count > 1 else np.asarray(on_base)  # (segments take from a copy)
    block_ok = None
    whole_level = None
    if consolidate_segments:
        whole = math.ceil(size / base) * base * count if spread_segments else nodes
        whole_level = _level_for(whole, base, levels)[0]
        block_level = _level_for(size, base, levels)[0]
        if whole_level is not None and block_level is not None:
            per_whole = 1 << whole_level
            on_whole = np.bincount(np.arange(blocks) // per_whole, weights=on_base)
            aligned = np.arange(math.ceil(blocks / (1 << block_level)))
            block_ok = on_whole[(aligned << block_level) // per_whole] >= whole
    plan = []
    for index in range(count):
        placed = _place_segment(on_base, size, base, levels, block_ok if index == 0 else None)
        if placed is None:
            return None
        used, takes = placed
        plan.append(placed)
        if index == count - 1:
            break
        on_base[used] -= takes
        if spread_segments:  # later segments keep off these base blocks
            on_base[used] = 0
        if consolidate_segments and index == 0 and whole_level is not None:  # ... and inside this block
            on_base[np.arange(blocks) >> whole_level != used[0] >> whole_level] = 0
    return plan
