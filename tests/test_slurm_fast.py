"""slurm-tree and slurm-block read whole free nodes off tallies kept up to date as nodes are taken and freed, not
off every node: the nodes they choose are the plain rules' (tree_select and block_select on the mask of every whole
free node), decision after decision, on random trees with random busy nodes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.cluster import Cluster
from simcluster.cluster_spec import ClusterSpec, NodeGroup
from simcluster.job import Job
from simcluster.placement import slurm_topology
from simcluster.placement.domain_free import tree_of_pool
from simcluster.placement.slurm_topology import FABRIC, SlurmBlock, SlurmTree, WholeFree
from simcluster.topology.arrays import NODE
from simcluster.topology.costs import ClusterTopology
from simcluster.topology.kueue import Tree
from simcluster.topology.model import Topology
from simcluster.topology.request import TopologyRequest
from simcluster.topology.slurm_select import DEFAULT_BLOCK_LEVELS, block_select, tree_select

LEVELS = ("zone", "block", "rack")
SIZES = [1, 2, 4, 8, 12, 16, 24, 32, 40, 64, 96]


@st.composite
def clusters(draw):
    """A VC of random nodes (8 GPUs, or 8 and 4) under 1 to 3 random levels, its nodes' racks in random order."""
    small = draw(st.integers(0, 4)) if draw(st.booleans()) else 0
    large = draw(st.integers(1, 32))
    depth = draw(st.integers(1, 3))
    racks = draw(st.integers(1, 12))
    block_of = [draw(st.integers(0, 3)) for _ in range(racks)]
    zone_of = [draw(st.integers(0, 1)) for _ in range(4)]
    rack = [draw(st.integers(0, racks - 1)) for _ in range(large + small)]
    labels = [[f"z{zone_of[block_of[r]]}" for r in rack], [f"b{block_of[r]}" for r in rack], [f"r{r}" for r in rack]]
    groups = (NodeGroup("a", "h100", large, 8),) + ((NodeGroup("a", "a10", small, 4),) if small else ())
    spec = ClusterSpec(groups)
    topology = Topology.from_labels(LEVELS[3 - depth:], spec.node_names, labels[3 - depth:])
    vc = Cluster(replace(spec, topology=ClusterTopology(topology, (0.0,) * (depth + 1)))).vcs["a"]
    for index, node in enumerate(vc.nodes):  # busy nodes, some of them partly
        used = draw(st.sampled_from([0, 0, 0, node.gpu_count, 1, node.gpu_count - 1]))
        if used:
            node.allocate(job_of(-1 - index, used, None), used)
    return vc


def jobs(levels: tuple[str, ...]):
    """A job's GPUs, its request (none, required or preferred, at a level of the pool's or the node) and pods."""
    request = st.one_of(st.none(), st.tuples(st.sampled_from(["required", "preferred"]),
                                             st.sampled_from([*levels, NODE]), st.sampled_from([0, 8, 16])))
    return st.tuples(st.sampled_from(SIZES), st.one_of(request, request.filter(lambda r: r is not None)))


def job_of(index: int, gpus: int, request) -> Job:
    job = Job(index=index, job_id=f"j{index}", vc="a", gpu_num=gpus, submit_time=0, duration=1)
    if request is not None:
        mode, level, pod = request
        job.topology = TopologyRequest(mode, level, pod if pod and gpus % pod == 0 else 0)  # (pods divide the job)
    return job


def where(plan) -> list[tuple[str, int]] | None:
    return None if plan is None else [(node.name, gpus) for node, gpus in plan]


