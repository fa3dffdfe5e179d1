"""Failures on a cluster with a topology: a failed node's replacement from the job's domain, as Kueue replaces a
failed node (simcluster/engine/failures.py's DomainReplacement, docs/topology.md "Failures").

Hand-checked on two racks of three 8-GPU nodes: a 16-GPU job that requires a rack runs on two nodes of r0; one
of them fails at t=1000 (down until 5000).  Checkpoints every 300 s of progress (free), a restart costs 100 s:
at the fault the job has made 1000 s of progress and keeps 900, so it needs 9,100 s more after its restart and
ends at 1000 + 100 + 9100 = 10,200 s, wherever it goes on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.metrics.observer import Observer

sys.path.insert(0, str(Path(__file__).parent))
from test_reliability_engine import Scripted  # (a failure model of given outages)

COSTS = {"checkpoint_interval": 300.0, "restart_cost": 100.0}
FAULT = Scripted((0, 1000.0, 5000.0))  # node a/n0 fails at t=1000, back at 5000


class Where(Observer):
    """Each start and each replacement (a resize: its GPUs changed while it ran), with the nodes held after it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, float, list[str]]] = []

    def on_start(self, job, now):
        self.seen.append(("start", job.job_id, now, [node.name for node, _ in job.allocation]))

    def on_resize(self, job, now):
        self.seen.append(("moved", job.job_id, now, [node.name for node, _ in job.allocation]))


@pytest.fixture
def racks(tmp_path) -> str:
    topology = tmp_path / "topo.csv"
    topology.write_text("node,rack\n" + "".join(f"a/n{i},r{i // 3}\n" for i in range(6)))
    return str(topology)


def run(racks: str | None, gpus: list[int], durations: list[float], faults=FAULT, **settings):
    trace = load_trace(pd.DataFrame({"vc": "a", "submit_time": 0, "gpu_num": gpus, "duration": durations}),
                       {"a": 6})
    where = Where()
    given = {"topology": racks, "placement": "tas-best-fit", "topology_request": "required:rack"} if racks else {}
    result = simulate(trace, SimConfig(**{**COSTS, **given, **settings}), faults=faults, observers=[where])
    return result, where.seen


def test_a_failed_node_is_replaced_by_the_free_node_of_the_jobs_rack(racks):
    result, seen = run(racks, [16], [10_000])
    assert seen == [("start", "0", 0.0, ["a/n0", "a/n1"]), ("moved", "0", 1000.0, ["a/n1", "a/n2"])]
    job = result.jobs.iloc[0]
    assert job["jct"] == 10_200 and job["lost_work"] == 100 and job["restart_s"] == 100
    assert (job["restarts"], job["interruptions"], job["requeue_s"]) == (1, 1, 0)
    assert job["spanned_level"] == "node"  # two nodes of one rack, before and after: never two racks
    failures = result.summary["failures"]
    assert (failures["node_replacements"], failures["node_replacements_not_found"]) == (1, 0)


def test_with_its_rack_full_the_job_is_requeued_not_moved_to_the_other_rack(racks):
    # an 8-GPU job takes r0's third node (BestFit: the tightest rack); r1 is free but the replacement stays in r0
    result, seen = run(racks, [16, 8], [10_000, 20_000])
    assert seen == [("start", "0", 0.0, ["a/n0", "a/n1"]), ("start", "1", 0.0, ["a/n2"]),
                    ("start", "0", 1000.0, ["a/n3", "a/n4"])]  # requeued, then started anew, whole, in r1
    job = result.jobs.iloc[0]
    assert job["jct"] == 10_200 and job["restarts"] == 1 and job["spanned_level"] == "node"
    failures = result.summary["failures"]
    assert (failures["node_replacements"], failures["node_replacements_not_found"]) == (0, 1)


def test_a_ready_spare_comes_first_and_the_job_keeps_its_nodes(racks):
    # the spare takes a/n0's place (the node's place in the topology) after a 50 s swap: 10,200 + 50
    result, seen = run(racks, [16], [10_000], spare_nodes=1, spare_swap=50.0)
    assert seen == [("start", "0", 0.0, ["a/n0", "a/n1"])]
    assert result.jobs.iloc[0]["jct"] == 10_250
    failures = result.summary["failures"]
    assert (failures["spare_swaps"], failures["node_replacements"], failures["node_replacements_not_found"]) == \
        (1, 0, 0)


