"""Spot nodes (docs/tiers.md, "Spot nodes"): the last K nodes of each VC, for preemptible jobs only by default,
reclaimed by a rate model or a replayed availability log; a reclaim evicts the node's jobs, which lose their work
since their last checkpoint, owe the eviction cost and wait again (simcluster.features.spot, engine/spot.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.errors import TraceError
from simcluster.limits import LimitError
from simcluster.metrics.observer import Observer
from simcluster.paths import DEFAULT_TRACE
from simcluster.settings.fields import ConfigError


class Placements(Observer):
    """Where each job started, and when."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, float, list[str]]] = []

    def on_start(self, job, now):
        self.starts.append((job.job_id, now, [node.name for node, _ in job.allocation]))


def run(rows, log=None, nodes=2, **settings):
    """rows: (job_id, gpus, submit, duration, preemptible); ``log``: the reclaims, as CSV rows node,start,end."""
    frame = pd.DataFrame(rows, columns=["job_id", "gpu_num", "submit_time", "duration", "preemptible"])
    seen = Placements()
    config = SimConfig(**{"policy": "fifo", "spot_nodes": "1", **settings})
    result = simulate(load_trace(frame, nodes=nodes), config, observers=[seen])
    return result, result.jobs.set_index("job_id"), seen


@pytest.fixture
def log(tmp_path):
    """An availability log of one spot node: reclaimed at 550 s, back at 850 s (replayed once per 850 s)."""
    path = tmp_path / "reclaims.csv"
    path.write_text("node,start,end\nspot-0,550,850\n")
    return str(path)


def test_a_reclaim_evicts_the_spot_job_which_loses_its_work_since_its_checkpoint_and_restarts_when_the_node_returns(log):
    # node 0 on demand, node 1 spot: "prod" (guaranteed) on node 0 for 2,000 s, "spot" (preemptible) on node 1.  At
    # 550 s node 1 is reclaimed: "spot" kept its checkpoint at 500 s of progress and lost 50 s; node 0 is busy, so it
    # waits for node 1's return at 850 s and owes the eviction cost: 850 + 13 + 500 = 1,363
    result, jobs, seen = run([("spot", 8, 0, 1000, True), ("prod", 8, 0, 2000, False)], spot_reclaims=log,
                             checkpoint_interval=100, eviction_cost=13)
    assert seen.starts == [("prod", 0.0, ["cluster/n0"]), ("spot", 0.0, ["cluster/n1"]),
                           ("spot", 850.0, ["cluster/n1"])]
    assert jobs.loc["spot", "end_time"] == 1363 and jobs.loc["prod", "end_time"] == 2000
    assert jobs.loc["spot", "spot_evictions"] == 1 and jobs.loc["prod", "spot_evictions"] == 0
    spot = result.summary["spot"]
    assert spot["evictions"] == 1 and spot["jobs_evicted"] == 1 and spot["gpu_hours_lost"] == round(8 * 50 / 3600, 4)
    # the log again from 850 s: reclaimed at 1,400 s (empty), back at 1,700 s; up 1,400 of the 2,000 s
    assert spot["reclaims"] == 2 and spot["gpu_hours_up"] == round(8 * 1400 / 3600, 4)
    assert spot["gpu_hours_busy"] == round(8 * (550 + 513) / 3600, 4)
    assert spot["allocation"] == round((550 + 513) / 1400, 4)


def test_without_a_checkpoint_interval_a_reclaimed_job_loses_all_its_work_and_may_restart_on_demand(log):
    # evicted at 550 s with nothing kept; "prod" leaves node 0 at 600 s, where "spot" starts again (node 1 is down)
    result, jobs, seen = run([("spot", 8, 0, 1000, True), ("prod", 8, 0, 600, False)], spot_reclaims=log)
    assert seen.starts[-1] == ("spot", 600.0, ["cluster/n0"]) and jobs.loc["spot", "end_time"] == 1600
    assert result.summary["spot"]["gpu_hours_lost"] == round(8 * 550 / 3600, 4)


def test_a_guaranteed_job_is_never_placed_on_a_spot_node_even_an_idle_one():
    _, jobs, seen = run([("a", 8, 0, 1000, False), ("b", 8, 0, 100, False)])
    assert jobs.loc["b", "start_time"] == 1000  # (node 1 idle all along: it is spot)
    assert {name for _, _, names in seen.starts for name in names} == {"cluster/n0"}


def test_spot_jobs_any_lets_guaranteed_jobs_on_spot_nodes_after_the_others():
    _, jobs, seen = run([("a", 8, 0, 1000, False), ("b", 8, 0, 100, False)], spot_jobs="any")
    assert jobs.loc["b", "start_time"] == 0 and seen.starts[1][2] == ["cluster/n1"]
    assert seen.starts[0][2] == ["cluster/n0"]  # (the on-demand nodes first)