def plain_rule(placement, job: Job, vc) -> list[tuple[str, int]] | None:
    """Slurm's rule on the mask of every whole free node, built here from the nodes themselves."""
    per_node = vc.gpus_per_node
    count = -(-job.gpu_num // per_node)
    whole = np.array([node.up and node.used == 0 and node.gpu_count >= min(job.gpu_num, per_node)
                      for node in vc.nodes])
    tree = tree_of_pool(vc, "test")
    if placement.plugin == "tree":
        walked = tree if tree.sizes[0] == 1 else Tree((FABRIC, *tree.levels), (
            np.array([-1]), np.zeros(tree.sizes[0], dtype=np.int64), *tree.parents[1:]))
        chosen = tree_select(walked, whole, count)
    else:
        blocks = Tree(("block", NODE), (np.full(tree.sizes[-2], -1), tree.parents[-1]))
        base = int(np.bincount(tree.parents[-1]).min())
        segments = block_select(blocks, whole, count, block_sizes=[base << k for k in DEFAULT_BLOCK_LEVELS])
        chosen = None if segments is None else np.sort(np.concatenate(segments))
    if chosen is None:
        return None
    named = [vc.nodes[i].name for i in chosen.tolist()]
    return [(name, per_node) for name in named[:-1]] + [(named[-1], job.gpu_num - (count - 1) * per_node)]


@pytest.mark.parametrize("plugin", [SlurmTree, SlurmBlock])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_the_fast_path_picks_the_plain_rules_nodes_decision_after_decision(plugin, data):
    vc = data.draw(clusters())
    placement, levels = plugin(), vc.topology_levels
    running: list[tuple[Job, list]] = []
    for step in range(data.draw(st.integers(1, 25))):
        action = data.draw(st.sampled_from(["place", "place", "place", "busy", "release", "down"]))
        if action == "busy":  # some GPUs of a node taken outside the placement: no longer a whole free node
            node = data.draw(st.sampled_from(vc.nodes))
            if node.up and node.free_gpus:
                filler = job_of(1000 + step, 1, None)
                running.append((filler, [(node, node.allocate(filler, data.draw(st.integers(1, node.free_gpus))))]))
        elif action == "release" and running:
            job, taken = running.pop(data.draw(st.integers(0, len(running) - 1)))
            for node, _ in taken:
                node.release(job)
        elif action == "down":  # an idle node goes down or comes back up
            node = data.draw(st.sampled_from(vc.nodes))
            if not node.jobs:
                node.set_up(not node.up)
        elif action == "place":
            gpus, request = data.draw(jobs(levels))
            job = job_of(step, gpus, request)
            fast, plain = where(placement.place(job, vc)), where(placement.place_plainly(job, vc))
            assert fast == plain
            if request is None:
                assert fast == plain_rule(placement, job, vc)
            if fast is not None and data.draw(st.booleans()):
                plan = placement.place(job, vc)
                running.append((job, [(node, node.allocate(job, count)) for node, count in plan]))


def recount(vc, state: WholeFree) -> list[np.ndarray]:
    """Whole free nodes per domain of every named level, counted from the nodes."""
    whole = np.array([node.up and node.used == 0 for node in vc.nodes])
    return [np.bincount(state.domain_of[level], weights=whole, minlength=state.tree.sizes[level]).astype(int)
            for level in range(state.named)]


@settings(max_examples=60, deadline=None)
@given(vc=clusters(), moves=st.lists(st.tuples(st.integers(0, 23), st.integers(0, 8)), max_size=30))
def test_the_tallies_follow_every_node_taken_freed_or_down(vc, moves):
    state = WholeFree(vc, tree_of_pool(vc, "test"))
    held: dict[int, Job] = {}
    for index, (position, gpus) in enumerate(moves):
        position %= len(vc.nodes)
        node = vc.nodes[position]
        if position in held:
            node.release(held.pop(position))
        elif gpus == 0 and not node.jobs:
            node.set_up(not node.up)
        elif node.up and gpus and node.free_gpus:
            held[position] = job_of(index, 1, None)
            node.allocate(held[position], min(gpus, node.free_gpus))
        state.sync()
        at_least_one = [state.at(level, 1) for level in range(state.named)]
        assert [counts.tolist() for counts in at_least_one] == [c.tolist() for c in recount(vc, state)]
        assert state.available(1) == sum(node.up and node.used == 0 for node in vc.nodes)


def test_a_search_that_found_nothing_is_asked_again_once_a_node_is_freed():
    # racks of one node, base blocks of slurm-block: 2 nodes take an aligned pair, (r0, r1) or (r2)
    racks = Topology.from_labels(("rack",), ["a/n0", "a/n1", "a/n2"], [["r0", "r1", "r2"]])
    vc = Cluster(replace(ClusterSpec.uniform({"a": 3}), topology=ClusterTopology(racks, (0.0, 0.0)))).vcs["a"]
    busy = job_of(0, 8, None)
    vc.nodes[1].allocate(busy, 8)
    placement, pair = SlurmBlock(), job_of(1, 16, None)
    assert placement.place(pair, vc) is None  # a/n0 and a/n2 are free, but in no aligned pair
    assert placement.place(pair, vc) is None  # (the same search on the same nodes: remembered)
    vc.nodes[1].release(busy)
    assert where(placement.place(pair, vc)) == [("a/n0", 8), ("a/n1", 8)]


@pytest.mark.parametrize("plugin", [SlurmTree, SlurmBlock])
def test_a_job_needing_more_whole_free_nodes_than_the_pool_has_is_refused_without_a_search(plugin, monkeypatch):
    vc = Cluster({"a": 3}, 8).vcs["a"]
    vc.nodes[1].allocate(job_of(0, 1, None), 1)  # 23 GPUs free, but only 2 whole free nodes
    placement = plugin()
    placement.place(job_of(1, 1, None), vc)  # (the pool's tallies, built)

    def searched(*args, **kwargs):
        raise AssertionError("searched")

    monkeypatch.setattr(slurm_topology, "tree_choice", searched)
    monkeypatch.setattr(slurm_topology, "block_choice", searched)
    assert placement.place(job_of(2, 17, None), vc) is None  # 3 nodes


@settings(max_examples=150, deadline=None)
@given(vc=clusters().filter(lambda vc: len(vc.topology_levels) >= 2),
       asks=st.lists(st.tuples(st.integers(2, 6), st.sampled_from(["zone", "block"]), st.sampled_from([0, 8, 16])),
                     min_size=1, max_size=6))
def test_a_required_domain_is_searched_as_a_topology_of_its_own_as_the_plain_rule_does(vc, asks):
    # slurm-block's own aligned block may span two domains of the level: the rule then runs inside the tightest
    placement = SlurmBlock()
    for index, (nodes, level, pod) in enumerate(asks):
        if level not in vc.topology_levels:
            continue
        job = job_of(index, 8 * nodes, ("required", level, pod))
        plan = placement.place(job, vc)
        assert where(plan) == where(placement.place_plainly(job, vc))
        for node, gpus in plan or ():
            node.allocate(job, gpus)
