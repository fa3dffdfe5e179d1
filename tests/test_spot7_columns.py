"""Spot nodes named by a column (a VC config's ``spot``: how many of a row's nodes; a node list's ``spot`` per node)
and spot nodes on VCs of several GPU types (docs/tiers.md, "Spot nodes"; simcluster.cluster_spec,
simcluster.traces.sizing, simcluster.features.spot, simcluster.engine.spot)."""

from __future__ import annotations

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.cluster_spec import load_node_list
from simcluster.config import SimConfig
from simcluster.errors import TraceError
from simcluster.metrics.observer import Observer
from simcluster.settings.fields import ConfigError
from simcluster.traces import load_trace as load_path
from simcluster.traces.sizing import read_vc_config


class Starts(Observer):
    def __init__(self) -> None:
        self.on: dict[str, list[str]] = {}

    def on_start(self, job, now):
        self.on.setdefault(job.job_id, []).extend(node.name for node, _ in job.allocation)


LOG_HEADER = "job_id,vc,gpu_num,submit_time,duration,preemptible\n"


def trace_folder(tmp_path, vc_config: str, jobs: str):
    folder = tmp_path / "trace"
    folder.mkdir()
    (folder / "cluster_full_log.csv").write_text(LOG_HEADER + jobs)
    (folder / "vc_config.csv").write_text(vc_config)
    return folder


def test_a_vc_configs_spot_column_names_the_spot_nodes(tmp_path):
    # a: 3 nodes, its last 1 spot (a/n2); b: 2 nodes, none spot.  The preemptible job goes to a's spot node first, the
    # guaranteed ones to a/n0 and a/n1; b's job runs where it likes
    folder = trace_folder(tmp_path, "vc,num,spot\na,3,1\nb,2,0\n",
                          "p,a,8,0,100,true\ng1,a,8,0,100,false\ng2,a,8,0,100,false\nh,b,8,0,100,false\n")
    trace = load_path(folder)
    assert trace.cluster.spot_positions() == {"a": [2]}
    starts = Starts()
    result = simulate(trace, SimConfig(policy="fifo"), observers=[starts])
    assert starts.on["p"] == ["a/n2"] and sorted(starts.on["g1"] + starts.on["g2"]) == ["a/n0", "a/n1"]
    assert result.summary["spot"]["spot_nodes"] == 1 and result.summary["spot"]["spot_gpus"] == 8


def test_a_vc_config_with_a_spot_column_and_spot_nodes_too_is_refused(tmp_path):
    folder = trace_folder(tmp_path, "vc,num,spot\na,3,1\n", "p,a,8,0,100,true\n")
    with pytest.raises(ConfigError, match="--spot-nodes 1: .*vc_config.csv names the spot nodes already"):
        simulate(load_path(folder), SimConfig(policy="fifo", spot_nodes="1"))


@pytest.mark.parametrize("cell, problem", [("4", "from 0 to the row's 3 nodes, got '4'"), ("x", "got 'x'"),
                                           ("-1", "got '-1'"), ("1.5", "got '1.5'")])
def test_a_bad_spot_cell_of_a_vc_config_names_file_line_and_field(tmp_path, cell, problem):
    path = tmp_path / "vcs.csv"
    path.write_text(f"vc,num,spot\na,2,0\nb,3,{cell}\n")
    with pytest.raises(TraceError, match=f"vcs.csv, line 3, field 'spot': spot nodes must be .*{problem}"):
        read_vc_config(path)


def test_a_typed_vc_configs_spot_column_counts_each_rows_last_nodes(tmp_path):
    path = tmp_path / "vcs.csv"
    path.write_text("vc,num,gpu_type,spot\na,2,v100,1\na,2,k80,2\nb,1,v100,\n")
    _, spec = read_vc_config(path)
    assert spec.spot_positions() == {"a": [1, 2, 3]}  # a/n0-n1 v100 (n1 spot), a/n2-n3 k80 (both)


def node_list(tmp_path, rows: str):
    path = tmp_path / "nodes.csv"
    path.write_text("sn,gpu,model,spot\n" + rows)
    return path


def test_a_node_lists_spot_column_names_nodes_by_type(tmp_path):
    # types in alphabetical order: k80 (c, d) first, then v100 (a, b); the spot ones are d and b: n1 and n3
    path = node_list(tmp_path, "a,8,V100,false\nb,8,V100,TRUE\nc,8,K80,0\nd,8,K80,1\n")
    assert load_node_list(path).spot_positions() == {"cluster": [1, 3]}
    # an on-demand node after a spot one of the same type begins a row of its own (a row's spot nodes are its last)
    mixed = load_node_list(node_list(tmp_path, "a,8,V100,1\nb,8,V100,0\nc,8,V100,1\n"))
    assert mixed.spot_positions() == {"cluster": [0, 2]} and mixed.vc_nodes == {"cluster": 3}


