"""The fast paths of Kueue's placements (DomainFree.place_pods, balanced_one_pod, total_pods) put every job where
the plain assignment (simcluster.topology.kueue.assign) puts it, on random topologies with random free GPUs,
before and after GPUs are taken, freed and nodes go down: the tallies they read must follow the pool."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.cluster import Cluster
from simcluster.job import Job
from simcluster.placement.domain_free import DomainFree
from simcluster.placement.topology_aware import free_counts
from simcluster.topology.kueue import assign
from simcluster.topology.request import pool_tree

LEVELS = ("zone", "block", "rack")
ALGORITHMS = ("best-fit", "least-free", "balanced")


@st.composite
def pools(draw):
    """A VC of 1-20 nodes of 8 GPUs under 1-3 named levels (few domain names, so domains repeat and children of
    equal free pods tie), its nodes' free GPUs drawn (often 0 or 8, where ties are commonest), one maybe down."""
    nodes = draw(st.integers(1, 20))
    depth = draw(st.integers(1, 3))
    levels = LEVELS[-depth:]
    domains = [tuple(draw(st.integers(0, 2)) for _ in levels) for _ in range(nodes)]
    vc = Cluster({"a": nodes}, 8).vcs["a"]
    for i, node in enumerate(vc.nodes):
        taken = draw(st.sampled_from([0, 0, 8, 8, 1, 2, 3, 4, 5, 6, 7]))
        if taken:
            node.allocate(Job(index=i, job_id=str(i), vc="a", gpu_num=taken, submit_time=0, duration=1), taken)
    if draw(st.booleans()):
        idle = [node for node in vc.nodes if not node.jobs]
        if idle:
            draw(st.sampled_from(idle)).set_up(False)
    return vc, pool_tree(domains, levels)


def counts_to_try(room: int) -> list[int]:
    """Counts of pods around the edges that matter (one pod, all that fit, one more) and a few between."""
    return sorted({1, 2, 3, max(room - 1, 1), max(room, 1), room + 1, *range(4, room, max(room // 6, 1))})


def agrees_with_assign(state: DomainFree, vc, tree, pod: int) -> None:
    """Every request without slices, at every level, for pods of ``pod`` GPUs."""
    free = free_counts(vc) // pod
    assert state.total_pods(pod) == int(free.sum())
    for level, name in enumerate(tree.levels):
        expected_one = assign(tree, free, 1, preferred=name, algorithm="balanced")
        got_one = state.balanced_one_pod(pod, level)
        assert (None if got_one is None else {got_one: 1}) == expected_one, (pod, name)
        for pods in counts_to_try(int(free.sum())):
            for mode in ("required", "preferred"):
                for algorithm in ALGORITHMS:
                    expected = assign(tree, free, pods, algorithm=algorithm, **{mode: name})
                    got = state.place_pods(pod, pods, mode, level, algorithm)
                    assert got == expected, (pod, pods, mode, name, algorithm)


@settings(max_examples=200, deadline=None)
@given(pools(), st.sampled_from([1, 2, 3, 4, 8]), st.data())
def test_the_fast_paths_place_as_kueues_assignment_does_as_the_pool_changes(made, pod, data):
    vc, tree = made
    state = DomainFree(vc, tree)
    agrees_with_assign(state, vc, tree, pod)
    busy = [node for node in vc.nodes if node.jobs]
    if busy:  # GPUs freed, then taken elsewhere, after the tallies were made
        freed = data.draw(st.sampled_from(busy))
        for job in list(freed.jobs):
            freed.release(job)
        idle = [node for node in vc.nodes if node.up and node.free_gpus]
        if idle:
            node = data.draw(st.sampled_from(idle))
            node.allocate(Job(index=99, job_id="x", vc="a", gpu_num=1, submit_time=0, duration=1), 1)
        agrees_with_assign(state, vc, tree, pod)


@pytest.mark.parametrize(("free", "block"), [
    ([8, 4, 4, 0, 4, 4, 4, 4], 1),  # pods of 2 per rack: 6 + 2 against 4 + 4
    ([4, 4, 4, 4, 8, 4, 4, 0], 0),  # the same, the other way round
    ([8, 8, 8, 8, 8, 8, 8, 8], 0),  # as even: the lower index
    ([8, 8, 8, 8, 8, 8, 8, 4], 1),  # fewer pods free: the tighter block, however even
])
def test_between_blocks_of_equal_room_balanced_placement_takes_the_one_with_the_more_even_racks(free, block):
    """KEP "Balanced placement": of the domains that hold the job with as few pods to spare, the more balanced
    one (the higher entropy of its children's free capacity) wins."""
    vc = Cluster({"a": 8}, 8).vcs["a"]
    for i, (node, left) in enumerate(zip(vc.nodes, free, strict=True)):
        if left < 8:
            node.allocate(Job(index=i, job_id=str(i), vc="a", gpu_num=8 - left, submit_time=0, duration=1), 8 - left)
    tree = pool_tree([(0, i // 4, i // 2) for i in range(8)], LEVELS)  # a zone of 2 blocks of 2 racks of 2 nodes
    state = DomainFree(vc, tree)
    position = state.balanced_one_pod(2, tree.level("block"))
    assert position is not None and position // 4 == block
    assert {position: 1} == assign(tree, free_counts(vc) // 2, 1, preferred="block", algorithm="balanced")
