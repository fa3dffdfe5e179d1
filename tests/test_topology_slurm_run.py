"""Slurm's topology/tree and topology/block as placements of a run (slurm-tree, slurm-block): whole nodes, chosen
as simcluster.topology.slurm_select's rules choose them, and jobs' topology requests read as Slurm would."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.cli import main
from simcluster.config import SimConfig
from simcluster.metrics.placements import Placements
from simcluster.placement import PLACEMENTS
from simcluster.settings.fields import ConfigError

SLURM = ("slurm-tree", "slurm-block")
# racks r0 (1 node) and r1 (3) in block b0, r2 (2) in b1
RACKS = "node,block,rack\na/n0,b0,r0\na/n1,b0,r1\na/n2,b0,r1\na/n3,b0,r1\na/n4,b1,r2\na/n5,b1,r2\n"
FOREST = "SwitchName=s0 Nodes=h[0-1]\nSwitchName=s1 Nodes=h[2-3]\n"  # two trees: Slurm never joins them
BLOCKS = "".join(f"BlockName=b{b} Nodes=h[{2 * b}-{2 * b + 1}]\n" for b in range(4))  # four base blocks of 2


def placed(tmp_path, topology: str, jobs: dict, nodes: int, name: str = "topo.csv", **settings):
    """The run's jobs and where each one ran: {job: [(node, GPUs), ...]}."""
    path = tmp_path / name
    path.write_text(topology)
    where = Placements()
    result = simulate(load_trace(pd.DataFrame(jobs).assign(vc="a"), {"a": nodes}),
                      SimConfig(topology=str(path), **settings), observers=[where])
    frame = where.frame()
    runs = {job: [(node.split("/")[1], gpus.count(",") + 1) for node, gpus in zip(rows["node"], rows["gpus"])]
            for job, rows in frame.groupby("job_id", sort=False)}
    return result.jobs, runs


def test_slurm_tree_puts_a_job_on_the_leaf_switch_that_holds_it_the_tightest_first(tmp_path):
    jobs = {"submit_time": [0, 1, 2], "gpu_num": [24, 12, 8], "duration": [1000] * 3}
    _, runs = placed(tmp_path, RACKS, jobs, 6, placement="slurm-tree")
    # 3 nodes: only r1 holds them; 2 nodes: only r2 (8 GPUs, then the 4 left); 1 node: r0, the fullest leaf switch
    assert runs == {"0": [("n1", 8), ("n2", 8), ("n3", 8)], "1": [("n4", 8), ("n5", 4)], "2": [("n0", 8)]}


def test_slurm_tree_spreads_a_job_no_switch_holds_over_the_fewest_leaf_switches(tmp_path):
    jobs = {"submit_time": [0], "gpu_num": [40], "duration": [100]}
    result, runs = placed(tmp_path, RACKS, jobs, 6, placement="slurm-tree")
    # no block holds 5 nodes: r1's 3, then r2, the rack that holds the 2 left (the first free nodes span 3 racks)
    assert [node for node, _ in runs["0"]] == ["n1", "n2", "n3", "n4", "n5"]
    assert result["spanned_level"].tolist() == ["block"]


def test_slurm_tree_never_joins_two_trees_of_a_slurm_topology_conf(tmp_path):
    jobs = {"submit_time": [0, 1, 2, 3], "gpu_num": [8, 8, 8, 16], "duration": [1000, 100, 1000, 100]}
    result, runs = placed(tmp_path, FOREST, jobs, 4, name="topology.conf", placement="slurm-tree")
    assert [runs[job][0][0] for job in "012"] == ["n0", "n1", "n2"]  # best fit: h1 before the empty s1
    # from t=101 h1 and h3 are free, one in each tree: the 2-node job waits for h0 to join h1
    assert result["start_time"].tolist()[3] == 1000.0 and [node for node, _ in runs["3"]] == ["n0", "n1"]


def test_slurm_block_keeps_a_job_in_the_fullest_base_block_that_holds_it(tmp_path):
    jobs = {"submit_time": [0, 1, 2, 3], "gpu_num": [8, 16, 8, 32], "duration": [1000] * 4}
    _, runs = placed(tmp_path, BLOCKS, jobs, 8, name="topology.conf", placement="slurm-block")
    # equal blocks: the last; then the fullest that holds the job (b3 for one node); 4 nodes: an aligned pair
    assert runs == {"0": [("n6", 8)], "1": [("n4", 8), ("n5", 8)], "2": [("n7", 8)],
                    "3": [("n0", 8), ("n1", 8), ("n2", 8), ("n3", 8)]}


def test_pods_of_whole_nodes_are_slurm_blocks_segments_each_in_one_base_block(tmp_path):
    jobs = {"submit_time": [0, 1], "gpu_num": [8, 32], "duration": [1000, 100]}
    _, whole = placed(tmp_path, BLOCKS, jobs, 8, name="topology.conf", placement="slurm-block")
    _, segments = placed(tmp_path, BLOCKS, {**jobs, "pod_gpus": ["", "16"]}, 8, name="topology.conf",
                         placement="slurm-block")
    assert [node for node, _ in whole["1"]] == ["n0", "n1", "n2", "n3"]  # one pair of base blocks
    assert [node for node, _ in segments["1"]] == ["n2", "n3", "n4", "n5"]  # b2, then b1: a block per segment


