"""Kueue's Topology Aware Scheduling: the KEP-2724 examples, its rules for levels, and a reference read
line by line from Kueue's code.

The examples cite the sections of keps/2724-topology-aware-scheduling/README.md they come from; host indices
follow the order in which the hosts are written.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.topology.kueue import Tree, assign, kueue_tas

SLICED = {"slice_level": "host"}


def test_best_fit_takes_the_largest_hosts_then_the_one_that_holds_the_last_pod_exactly():
    """KEP "Computing the assignment", Example: a rack of hosts with 3, 3, 2 and 1 free slots and 7 pods;
    BestFit takes both 3s, then "selects the node that can accommodate exactly 1 pod"."""
    tree, free = Tree.from_nested({"r1": [3, 3, 2, 1]})
    assert assign(tree, free, 7, required="rack") == {0: 3, 1: 3, 3: 1}
    assert assign(tree, free, 7) == {0: 3, 1: 3, 3: 1}  # unconstrained, as with the TASProfileBestFit gate


def test_least_free_capacity_starts_from_the_least_free_host_and_takes_one_pod_of_the_last():
    """KEP "Computing the assignment", Example: LeastFreeCapacity "selects the nodes with 1, 2, 3, and 3
    available pods, reserving capacity for only 1 pod on the last node" (equal hosts in written order)."""
    tree, free = Tree.from_nested({"r1": [3, 3, 2, 1]})
    assert assign(tree, free, 7, required="rack", algorithm="least-free") == {3: 1, 2: 2, 0: 3, 1: 1}


def test_the_default_profile_uses_best_fit_for_a_level_and_least_free_capacity_without_one():
    """KEP "Selecting the algorithm", Since v0.15: TASProfileMixed, the default, is BestFit for preferred
    and required, LeastFreeCapacity for unconstrained."""
    tree, free = Tree.from_nested({"r1": [3, 3, 2, 1]})
    assert kueue_tas(tree, free, 7, required="rack") == {0: 3, 1: 3, 3: 1}
    assert kueue_tas(tree, free, 7, preferred="host") == {0: 3, 1: 3, 3: 1}
    assert kueue_tas(tree, free, 7) == {0: 3, 1: 1, 2: 2, 3: 1}


@pytest.mark.parametrize(("algorithm", "pods", "expected"), [
    ("best-fit", 12, {0: 6, 2: 4, 4: 2}),
    ("least-free", 10, {1: 2, 2: 4, 3: 2, 4: 2}),
])
def test_slices_of_two_on_a_host_follow_the_kep_table(algorithm, pods, expected):
    """KEP "Two-level Topology Aware scheduling", Example: hosts with 6, 5, 4, 3 and 2 free, slices of 2 pods
    on one host.  The table: BestFit, 12 pods → 6 . 4 . 2; LeastFreeCapacity, 10 pods → . 2 4 2 2 (the
    host with 4 beats the one with 5: both hold 2 slices, and 4 is the tight fit)."""
    tree, free = Tree.from_nested({"r1": [6, 5, 4, 3, 2]})
    assert assign(tree, free, pods, required="rack", slice_size=2, algorithm=algorithm, **SLICED) == expected


def test_of_domains_that_hold_as_many_slices_the_one_with_fewer_free_pods_wins():
    """KEP "Two-level Topology Aware scheduling": Kueue "considers the amount of slices that can fit into a
    domain as free capacity, but if that number is equal then it prioritizes domains with fewer remaining
    resources": racks of 5 and 4 free pods both hold two slices of 2, and the rack of 4 takes them."""
    tree, free = Tree.from_nested({"b1": {"r1": [5], "r2": [4]}})
    assert assign(tree, free, 4, required="rack", slice_size=2, **SLICED) == {1: 4}
    assert assign(tree, free, 4, required="rack", slice_size=2, algorithm="least-free", **SLICED) == {1: 4}


def test_a_slice_only_request_is_unconstrained_so_the_default_profile_uses_least_free_capacity():
    """Kueue's code (isSliceTopologyOnlyRequest): slices without a PodSet level search from the top level
    as an unconstrained request; the default profile then gives the KEP table's LeastFreeCapacity row."""
    tree, free = Tree.from_nested({"r1": [6, 5, 4, 3, 2]})
    assert kueue_tas(tree, free, 10, slice_size=2, **SLICED) == {1: 2, 2: 4, 3: 2, 4: 2}


