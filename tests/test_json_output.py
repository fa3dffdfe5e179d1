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
