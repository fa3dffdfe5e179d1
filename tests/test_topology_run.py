"""A run on a cluster with a topology: the topology matched to the cluster's nodes, what spanning costs, and
what the run records of it."""

from __future__ import annotations

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.paths import shared_data_dir
from simcluster.run import resolve_run
from simcluster.settings.fields import ConfigError

RACKS = "node,block,rack\na/n0,b0,r0\na/n1,b0,r0\na/n2,b0,r1\na/n3,b1,r0\n"


def run(tmp_path, jobs: dict, topology: str = RACKS, **settings):
    path = tmp_path / "topo.csv"
    path.write_text(topology)
    trace = load_trace(pd.DataFrame(jobs).assign(vc="a"), {"a": 4})
    return simulate(trace, SimConfig(topology=str(path), **settings))


def test_a_job_spanning_two_racks_at_rack_cost_a_quarter_takes_a_quarter_longer(tmp_path):
    # 24 GPUs on consolidate's first nodes a/n0..a/n2: racks b0/r0 and b0/r1 in one block
    result = run(tmp_path, {"submit_time": [0], "gpu_num": [24], "duration": [1000]},
                 topology_slowdown="block=1,rack=0.25,node=0.05")
    jobs = result.jobs
    assert jobs["jct"].tolist() == [1250.0] and jobs["spanned_level"].tolist() == ["rack"]
    assert result.summary["topology"]["slowdown"] == {"block": 1.0, "rack": 0.25, "node": 0.05}


def test_the_highest_level_spanned_counts_and_one_node_spans_nothing(tmp_path):
    result = run(tmp_path, {"submit_time": [0, 0, 1000], "gpu_num": [16, 8, 32], "duration": [100, 100, 100]},
                 topology_slowdown="block=1,rack=0.25,node=0.05")
    jobs = result.jobs.set_index("job_id")
    # job 0 on a/n0-a/n1 (one rack: the node level), job 1 on a/n2, then job 2 on all four (two blocks)
    assert jobs["spanned_level"].tolist() == ["node", "", "block"]
    assert jobs["jct"].tolist() == [105.0, 100.0, 200.0]  # job 2 on two blocks: 1/(1 + 1) of its speed
    topology = result.summary["topology"]
    assert topology["jobs_spanning"] == {"block": 1 / 3, "rack": 1 / 3, "node": 2 / 3}
    assert topology["domains"] == {"block": 2, "rack": 3} and "matched by name" in topology["matched"]


def test_rows_match_the_nodes_by_order_where_the_names_are_not_the_clusters(tmp_path):
    renamed = RACKS.replace("a/n", "host")
    result = run(tmp_path, {"submit_time": [0], "gpu_num": [24], "duration": [1000]}, topology=renamed,
                 topology_slowdown="rack=0.5")
    assert result.jobs["jct"].tolist() == [1500.0]
    assert "by order" in result.summary["topology"]["matched"]


def test_a_topology_slowdown_without_a_topology_is_refused(tmp_path):
    trace = load_trace(pd.DataFrame({"submit_time": [0], "gpu_num": [8], "duration": [10]}), nodes=1)
    with pytest.raises(ConfigError, match="--topology-slowdown rack=0.5 applies only to runs with a topology"):
        resolve_run(trace, SimConfig(topology_slowdown="rack=0.5"))


def test_the_node_levels_cost_is_given_once(tmp_path):
    with pytest.raises(ConfigError, match="--spread-penalty or --topology-slowdown node=X, not both"):
        run(tmp_path, {"submit_time": [0], "gpu_num": [8], "duration": [10]}, topology_slowdown="node=0.1",
            spread_penalty=0.2)
    result = run(tmp_path, {"submit_time": [0], "gpu_num": [16], "duration": [100]}, spread_penalty=0.2)
    assert result.jobs["jct"].tolist() == [120.0] and result.summary["topology"]["slowdown"]["node"] == 0.2


def test_a_level_the_topology_lacks_is_named_with_the_levels_it_has(tmp_path):
    with pytest.raises(ConfigError, match=r"no level 'switch' in the topology \(its levels: block, rack, node\)"):
        run(tmp_path, {"submit_time": [0], "gpu_num": [8], "duration": [10]}, topology_slowdown="switch=1")


LINGJUN = shared_data_dir() / "topology" / "lingjun" / "topo.csv"


@pytest.mark.skipif(not LINGJUN.is_file(), reason=f"the Lingjun topology is not here ({LINGJUN})")
def test_a_run_on_lingjuns_847_hosts_records_its_spans():
    jobs = pd.DataFrame({"submit_time": range(40), "gpu_num": [8, 64, 16, 128] * 10, "duration": [3600] * 40})
    result = simulate(load_trace(jobs, nodes=847), SimConfig(topology=str(LINGJUN),
                                                             topology_slowdown="PSW=0.3,ASW=0.1"))
    topology = result.summary["topology"]
    assert topology["nodes"] == 847 and topology["domains"] == {"DSW": 1, "PSW": 3, "ASW": 119}
    assert "by order" in topology["matched"]
    assert set(result.jobs["spanned_level"]) <= {"", "PSW", "ASW", "node"}
    spanning = result.jobs["spanned_level"].isin(["PSW", "ASW"])
    assert (result.jobs.loc[spanning, "jct"] > 3600).all() and (result.jobs.loc[~spanning, "jct"] >= 3600).all()
