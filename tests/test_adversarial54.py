"""Issue 54's adversarial cases of the fault surfaces, re-verified: each refused in words (naming the option, or the
file and field) or answered correctly, without a traceback or a leaked warning; faults counted, never timed.

Cases whose tests live elsewhere: a Weibull shape of 0.001/0.006 in ``reliability``, ``mtbf=1e308d``, a fitted
model's rate or repair of 1e300, ``--node-mtbf 0.001``, ``reliability --checkpoint-interval 1e300``, 20,000 sizes
and a 10M-GPU job (tests/test_fault_inputs.py); an ETTR interval above 1 (tests/test_reliability_study_bounds.py);
a 1e7-row log (tests/test_fault_logs_as_they_come.py); ``--restart-limit 0`` with day-long jobs, the study's
16,384 GPUs without spares and the fleet warning in the error (tests/test_reliability_left.py).
"""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.experiments.runs import SweepError
from simcluster.experiments.sweep import parse_sets
from simcluster.faults import read_fault_log
from simcluster.faults.models import MAX_HORIZON_S
from simcluster.faults.replay import LogReplay

runner = CliRunner()
LOG = "node,start,end,class\nn1,0,3600,GPU\nn2,100,7300,NIC\nn1,86400,90000,GPU\n"


def invoke(args: list[str], status: int) -> str:
    """``lucid-sim ARGS`` with warnings as errors: the exit status asserted, no traceback; the output."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = runner.invoke(app, args)
    assert result.exit_code == status, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output and "Warning" not in result.output, result.output
    return result.output


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A trace of 12 jobs on 4 nodes of one VC."""
    folder = tmp_path_factory.mktemp("small")
    pd.DataFrame({"job_id": [f"j{i}" for i in range(12)], "vc": "vc0", "user": "u", "gpu_num": [8, 16, 4] * 4,
                  "submit_time": [300 * i for i in range(12)], "duration": [1800 + 200 * i for i in range(12)]}
                 ).to_csv(folder / "cluster_full_log.csv", index=False)
    (folder / "vc_config.csv").write_text("vc,num\nvc0,4\n")
    return folder


