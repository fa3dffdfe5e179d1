"""What a topology costs in queueing: GPUs stranded per level and jobs that fit the free GPUs but waited
(:mod:`simcluster.topology.occupancy`), held to cases worked out by hand and to a plain walk of every node and
queue at every instant."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import load_trace, simulate
from simcluster.cli import app
from simcluster.cluster import VirtualCluster
from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.job import Job
from simcluster.metrics import Observer
from simcluster.run import resolve_run
from simcluster.sdk import Policy
from simcluster.topology import Topology
from simcluster.topology import occupancy as occupancy_module
from simcluster.topology.occupancy import TopologyOccupancy
from simcluster.traces.synth import SynthSpec, synthesize

TWO_RACKS = "node,rack\na/n0,r0\na/n1,r0\na/n2,r1\na/n3,r1\n"


def run(tmp_path, jobs: dict, topology: str = TWO_RACKS, **settings):
    path = tmp_path / "topo.csv"
    path.write_text(topology)
    trace = load_trace(pd.DataFrame(jobs).assign(vc="a"), {"a": 4})
    return simulate(trace, SimConfig(topology=str(path), **settings))


def test_a_job_requiring_a_rack_while_each_rack_has_half_its_gpus_free_strands_them_and_fits_them_while_it_waits(
        tmp_path):
    # four 8-GPU jobs fill the four nodes; the two short ones (one per rack: the 16-GPU job then waits for the
    # long ones) leave 8 GPUs free in each rack from 100 s to 1000 s, and the 16-GPU job needs one rack
    result = run(tmp_path, {"submit_time": [0] * 5, "gpu_num": [8, 8, 8, 8, 16],
                            "duration": [100, 1000, 100, 1000, 100],
                            "topology_required": ["", "", "", "", "rack"]}, placement="tas-best-fit")
    assert result.jobs["start_time"].tolist() == [0, 0, 0, 0, 1000]
    topology = result.summary["topology"]
    # 16 GPUs stranded at both levels for 900 of the run's 1,100 s; the free GPU-time is 16 × 900 then 16 × 100
    assert topology["stranded_gpus"] == pytest.approx({"rack": 16 * 900 / 1100, "node": 16 * 900 / 1100})
    assert topology["stranded_share"] == pytest.approx({"rack": 0.9, "node": 0.9})
    # it waited 1,000 s, the last 900 with 16 GPUs free
    assert topology["fit_but_waited"] == {"job_seconds": 900.0, "share_of_queueing": 0.9, "jobs": 1}


def test_with_no_job_waiting_nothing_is_stranded_and_nothing_fit_but_waited(tmp_path):
    result = run(tmp_path, {"submit_time": [0, 10], "gpu_num": [4, 12], "duration": [100, 50]})
    topology = result.summary["topology"]
    assert topology["stranded_gpus"] == {"rack": 0.0, "node": 0.0}
    assert topology["stranded_share"] == {"rack": 0.0, "node": 0.0}
    assert topology["fit_but_waited"] == {"job_seconds": 0.0, "share_of_queueing": 0.0, "jobs": 0}


def started(job: Job, node, gpus: int, now: float) -> None:
    job.allocation = ((node, node.allocate(job, gpus)),)
    job.start(now)


def test_each_level_strands_what_its_own_domains_cannot_hold():
    vc = VirtualCluster("a", nodes=4, gpus_per_node=8)
    racks = Topology.from_labels(("rack",), [n.name for n in vc.nodes], [["r0", "r0", "r1", "r1"]])
    occupancy = TopologyOccupancy(racks, {n.name: ("a", 8) for n in vc.nodes})
    small, waiting = (Job(index=i, job_id=str(i), vc="a", gpu_num=g, submit_time=0, duration=10)
                      for i, g in enumerate((4, 8)))
    started(small, vc.nodes[0], 4, 0.0)
    occupancy.on_start(small, 0.0)
    occupancy.on_submit(waiting, 0.0)  # (the placement would start it; here it waits, by hand)
    occupancy.on_sample(10.0, 4, 0, 1, 1)
    # an 8-GPU job fits in either rack (12 and 16 free) but not on node 0 (4 free): 4 GPUs stranded there only
    assert occupancy.stranded_seconds == [0.0, 40.0] and occupancy.free_seconds == 280.0
    vc.nodes[0].release(small)
    small.stop(10.0)
    occupancy.on_preempt(small, 10.0)  # back in the queue: the smallest waiting job now asks for 4 GPUs
    occupancy.on_sample(20.0, 0, 0, 0, 2)
    assert occupancy.stranded_seconds == [0.0, 40.0] and occupancy.waiting_seconds == 10.0 + 2 * 10.0
    figures = occupancy.figures(20.0)
    assert figures["fit_but_waited"] == {"job_seconds": 30.0, "share_of_queueing": 1.0, "jobs": 2}
    assert figures["stranded_gpus"] == {"rack": 0.0, "node": 2.0}


def test_a_node_down_strands_nothing_and_its_return_is_free_again():
    vc = VirtualCluster("a", nodes=2, gpus_per_node=8)
    racks = Topology.from_labels(("rack",), [n.name for n in vc.nodes], [["r0", "r1"]])
    occupancy = TopologyOccupancy(racks, {n.name: ("a", 8) for n in vc.nodes})
    waiting = Job(index=0, job_id="w", vc="a", gpu_num=12, submit_time=0, duration=10)
    occupancy.on_submit(waiting, 0.0)
    occupancy.on_node_down("a/n1", 0.0)
    occupancy.on_sample(10.0, 0, 0, 0, 1)  # 8 free, in a rack too small for 12: stranded, and it does not fit
    occupancy.on_node_up("a/n1", 10.0)
    occupancy.on_sample(30.0, 0, 0, 0, 1)  # 16 free in racks of 8: all stranded, and it fits
    figures = occupancy.figures(30.0)
    assert occupancy.stranded_seconds == [80.0 + 320.0, 80.0 + 320.0] and occupancy.free_seconds == 400.0
    assert figures["fit_but_waited"] == {"job_seconds": 20.0, "share_of_queueing": 20.0 / 30.0, "jobs": 1}


class DeclinesBigJobs(Policy):
    """FIFO that turns away jobs of more than 8 GPUs (an admission control: no observer hook tells of it)."""

    def schedule(self, vc, ctx) -> None:
        for job in vc.pending:
            if job.gpu_num > 8:
                ctx.decline(job)
            elif not ctx.try_start(job):
                break


def test_a_job_declined_without_a_hook_stops_counting_as_waiting(tmp_path):
    result = run(tmp_path, {"submit_time": [0, 0], "gpu_num": [4, 24], "duration": [100, 100]},
                 policy=DeclinesBigJobs)
    assert result.summary["declined"] == 1
    topology = result.summary["topology"]
    assert topology["stranded_gpus"] == {"rack": 0.0, "node": 0.0}
    assert topology["fit_but_waited"]["job_seconds"] == 0.0


class Walk(Observer):
    """The plain reference: at every scheduling instant, every node's free GPUs and every queue walked."""

    def __init__(self, levels: int) -> None:
        self.cluster: Any = None  # (the simulation's, set before it runs)
        self.stranded_seconds = [0.0] * (levels + 1)
        self.free_seconds = self.waiting_seconds = 0.0
        self.fit: dict[Job, float] = {}
        self._state: tuple[list[int], int, int, list[Job]] | None = None  # (stranded, free, waiting, fitting)
        self._last = 0.0

    def on_sample(self, now, used_gpus, shared_gpus, running, pending) -> None:
        self.close(now)
        stranded, free, fitting, waiting = [0] * len(self.stranded_seconds), 0, [], []
        for vc in self.cluster.vcs.values():
            domains: list[dict[int, int]] = [{} for _ in stranded]
            for node in vc.nodes:
                for k, domain in enumerate((*node.domains, node.name)):
                    domains[k][domain] = domains[k].get(domain, 0) + node.free_gpus
            vc_free = sum(node.free_gpus for node in vc.nodes)
            free += vc_free
            queued = list(vc.pending)
            waiting += queued
            fitting += [job for job in queued if job.gpu_num <= vc_free]
            if queued:
                smallest = min(job.gpu_num for job in queued)
                for k, level in enumerate(domains):
                    stranded[k] += sum(gpus for gpus in level.values() if gpus < smallest)
        self._state = (stranded, free, len(waiting), fitting)
        self._last = now

    def close(self, now: float) -> None:
        if self._state is None:
            return
        stranded, free, waiting, fitting = self._state
        seconds = now - self._last
        for k, gpus in enumerate(stranded):
            self.stranded_seconds[k] += gpus * seconds
        self.free_seconds += free * seconds
        self.waiting_seconds += waiting * seconds
        for job in fitting:
            self.fit[job] = self.fit.get(job, 0.0) + seconds
        self._last = now


