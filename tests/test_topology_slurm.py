"""Slurm's topology/tree and topology/block node selection, on the examples of the topology guide
(https://slurm.schedmd.com/topology.html) and of topology.conf(5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.topology.kueue import Tree
from simcluster.topology.slurm_select import block_select, tree_select

SWITCHES = ("top", "middle", "leaf", "node")


def binary_tree(busy=()):
    """The guide's first tree: tux[0-7] on leaf switches s0-s3 of two nodes, s4 = s[0-1], s5 = s[2-3], s6."""
    nested = {"s6": {"s4": {"s0": [1, 1], "s1": [1, 1]}, "s5": {"s2": [1, 1], "s3": [1, 1]}}}
    tree, free = Tree.from_nested(nested, levels=SWITCHES)
    free[list(busy)] = 0
    return tree, free


def test_a_job_that_fits_one_leaf_switch_stays_on_it():
    """Guide, Tree Topology: "identify the lowest level switch in the hierarchy that can satisfy a job's
    request"."""
    tree, free = binary_tree()
    assert tree_select(tree, free, 2).tolist() == [0, 1]


def test_the_leaf_switch_with_the_fewest_free_nodes_that_holds_the_job_wins():
    """Guide: Slurm allocates "using a best-fit algorithm": with tux0 busy, a one-node job takes tux1, the
    last free node of s0, and a two-node job moves to s1."""
    tree, free = binary_tree(busy=[0])
    assert tree_select(tree, free, 1).tolist() == [1]
    assert tree_select(tree, free, 2).tolist() == [2, 3]


def test_a_job_too_big_for_a_leaf_switch_goes_to_the_lowest_switch_above_that_holds_it():
    tree, free = binary_tree(busy=[0])
    assert tree_select(tree, free, 3).tolist() == [1, 2, 3]  # s4 holds 3 and s5 4: best fit is s4
    assert tree_select(tree, free, 4).tolist() == [4, 5, 6, 7]  # only s5 holds 4 at that level
    assert tree_select(tree, free, 7).tolist() == [1, 2, 3, 4, 5, 6, 7]


def test_leaf_switches_without_a_common_parent_never_share_a_job():
    """Guide: with the line "SwitchName=s4 Switches=s[0-3]" removed, "no job will span more than four
    compute nodes on any single leaf switch"."""
    tree, free = Tree.from_nested({f"s{s}": [1, 1, 1, 1] for s in range(4)}, levels=("leaf", "node"))
    assert tree_select(tree, free, 4).tolist() == [0, 1, 2, 3]
    assert tree_select(tree, free, 5) is None


def man_page_switches():
    """topology.conf(5), EXAMPLE: s0-s2 with dev[0-5], dev[6-11], dev[12-17] under s3."""
    return Tree.from_nested({"s3": {f"s{s}": [1] * 6 for s in range(3)}}, levels=("spine", "leaf", "node"))


def test_the_man_page_example_spreads_a_big_job_over_the_fewest_leaf_switches():
    tree, free = man_page_switches()
    free[[0, 1, 6]] = 0  # s0 and s1 hold 4 and 5 free nodes, s2 6
    assert tree_select(tree, free, 6).tolist() == list(range(12, 18))  # one leaf switch holds it
    assert tree_select(tree, free, 9).tolist() == [2, 3, 4] + list(range(12, 18))  # s2, then s0: the tightest


def test_switches_caps_the_number_of_leaf_switches():
    """Guide, User Options: "--switches=count[@time]", the maximum number of leaf switches."""
    tree, free = man_page_switches()
    assert len(tree_select(tree, free, 12, max_leaf_switches=2)) == 12
    assert tree_select(tree, free, 13, max_leaf_switches=2) is None


def test_free_counts_free_whole_nodes():
    tree, _ = binary_tree()
    assert tree_select(tree, np.array([0, 3, 8, 8, 0, 0, 0, 0]), 3).tolist() == [1, 2, 3]


@pytest.mark.parametrize(("free", "nodes", "message"),
                         [(np.ones(8), 0, "at least 1"), (np.ones(7), 1, "one entry")])