def test_a_bad_spot_cell_of_a_node_list_names_file_line_and_field(tmp_path):
    with pytest.raises(TraceError, match="nodes.csv, line 3, field 'spot': spot must be true/false or 1/0, got 'y'"):
        load_node_list(node_list(tmp_path, "a,8,V100,0\nb,8,V100,y\n"))


def jobs(rows):
    return pd.DataFrame(rows, columns=["job_id", "gpu_num", "submit_time", "duration", "preemptible"])


def test_spot_nodes_of_a_node_list_on_a_vc_of_two_gpu_types(tmp_path):
    # n0 k80, n1 k80 spot, n2 v100, n3 v100 spot: the two preemptible jobs take the spot nodes, the guaranteed ones
    # the others, all at once
    path = node_list(tmp_path, "a,8,V100,false\nb,8,V100,true\nc,8,K80,0\nd,8,K80,1\n")
    starts = Starts()
    rows = [("p1", 8, 0, 100, True), ("p2", 8, 0, 100, True), ("g1", 8, 0, 100, False), ("g2", 8, 0, 100, False)]
    result = simulate(load_trace(jobs(rows), nodes=4), SimConfig(policy="fifo", cluster=str(path)),
                      observers=[starts])
    assert sorted(starts.on["p1"] + starts.on["p2"]) == ["cluster/n1", "cluster/n3"]
    assert sorted(starts.on["g1"] + starts.on["g2"]) == ["cluster/n0", "cluster/n2"]
    assert (result.jobs["start_time"] == 0).all() and result.summary["spot"]["spot_gpus"] == 16


def test_a_job_of_one_gpu_type_keeps_to_its_types_spot_nodes_or_others(tmp_path):
    # on the VC's v100 pool alone (a job that runs on v100 only: Kueue's flavor, try_start_in's gpu_type), a
    # preemptible job takes n3 (v100 spot) and a guaranteed one n2 (v100 on demand); a second guaranteed one finds
    # no v100 node off spot
    from simcluster.cluster import Cluster
    from simcluster.engine.spot import SpotCapacity
    from simcluster.job import Job
    from simcluster.placement.consolidate import Consolidate

    cluster = Cluster(load_node_list(node_list(tmp_path, "a,8,V100,0\nb,8,V100,1\nc,8,K80,0\nd,8,K80,1\n")))
    capacity = SpotCapacity({"cluster": [1, 3]}, None, 0.0, False, 3600.0, 0, 0.0)
    placement = capacity.wrap(Consolidate(), cluster)
    vc = cluster.vcs["cluster"]
    v100 = vc.pools["v100"]
    spot_job = Job(index=0, job_id="p", vc="cluster", gpu_num=8, submit_time=0, duration=60, preemptible=True)
    guaranteed = Job(index=1, job_id="g", vc="cluster", gpu_num=8, submit_time=0, duration=60)
    placed = placement.place(spot_job, v100)
    assert [(node.name, count) for node, count in placed] == [("cluster/n3", 8)]
    for node, count in placed:
        node.allocate(spot_job, count)
    assert v100.free_gpus == 8 and vc.free_gpus == 24  # (the type's pool and the VC heard of it)
    placed = placement.place(guaranteed, v100)
    assert [(node.name, count) for node, count in placed] == [("cluster/n2", 8)]
    for node, count in placed:
        node.allocate(guaranteed, count)
    other = Job(index=2, job_id="h", vc="cluster", gpu_num=8, submit_time=0, duration=60)
    assert placement.place(other, v100) is None
    assert [(n.name, c) for n, c in placement.place(other, vc)] == [("cluster/n0", 8)]  # (a k80 off spot)


def test_spot_nodes_on_two_gpu_types_reclaimed_with_faults_finish_every_job(tmp_path):
    # --spot-nodes 1 on a VC of v100 and k80 nodes: its last node (a k80) is spot; reclaims and faults both at work
    rows = [(f"j{i}", 8 if i % 4 else 16, i * 300, 3_000, i % 2 == 0) for i in range(40)]
    config = SimConfig(policy="fifo", cluster="v100:16,k80:16", spot_nodes="1", spot_reclaims="mtbf=2h,repair=30m",
                       node_mtbf=86_400, checkpoint_interval=600)
    result = simulate(load_trace(jobs(rows), nodes=4), config)
    assert result.jobs["end_time"].notna().all() and len(result.jobs) == 40
    spot = result.summary["spot"]
    assert spot["spot_nodes"] == 1 and spot["reclaims"] > 0 and spot["evictions"] > 0


def test_spot_options_without_spot_nodes_are_refused_in_words():
    with pytest.raises(ConfigError, match="--spot-reclaims applies only to runs with spot nodes"):
        simulate(load_trace(jobs([("a", 8, 0, 100, True)]), nodes=2),
                 SimConfig(policy="fifo", spot_reclaims="mtbf=1d,repair=1h"))