def test_a_preemptible_job_tries_spot_nodes_first_then_any_node():
    _, jobs, seen = run([("s1", 8, 0, 100, True), ("s2", 8, 0, 100, True)])
    assert [names for _, _, names in seen.starts] == [["cluster/n1"], ["cluster/n0"]]
    assert (jobs["start_time"] == 0).all()


def test_a_multi_node_preemptible_job_is_evicted_whole_by_a_reclaim_of_one_of_its_nodes(log):
    result, jobs, _seen = run([("big", 16, 0, 1000, True)], spot_reclaims=log, checkpoint_interval=100)
    # evicted at 550 s (500 kept), back at 850 s on both nodes: 850 + 500
    assert jobs.loc["big", "end_time"] == 1350 and result.summary["spot"]["gpu_hours_lost"] == round(16 * 50 / 3600, 4)


def test_a_rate_model_reclaims_spot_nodes_and_every_job_still_finishes():
    import numpy as np

    rng = np.random.default_rng(3)
    n = 200
    rows = list(zip([f"j{i}" for i in range(n)], (2 ** rng.integers(0, 4, n)).tolist(),
                    np.sort(rng.integers(0, 10_000, n)).tolist(), rng.integers(60, 4000, n).tolist(),
                    (rng.random(n) < 0.4).tolist(), strict=True))
    result, jobs, seen = run(rows, nodes=4, spot_nodes="50%", spot_reclaims="mtbf=2h,repair=30m",
                             checkpoint_interval=300)
    assert jobs["end_time"].notna().all()
    spot = result.summary["spot"]
    assert spot["spot_nodes"] == 2 and spot["reclaims"] > 0 and spot["evictions"] == jobs["spot_evictions"].sum() > 0
    guaranteed = set(jobs.index[~jobs["preemptible"].astype(bool)])
    assert not [j for j, _, names in seen.starts if j in guaranteed and set(names) & {"cluster/n2", "cluster/n3"}]
    assert (jobs.loc[list(guaranteed), "spot_evictions"] == 0).all()
    again, _, _ = run(rows, nodes=4, spot_nodes="50%", spot_reclaims="mtbf=2h,repair=30m", checkpoint_interval=300)
    assert again.summary["spot"] == spot  # (seeded)


def test_a_run_without_spot_nodes_is_the_run_of_before():
    rows = [("a", 8, 0, 1000, False), ("b", 8, 0, 100, True)]
    _, with_zero, _ = run(rows, spot_nodes="0")
    frame = pd.DataFrame(rows, columns=["job_id", "gpu_num", "submit_time", "duration", "preemptible"])
    plain = simulate(load_trace(frame, nodes=2), SimConfig(policy="fifo"))
    assert "spot" not in plain.summary and "spot_evictions" not in with_zero
    pd.testing.assert_frame_equal(with_zero, plain.jobs.set_index("job_id"))


@pytest.mark.parametrize(("given", "words"), [("-1", "whole number of nodes"), ("1.5", "whole number of nodes"),
                                               ("150%", "share"), ("3", "VC 'cluster' has 2 nodes")])
def test_bad_spot_node_counts_are_refused_in_words(given, words):
    with pytest.raises(ConfigError, match=words):
        run([("a", 8, 0, 100, True)], spot_nodes=given)


@pytest.mark.parametrize(("model", "error", "words"), [
    ("mtbf=soon", LimitError, "--spot-reclaims mtbf must be a time"),
    ("mtbf=1d,often=2", LimitError, "--spot-reclaims"),
    ("/no/such/log.csv", TraceError, "--spot-reclaims: no such fault log")])
def test_bad_reclaim_models_are_refused_naming_the_option(model, error, words):
    with pytest.raises(error, match=words):
        run([("a", 8, 0, 100, True)], spot_reclaims=model)


def test_a_guaranteed_job_too_large_for_the_nodes_off_spot_is_refused_naming_its_row():
    with pytest.raises(TraceError, match="job big: a guaranteed job of 16 GPUs, more than VC 'cluster' has off its "
                                         "spot nodes \\(8\\)"):
        run([("big", 16, 0, 100, False)])
    _, jobs, _ = run([("big", 16, 0, 100, False)], spot_jobs="any")
    assert jobs.loc["big", "end_time"] == 100


def test_what_spot_nodes_are_not_modelled_with_is_refused_in_words():
    with pytest.raises(ConfigError, match="--spare-nodes"):
        run([("a", 8, 0, 100, True)], spare_nodes=1, node_mtbf=86_400)
    with pytest.raises(ConfigError, match="policy sjf-bsbf shares GPUs"):
        run([("a", 8, 0, 100, True)], policy="sjf-bsbf")


