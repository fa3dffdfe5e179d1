"""Spot nodes with node failures in the same run (docs/tiers.md, "Spot nodes"): a node can be down for a fault
and for a reclaim at once and comes back only when both have ended; its jobs are evicted once; ``node_failures``
counts faults only, ``spot.reclaims`` reclaims only (simcluster.engine.simulation node_down/node_up,
simcluster.engine.spot)."""

from __future__ import annotations

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.faults.models import Outage, Outages
from simcluster.metrics.observer import Observer
from simcluster.settings.fields import ConfigError
from simcluster.traces import load_trace as load_folder
from tests.test_spot_nodes import default_trace_with_preemptible_jobs


class Listed(Outages):
    """The outages given, as they are."""

    def __init__(self, nodes: int, horizon_s: float, listed: list[Outage]) -> None:
        super().__init__(nodes, horizon_s)
        self.listed = listed

    def stream(self):
        return iter(self.listed)


class FixedFaults:
    """A failure model of hand-written outages: (server, down at, up at); servers are the cluster's nodes in order
    (cluster/n0, cluster/n1)."""

    def __init__(self, *outages: tuple[int, float, float]) -> None:
        self.listed = [Outage(server, down, up, "hand") for server, down, up in outages]

    def outages(self, nodes, gpus_per_node, horizon_s, seed):
        return Listed(nodes, horizon_s, self.listed)