def test_multi_level_slices_fill_one_block_two_racks_of_thirty_two_and_eight_pods_per_host():
    """KEP "Multi-level Topology Aware scheduling", Example: blocks of 2 racks of 4 hosts of 8 pods; 64 pods
    in slices of 32 per block and 16 per rack.  One block takes both slices, each rack 32 pods, each host
    8."""
    tree, free = Tree.from_nested({b: {f"{b}r{r}": [8, 8, 8, 8] for r in range(2)} for b in ("b1", "b2")})
    placed = assign(tree, free, 64, required="block", slice_level="block", slice_size=32,
                    inner_slices=[("rack", 16)])
    assert placed == dict.fromkeys(range(8), 8)


def test_an_inner_slice_layer_counts_only_whole_groups_of_a_rack():
    """Kueue's fillInCounts rounds each rack down to whole inner groups: racks of 23 free pods hold one
    group of 16 each, so two of them hold a slice of 32 but not of 48, though 46 pods are free."""
    tree, free = Tree.from_nested({"b1": {"r1": [8, 8, 7], "r2": [8, 8, 7]}})
    layered = {"required": "block", "slice_level": "block", "inner_slices": [("rack", 16)]}
    placed = assign(tree, free, 32, slice_size=32, **layered)
    assert sum(n for h, n in placed.items() if h < 3) == sum(n for h, n in placed.items() if h >= 3) == 16
    assert assign(tree, free, 48, slice_size=48, **layered) is None
    assert assign(tree, free, 46, required="block") is not None


BALANCED_EXAMPLES = [  # KEP "Balanced placement", Example: blocks of racks of hosts, preferred = rack
    ([[[15], [15]]], 25, 1, [[[13], [12]]]),
    ([[[15, 13, 10]]], 23, 1, [[[12, 11, 0]]]),
    ([[[20, 10], [15, 15]]], 22, 1, [[[0, 0], [11, 11]]]),  # the rack that leads to a higher T
    ([[[20, 10], [15, 15]]], 20, 1, [[[20, 0], [0, 0]]]),
    ([[[10, 5], [5, 5, 5]]], 15, 1, [[[0, 0], [5, 5, 5]]]),  # the more balanced rack
    ([[[15], [15]], [[15, 15]]], 25, 1, [[[0], [0]], [[13, 12]]]),  # the block where one rack holds it all
    ([[[15], [15], [15, 15]]], 25, 5, [[[0], [0], [15, 10]]]),  # podset-slice-required-topology = hostname
]


@pytest.mark.parametrize(("capacities", "pods", "slice_size", "expected"), BALANCED_EXAMPLES)
def test_balanced_placement_gives_the_kep_examples(capacities, pods, slice_size, expected):
    """KEP "Balanced placement", Example table (3 levels, preferred = rack), row by row."""
    tree, free = Tree.from_nested(capacities)
    placed = assign(tree, free, pods, preferred="rack", slice_size=slice_size, algorithm="balanced", **SLICED)
    flat = [host for block in expected for rack in block for host in rack]
    assert [placed.get(h, 0) for h in range(len(free))] == flat
    gated = kueue_tas(tree, free, pods, preferred="rack", slice_size=slice_size, balanced=True, **SLICED)
    assert gated == placed


def test_balanced_placement_splits_twelve_pods_six_and_six_where_the_greedy_algorithms_give_ten_and_two():
    """KEP "Balanced placement": "12 pods distributed among domains with capacities (10,10) will be placed
    (10,2). However, ... a more balanced placement (6,6) would be more efficient"."""
    tree, free = Tree.from_nested({"b1": {"r1": [10, 10]}})
    assert assign(tree, free, 12, preferred="rack", algorithm="balanced") == {0: 6, 1: 6}
    assert assign(tree, free, 12, preferred="rack") == {0: 10, 1: 2}