def test_spot_nodes_without_preemptible_jobs_are_warned_of():
    result, _, _ = run([("a", 8, 0, 100, False)])
    assert any("no job is preemptible" in w for w in result.summary["warnings"])


def default_trace_with_preemptible_jobs(tmp_path):
    """The embedded default trace, every third job preemptible, and its VCs."""
    jobs = pd.read_csv(DEFAULT_TRACE / "cluster_full_log.csv")
    jobs["preemptible"] = [i % 3 == 0 for i in range(len(jobs))]
    folder = tmp_path / "trace"
    folder.mkdir()
    jobs.to_csv(folder / "cluster_full_log.csv", index=False)
    (folder / "vc_config.csv").write_text((DEFAULT_TRACE / "vc_config.csv").read_text())
    return folder


def test_the_api_runs_the_default_trace_with_spot_nodes_reclaimed_a_day_apart(tmp_path):
    from simcluster.traces import load_trace as load_folder

    trace = load_folder(default_trace_with_preemptible_jobs(tmp_path))
    result = simulate(trace, SimConfig(policy="fifo", spot_nodes="1", spot_reclaims="mtbf=1d,repair=1h"))
    spot = result.summary["spot"]
    assert result.jobs["end_time"].notna().all() and spot["spot_nodes"] == len(trace.vc_nodes) and spot["reclaims"] > 0
    assert 0 < spot["allocation"] <= 1


def test_lucid_sim_run_takes_spot_nodes_on_the_default_trace(tmp_path):
    from typer.testing import CliRunner

    from simcluster.cli import app

    folder = default_trace_with_preemptible_jobs(tmp_path)
    done = CliRunner().invoke(app, ["run", "--trace", str(folder), "--spot-nodes", "1", "--spot-reclaims",
                                    "mtbf=1d,repair=1h", "--json", "--out", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.output)
    assert summary["spot"]["reclaims"] > 0
    jobs = pd.read_csv(tmp_path / "out" / "jobs.csv")
    assert jobs["spot_evictions"].sum() == summary["spot"]["evictions"]
    bad = CliRunner().invoke(app, ["run", "--spot-nodes", "-1", "--json"])
    assert bad.exit_code != 0 and "--spot-nodes must be a whole number" in bad.output


def busy_spot_trace() -> list[tuple]:
    """Node 0 on demand, node 1 spot: two preemptible jobs fill node 1 then node 0; a guaranteed job of 8 GPUs
    arrives at 100 s."""
    return [("s1", 8, 0, 1000, True), ("s2", 8, 0, 1000, True), ("prod", 8, 100, 100, False)]


def test_a_guaranteed_job_evicts_only_from_the_nodes_it_may_use():
    result, jobs, _seen = run(busy_spot_trace())
    # s1 on the spot node, s2 on node 0: prod evicts s2 (node 0), never s1 on the spot node it cannot use
    assert jobs.loc["prod", "start_time"] == 100 and jobs.loc["s2", "evictions"] == 1 and jobs.loc["s1", "evictions"] == 0
    assert result.summary["tiers"]["evictions"]["futile_evictions"] == 0


def test_a_node_subset_keeps_its_buckets_as_its_nodes_change():
    import random

    from simcluster.cluster import Cluster
    from simcluster.engine.spot import NodeSubset
    from simcluster.job import Job

    vc = Cluster({"a": 6}, 8).vcs["a"]
    spot, on_demand = NodeSubset(vc, vc.nodes[4:]), NodeSubset(vc, vc.nodes[:4])
    rng = random.Random(5)
    running: list[tuple[Job, object]] = []
    for step in range(400):
        node = rng.choice(vc.nodes)
        if running and rng.random() < 0.4:
            job, held = running.pop(rng.randrange(len(running)))
            held.release(job)
        elif node.up and node.free_gpus:
            job = Job(index=step, job_id=str(step), vc="a", gpu_num=1, submit_time=0, duration=1)
            node.allocate(job, rng.randint(1, node.free_gpus))
            running.append((job, node))
        elif not node.jobs:
            node.set_up(not node.up)
        for subset, members in ((spot, vc.nodes[4:]), (on_demand, vc.nodes[:4])):
            expected = [0] * 9
            for member in members:
                if member.bucket is not None:
                    expected[member.bucket] |= member.bit
            assert subset.buckets == expected and subset.free_gpus == sum(m.free_gpus for m in members)
            assert list(subset.nodes) == members and subset.nodes[5] is vc.nodes[5]
