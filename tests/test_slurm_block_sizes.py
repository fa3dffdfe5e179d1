"""A block-form topology.conf's BlockSizes reach slurm-block: the first is the planning base block size and the
others the block levels it enforces, as in Slurm, instead of Slurm's default 1, 2, 4, 8 and 16 base blocks."""

from __future__ import annotations

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.cluster import Cluster
from simcluster.cluster_spec import ClusterSpec
from simcluster.config import SimConfig
from simcluster.errors import TraceError
from simcluster.features.topology import ClusterTopologyFeature
from simcluster.metrics.placements import Placements

FOUR_PAIRS = "".join(f"BlockName=b{b} Nodes=h[{2 * b}-{2 * b + 1}]\n" for b in range(4))  # base blocks of 2 nodes
# b3, b2, b1 and b0 taken by jobs of 2 nodes (equal blocks: the last first), b2 and b1 freed at t=101 and 102;
# then a job of 3 nodes: no aligned pair of base blocks holds 3 free nodes, but two of the four do
JOBS = {"submit_time": [0, 1, 2, 3, 200], "gpu_num": [16, 16, 16, 16, 24], "duration": [1000, 100, 100, 1000, 100]}


def run(tmp_path, conf: str, jobs: dict, vcs: dict[str, int], name: str = "topology.conf"):
    """Each job's start and nodes: {job: (start, [node, ...])}."""
    path = tmp_path / name
    path.write_text(conf)
    where = Placements()
    frame = pd.DataFrame({"vc": "a", **jobs})
    result = simulate(load_trace(frame, vcs), SimConfig(placement="slurm-block", topology=str(path)),
                      observers=[where])
    nodes = where.frame().groupby("job_id", sort=False)["node"].apply(lambda n: [x.split("/")[1] for x in n])
    return {job: (start, nodes[job]) for job, start in zip(result.jobs["job_id"], result.jobs["start_time"],
                                                           strict=True)}


def test_slurms_default_levels_keep_a_job_of_three_nodes_in_an_aligned_pair_so_it_waits(tmp_path):
    runs = run(tmp_path, FOUR_PAIRS, JOBS, {"a": 8})
    assert [runs[job][1] for job in "0123"] == [["n6", "n7"], ["n4", "n5"], ["n2", "n3"], ["n0", "n1"]]
    # default (2, 4, 8 nodes): 3 nodes need a pair of base blocks; at t=1000 b3 is free beside b2: the pair b2+b3,
    # its fuller base block first (equal: the later), then one node of b2
    assert runs["4"] == (1000.0, ["n4", "n6", "n7"])


def test_block_sizes_without_pairs_let_a_job_of_three_nodes_take_any_two_base_blocks_now(tmp_path):
    runs = run(tmp_path, FOUR_PAIRS + "BlockSizes=2,8\n", JOBS, {"a": 8})
    # BlockSizes=2,8 enforce base blocks and the block of all four: 3 nodes may use any 2 base blocks of it, the
    # fullest first (b1 and b2 both hold 2: the later, b2), then b1 for the node left
    assert runs["4"] == (200.0, ["n2", "n4", "n5"])


def test_a_vcs_share_of_a_block_is_planned_at_the_files_base_block_size(tmp_path):
    # VC a holds b0 (h0-h3) and half of b1 (h4, h5); b has the rest.  Two jobs of 2 nodes take b1's share (the
    # tightest) and half of b0; the first ends at t=10, leaving 2 free nodes in each
    jobs = {"submit_time": [0, 1, 20, 5000], "gpu_num": [16, 16, 24, 8], "duration": [10, 1000, 100, 10],
            "vc": ["a", "a", "a", "b"]}
    blocks = "BlockName=b0 Nodes=h[0-3]\nBlockName=b1 Nodes=h[4-7]\n"
    planned = run(tmp_path, blocks + "BlockSizes=4,8\n", jobs, {"a": 6, "b": 2})
    # planned at 4 nodes, 3 nodes fit one base block and must: they wait for b0 to empty
    assert planned["2"] == (1001.0, ["n0", "n1", "n2"])
    rows = "node,block\n" + "".join(f"h{i},b{i // 4}\n" for i in range(8))
    by_pool = run(tmp_path, rows, jobs, {"a": 6, "b": 2}, name="topology.csv")
    # (a topology without block sizes: the VC's smallest base block, its 2 nodes of b1, is the base: 3 nodes may
    # take a pair of them now)
    assert by_pool["2"] == (20.0, ["n2", "n4", "n5"])


def test_a_runs_pools_carry_the_files_block_sizes(tmp_path):
    (tmp_path / "topology.conf").write_text(FOUR_PAIRS + "BlockSizes=2,8\n")
    spec = ClusterTopologyFeature().cluster(ClusterSpec.uniform({"a": 8}),
                                            SimConfig(topology=str(tmp_path / "topology.conf")), None)
    vc = Cluster(spec).vcs["a"]
    assert vc.topology_block_sizes == (2, 8)
    assert all(pool.topology_block_sizes == (2, 8) for pool in vc.pools.values())
    assert Cluster({"a": 2}, 8).vcs["a"].topology_block_sizes == ()


def test_a_block_smaller_than_the_first_block_size_is_refused_naming_block_sizes(tmp_path):
    with pytest.raises(TraceError, match=r"topology.conf, line 2, field 'Nodes': block 'b1' has 2 nodes, fewer than "
                                         r"the planning base block size 4, the first of BlockSizes=4,8 \(line 3\)"):
        run(tmp_path, "BlockName=b0 Nodes=h[0-3]\nBlockName=b1 Nodes=h[4-5]\nBlockSizes=4,8\n",
            {"submit_time": [0], "gpu_num": [8], "duration": [10]}, {"a": 6})