def test_a_job_that_prefers_a_rack_takes_a_free_node_of_the_other_one_as_kueue_does(racks):
    # Kueue keeps a job inside its domain only where it requires the level; a preferred one is re-placed afresh
    result, seen = run(racks, [16, 8], [10_000, 20_000], topology_request="preferred:rack")
    assert seen[-1] == ("moved", "0", 1000.0, ["a/n1", "a/n3"])
    job = result.jobs.iloc[0]
    assert job["jct"] == 10_200 and job["spanned_level"] == "rack"
    assert result.summary["failures"]["node_replacements"] == 1


def test_without_replacement_or_without_a_topology_the_job_is_requeued_as_before(racks):
    off, seen = run(racks, [16], [10_000], replace_failed_nodes=False)
    assert seen[-1] == ("start", "0", 1000.0, ["a/n1", "a/n2"])  # requeued, and started again at once
    assert "node_replacements" not in off.summary["failures"]
    flat, _ = run(None, [16], [10_000])
    flat_off, _ = run(None, [16], [10_000], replace_failed_nodes=False)
    assert "node_replacements" not in flat.summary["failures"]
    pd.testing.assert_frame_equal(flat.jobs, flat_off.jobs)
    assert flat.jobs.iloc[0]["restarts"] == 1 and flat.jobs.iloc[0]["jct"] == 10_200


def test_node_mtbf_on_a_topology_counts_replacements_and_never_spans_a_required_rack(racks):
    trace = load_trace(pd.DataFrame({"vc": "a", "submit_time": [0, 0, 0, 100, 200], "gpu_num": [16, 8, 4, 16, 8],
                                     "duration": [40_000, 30_000, 20_000, 30_000, 10_000]}), {"a": 6})
    config = SimConfig(topology=racks, placement="tas-best-fit", topology_request="required:rack",
                       node_mtbf=20_000.0, node_repair=2_000.0, checkpoint_interval=600.0, seed=3)
    result = simulate(trace, config)
    failures = result.summary["failures"]
    assert failures["node_replacements"] >= 1
    assert failures["node_replacements"] + failures["node_replacements_not_found"] == result.jobs["restarts"].sum()
    assert "rack" not in set(result.jobs["spanned_level"])
    plain = simulate(trace, SimConfig(node_mtbf=20_000.0, node_repair=2_000.0, checkpoint_interval=600.0, seed=3))
    assert "failures" not in plain.summary  # (no topology: --node-mtbf alone reports as it did)


def test_lucid_sim_run_json_shows_the_counts(tmp_path):
    from typer.testing import CliRunner

    from simcluster.cli import app

    # 4-GPU jobs, a long and a short one on every node (BestFit packs each node), the short ones gone by t=100:
    # whichever node the log's one early fault lands on, its long job finds 4 free GPUs in its rack
    trace = tmp_path / "jobs.csv"
    trace.write_text("submit_time,gpu_num,duration\n" + "0,4,10000\n0,4,100\n" * 6)
    topology = tmp_path / "topo.csv"
    topology.write_text("node,rack\n" + "".join(f"n{i},r{i // 3}\n" for i in range(6)))
    log = tmp_path / "faults.csv"  # six servers; five fail long after the run
    log.write_text("node,start,end,class\ns0,1000,1100,GPU\n" + "".join(f"s{i},1000000,1000100,GPU\n"
                                                                         for i in range(1, 6)))
    done = CliRunner().invoke(app, ["run", "--trace", str(trace), "--nodes", "6", "--topology", str(topology),
                                    "--placement", "tas-best-fit", "--topology-request", "required:rack",
                                    "--faults", str(log), "--restart-cost", "100", "--out", str(tmp_path / "run"),
                                    "--json"])
    assert done.exit_code == 0, done.output
    failures = json.loads(done.stdout)["failures"]
    assert (failures["faults"], failures["node_replacements"], failures["node_replacements_not_found"]) == (1, 1, 0)
