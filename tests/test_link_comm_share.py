"""Each job's own communication share for link contention (a trace's ``comm_share`` column): each job slowed
by its own share to 1/((1 - c) + c·n), blank cells taking ``--link-contention``, bad values refused in words,
and a trace without the column run as before."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import load_trace, simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.errors import TraceError
from simcluster.traces.synth import SynthSpec, synthesize

# three racks of two nodes: any two 3-node jobs on the six nodes share a rack, so they share its uplink
THREE_RACKS = "node,rack\n" + "".join(f"a/n{i},r{i // 2}\n" for i in range(6))


def run(tmp_path, jobs: dict, nodes: int = 6, **settings):
    path = tmp_path / "topo.csv"
    path.write_text(THREE_RACKS)
    trace = load_trace(pd.DataFrame(jobs).assign(vc="a"), {"a": nodes})
    return simulate(trace, SimConfig(topology=str(path), **settings))


def two_jobs(shares: list, durations: tuple[float, float] = (1000.0, 1200.0)) -> dict:
    return {"submit_time": [0, 0], "gpu_num": [24, 24], "duration": list(durations), "comm_share": shares}


def test_jobs_of_different_shares_sharing_an_uplink_all_their_run_take_duration_times_1_plus_c(tmp_path):
    # shares 0.5 and 0.25: 1000·(0.5 + 2·0.5) = 1200·(0.75 + 2·0.25) = 1500: both share the uplink to the end;
    # in play with --link-contention 0: the trace's shares are the jobs' own
    result = run(tmp_path, two_jobs([0.5, 0.25]))
    expected = [1000 * ((1 - 0.5) + 2 * 0.5), 1200 * ((1 - 0.25) + 2 * 0.25)]
    assert expected == [1500.0, 1500.0]
    assert result.jobs["jct"].tolist() == pytest.approx(expected, abs=1e-9)
    assert result.jobs["comm_share"].tolist() == [0.5, 0.25]
    assert result.jobs["peak_uplink_jobs"].tolist() == [2, 2]
    figures = result.summary["link_contention"]
    assert figures["shares"] == "trace" and figures["comm_share"] == 0.0
    assert figures["jobs_sharing_uplink"] == 1.0


def test_the_job_of_the_smaller_share_ends_first_and_the_other_runs_the_rest_alone(tmp_path):
    # shares 0.5 and 0.2 of 1,000 s each: the second at 1/1.2 ends at 1,200 s; the first, at 1/1.5, has done
    # 800 s of its work by then and runs its last 200 s alone
    result = run(tmp_path, two_jobs([0.5, 0.2], (1000.0, 1000.0)))
    first_done_by_then = 1200 / ((1 - 0.5) + 2 * 0.5)
    expected = [1200 + (1000 - first_done_by_then), 1200.0]
    assert result.jobs["jct"].tolist() == pytest.approx(expected, abs=1e-9)
    assert result.jobs["jct"].tolist() == pytest.approx([1400.0, 1200.0], abs=1e-9)


def test_a_blank_cell_takes_the_option(tmp_path):
    blank = run(tmp_path, two_jobs([0.5, None]), link_contention=0.25)
    given = run(tmp_path, two_jobs([0.5, 0.25]))
    assert blank.jobs["jct"].tolist() == given.jobs["jct"].tolist()
    assert blank.jobs["jct"].tolist() == pytest.approx([1500.0, 1500.0], abs=1e-9)
    assert blank.jobs["comm_share"].tolist() == [0.5, 0.25]
    assert blank.summary["link_contention"]["shares"] == "both"
    assert blank.summary["link_contention"]["comm_share"] == 0.25


def test_a_column_left_blank_is_the_option_for_every_job(tmp_path):
    blank = run(tmp_path, two_jobs([None, None], (1000.0, 1000.0)), link_contention=0.5)
    without = run(tmp_path, {k: v for k, v in two_jobs([], (1000.0, 1000.0)).items() if k != "comm_share"},
                  link_contention=0.5)
    assert blank.jobs["jct"].tolist() == without.jobs["jct"].tolist() == [1500.0, 1500.0]
    assert blank.summary["link_contention"]["shares"] == "option"
    assert blank.jobs["comm_share"].tolist() == [0.5, 0.5]


@pytest.mark.parametrize(("cell", "words"), [
    ("nan", "must be a number from 0 to 1, got 'nan'"),
    ("x", "must be a number from 0 to 1, got 'x'"),
    ("inf", "must be a finite number from 0 to 1, got 'inf'"),
    ("-0.1", r"must be from 0 to 1 \(the part of its time alone spent communicating\), got -0.1"),
    ("1.5", r"must be from 0 to 1 \(the part of its time alone spent communicating\), got 1.5"),
])
def test_a_bad_share_is_refused_naming_file_line_and_field(tmp_path, cell, words):
    path = tmp_path / "jobs.csv"
    path.write_text(f"submit_time,gpu_num,duration,comm_share\n0,8,10,0.5\n0,8,10,{cell}\n")
    with pytest.raises(TraceError, match=words) as caught:
        load_trace(path, nodes=2)
    text = str(caught.value)
    assert "jobs.csv" in text and "line 3" in text and "comm_share" in text


def test_a_bad_share_in_a_dataframe_names_its_row():
    jobs = pd.DataFrame({"submit_time": [0, 0], "gpu_num": [8, 8], "duration": [10, 10],
                         "comm_share": [0.5, 2.0]})
    with pytest.raises(TraceError, match=r"DataFrame row 1, field 'comm_share': must be from 0 to 1"):
        load_trace(jobs, nodes=2)


def test_shares_need_a_topology(tmp_path):
    trace = load_trace(pd.DataFrame(two_jobs([0.5, 0.25])), nodes=6)
    result = simulate(trace, SimConfig())
    assert "link_contention" not in result.summary and "comm_share" not in result.jobs
    assert result.jobs["jct"].tolist() == [1000.0, 1200.0]


@pytest.mark.filterwarnings("ignore::simcluster.api.TraceWarning")  # (the synthetic load is heavy on purpose)
def test_a_trace_without_the_column_runs_as_before_and_a_column_of_c_gives_the_same_run(tmp_path):
    # 300 jobs with preemptions and a model column (which gives no share: none is inferred)
    spec = SynthSpec(jobs=300, nodes=16, vcs=1, seed=4, load=1.5, sizes="pow2:32", arrivals="poisson")
    trace = synthesize(spec)
    assert "model" in trace.frame
    path = tmp_path / "topo.csv"  # matched by order: host i is the cluster's i-th node
    path.write_text("host,block,rack\n" + "".join(f"h{i},b{i // 8},r{i // 3}\n" for i in range(16)))
    config = SimConfig(policy="tiresias", topology=str(path), link_contention=0.4)
    without = simulate(trace, config)
    assert "comm_share" not in without.jobs and "shares" not in without.summary["link_contention"]
    assert without.jobs["preemptions"].sum() > 0
    assert without.summary["link_contention"]["jobs_sharing_uplink"] > 0
    frame = trace.frame.drop(columns=["model", "dataset", "batchsize", "amp"])
    own = simulate(load_trace(frame.assign(comm_share=0.4), trace.vc_nodes), config)
    pd.testing.assert_frame_equal(own.jobs.drop(columns="comm_share"), without.jobs)
    figures = dict(own.summary["link_contention"])
    assert figures.pop("shares") == "trace" and figures == without.summary["link_contention"]
    # and a share of its own moves the run: half the jobs communicating more
    more = frame.assign(comm_share=np.where(np.arange(len(frame)) % 2, 0.9, np.nan))
    busier = simulate(load_trace(more, trace.vc_nodes), config)
    assert busier.summary["avg_jct"] > without.summary["avg_jct"]
    assert busier.summary["link_contention"]["shares"] == "both"


def test_lucid_sim_run_reads_the_column_with_a_topology(tmp_path):
    pd.DataFrame(two_jobs([0.5, 0.25])).to_csv(tmp_path / "jobs.csv", index=False)
    (tmp_path / "topo.csv").write_text(THREE_RACKS.replace("a/n", "host"))
    args = ["run", "--trace", str(tmp_path / "jobs.csv"), "--nodes", "6", "--topology",
            str(tmp_path / "topo.csv"), "--out", str(tmp_path / "out"), "--json"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["link_contention"]["shares"] == "trace"
    jobs = pd.read_csv(tmp_path / "out" / "jobs.csv")
    assert jobs["comm_share"].tolist() == [0.5, 0.25]
    assert jobs["jct"].tolist() == pytest.approx([1500.0, 1500.0], abs=1e-9)