# how the observer keeps each level's sums: as it chooses (this small cluster's named levels are read domain by
# domain), all in Fenwick trees, all in plain lists
KEPT = {"as chosen": {}, "in trees": {"FEW_DOMAINS": 0, "SIZE": 0}, "in lists": {"FEW_DOMAINS": 0, "SIZE": 10**6}}


@pytest.mark.parametrize("kept", KEPT)
@pytest.mark.parametrize("policy", ["fifo", "tiresias", "sjf"])
def test_the_incremental_figures_equal_a_walk_of_every_node_and_queue_at_every_instant(tmp_path, monkeypatch,
                                                                                       policy, kept):
    for name, value in KEPT[kept].items():
        monkeypatch.setattr(occupancy_module.SmallSums if name == "SIZE" else occupancy_module, name, value)
    trace = synthesize(SynthSpec(jobs=300, nodes=12, vcs=2, seed=5, load=1.4))
    path = tmp_path / "topo.csv"  # matched by order: host i is the cluster's i-th node; a rack, a block of two VCs
    path.write_text("host,block,rack\n" + "".join(f"h{i},b{i // 8},r{i // 4}\n" for i in range(12)))
    resolved = resolve_run(trace, SimConfig(policy=policy, topology=str(path)))
    jobs = resolved.make_jobs()
    parts = [part.feature.start(part.plan, jobs, resolved) for part in resolved.features]
    occupancy = next(o for part in parts for o in part.observers if isinstance(o, TopologyOccupancy))
    walk = Walk(2)
    simulation = Simulation(jobs, resolved, [*(o for part in parts for o in part.observers), walk])
    walk.cluster = simulation.cluster
    end = simulation.run().end
    walk.close(end)
    figures = occupancy.figures(end)
    assert occupancy.stranded_seconds == pytest.approx(walk.stranded_seconds)
    assert occupancy.free_seconds == pytest.approx(walk.free_seconds)
    assert occupancy.waiting_seconds == pytest.approx(walk.waiting_seconds)
    fit = figures["fit_but_waited"]
    assert fit["job_seconds"] == pytest.approx(sum(walk.fit.values()))
    assert fit["jobs"] == sum(1 for seconds in walk.fit.values() if seconds > 0)
    assert sum(walk.stranded_seconds) > 0 and fit["jobs"] > 0  # (a run where there is something to count)


def test_lucid_sim_run_json_prints_one_document_with_the_figures(tmp_path):
    pd.DataFrame({"submit_time": [0, 0], "gpu_num": [24, 24], "duration": [100, 100]}).to_csv(
        tmp_path / "jobs.csv", index=False)
    (tmp_path / "topo.csv").write_text(TWO_RACKS.replace("a/n", "host"))  # (matched by order)
    done = CliRunner().invoke(app, ["run", "--trace", str(tmp_path / "jobs.csv"), "--nodes", "4", "--topology",
                                    str(tmp_path / "topo.csv"), "--out", str(tmp_path / "out"), "--json"])
    assert done.exit_code == 0, done.output
    topology = json.loads(done.stdout)["topology"]
    assert set(topology["stranded_gpus"]) == set(topology["stranded_share"]) == {"rack", "node"}
    assert set(topology["fit_but_waited"]) == {"job_seconds", "share_of_queueing", "jobs"}
    # the second 24-GPU job waited 100 s with 8 GPUs free, on one node of one rack: stranded at both levels
    assert topology["fit_but_waited"]["jobs"] == 0 and topology["stranded_gpus"] == {"rack": 4.0, "node": 4.0}