@pytest.mark.parametrize("placement", SLURM)
def test_a_job_takes_whole_nodes_and_no_other_job_shares_them(placement):
    jobs = pd.DataFrame({"submit_time": [0, 0, 0, 0], "gpu_num": [4, 4, 4, 12], "duration": [100] * 4})
    where = Placements()
    result = simulate(load_trace(jobs, nodes=3), SimConfig(placement=placement), observers=[where])
    # (no topology: the first free nodes) a node with 4 GPUs busy is not free: the third job waits for one
    assert result.jobs["start_time"].tolist() == [0.0, 0.0, 0.0, 100.0]
    nodes = where.frame().groupby("job_id", sort=False)["node"].apply(list).to_dict()
    assert nodes == {"0": ["cluster/n0"], "1": ["cluster/n1"], "2": ["cluster/n2"],
                     "3": ["cluster/n0", "cluster/n1"]}
    assert where.frame()["gpus"].str.count(",").add(1).tolist()[-2:] == [8, 4]  # the last node: what is left


@pytest.mark.parametrize("placement", SLURM)
def test_pods_that_make_no_whole_node_still_take_whole_nodes(tmp_path, placement):
    jobs = {"submit_time": [0], "gpu_num": [12], "duration": [100], "pod_gpus": ["2"]}
    _, runs = placed(tmp_path, RACKS, jobs, 6, placement=placement)
    assert sorted(gpus for _, gpus in runs["0"]) == [4, 8]


@pytest.mark.parametrize("placement", SLURM)
def test_a_required_rack_is_never_spanned_and_a_preferred_one_changes_nothing(tmp_path, placement):
    jobs = {"submit_time": [0, 1, 2, 3], "gpu_num": [8, 16, 16, 24], "duration": [300, 100, 100, 100]}
    required, _ = placed(tmp_path, RACKS, jobs, 6, placement=placement, topology_request="required:rack")
    assert set(required["spanned_level"]) <= {"", "node"}
    _, own = placed(tmp_path, RACKS, jobs, 6, placement=placement)
    _, preferred = placed(tmp_path, RACKS, jobs, 6, placement=placement, topology_request="preferred:rack")
    assert preferred == own


def test_a_required_block_is_kept_where_slurms_own_pair_of_base_blocks_spans_two(tmp_path):
    # base blocks (racks) r0 in b0, r1 and r2 in b1: 4 nodes take the aligned pair r0 + r1, across blocks
    racks = "node,block,rack\na/n0,b0,r0\na/n1,b0,r0\na/n2,b1,r1\na/n3,b1,r1\na/n4,b1,r2\na/n5,b1,r2\n"
    jobs = {"submit_time": [0], "gpu_num": [32], "duration": [100]}
    own, _ = placed(tmp_path, racks, jobs, 6, placement="slurm-block")
    required, runs = placed(tmp_path, racks, jobs, 6, placement="slurm-block", topology_request="required:block")
    assert own["spanned_level"].tolist() == ["block"]
    assert required["spanned_level"].tolist() == ["rack"] and [n for n, _ in runs["0"]] == ["n2", "n3", "n4", "n5"]


def test_skipping_the_searches_slurm_tree_cannot_win_changes_no_placement(tmp_path):
    # the engine skips, class by class, the searches room_class says would fail; a plug-in's classes are not
    # trusted, so the same placement loaded from a file searches every time (backfill: every waiting job is tried)
    (tmp_path / "plain.py").write_text("from simcluster.placement.slurm_topology import SlurmTree\n\n\n"
                                       'class Plain(SlurmTree):\n    """slurm-tree, every search made."""\n')
    rng = np.random.default_rng(3)
    sizes = rng.choice([2, 8, 12, 16, 24, 40], 80)
    jobs = {"submit_time": np.sort(rng.integers(0, 2000, 80)), "gpu_num": sizes,
            "duration": rng.integers(100, 900, 80),
            # (no rack holds 40 GPUs: such a job requiring one would be refused before the run)
            "topology_required": np.where(sizes > 24, "", rng.choice(["", "", "rack", "block"], 80))}
    built_in, _ = placed(tmp_path, RACKS, jobs, 6, placement="slurm-tree", policy="fifo-backfill")
    plain, _ = placed(tmp_path, RACKS, jobs, 6, placement=f"{tmp_path / 'plain.py'}:Plain", policy="fifo-backfill")
    assert built_in["queue"].sum() > 0 and set(built_in["spanned_level"]) >= {"block", "rack"}  # congested, mixed
    pd.testing.assert_frame_equal(built_in, plain)


def test_slurms_placements_are_named_where_a_request_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"choose a topology-aware one \(.*kueue-tas.*slurm-tree, slurm-block"):
        placed(tmp_path, RACKS, {"submit_time": [0], "gpu_num": [8], "duration": [10]}, 6,
               topology_request="required:rack")


def test_the_placement_list_describes_them_by_their_first_line():
    described = PLACEMENTS.describe()
    assert described["slurm-tree"].startswith("Slurm's topology/tree: the lowest switch")
    assert described["slurm-block"].startswith("Slurm's topology/block:")


def test_a_cli_run_with_slurm_block_on_a_topology_prints_one_json_document(tmp_path, capsys):
    (tmp_path / "topology.conf").write_text(BLOCKS)
    pd.DataFrame({"submit_time": [0, 1], "gpu_num": [16, 32], "duration": [100, 100]}).to_csv(
        tmp_path / "jobs.csv", index=False)
    with pytest.raises(SystemExit) as exited:
        main(["run", "--trace", str(tmp_path / "jobs.csv"), "--nodes", "8", "--placement", "slurm-block",
              "--topology", str(tmp_path / "topology.conf"), "--out", str(tmp_path / "out"), "--json"])
    assert exited.value.code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["placement"] == "slurm-block" and summary["jobs"] == 2
    assert summary["topology"]["levels"] == ["block", "node"]