def test_balanced_placement_falls_back_to_best_fit_when_no_domain_above_the_preferred_level_holds_it():
    """KEP "Balanced placement", step 2: "If no domain on level L-1 fits the entire request, fallback to the
    standard algorithm"."""
    tree, free = Tree.from_nested({"b1": {"r1": [10, 10]}, "b2": {"r2": [10, 10]}})
    balanced = assign(tree, free, 30, preferred="rack", algorithm="balanced")
    assert balanced == assign(tree, free, 30, preferred="rack")


def test_balanced_placement_applies_to_preferred_requests_only():
    """KEP "Selecting the algorithm": under TASBalancedPlacement required is still BestFit."""
    tree, free = Tree.from_nested({"b1": {"r1": [10, 10]}})
    assert assign(tree, free, 12, required="rack", algorithm="balanced") == {0: 10, 1: 2}


def test_required_never_spans_two_domains_of_its_level():
    """KEP "Computing the assignment": with podset-required-topology, if no domain of the level can hold all
    the pods "the workload keeps waiting in the queue"."""
    tree, free = Tree.from_nested({"b1": {"r1": [4, 2], "r2": [3, 3, 1]}})
    assert assign(tree, free, 8, required="rack") is None  # 13 free, but no rack holds 8
    assert assign(tree, free, 7, required="rack") == {2: 3, 3: 3, 4: 1}
    assert assign(tree, free, 6, required="rack") == {0: 4, 1: 2}  # both racks hold 6: the tighter one
    assert assign(tree, free, 13, required="block") == dict(enumerate([4, 2, 3, 3, 1]))


def test_preferred_falls_back_one_level_at_a_time_then_across_the_whole_tree():
    """KEP "Computing the assignment": with podset-preferred-topology Kueue "starts the search from the
    specified level, but if the PodSet does not fit, then it tries higher levels"; past the top it spreads
    (the annotation's doc: "admitted as distributed among multiple topology domains")."""
    tree, free = Tree.from_nested({"b1": {"r1": [4, 4], "r2": [4, 4]}, "b2": {"r3": [2, 2], "r4": [2, 2]}})
    assert set(assign(tree, free, 6, preferred="rack")) in ({0, 1}, {2, 3})  # one rack
    assert set(assign(tree, free, 12, preferred="rack")) <= {0, 1, 2, 3}  # no rack holds 12: block b1 does
    spread = assign(tree, free, 20, preferred="rack")  # no block holds 20: both blocks
    assert sum(spread.values()) == 20 and set(spread) & {4, 5, 6, 7}


@pytest.mark.parametrize("request_", [{"required": "rack"}, {"preferred": "rack"}, {}, {"preferred": "host"}])
@pytest.mark.parametrize("algorithm", ["best-fit", "least-free", "balanced"])
def test_nothing_is_placed_when_the_free_slots_do_not_hold_the_podset(request_, algorithm):
    tree, free = Tree.from_nested({"b1": {"r1": [1, 2], "r2": [0, 3]}})
    assert assign(tree, free, 7, algorithm=algorithm, **request_) is None
    assert assign(tree, free, 0, algorithm=algorithm, **request_) == {}


@pytest.mark.parametrize(("request_", "message"), [
    ({"required": "rack", "preferred": "rack"}, "mutually exclusive"),
    ({"slice_level": "host", "slice_size": 4}, "divide"),
    ({"required": "host", "slice_level": "rack", "slice_size": 2}, "above"),
    ({"slice_level": "host"}, "both its level and its size"),
    ({"required": "row"}, "no level 'row'"),
    ({"algorithm": "most-free"}, "unknown algorithm"),
    ({"slice_level": "rack", "slice_size": 6, "inner_slices": [("host", 4)]}, "divide its size"),
])
def test_a_request_kueue_would_reject_raises(request_, message):
    tree, free = Tree.from_nested({"b1": {"r1": [3, 3]}})
    with pytest.raises(ValueError, match=message):
        assign(tree, free, 6, **request_)


def test_free_slots_must_give_one_count_per_host():
    tree, _ = Tree.from_nested({"r1": [3, 3]})
    with pytest.raises(ValueError, match="one count"):
        assign(tree, np.array([3]), 1)
    with pytest.raises(ValueError, match="one count"):
        assign(tree, np.array([3, -1]), 1)


