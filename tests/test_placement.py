from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcluster.cluster import VirtualCluster
from simcluster.job import Job
from simcluster.plugins import PluginError, make_placement


def job(gpus: int, index: int = 0) -> Job:
    return Job(index=index, job_id=f"j{index}", vc="v", gpu_num=gpus, submit_time=0, duration=10)


def occupy(vc: VirtualCluster, used: list[int]) -> None:
    for node, n in zip(vc.nodes, used):
        if n:
            node.allocate(job(n, index=100 + node.index), n)


def plan_of(name: str, vc: VirtualCluster, gpus: int):
    plan = make_placement(name, random.Random(0)).place(job(gpus), vc)
    return None if plan is None else [(node.index, n) for node, n in plan]


def test_small_job_goes_to_the_fullest_node_that_fits():
    vc = VirtualCluster("v", nodes=4)
    occupy(vc, [2, 6, 5, 6])  # free: 6, 2, 3, 2
    assert plan_of("consolidate", vc, 2) == [(1, 2)]  # fewest free that fit, ties by node order
    assert plan_of("consolidate", vc, 3) == [(2, 3)]
    assert plan_of("consolidate", vc, 7) is None  # 13 free GPUs, but no node holds 7


def test_large_job_takes_whole_idle_nodes_and_a_remainder_node():
    vc = VirtualCluster("v", nodes=4)
    occupy(vc, [0, 4, 0, 1])  # free: 8, 4, 8, 7
    assert plan_of("consolidate", vc, 16) == [(0, 8), (2, 8)]
    assert plan_of("consolidate", vc, 12) == [(0, 8), (2, 4)]  # remainder on the next idle node (Helios order)
    assert plan_of("consolidate", vc, 14) == [(0, 8), (2, 6)]
    occupy(vc, [0, 0, 8, 0])  # free: 8, 4, 0, 7
    assert plan_of("consolidate", vc, 15) == [(0, 8), (3, 7)]  # remainder on the node with most free
    assert plan_of("consolidate", vc, 16) is None  # only one idle node


def test_consolidate_first_spreads_over_fewest_nodes_when_it_must():
    vc = VirtualCluster("v", nodes=3)
    occupy(vc, [3, 5, 6])  # free: 5, 3, 2
    assert plan_of("consolidate", vc, 7) is None
    assert plan_of("consolidate-first", vc, 7) == [(0, 5), (1, 2)]
    assert plan_of("consolidate-first", vc, 11) is None


def test_random_placement_is_seeded_and_never_overfills():
    vc = VirtualCluster("v", nodes=6)
    occupy(vc, [1, 2, 3, 4, 5, 6])
    first = [make_placement("random", random.Random(7)).place(job(9), vc) for _ in range(3)]
    again = [make_placement("random", random.Random(7)).place(job(9), vc) for _ in range(3)]
    assert [[(n.index, k) for n, k in p] for p in first] == [[(n.index, k) for n, k in p] for p in again]
    for plan in first:
        assert sum(k for _, k in plan) == 9 and all(k <= n.free_gpus for n, k in plan)


def test_down_nodes_are_never_chosen():
    vc = VirtualCluster("v", nodes=2)
    vc.nodes[0].set_up(False)
    assert vc.free_gpus == 8
    assert plan_of("consolidate", vc, 1) == [(1, 1)]
    assert plan_of("consolidate", vc, 9) is None


@given(steps=st.lists(st.tuples(st.sampled_from(["allocate", "release", "share"]), st.integers(1, 8)), max_size=30),
       asked_at=st.integers(0, 30))
def test_per_gpu_job_lists_built_when_first_asked_for_match_lists_kept_from_the_start(steps, asked_at):
    kept, late = VirtualCluster("kept", nodes=2), VirtualCluster("late", nodes=2)
    for node in kept.nodes:
        assert node.gpus == [[] for _ in range(8)]  # asked for at once: kept up to date from now on
    for step, (what, n) in enumerate(steps):
        if step == asked_at:
            assert [node.gpus for node in late.nodes] == [node.gpus for node in kept.nodes]
        new = job(n, index=step)
        for vc in (kept, late):
            node = vc.nodes[step % 2]
            oldest = next(iter(node.jobs), None)
            if what == "allocate" and n <= node.free_gpus:
                node.allocate(new, n)
            elif what == "release" and oldest is not None:
                node.release(oldest)
            elif what == "share" and oldest is not None:
                node.attach(new, node.jobs[oldest])
    for a, b in zip(kept.nodes, late.nodes):
        assert (a.gpus, a.free_ids, a.used, a.shared, a.extra) == (b.gpus, b.free_ids, b.used, b.shared, b.extra)
        assert a.free_ids == [i for i, holders in enumerate(a.gpus) if not holders]
        assert a.used == sum(1 for holders in a.gpus if holders)
    assert kept.buckets == late.buckets and kept.free_gpus == late.free_gpus == 16 - kept.used_gpus


def test_unknown_placement_names_the_choices():
    with pytest.raises(PluginError, match="choose one of: consolidate"):
        make_placement("best-fit", random.Random(0))
