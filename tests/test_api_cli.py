"""One API: `simcluster.load_trace` + `simulate` give what `lucid-sim run` gives, for every trace format, with the
same options; and a named trace resolves through the shared data in every command and in Python."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster import SimConfig, load_trace, simulate
from simcluster.cli import app
from simcluster.experiments.sweep import FIGURES
from simcluster.paths import shared_data_dir

runner = CliRunner()
VENUS = ("job_id,user,vc,gpu_num,submit_time,duration\n1,u,a,8,2020-09-01 00:00:00,3600\n2,u,a,4,2020-09-01 00:00:10,"
         "600\n3,v,b,2,2020-09-01 00:01:00,60\n4,v,a,8,2020-09-01 00:02:00,120\n")
PHILLY = ("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-02 00:00:10,600.0,2,1200.0,x\n"
          "2017-10-02 00:00:05,300.0,1,300.0,y\n2017-10-02 01:00:00,60.0,8,480,x\n")
ITP = "job_id,submission_time,duration,num_gpu\na,0,3600,8\nb,600,1800,1\nc,3600,600,2\nd,3700,60,16\n"
MINE = "ID;T;G;minutes\nj1;1614592800000;1;90\nj2;1614596400000;2;1.5\nj3;1614600000000;8;30\n"
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\np0,1000,1024,1,1000,,LS,Running,0,600,0\np1,1000,1024,1,500,,LS,Running,10,400,10\n"
        "p2,1000,1024,2,1000,,LS,Running,20,900,20\np3,1000,1024,1,500,V100M16,LS,Running,30,300,30\n")
NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,64000,262144,4,V100M16\n"


def venus(folder: Path) -> tuple[Path, dict]:
    folder.mkdir()
    (folder / "cluster_full_log.csv").write_text(VENUS)
    (folder / "vc_config.csv").write_text("vc,num\na,2\nb,1\n")
    return folder, {}


def philly(folder: Path) -> tuple[Path, dict]:
    folder.mkdir()
    (folder / "philly.csv").write_text(PHILLY)
    (folder / "vc_config.csv").write_text("vc,node num\nx,2\ny,1\n")
    return folder, {}


def itp(folder: Path) -> tuple[Path, dict]:
    folder.mkdir()
    (folder / "cluster01.csv").write_text(ITP)
    return folder / "cluster01.csv", {"load": 0.8}


def mine(folder: Path) -> tuple[Path, dict]:
    folder.mkdir()
    (folder / "mine.csv").write_text(MINE)
    return folder / "mine.csv", {"columns": "job_id=ID,submit_time=T,gpu_num=G,duration=minutes", "nodes": 1,
                                 "duration_unit": "min", "time_format": "epoch-ms", "delimiter": "semicolon",
                                 "epoch": "2021-03-01 09:00:00"}


def openb(folder: Path) -> tuple[Path, dict]:
    folder.mkdir()
    (folder / "pods.csv").write_text(PODS)
    (folder / "openb_node_list_gpu_node.csv").write_text(NODES)
    return folder / "pods.csv", {}


def gavel(folder: Path) -> tuple[Path, dict]:
    source = shared_data_dir() / "gavel_traces" / "t100.trace"
    if not source.is_file() or not (shared_data_dir() / "profiles" / "gavel").is_dir():
        pytest.skip(f"Gavel's trace and throughput table not found under {shared_data_dir()} (set SIMCLUSTER_DATA)")
    return source, {}


FORMATS = {"venus": venus, "philly": philly, "itp": itp, "csv": mine, "openb": openb, "gavel": gavel}
CLUSTER = {"gavel": "v100:4,p100:4,k80:4"}


def cli_run(trace: Path, options: dict, out: Path, *settings: str) -> tuple[pd.DataFrame, dict]:
    flags = [f for name, value in options.items() for f in (f"--{name.replace('_', '-')}", str(value))]
    done = runner.invoke(app, ["run", "--trace", str(trace), *flags, *settings, "--out", str(out), "--quiet"])
    assert done.exit_code == 0, done.output
    return pd.read_csv(out / "jobs.csv"), json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("kind", FORMATS)
def test_the_api_and_the_cli_give_identical_results_for_every_trace_format(tmp_path, kind):
    trace, options = FORMATS[kind](tmp_path / kind)
    cluster = CLUSTER.get(kind)
    jobs, summary = cli_run(trace, options, tmp_path / "out", "--policy", "srtf",
                            *(["--cluster", cluster] if cluster else []))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every option given: nothing looks misread
        loaded = load_trace(trace, **options)
    assert loaded.format == kind if hasattr(loaded, "time_rule") else loaded.kind == kind
    result = simulate(loaded, SimConfig(policy="srtf", cluster=cluster))
    pd.testing.assert_frame_equal(jobs, pd.read_csv(pd.io.common.StringIO(result.jobs.to_csv(index=False))))
    assert {k: summary.get(k) for k in FIGURES} == {k: result.summary.get(k) for k in FIGURES}
    assert summary["trace"] == result.summary["trace"] and summary["trace_format"] == result.summary["trace_format"]


def test_a_named_trace_resolves_through_the_shared_data_in_python_and_in_every_command(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    venus(data / "tiny_venus")
    monkeypatch.setenv("SIMCLUSTER_DATA", str(data))
    monkeypatch.chdir(tmp_path)
    assert load_trace("tiny_venus").source == str(data / "tiny_venus" / "cluster_full_log.csv")
    for args in (["trace", "check", "tiny_venus"], ["trace", "inspect", "tiny_venus"],
                 ["run", "--trace", "tiny_venus", "--out", "run", "--quiet"],
                 ["sweep", "--trace", "tiny_venus", "--out", "sweep", "--quiet", "--workers", "1"]):
        done = runner.invoke(app, args)
        assert done.exit_code == 0, (args, done.output)
    missing = runner.invoke(app, ["trace", "check", "no_such_trace"])
    assert missing.exit_code == 2 and "nor in the shared data" in missing.output


def test_named_data_resolves_in_validate_check_policy_and_fragmentation(tmp_path, monkeypatch):
    from simcluster.fragmentation import fragmentation_study
    from simcluster.paths import shared_data_dir

    data = shared_data_dir()
    if not (data / "alibaba_openb").is_dir() or not (data / "venus_sept").is_dir():
        pytest.skip(f"reference data not found at {data} (set SIMCLUSTER_DATA to the shared data folder)")
    monkeypatch.chdir(tmp_path)
    assert len(fragmentation_study("alibaba_openb", ["bestfit"], [42], inflate=0.2).table)
    run = runner.invoke(app, ["run", "--trace", "venus_sept", "--out", "run", "--quiet", "--until", "86400"])
    assert run.exit_code == 0, run.output
    checked = runner.invoke(app, ["validate", "run", "--recorded", "venus_sept/cluster_throughput.csv", "--json"])
    assert checked.exit_code == 0, checked.output