def test_a_tree_checks_its_parents_and_from_nested_its_shape():
    with pytest.raises(ValueError, match="parents\\[1\\]"):
        Tree(("rack", "host"), (np.array([-1]), np.array([0, 1])))
    with pytest.raises(ValueError, match="uneven"):
        Tree.from_nested({"b1": {"r1": [1]}, "b2": [2]})
    with pytest.raises(ValueError, match="3 level names for a tree 2 levels deep"):
        Tree.from_nested({"r1": [1]}, levels=("block", "rack", "host"))


def test_a_placement_among_131072_hosts_costs_milliseconds_not_a_loop_per_host():
    hosts, per_rack, per_block = 131_072, 16, 32
    racks = hosts // per_rack
    tree = Tree(("block", "rack", "host"), (np.full(racks // per_block, -1), np.arange(racks) // per_block,
                                            np.arange(hosts) // per_rack))
    free = np.random.default_rng(0).integers(0, 9, hosts)
    sliced = {"required": "block", "slice_level": "rack", "slice_size": 32}
    for request_ in ({"preferred": "rack"}, {}, sliced):
        placed = kueue_tas(tree, free, 1024, **request_)
        assert sum(placed.values()) == 1024 and all(free[h] >= n for h, n in placed.items())


# A plain re-reading of Kueue's findTopologyAssignment (tas_flavor_snapshot.go, no leaders, no affinities),
# object by object, with zero-capacity domains kept: assign must agree with it on every request.
def kueue_by_the_book(tree, free, pods, *, required=None, preferred=None, slice_level=None, slice_size=None,
                      inner_slices=(), algorithm="best-fit"):
    leaf = len(tree.levels) - 1
    kids = {(k, d): [] for k in range(leaf + 1) for d in range(tree.sizes[k])}
    for k in range(1, leaf + 1):
        for d, parent in enumerate(tree.parents[k].tolist()):
            kids[(k - 1, parent)].append((k, d))
    size = slice_size or 1
    slice_idx = leaf if slice_level is None else tree.levels.index(slice_level)
    inner, previous = {}, slice_idx
    for name, group in inner_slices:
        inner.update(dict.fromkeys(range(previous + 1, tree.levels.index(name) + 1), group))
        previous = tree.levels.index(name)
    level = required or preferred
    search = tree.levels.index(level) if level else (0 if slice_level else leaf)
    least_free, need = algorithm == "least-free", pods // size
    pod, slc = {}, {}

    def fill(dom):  # fillInCountsHelper
        k, d = dom
        total = slices = 0
        if k == leaf:
            total = int(free[d])
        for child in kids[dom]:
            fill(child)
            total += pod[child] // inner[k + 1] * inner[k + 1] if k + 1 in inner else pod[child]
            slices += slc[child]
        pod[dom], slc[dom] = total, total // size if k == slice_idx else slices

    def ordered(doms):  # sortedDomains
        return sorted(doms, key=lambda x: (slc[x] if least_free else -slc[x], pod[x], x))

    def best_fit(doms, wanted, held):  # findBestFitDomainBy
        fitting = [x for x in doms if held[x] >= wanted]
        return min(fitting, key=held.get) if fitting else doms[0]

    def spread(doms, count, unit, by_slices):  # updateCountsToMinimumGeneric
        rest, held, out = (count // unit if by_slices else count), (slc if by_slices else pod), []
        for i, x in enumerate(doms):
            if not least_free and held[x] >= rest:
                x = best_fit(doms[i:], rest, held)
            out.append(x)
            if held[x] >= rest:
                pod[x], slc[x] = (rest * unit, rest) if by_slices else (rest, slc[x])
                return out
            pod[x] = slc[x] * unit if by_slices else pod[x]
            rest -= held[x]
        raise AssertionError("the counts promised room that is not there")

    def find(k):  # findLevelWithFitDomains
        doms = ordered([(k, d) for d in range(tree.sizes[k])])
        top = doms[0]
        if least_free:
            top = next((x for x in doms if slc[x] >= need), top)
        elif slc[top] >= need:
            top = best_fit(doms, need, slc)
        if slc[top] >= need:
            return k, [top]
        if required:
            return None
        if k > 0 and level:
            return find(k - 1)
        out, rest = [], need
        for i, x in enumerate(doms):
            if rest <= 0:
                break
            if not least_free and slc[x] >= rest:
                x = best_fit(doms[i:], rest, slc)
            out.append(x)
            rest -= slc[x]
        return (k, out) if rest <= 0 else None

    for d in range(tree.sizes[0]):
        fill((0, d))
    found = find(search) if pods else None
    if found is None:
        return {} if pods == 0 else None
    k, current = found
    current = spread(current, pods, size, True)
    while k < min(leaf, slice_idx):
        current, k = spread(ordered([c for x in current for c in kids[x]]), pods, size, True), k + 1
    while k < leaf:
        unit, following = (size if k < slice_idx else inner.get(k + 1, 1)), []
        for x in current:
            children = ordered(kids[x])  # Kueue sorts before it recounts the inner groups
            for child in children if unit > 1 else ():
                slc[child] = pod[child] // unit
            following += spread(children, pod[x], unit, unit > 1)
        current, k = following, k + 1
    return {d: pod[(leaf, d)] for _, d in sorted(current) if pod[(leaf, d)] > 0}


@st.composite
def trees(draw):
    depth = draw(st.integers(2, 3))

    def domain(k):
        if k == depth - 1:
            return draw(st.lists(st.integers(0, 9), min_size=1, max_size=4))
        return [domain(k + 1) for _ in range(draw(st.integers(1, 3)))]

    return Tree.from_nested(domain(0))


@st.composite
def requests(draw, tree, free):
    depth = len(tree.levels)
    kind = draw(st.sampled_from(["required", "preferred", "unconstrained"]))
    level = draw(st.integers(0, depth - 1))
    request = {} if kind == "unconstrained" else {kind: tree.levels[level]}
    size = 1
    if draw(st.booleans()):
        slice_idx = draw(st.integers(0 if kind == "unconstrained" else level, depth - 1))
        size = draw(st.sampled_from([1, 2, 4]))
        request |= {"slice_level": tree.levels[slice_idx], "slice_size": size}
        if slice_idx < depth - 1 and size > 1 and draw(st.booleans()):
            request["inner_slices"] = [(tree.levels[draw(st.integers(slice_idx + 1, depth - 1))], size // 2)]
    pods = size * draw(st.integers(0, int(free.sum()) // size + 1))
    return pods, request


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_assign_agrees_with_kueues_code_read_line_by_line(data):
    tree, free = data.draw(trees())
    pods, request = data.draw(requests(tree, free))
    for algorithm in ("best-fit", "least-free"):
        assert assign(tree, free, pods, algorithm=algorithm, **request) == \
            kueue_by_the_book(tree, free, pods, algorithm=algorithm, **request)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_every_placement_fits_the_hosts_keeps_its_level_and_whole_slices(data):
    tree, free = data.draw(trees())
    pods, request = data.draw(requests(tree, free))
    size = request.get("slice_size", 1)
    for algorithm in ("best-fit", "least-free", "balanced"):
        placed = assign(tree, free, pods, algorithm=algorithm, **request)
        totals = tree.totals(free)
        if "required" in request:
            level = tree.level(request["required"])
            fits = (totals[level] >= pods).any() if size == 1 else placed is not None
            assert (placed is not None) == bool(fits)
        elif size == 1:
            assert (placed is not None) == (free.sum() >= pods)
        if placed is None:
            continue
        hosts = np.zeros_like(free)
        hosts[list(placed)] = list(placed.values())
        assert hosts.sum() == pods and (hosts <= free).all()
        placed_totals = tree.totals(hosts)
        if "required" in request:
            assert np.count_nonzero(placed_totals[tree.level(request["required"])]) <= 1
        if "slice_level" in request:
            assert (placed_totals[tree.level(request["slice_level"])] % size == 0).all()
        for name, group in request.get("inner_slices", []):
            assert (placed_totals[tree.level(name)] % group == 0).all()