class Lives(Observer):
    """Where each job started and when, and the faults observers hear of."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, float, list[str]]] = []
        self.downs: list[tuple[str, float]] = []
        self.ups: list[tuple[str, float]] = []

    def on_start(self, job, now):
        self.starts.append((job.job_id, now, [node.name for node, _ in job.allocation]))

    def on_node_down(self, node_name, now):
        self.downs.append((node_name, now))

    def on_node_up(self, node_name, now):
        self.ups.append((node_name, now))


@pytest.fixture
def reclaims(tmp_path):
    """The spot node (cluster/n1) reclaimed from 550 s to 850 s; the log's second line only stretches its span, so
    that no second reclaim comes before 5,000 s."""
    path = tmp_path / "reclaims.csv"
    path.write_text("node,start,end\nspot-0,550,850\nspot-0,5000,5001\n")
    return str(path)


def run(reclaims, faults, **settings):
    """node 0 on demand, node 1 spot: "prod" (guaranteed, 2,000 s) on node 0, "spot" (preemptible, 1,000 s) on node
    1, both at 0; checkpoints every 100 s; a reclaim costs 13 s."""
    frame = pd.DataFrame([("spot", 8, 0, 1000, True), ("prod", 8, 0, 2000, False)],
                         columns=["job_id", "gpu_num", "submit_time", "duration", "preemptible"])
    lives = Lives()
    config = SimConfig(**{"policy": "fifo", "spot_nodes": "1", "spot_reclaims": reclaims, "checkpoint_interval": 100,
                          "eviction_cost": 13, **settings})
    result = simulate(load_trace(frame, nodes=2), config, observers=[lives], faults=faults)
    return result, result.jobs.set_index("job_id"), lives


def test_a_fault_during_a_reclaim_keeps_the_node_down_until_the_fault_is_repaired(reclaims):
    # reclaimed at 550 s ("spot" evicted: kept 500 s, lost 50 s), failed at 700 s while reclaimed, given back at
    # 850 s but still failed, repaired at 1,000 s: "spot" starts again then, owes the 13 s: 1,000 + 13 + 500
    result, jobs, lives = run(reclaims, FixedFaults((1, 700, 1000)))
    assert lives.starts == [("prod", 0.0, ["cluster/n0"]), ("spot", 0.0, ["cluster/n1"]),
                            ("spot", 1000.0, ["cluster/n1"])]
    assert jobs.loc["spot", "end_time"] == 1513 and jobs.loc["prod", "end_time"] == 2000
    assert jobs.loc["spot", "spot_evictions"] == 1
    summary = result.summary
    assert summary["node_failures"] == 1 and summary["failures"]["faults"] == 1
    assert summary["spot"]["reclaims"] == 1 and summary["spot"]["evictions"] == 1
    # the fault is heard as it strikes, the node reclaimed or not: down 700 → 1,000 s
    assert lives.downs == [("cluster/n1", 700.0)] and lives.ups == [("cluster/n1", 1000.0)]
    # the spot GPUs were up 0–550 s and 1,000–2,000 s: 8 × 1,550 GPU-s
    assert summary["spot"]["gpu_hours_up"] == round(8 * 1550 / 3600, 4)


def test_a_fault_repaired_during_its_reclaim_leaves_the_node_to_the_reclaim(reclaims):
    # failed 600 → 700 s, inside the reclaim (550 → 850 s): the node returns at 850 s as without the fault
    result, jobs, lives = run(reclaims, FixedFaults((1, 600, 700)))
    assert lives.starts[-1] == ("spot", 850.0, ["cluster/n1"]) and jobs.loc["spot", "end_time"] == 1363
    assert result.summary["node_failures"] == 1 and result.summary["spot"]["reclaims"] == 1
    assert lives.downs == [("cluster/n1", 600.0)] and lives.ups == [("cluster/n1", 700.0)]  # (heard as it strikes)


def test_a_reclaim_during_a_fault_evicts_nobody_and_the_node_returns_after_both(reclaims):
    # failed at 500 s ("spot" evicted by the fault, at its 500 s checkpoint: nothing lost, no eviction cost), reclaimed
    # at 550 s (nobody left to evict), repaired at 700 s but still reclaimed, given back at 850 s: 850 + 500
    result, jobs, lives = run(reclaims, FixedFaults((1, 500, 700)))
    assert lives.starts == [("prod", 0.0, ["cluster/n0"]), ("spot", 0.0, ["cluster/n1"]),
                            ("spot", 850.0, ["cluster/n1"])]
    assert jobs.loc["spot", "end_time"] == 1350 and jobs.loc["spot", "spot_evictions"] == 0
    summary = result.summary
    assert summary["node_failures"] == 1 and summary["spot"]["reclaims"] == 1 and summary["spot"]["evictions"] == 0
    assert lives.downs == [("cluster/n1", 500.0)] and lives.ups == [("cluster/n1", 700.0)]


def test_a_fault_reaching_past_the_reclaim_on_both_sides(reclaims):
    # failed 500 → 1,000 s around the reclaim (550 → 850 s): evicted once, by the fault; back at 1,000 s: 1,000 + 500
    result, jobs, lives = run(reclaims, FixedFaults((1, 500, 1000)))
    assert lives.starts[-1] == ("spot", 1000.0, ["cluster/n1"]) and jobs.loc["spot", "end_time"] == 1500
    assert jobs.loc["spot", "spot_evictions"] == 0 and result.summary["node_failures"] == 1
    assert lives.downs == [("cluster/n1", 500.0)] and lives.ups == [("cluster/n1", 1000.0)]


def test_reclaims_are_not_node_failures(reclaims):
    result, _, lives = run(reclaims, None)
    assert result.summary["spot"]["reclaims"] == 1 and result.summary["node_failures"] == 0 and not lives.downs


def test_node_mtbf_faults_and_reclaims_each_count_their_own(tmp_path):
    # a node's faults under --node-mtbf are drawn from its own stream, the reclaims from theirs: up to a common
    # horizon (5 of the run's 11 days) each count is the same with the other on or off; and every job finishes once
    trace = load_folder(default_trace_with_preemptible_jobs(tmp_path))
    base = {"policy": "fifo", "spot_nodes": "25%", "checkpoint_interval": 1800}
    faults, reclaims, until = {"node_mtbf": 5 * 86_400}, {"spot_reclaims": "mtbf=1d,repair=2h"}, 5 * 86_400
    both = simulate(trace, SimConfig(**base, **faults, **reclaims, until=until)).summary
    faults_only = simulate(trace, SimConfig(**base, **faults, until=until)).summary
    reclaims_only = simulate(trace, SimConfig(**base, **reclaims, until=until)).summary
    assert both["node_failures"] == faults_only["node_failures"] > 0
    assert both["spot"]["reclaims"] == reclaims_only["spot"]["reclaims"] > 0
    assert reclaims_only["node_failures"] == 0
    assert both["spot"]["gpu_hours_up"] < reclaims_only["spot"]["gpu_hours_up"]
    whole = simulate(trace, SimConfig(**base, **faults, **reclaims)).jobs
    assert whole["end_time"].notna().all() and whole["job_id"].is_unique and len(whole) == len(trace.frame)


def test_spot_nodes_with_spares_or_exclusion_are_refused_in_words(reclaims):
    with pytest.raises(ConfigError, match="--spare-nodes: a spare server standing in for a spot node"):
        run(reclaims, FixedFaults((1, 600, 700)), spare_nodes=1)
    with pytest.raises(ConfigError, match="--exclude-after"):
        run(reclaims, FixedFaults((1, 600, 700)), exclude_after="2/1d")


@pytest.mark.parametrize("fault", [(1, 700, 1000), (1, 600, 700), (1, 500, 700), (1, 500, 1000)])
def test_the_replays_count_of_gpus_up_is_whole_again_once_every_outage_ended(reclaims, fault, monkeypatch):
    # the replay counts the GPUs of the slots it holds up (what its check of a run that may never end reads); a
    # fault of a reclaimed node is counted down as it strikes, and up at its repair
    from simcluster.engine.simulation import Simulation

    seen = []
    run_of = Simulation.run

    def keep(sim):
        seen.append(sim)
        return run_of(sim)

    monkeypatch.setattr(Simulation, "run", keep)
    run(reclaims, FixedFaults(fault))
    assert seen[0].reliability.up_gpus == {"cluster": 16}
