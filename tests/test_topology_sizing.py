"""A job log without VCs and without a size runs on the topology file's nodes (issue 52: the topology file alone
defines the cluster)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import load_trace, simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.errors import TraceError

TOPOLOGY = "node,block,rack\n" + "".join(f"h{i},b{i // 4},r{i // 2}\n" for i in range(8))


@pytest.fixture
def topology(tmp_path):
    path = tmp_path / "topo.csv"
    path.write_text(TOPOLOGY)
    return path


def test_an_unsized_log_takes_the_topology_s_nodes(topology):
    jobs = pd.DataFrame({"submit_time": [0, 5], "gpu_num": [32, 64], "duration": [60, 30]})
    result = simulate(load_trace(jobs, sized=False), SimConfig(topology=str(topology)))
    assert result.summary["gpus"] == 64
    assert result.summary["trace_sizing"] == "one VC of 8 nodes, sized by the topology file"
    assert result.jobs["start_time"].tolist() == [0.0, 60.0]  # (the second needs every GPU: after the first)


def test_a_job_larger_than_the_topology_s_cluster_is_refused_naming_it(topology):
    jobs = pd.DataFrame({"job_id": ["small", "huge"], "submit_time": [0, 5], "gpu_num": [8, 72],
                         "duration": [60, 30]})
    with pytest.raises(TraceError, match=r"job huge: job asks for 72 GPUs but the topology's cluster has 64"):
        simulate(load_trace(jobs, sized=False), SimConfig(topology=str(topology)))


def test_the_cli_sizes_a_log_by_its_topology_unless_a_size_is_given(topology, tmp_path):
    log = tmp_path / "jobs.csv"
    pd.DataFrame({"submit_time": [0, 5], "gpu_num": [8, 16], "duration": [60, 30]}).to_csv(log, index=False)
    runner = CliRunner()
    result = runner.invoke(app, ["run", "--trace", str(log), "--topology", str(topology), "--json",
                                 "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["gpus"] == 64
    given = runner.invoke(app, ["run", "--trace", str(log), "--topology", str(topology), "--nodes", "8", "--json",
                                "--out", str(tmp_path / "b")])
    assert given.exit_code == 0 and json.loads(given.output)["trace_sizing"].endswith("(--nodes)")
    wrong = runner.invoke(app, ["run", "--trace", str(log), "--topology", str(topology), "--nodes", "4", "--json",
                                "--out", str(tmp_path / "c")])
    assert wrong.exit_code != 0 and "has 8 nodes but the cluster has 4" in wrong.output
    unsized = runner.invoke(app, ["run", "--trace", str(log), "--json", "--out", str(tmp_path / "d")])
    assert unsized.exit_code != 0 and "--nodes N" in unsized.output