def test_tree_select_rejects_bad_input(free, nodes, message):
    tree, _ = binary_tree()
    with pytest.raises(ValueError, match=message):
        tree_select(tree, free, nodes)


def man_page_blocks(free_per_block=(32, 32, 32, 32)):
    """topology.conf(5), EXAMPLE: block1-block4 of 32 nodes each, BlockSizes=30,120; the first nodes of
    each block are the free ones."""
    tree, free = Tree.from_nested({f"block{b}": [1] * 32 for b in range(1, 5)}, levels=("bblock", "node"))
    free[:] = np.concatenate([np.arange(32) < n for n in free_per_block])
    return tree, free


def block_of(nodes, size=32):
    return sorted(set((np.asarray(nodes) // size).tolist()))


def test_a_job_that_fits_a_base_block_takes_the_one_with_the_fewest_free_nodes():
    """Guide, Block Topology: "Identify the smallest block level ... that can satisfy the job's resource
    request"; topology.conf(5): the plugin "places emphasis on reducing fragmentation"."""
    tree, free = man_page_blocks((32, 30, 32, 31))
    assert block_select(tree, free, 30, block_sizes=[30, 120])[0].tolist() == list(range(32, 62))


def test_equal_blocks_go_to_the_last_as_in_slurms_code():
    tree, free = man_page_blocks()
    assert block_of(block_select(tree, free, 30, block_sizes=[30, 120])[0]) == [3]


def test_a_job_over_a_base_block_uses_as_few_base_blocks_of_a_larger_block_as_its_size_needs():
    """40 nodes need ⌈40/30⌉ = 2 base blocks of the 120-node block: the fullest, then the tightest fit."""
    tree, free = man_page_blocks((20, 32, 32, 10))
    placed = block_select(tree, free, 40, block_sizes=[30, 120])[0]
    assert placed.tolist() == list(range(64, 96)) + list(range(96, 104))


def test_a_job_that_would_need_more_base_blocks_than_its_size_does_not_start():
    """60 nodes may use 2 base blocks; with 30, 25, 20 and 20 free no two hold it, though 95 nodes are
    free."""
    tree, free = man_page_blocks((30, 25, 20, 20))
    assert block_select(tree, free, 60, block_sizes=[30, 120]) is None
    assert block_select(tree, free, 55, block_sizes=[30, 120]) is not None


def four_by_four(free_per_block):
    """Base blocks of 4 nodes, with so many free nodes each (the first ones)."""
    nested = {f"b{b}": [1] * 4 for b in range(len(free_per_block))}
    tree, free = Tree.from_nested(nested, levels=("bblock", "node"))
    free[:] = np.concatenate([np.arange(4) < n for n in free_per_block])
    return tree, free


def test_a_job_stays_inside_one_aligned_block_of_the_smallest_enforced_size():
    """topology.conf(5): blocks "are paired with other contiguous blocks, to create a higher level block";
    6 nodes need a pair of base blocks: (b0, b1) holds 5, (b2, b3) holds 6.  7 nodes need a pair too, and
    no pair holds them, so the job waits although the 16-node block holds 11."""
    tree, free = four_by_four((4, 1, 3, 3))
    assert block_of(block_select(tree, free, 6, block_sizes=[4, 8, 16])[0], 4) == [2, 3]
    assert block_select(tree, free, 7, block_sizes=[4, 8, 16]) is None
    assert block_of(block_select(tree, free, 9, block_sizes=[4, 8, 16])[0], 4) == [0, 2, 3]  # needs 3: the 16


def test_each_segment_lies_inside_one_base_block():
    """Guide, User Options: --segment "defines the size of the segments that will be used to create the job
    allocation": 6 nodes in segments of 3 take 3 + 3 in two base blocks, where the whole job takes 4 + 2."""
    tree, free = four_by_four((4, 3, 3, 2))
    assert [block_of(s, 4) for s in block_select(tree, free, 6, block_sizes=[4, 16])] == [[0, 3]]
    segments = block_select(tree, free, 6, block_sizes=[4, 16], segment=3)
    assert [block_of(s, 4) for s in segments] == [[2], [1]]
    assert block_select(tree, free, 6, block_sizes=[4, 16], segment=8)[0].size == 6  # larger: ignored


def test_spread_segments_keeps_segments_off_each_others_base_blocks():
    """Guide: --spread-segments "Prevent nodes within the same base block from being allocated to separate
    segments"."""
    tree, free = four_by_four((4, 4))
    assert [block_of(s, 4) for s in block_select(tree, free, 4, block_sizes=[4, 8], segment=2)] == [[1], [1]]
    spread = block_select(tree, free, 4, block_sizes=[4, 8], segment=2, spread_segments=True)
    assert [block_of(s, 4) for s in spread] == [[1], [0]]


def test_consolidate_segments_keeps_every_segment_in_one_block_that_holds_the_whole_job():
    """Guide: --consolidate-segments "Ensure that all segments from the allocation will be consolidated into
    one higher-level aggregated block"."""
    tree, free = four_by_four((4, 0, 0, 0, 0, 0, 2, 2))
    apart = block_select(tree, free, 4, block_sizes=[4, 8, 16], segment=2)
    assert [block_of(s, 4) for s in apart] == [[7], [6]]
    together = block_select(tree, free, 4, block_sizes=[4, 8, 16], segment=2, consolidate_segments=True)
    assert [s.tolist() for s in together] == [[0, 1], [2, 3]]


def test_without_block_sizes_the_first_block_sets_the_base_and_five_levels_are_enforced():
    tree, free = four_by_four((4, 4, 4, 4))
    assert block_of(block_select(tree, free, 12)[0], 4) == [1, 2, 3]


@pytest.mark.parametrize(("options", "message"), [
    ({"block_sizes": [4, 12]}, "BlockSizes"),
    ({"block_sizes": [4, 8, 8]}, "BlockSizes"),
    ({"block_sizes": [5]}, "planning base block size"),
    ({"block_sizes": [4], "segment": 3}, "divide"),
])
def test_block_select_rejects_what_slurm_rejects(options, message):
    tree, free = four_by_four((4, 4))
    with pytest.raises(ValueError, match=message):
        block_select(tree, free, 4, **options)


@st.composite
def switch_trees(draw):
    spines = draw(st.integers(1, 3))
    nested = {f"p{p}": {f"p{p}s{s}": draw(st.lists(st.integers(0, 1), min_size=1, max_size=5))
                        for s in range(draw(st.integers(1, 4)))} for p in range(spines)}
    return Tree.from_nested(nested, levels=("spine", "leaf", "node"))


@settings(max_examples=200, deadline=None)
@given(switch_trees(), st.integers(1, 12))
def test_tree_select_takes_free_nodes_under_one_switch_on_the_fewest_leaf_switches(tree_and_free, nodes):
    tree, free = tree_and_free
    spine_free, leaf_free = tree.totals(free)[:2]
    placed = tree_select(tree, free, nodes)
    assert (placed is None) == (spine_free.max() < nodes)
    if placed is None:
        return
    assert len(set(placed.tolist())) == nodes and free[placed].all()
    leaves = np.unique(tree.parents[2][placed])
    assert len(np.unique(tree.parents[1][leaves])) == 1
    if leaf_free.max() >= nodes:
        assert len(leaves) == 1 and leaf_free[leaves[0]] == leaf_free[leaf_free >= nodes].min()
    else:
        siblings = leaf_free[tree.parents[1] == tree.parents[1][leaves[0]]]
        assert len(leaves) == np.searchsorted(np.cumsum(np.sort(siblings)[::-1]), nodes) + 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=8, max_size=8), st.integers(1, 24),
       st.sampled_from([None, 1, 2, 4]), st.booleans())
def test_each_segment_of_block_select_takes_free_nodes_inside_one_aligned_block(free_per_block, nodes,
                                                                                segment, spread):
    tree, free = four_by_four(free_per_block)
    if segment and segment <= nodes:
        nodes -= nodes % segment
    placed = block_select(tree, free, nodes, block_sizes=[4, 8, 16, 32], segment=segment,
                          spread_segments=spread)
    if placed is None:
        return
    everything = np.concatenate(placed)
    assert len(set(everything.tolist())) == nodes and free[everything].all()
    for part in placed:
        level = (-(-len(part) // 4) - 1).bit_length()  # every level is enforced here
        lower = max(level - 1, 0)
        assert len(set((tree.parents[1][part] >> level).tolist())) == 1
        assert len(set((tree.parents[1][part] >> lower).tolist())) <= -(-len(part) // (4 << lower))
    if spread:
        assert sum(len(set(tree.parents[1][part].tolist())) for part in placed) == \
            len(set(tree.parents[1][everything].tolist()))


def eval_nodes_block_by_the_book(free_per_block, nodes, block_sizes):
    """eval_nodes_block.c for one job of base blocks of 4 nodes, re-read plainly: block_select must agree.
    Like block_select it skips base blocks with no free node, where Slurm may pick one and stall."""
    count, base = len(free_per_block), block_sizes[0]
    levels = [(size // base).bit_length() - 1 for size in block_sizes]
    wanted = (-(-nodes // base) - 1).bit_length()
    lower = max([level for level in levels if level <= wanted - 1], default=0) if wanted else 0
    level = min([level for level in levels if level >= wanted], default=None)
    per_block = count if level is None else 1 << level
    lower_left = -(-nodes // ((1 << lower) * base))
    track = per_block != (1 << lower) * lower_left
    lower_nodes = {}
    for i, n in enumerate(free_per_block):
        lower_nodes[i >> lower] = lower_nodes.get(i >> lower, 0) + n
    block, block_free = None, 0
    for b in range(-(-count // per_block)):
        members = range(b * per_block, min((b + 1) * per_block, count))
        if track:
            mine = sorted((lower_nodes.get(j, 0) for j in range(b * per_block >> lower,
                                                                 (b + 1) * per_block >> lower)), reverse=True)
            usable = sum(mine[:lower_left]) if per_block >> lower else 0
        else:
            usable = sum(free_per_block[i] for i in members)
        total = sum(free_per_block[i] for i in members)
        if usable >= nodes and (block is None or total <= block_free):
            block, block_free = b, total
    if block is None:
        return None
    used, missing, picks = set(), nodes, []
    while missing > 0:
        best, best_fit, best_same = None, False, True
        for i in range(block * per_block, min((block + 1) * per_block, count)):
            if i in {p for p, _ in picks} or not free_per_block[i]:
                continue
            fit = free_per_block[i] >= missing
            if track and (best is None or i >> lower != best >> lower):
                same = i >> lower in used
                if best is None or (same and not best_same):
                    best, best_fit, best_same = i, fit, same
                    continue
                if not same and best_same:
                    continue
                mine, theirs = lower_nodes[i >> lower], lower_nodes[best >> lower]
                if (mine >= missing) != (theirs >= missing):
                    if mine >= missing:
                        best, best_fit, best_same = i, fit, same
                    continue
                if mine != theirs:
                    if (mine < theirs) == (mine >= missing):
                        best, best_fit, best_same = i, fit, same
                    continue
            n, m = free_per_block[i], free_per_block[best] if best is not None else 0
            if best is None or (fit and not best_fit) or (not fit and not best_fit and n >= m) or \
                    (fit and n <= m):
                best, best_fit = i, fit
        if best is None or (track and lower_left <= 0 and not best_same):
            return None
        picks.append((best, min(missing, free_per_block[best])))
        used.add(best >> lower)
        if track and not best_same:
            lower_left -= 1
        missing -= picks[-1][1]
    return sorted(picks)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=12), st.integers(1, 30),
       st.sampled_from([[4], [4, 8], [4, 16], [4, 8, 16, 32], [4, 32], [8, 16]]))
def test_block_select_agrees_with_slurms_code_read_plainly(free_per_block, nodes, block_sizes):
    tree, free = four_by_four(free_per_block)
    if block_sizes[0] > 4:
        with pytest.raises(ValueError):
            block_select(tree, free, nodes, block_sizes=block_sizes)
        return
    placed = block_select(tree, free, nodes, block_sizes=block_sizes)
    expected = eval_nodes_block_by_the_book(free_per_block, nodes, block_sizes)
    if expected is None:
        assert placed is None
    else:
        got = np.bincount(tree.parents[1][placed[0]], minlength=len(free_per_block))
        assert [(b, int(n)) for b, n in enumerate(got) if n] == expected
