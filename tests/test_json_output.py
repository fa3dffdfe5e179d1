"""``--json`` prints exactly one JSON document on stdout, for every policy and every command that has it.

Run as a user runs it, in a child process: output written beneath Python (a solver's banner on file
descriptor 1) reaches stdout there, where an in-process runner would not see it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from simcluster.paths import REPO_ROOT, shared_data_dir
from simcluster.policies import POLICIES

ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def lucid_sim(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simcluster.cli", *args], env=ENV, cwd=cwd, capture_output=True,
                          text=True, check=False, timeout=600)


def one_document(text: str):
    """The one JSON document ``text`` holds, nothing before or after it (json.loads refuses extra data)."""
    return json.loads(text)


@pytest.mark.parametrize("policy", POLICIES.names())
def test_every_policy_prints_one_json_document(tmp_path, policy):
    trace = []
    if getattr(POLICIES.get(policy), "trace_format", None) == "elasticflow":  # jobs of ElasticFlow's models
        if not (shared_data_dir() / "elasticflow" / "throughputs_A100").is_dir():
            pytest.skip(f"{policy} needs ElasticFlow's throughput tables, absent from {shared_data_dir()}")
        path = tmp_path / "trace.csv"
        path.write_text("job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
                        "a,0,20000,resnet50,8000,64,8,2000\nb,30,5000,vgg16,3030,64,4,500\n")
        trace = ["--trace", str(path), "--nodes", "2"]
    elif POLICIES.get(policy).elastic:  # a trace of jobs with scaling models: Pollux's smallest workload
        workload = shared_data_dir() / "pollux" / "workloads" / "0.5" / "workload-3.csv"
        if not workload.is_file():
            pytest.skip(f"{policy} needs a Pollux workload: {workload} is absent")
        trace = ["--trace", str(workload)]
    done = lucid_sim("run", "--policy", policy, *trace, "--json", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert one_document(done.stdout)["policy"] == policy


@pytest.mark.parametrize("command", [["policies", "--json"], ["placements", "--json"], ["presets", "--json"],
                                     ["policies", "srtf", "--json"], ["check-policy", "fifo", "--json"],
                                     ["trace", "check", "--json"], ["trace", "inspect", "--json"]])
def test_every_reference_command_prints_one_json_document(command):
    done = lucid_sim(*command)
    assert done.returncode == 0, done.stderr
    one_document(done.stdout)


def test_sweep_report_and_diff_print_one_json_document(tmp_path):
    sweep = lucid_sim("sweep", "--trace", "synth:jobs=30,nodes=2,vcs=1,seed=2", "--policy", "fifo,sjf",
                      "--out", str(tmp_path / "sweep"), "--workers", "1", "--json")
    assert sweep.returncode == 0, sweep.stderr
    assert one_document(sweep.stdout)["ran"] == 2
    report = lucid_sim("report", str(tmp_path / "sweep"), "--out", str(tmp_path / "report"), "--json")
    assert report.returncode == 0, report.stderr
    assert {row["policy"] for row in one_document(report.stdout)["comparison"]} == {"fifo", "sjf"}
    runs = sorted((tmp_path / "sweep" / "runs").iterdir())
    diff = lucid_sim("diff", str(runs[0]), str(runs[1]), "--json")
    assert diff.returncode in (0, 1), diff.stderr
    one_document(diff.stdout)


def test_reliability_prints_one_json_document(tmp_path):
    done = lucid_sim("reliability", "--faults", "mtbf=5d,repair=1h", "--gpus", "8,16", "--checkpoint-interval",
                     "30m,1h", "--replicas", "3", "--work", "1d", "--out", str(tmp_path / "study"), "--json")
    assert done.returncode == 0, done.stderr
    found = one_document(done.stdout)
    rows = found["rows"]
    # two sizes × (two intervals and Daly's), each row as reliability.csv has it
    assert [(r["gpus"], r["interval_s"], r["daly"]) for r in rows][:2] == [(8, 1800.0, False), (8, 3600.0, False)]
    assert len(rows) == 6 and sum(r["daly"] for r in rows) == 2
    assert all(r["ettr_low"] <= r["ettr_mean"] <= r["ettr_high"] <= 1 for r in rows)
    assert found["settings"]["checkpoint_cost_s"] == 60 and found["settings"]["node_rate_per_day"] == 0.2
    csv = (tmp_path / "study" / "reliability.csv").read_text().splitlines()
    assert len(csv) == 1 + len(rows) and sorted(found["written"]) == sorted(
        str(tmp_path / "study" / name) for name in ("reliability.csv", "reliability.png", "reliability.html"))
