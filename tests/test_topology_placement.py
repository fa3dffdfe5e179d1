"""Kueue's topology-aware placements in a run: required levels are never spanned, preferred ones fall back, and
requests a placement cannot read are refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.errors import TraceError
from simcluster.metrics.placements import Placements
from simcluster.paths import shared_data_dir
from simcluster.settings.fields import ConfigError

TAS = ("tas-best-fit", "tas-least-free", "tas-balanced", "kueue-tas")
RACKS = "node,block,rack\na/n0,b0,r0\na/n1,b0,r0\na/n2,b0,r1\na/n3,b0,r1\na/n4,b1,r0\na/n5,b1,r0\n"


def on_racks(tmp_path, jobs: dict, **settings):
    path = tmp_path / "topo.csv"
    path.write_text(RACKS)
    trace = load_trace(pd.DataFrame(jobs).assign(vc="a"), {"a": 6})
    return simulate(trace, SimConfig(topology=str(path), **settings))


@pytest.mark.parametrize("placement", TAS)
def test_a_required_rack_is_never_spanned_and_the_job_waits_for_one(tmp_path, placement):
    # 8 GPUs busy on a/n0 leave every rack but one with a whole free node less
    jobs = {"submit_time": [0, 1, 2], "gpu_num": [8, 16, 16], "duration": [100, 100, 100]}
    result = on_racks(tmp_path, jobs, placement=placement, topology_request="required:rack")
    assert set(result.jobs["spanned_level"]) <= {"", "node"}


@pytest.mark.parametrize("placement", TAS)
def test_a_preferred_rack_falls_back_to_its_block_when_no_rack_has_room(tmp_path, placement):
    jobs = {"submit_time": [0, 0, 1], "gpu_num": [8, 8, 16], "duration": [1000, 1000, 100]}
    result = on_racks(tmp_path, jobs, placement=placement, topology_request="preferred:rack")
    spans = result.jobs["spanned_level"].tolist()
    started = result.jobs["start_time"].tolist()
    assert started[2] == 1.0 and spans[2] in {"node", "rack"}  # at once, not waiting for a whole rack


def test_a_job_no_required_domain_could_ever_hold_is_an_error_before_the_run(tmp_path):
    jobs = {"submit_time": [0], "gpu_num": [24], "duration": [100]}
    with pytest.raises(ConfigError, match=r"job 0 \(24 GPUs, pods of 8\) can never lie within one rack \(required\).*"
                                          r"the largest, b0/r0, holds 16 GPUs"):
        on_racks(tmp_path, jobs, placement="kueue-tas", topology_request="required:rack")


def test_a_placement_that_reads_no_topology_refuses_a_request(tmp_path):
    jobs = {"submit_time": [0], "gpu_num": [8], "duration": [100]}
    with pytest.raises(ConfigError, match="placement consolidate does not read topology requests"):
        on_racks(tmp_path, jobs, topology_request="required:rack")


@pytest.mark.parametrize("placement", TAS)
def test_without_a_topology_the_nodes_are_one_domain(placement):
    # after jobs 0-2 nodes 0 and 1 have 2 GPUs free, nodes 2 and 3 all 8: the 2-GPU job 3 takes the tightest node
    jobs = {"submit_time": [0, 0, 0, 1], "gpu_num": [2, 4, 6, 2], "duration": [100, 100, 100, 100]}
    where = Placements()
    simulate(load_trace(pd.DataFrame(jobs), nodes=4), SimConfig(placement=placement), observers=[where])
    frame = where.frame()
    assert frame.groupby("job_id")["node"].first().to_dict() == {
        "0": "cluster/n0", "1": "cluster/n0", "2": "cluster/n1", "3": "cluster/n0"}


LINGJUN = shared_data_dir() / "topology" / "lingjun" / "topo.csv"


@pytest.mark.skipif(not LINGJUN.is_file(), reason=f"the Lingjun topology is not here ({LINGJUN})")
@pytest.mark.parametrize("placement", (*TAS, "slurm-tree", "slurm-block"))
def test_on_lingjun_a_job_never_spans_its_required_level(placement):
    rng = np.random.default_rng(1)
    sizes = rng.choice([8, 16, 32, 64, 128, 256], size=300, p=[0.3, 0.2, 0.2, 0.15, 0.1, 0.05])
    jobs = pd.DataFrame({"submit_time": np.sort(rng.integers(0, 86_400, 300)), "gpu_num": sizes,
                         "duration": rng.integers(600, 20_000, 300)})
    result = simulate(load_trace(jobs, nodes=847), SimConfig(topology=str(LINGJUN), placement=placement,
                                                             topology_request="required:PSW"))
    assert result.summary["jobs"] == 300
    assert set(result.jobs["spanned_level"]) <= {"", "node", "ASW"}  # never two PSWs, never past the DSW


def test_each_job_takes_its_own_request_from_the_trace_and_the_option_fills_the_rest(tmp_path):
    jobs = {"submit_time": [0, 1, 2], "gpu_num": [8, 16, 16], "duration": [100, 100, 100],
            "topology_required": ["", "rack", ""]}
    result = on_racks(tmp_path, jobs, placement="tas-least-free", topology_request="preferred:block")
    assert result.jobs["spanned_level"].tolist()[1] in {"", "node"}  # its required rack, whatever the option says


def test_pods_of_the_traces_size_fit_where_whole_node_pods_would_not(tmp_path):
    # six nodes with 3 GPUs free each (a 5-GPU job on each): a 12-GPU job of 4-GPU pods (the default) must wait,
    # in 3-GPU pods it starts at once
    jobs = {"submit_time": [0] * 6 + [1], "gpu_num": [5] * 6 + [12], "duration": [1000] * 6 + [100],
            "pod_gpus": [""] * 6 + ["3"]}
    result = on_racks(tmp_path, jobs, placement="kueue-tas")
    assert result.jobs["start_time"].tolist()[-1] == 1.0
    waits = on_racks(tmp_path, {k: v for k, v in jobs.items() if k != "pod_gpus"}, placement="kueue-tas")
    assert waits.jobs["start_time"].tolist()[-1] == 1000.0


def test_a_traces_level_the_topology_lacks_names_the_file_job_and_field(tmp_path):
    jobs = {"submit_time": [0, 1], "gpu_num": [8, 8], "duration": [100, 100], "topology_preferred": ["", "pod"]}
    # (a log without job ids names each job by its line: job 3 is line 3)
    with pytest.raises(TraceError, match=r"jobs.csv, field 'topology_preferred': job 3: no level 'pod' in the "
                                         r"topology \(its levels: block, rack, node\)"):
        csv = tmp_path / "jobs.csv"
        pd.DataFrame(jobs).to_csv(csv, index=False)
        (tmp_path / "topo.csv").write_text(RACKS)
        simulate(load_trace(csv, nodes=6), SimConfig(topology=str(tmp_path / "topo.csv"), placement="kueue-tas"))


def test_a_trace_with_requests_is_refused_by_a_placement_that_cannot_read_them(tmp_path):
    jobs = {"submit_time": [0], "gpu_num": [8], "duration": [100], "topology_required": ["rack"]}
    with pytest.raises(ConfigError, match="the trace's topology requests: placement consolidate does not read"):
        on_racks(tmp_path, jobs)


def random_pool(seed: int):
    """A VC of 24 nodes of 8 GPUs under a random 3-level topology, some GPUs taken and a node down."""
    from simcluster.cluster import Cluster
    from simcluster.job import Job
    from simcluster.topology.request import pool_tree

    rng = np.random.default_rng(seed)
    vc = Cluster({"a": 24}, 8).vcs["a"]
    domains = [(int(rng.integers(2)), int(rng.integers(3)), int(rng.integers(3))) for _ in vc.nodes]
    for i, node in enumerate(vc.nodes):
        taken = int(rng.integers(0, 9))
        if taken:
            node.allocate(Job(index=i, job_id=str(i), vc="a", gpu_num=taken, submit_time=0, duration=1), taken)
    return vc, pool_tree(domains, ("zone", "block", "rack"))


@pytest.mark.parametrize("seed", range(12))
def test_the_one_pod_path_puts_a_pod_where_kueues_assignment_does(seed):
    from simcluster.placement.domain_free import DomainFree
    from simcluster.placement.topology_aware import free_counts
    from simcluster.topology.kueue import assign

    vc, tree = random_pool(seed)
    state = DomainFree(vc, tree)
    for step in range(3):  # the tallies follow GPUs taken and freed after they were made
        if step:
            node = vc.nodes[(seed + step) % len(vc.nodes)]
            for job in list(node.jobs):
                node.release(job)
            if step == 2:
                node.set_up(False)
        assert state.node_pods(1).tolist() == free_counts(vc).tolist()
        for pod in range(1, 9):
            free = free_counts(vc) // pod
            for level in (None, "zone", "block", "rack", "node"):
                for algorithm in ("best-fit", "least-free"):
                    given = {"required": level} if level else {}
                    expected = assign(tree, free, 1, algorithm=algorithm, **given)
                    got = state.one_pod(pod, tree.level(level) if level else state.leaf)
                    assert (None if got is None else {got: 1}) == expected, (pod, level, algorithm)


@pytest.mark.parametrize("seed", range(12))
def test_pods_that_may_go_anywhere_go_where_kueues_assignment_puts_them(seed):
    from simcluster.placement.domain_free import DomainFree
    from simcluster.placement.topology_aware import free_counts
    from simcluster.topology.kueue import assign

    vc, tree = random_pool(seed)
    state = DomainFree(vc, tree)
    for pod in (1, 2, 4, 8):
        free = free_counts(vc) // pod
        sums = state.level_pods(pod)
        assert [s.tolist() for s in sums] == [s.tolist() for s in tree.totals(free)]
        for pods in range(2, int(free.sum()) + 2):
            for algorithm in ("best-fit", "least-free"):
                assert state.spread(pod, pods, algorithm == "least-free") == assign(
                    tree, free, pods, algorithm=algorithm), (pod, pods, algorithm)
                for level in ("block", "rack"):
                    for mode in ("required", "preferred"):
                        assert assign(tree, free, pods, algorithm=algorithm, level_pods=sums, **{mode: level}) == \
                            assign(tree, free, pods, algorithm=algorithm, **{mode: level})


SLICED = "node,block,rack\na/n0,b0,r0\na/n1,b0,r0\na/n2,b0,r0\na/n3,b0,r1\na/n4,b1,r2\na/n5,b1,r2\n"


@pytest.mark.parametrize("placement", ("tas-best-fit", "kueue-tas"))
def test_slices_keep_each_group_of_pods_in_one_rack_even_where_that_spans_blocks(tmp_path, placement):
    # block b0 has four free nodes, but only one pair of them in one rack; b1 has the other pair
    (tmp_path / "topo.csv").write_text(SLICED)
    jobs = {"submit_time": [0], "gpu_num": [32], "duration": [100], "topology_preferred": ["block"]}
    where = Placements()
    sliced = dict(jobs, slice_topology=["rack"], slice_size=[2])
    simulate(load_trace(pd.DataFrame(sliced).assign(vc="a"), {"a": 6}),
             SimConfig(topology=str(tmp_path / "topo.csv"), placement=placement), observers=[where])
    assert sorted(where.frame()["node"]) == ["a/n0", "a/n1", "a/n4", "a/n5"]
    whole = simulate(load_trace(pd.DataFrame(jobs).assign(vc="a"), {"a": 6}),
                     SimConfig(topology=str(tmp_path / "topo.csv"), placement=placement))
    assert whole.jobs["spanned_level"].tolist() == ["rack"]  # without slices: the four nodes of b0


def test_a_slice_needs_its_level_and_size_and_must_split_the_pods(tmp_path):
    (tmp_path / "topo.csv").write_text(SLICED)
    csv = tmp_path / "jobs.csv"
    config = SimConfig(topology=str(tmp_path / "topo.csv"), placement="kueue-tas")
    pd.DataFrame({"submit_time": [0], "gpu_num": [32], "duration": [100], "slice_size": [2]}).to_csv(csv, index=False)
    with pytest.raises(TraceError, match="slice_topology.*a slice needs both"):
        load_trace(csv, nodes=6)
    frame = pd.DataFrame({"submit_time": [0], "gpu_num": [24], "duration": [100], "slice_topology": ["rack"],
                          "slice_size": [2]})
    with pytest.raises(ConfigError, match="slices of 2 pods cannot split its 3 pods of 8 GPUs"):
        simulate(load_trace(frame, nodes=6), config)
    frame = frame.assign(gpu_num=32, topology_required="rack", slice_topology="block")
    with pytest.raises(TraceError, match="slices of level 'block' cannot lie inside one rack"):
        simulate(load_trace(frame, nodes=6), config)
