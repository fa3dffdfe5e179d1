"""Link contention (``--link-contention``): jobs crossing the same uplink share its bandwidth, each slowed by its
most crowded uplink to 1/((1 - c) + c·n), held to the closed form, to Crux's GPT/BERT case, and to its figures."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import load_trace, simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.run import resolve_run
from simcluster.settings.fields import ConfigError
from simcluster.topology.links import contention_speed
from simcluster.traces.synth import SynthSpec, synthesize

# three racks of two nodes: any two 3-node jobs on the six nodes share a rack, so they share its uplink
THREE_RACKS = "node,rack\n" + "".join(f"a/n{i},r{i // 2}\n" for i in range(6))
# racks alternating by node: consolidate's whole nodes in node order put a 2-node job under both racks
ALTERNATING = "node,rack\n" + "".join(f"a/n{i},r{i % 2}\n" for i in range(4)) + "a/n4,r2\na/n5,r2\n"


def run(tmp_path, jobs: dict, topology: str, nodes: int = 6, **settings):
    path = tmp_path / "topo.csv"
    path.write_text(topology)
    trace = load_trace(pd.DataFrame(jobs).assign(vc="a"), {"a": nodes})
    return simulate(trace, SimConfig(topology=str(path), **settings))


def test_two_jobs_on_one_uplink_follow_the_closed_form_piece_by_piece(tmp_path):
    c, first, second, later = 0.3, 1000.0, 900.0, 200.0
    result = run(tmp_path, {"submit_time": [0, later], "gpu_num": [24, 24], "duration": [first, second]},
                 THREE_RACKS, link_contention=c)
    both = contention_speed(c, 2)  # 1/(0.7 + 0.6)
    assert both == pytest.approx(1 / 1.3, abs=1e-15)
    # the first runs alone until the second starts, then both at `both` until the first is done; the second
    # then runs alone for what it has left
    first_end = later + (first - later) / both
    second_end = first_end + (second - (first_end - later) * both)
    jct = result.jobs["jct"].tolist()
    assert jct[0] == pytest.approx(first_end, abs=1e-9) and jct[1] == pytest.approx(second_end - later, abs=1e-9)
    assert (first_end, second_end) == pytest.approx((1240.0, 1340.0), abs=1e-9)
    assert result.jobs["peak_uplink_jobs"].tolist() == [2, 2]


def test_jobs_in_their_own_racks_and_a_job_alone_on_its_uplinks_are_not_slowed(tmp_path):
    # job 0 on a/n0-a/n1 under racks r0 and r1, alone on their uplinks; job 1 on a/n2-a/n3, both in r2; job 2
    # on a/n4 of r0 (one node: no uplink); job 3 later on a/n0-a/n1 again
    own_racks = "node,rack\na/n0,r0\na/n1,r1\na/n2,r2\na/n3,r2\na/n4,r0\na/n5,r1\n"
    result = run(tmp_path, {"submit_time": [0, 0, 0, 2000], "gpu_num": [16, 16, 8, 16],
                            "duration": [1000, 1000, 1000, 1000]}, own_racks, link_contention=0.5)
    assert result.jobs["jct"].tolist() == [1000.0] * 4
    assert result.jobs["peak_uplink_jobs"].tolist() == [1, 0, 0, 1]


def test_the_figures_count_the_jobs_and_the_gpu_time_that_shared_an_uplink(tmp_path):
    # jobs 0 and 1 under both racks r0 and r1 (a/n0-a/n1, a/n2-a/n3), job 2 within r2, job 3 alone later
    result = run(tmp_path, {"submit_time": [0, 0, 0, 1000], "gpu_num": [16, 16, 16, 16],
                            "duration": [100, 100, 100, 100]}, ALTERNATING, link_contention=0.5)
    assert result.jobs["jct"].tolist() == [150.0, 150.0, 100.0, 100.0]  # 1/(0.5 + 0.5·2) = 2/3 of their speed
    assert result.jobs["peak_uplink_jobs"].tolist() == [2, 2, 0, 1]
    # GPU-seconds: 16·150 twice shared, 16·100 twice not
    assert result.summary["link_contention"] == {
        "comm_share": 0.5, "jobs_crossing_uplinks": 0.75, "jobs_sharing_uplink": 0.5,
        "gpu_time_sharing_uplink": 4800 / 8000, "most_jobs_on_an_uplink": 2}


def test_crux_gpt_beside_bert_under_two_tor_switches_goes_from_1_53_to_1_70_s_an_iteration(tmp_path):
    # docs/topology.md, "Link contention": 1.70/1.53 = 1 + c, c = 1/9; GPT 64 GPUs of 1,000 iterations, BERT
    # 16 GPUs, ten nodes alternating between two ToR switches
    topology = "node,tor\n" + "".join(f"a/n{i},t{i % 2}\n" for i in range(10))
    jobs = {"job_id": ["gpt", "bert"], "submit_time": [0, 0], "gpu_num": [64, 16], "duration": [1530, 3000]}
    result = run(tmp_path, jobs, topology, nodes=10, link_contention=1 / 9)
    gpt, bert = result.jobs["jct"].tolist()
    assert gpt / 1000 == pytest.approx(1.70, abs=1e-12)
    assert bert == pytest.approx(1700 + (3000 - 1530), abs=1e-9)  # 1,530 s of work done beside GPT, then alone
    alone = run(tmp_path, jobs, topology, nodes=10)
    assert alone.jobs["jct"].tolist() == [1530.0, 3000.0] and "link_contention" not in alone.summary


def test_contention_compounds_with_what_spanning_costs(tmp_path):
    result = run(tmp_path, {"submit_time": [0, 0], "gpu_num": [24, 24], "duration": [1000, 1000]}, THREE_RACKS,
                 link_contention=0.5, topology_slowdown="rack=0.25")
    assert result.jobs["jct"].tolist() == pytest.approx([1000 * 1.25 * 1.5] * 2, abs=1e-9)


def test_link_contention_without_a_topology_is_refused_in_words():
    trace = load_trace(pd.DataFrame({"submit_time": [0], "gpu_num": [8], "duration": [10]}), nodes=1)
    with pytest.raises(ConfigError, match="--link-contention 0.1 applies only to runs with a topology"):
        resolve_run(trace, SimConfig(link_contention=0.1))


def test_both_kernels_give_the_same_run_under_contention_with_preemptions(tmp_path):
    trace = synthesize(SynthSpec(jobs=300, nodes=16, vcs=1, seed=4, load=1.5, sizes="pow2:32", arrivals="poisson"))
    path = tmp_path / "topo.csv"  # matched by order: host i is the cluster's i-th node
    path.write_text("host,block,rack\n" + "".join(f"h{i},b{i // 8},r{i // 3}\n" for i in range(16)))
    config = SimConfig(policy="tiresias", topology=str(path), link_contention=0.4)
    fast, reference = (simulate(trace, config, kernel=kernel) for kernel in ("fast", "reference"))
    pd.testing.assert_frame_equal(fast.jobs, reference.jobs)
    assert fast.summary["link_contention"] == reference.summary["link_contention"]
    assert fast.summary["link_contention"]["jobs_sharing_uplink"] > 0 and fast.jobs["preemptions"].sum() > 0
    plain = simulate(trace, SimConfig(policy="tiresias", topology=str(path)))
    assert fast.summary["avg_jct"] > plain.summary["avg_jct"]


def test_lucid_sim_run_json_prints_one_document_with_the_figures(tmp_path):
    pd.DataFrame({"submit_time": [0, 0], "gpu_num": [24, 24], "duration": [100, 100]}).to_csv(
        tmp_path / "jobs.csv", index=False)
    (tmp_path / "topo.csv").write_text(THREE_RACKS.replace("a/n", "host"))
    done = CliRunner().invoke(app, ["run", "--trace", str(tmp_path / "jobs.csv"), "--nodes", "6", "--topology",
                                    str(tmp_path / "topo.csv"), "--link-contention", "0.5", "--out",
                                    str(tmp_path / "out"), "--json"])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["link_contention"]["jobs_sharing_uplink"] == 1.0
    assert "peak_uplink_jobs" in pd.read_csv(tmp_path / "out" / "jobs.csv")