@pytest.fixture(scope="module")
def faulty_run(small, tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "run"
    invoke(["run", "--trace", str(small), "--faults", "mtbf=1d", "--checkpoint-cost", "30", "--out", str(out)], 0)
    return out


def test_a_rate_model_is_one_sweep_value_and_several_are_separated_by_semicolons(small, tmp_path):
    """`sweep --set faults=mtbf=1d,repair=9h` was split at its comma into two runs."""
    assert parse_sets(["faults=mtbf=1d,repair=9h"])["faults"] == [("mtbf=1d,repair=9h", "mtbf=1d,repair=9h")]
    invoke(["sweep", "--trace", str(small), "--set", "faults=mtbf=1d,repair=9h", "--out", str(tmp_path / "one"),
            "-q"], 0)
    runs = pd.read_csv(tmp_path / "one" / "runs.csv")
    assert len(runs) == 1 and runs["faults"].tolist() == ["mtbf=1d,repair=9h"]
    invoke(["sweep", "--trace", str(small), "--set", "faults=mtbf=1d,repair=9h;mtbf=2d,repair=9h", "--out",
            str(tmp_path / "two"), "-q"], 0)
    assert sorted(pd.read_csv(tmp_path / "two" / "runs.csv")["faults"]) == ["mtbf=1d,repair=9h", "mtbf=2d,repair=9h"]


def test_a_key_given_twice_in_one_value_says_how_to_give_several():
    with pytest.raises(SweepError, match="'mtbf' is given twice in 'mtbf=1d,mtbf=2d'; .* separated by ';'"):
        parse_sets(["faults=mtbf=1d,mtbf=2d"])


@pytest.mark.parametrize("spec, says", [("mtbf=1d,shape=0.006", "--faults shape must be from 0.1 to 100"),
                                        ("mtbf=1d,shape=0.001", "--faults shape must be from 0.1 to 100"),
                                        ("mtbf=1e308d", "--faults mtbf must be at most")])
def test_a_sweeps_bad_rate_model_is_refused_before_any_run_without_a_warning(small, tmp_path, spec, says):
    output = invoke(["sweep", "--trace", str(small), "--set", f"faults={spec}", "--out", str(tmp_path / "s"), "-q"], 2)
    assert f"--set faults={spec}: {says}" in " ".join(output.split())
    assert not (tmp_path / "s" / "runs.csv").exists()


@pytest.mark.parametrize("spec", ["mtbf=1d,shape=0.006", "mtbf=1e308d"])
def test_run_refuses_them_naming_the_field_without_a_warning(small, tmp_path, spec):
    output = invoke(["run", "--trace", str(small), "--faults", spec, "--out", str(tmp_path / "r")], 2)
    assert "--faults shape" in output or "--faults mtbf" in output


@pytest.mark.parametrize("field, value, says", [
    ("ettr_mean", 7.5, "ettr_mean is 7.5, but an ETTR is a ratio from 0 to 1"),
    ("ettr_gpu_weighted", -0.1, "ettr_gpu_weighted is -0.1"),
    ("gpu_share_by_cause.lost", 1.5, "gpu_share_by_cause.lost is 1.5, but a share of GPU time is a ratio"),
    ("interruptions", -3, "interruptions is -3"),
])
def test_a_hand_edited_summarys_impossible_figure_is_refused_naming_file_and_field(faulty_run, tmp_path, field,
                                                                                   value, says):
    """A summary.json with ETTR 7.5 was copied into the report."""
    folder = tmp_path / "edited"
    folder.mkdir()
    for path in faulty_run.iterdir():
        if path.is_file():
            (folder / path.name).write_bytes(path.read_bytes())
    summary = json.loads((folder / "summary.json").read_text())
    *parents, last = field.split(".")
    target = summary
    for key in parents:
        target = target[key]
    target[last] = value
    (folder / "summary.json").write_text(json.dumps(summary))
    output = " ".join(invoke(["report", str(folder), "--out", str(tmp_path / "report")], 2).split())
    assert f"{folder / 'summary.json'}: {says}" in output


def test_the_unedited_run_reports(faulty_run, tmp_path):
    invoke(["report", str(faulty_run), "--out", str(tmp_path / "report")], 0)
    assert "Reliability" in (tmp_path / "report" / "comparison.md").read_text()


def test_a_sweep_whose_replicas_agree_exactly_reports(small, tmp_path):
    """'yerr' must not contain negative values: the mean landed 1e-16 above its interval."""
    invoke(["sweep", "--trace", str(small), "--replicas", "3", "--perturb", "seeds", "--out", str(tmp_path / "s"),
            "-q"], 0)
    runs = pd.read_csv(tmp_path / "s" / "runs.csv")
    assert runs["avg_jct"].nunique() == 1 and len(runs) == 3  # (they do agree exactly)
    invoke(["report", str(tmp_path / "s"), "--out", str(tmp_path / "report")], 0)


def test_a_log_naming_a_column_twice_says_which(tmp_path):
    (tmp_path / "twice.csv").write_text("node,start,end,start\nn1,0,3600,5\n")
    output = " ".join(invoke(["faults", "show", str(tmp_path / "twice.csv")], 2).split())
    assert f"{tmp_path / 'twice.csv'}, line 1: column 'start' is named twice (columns 2 and 4)" in output


def test_fit_refuses_to_write_its_fit_over_the_log_it_reads(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    output = " ".join(invoke(["faults", "fit", str(log), "--out", str(log)], 2).split())
    assert "is the fault log being fit (the same file named twice)" in output and log.read_text() == LOG
    invoke(["faults", "fit", str(log), "--out", str(tmp_path / "fitted.json")], 0)


def test_a_fault_that_covers_the_whole_span_is_one_outage_for_good(tmp_path):
    """About 3e7 repeats of the span were walked without yielding an outage."""
    (tmp_path / "whole.csv").write_text("node,start,end,class\nn1,0,100,GPU\n")
    outages = list(LogReplay(read_fault_log(tmp_path / "whole.csv")).outages(4, 8, MAX_HORIZON_S, 0).stream())
    assert [(o.down_at, o.up_at) for o in outages] == [(0.0, MAX_HORIZON_S)] * 4
    (tmp_path / "gap.csv").write_text("node,start,end,class\nn1,0,50,GPU\nn1,60,100,GPU\n")  # up 10 s a period
    first = LogReplay(read_fault_log(tmp_path / "gap.csv")).outages(1, 8, 1000.0, 0).stream()
    assert [(o.down_at, o.up_at) for o in first][:2] == [(0.0, 50.0), (60.0, 150.0)]


def test_a_run_on_such_a_log_is_refused_in_words(small, tmp_path):
    (tmp_path / "whole.csv").write_text("node,start,end,class\nn1,0,100,GPU\n")
    output = " ".join(invoke(["run", "--trace", str(small), "--faults", str(tmp_path / "whole.csv"), "--out",
                              str(tmp_path / "r")], 2).split())
    assert "no progress under faults" in output and "the fleet is taken to be the log's 1 server(s)" in output


def test_node_mtbf_interruptions_come_with_their_faults(small, tmp_path):
    """summary.json had interruptions 1 and failures.faults 0 under --node-mtbf."""
    invoke(["run", "--trace", str(small), "--node-mtbf", "6h", "--checkpoint-cost", "60", "--out",
            str(tmp_path / "r")], 0)
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["interruptions"] > 0 and summary["failures"]["faults"] >= summary["interruptions"]


def test_a_two_row_log_of_a_600_s_span_ends_in_words(small, tmp_path):
    """It churned for more than 10 minutes and 3 GB: each of the cluster's nodes replays a failing server's 600 s."""
    (tmp_path / "two.csv").write_text("node,start,end\nn1,0,300\nn2,300,600\n")
    output = " ".join(invoke(["run", "--trace", str(small), "--faults", str(tmp_path / "two.csv"), "--out",
                              str(tmp_path / "r")], 2).split())
    assert "no progress under" in output and "the fleet is taken to be the log's 2 server(s)" in output


def test_a_run_ended_before_any_job_finished_prints_its_summary(tmp_path):
    """``--until`` before the first end: the table and the summary line, not ``KeyError: 'preemptions'``."""
    out = invoke(["run", "--until", "1", "--out", str(tmp_path / "run")], 0)
    assert "preemptions 0" in out
    summary = json.loads(invoke(["run", "--until", "1", "--json", "--out", str(tmp_path / "again")], 0))
    assert summary["jobs"] == 0 and summary["preemptions"] == 0 and summary["restarts"] == 0
