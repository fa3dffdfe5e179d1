"""What the docs say of sweeps and reports holds, and the trace figures a report's runs rest on are the run's:
a sweep from a script needs no ``__main__`` guard (and no page says otherwise), the report's files are the ones
the docs list, ``trace check`` counts the GPUs a run uses, and a trace whose offered load no cluster sees is
said to be misread, naming the option that reads it otherwise."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.experiments.report import write_report
from simcluster.experiments.sweep import build_grid, run_sweep
from simcluster.paths import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()

SCRIPT = """\
import sys
from simcluster.experiments import build_grid, run_sweep

outcome = run_sweep(build_grid(["synth:jobs=60,nodes=2,vcs=1,seed=1"], ["fifo", "sjf"], [0]), sys.argv[1], workers=2)
print("sweep ran", outcome.ran, "failed", outcome.failed)
"""


def test_a_script_without_a_main_guard_runs_its_sweep_once(tmp_path):
    (tmp_path / "sweep_script.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, "sweep_script.py", str(tmp_path / "out")], check=False, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("sweep ran") == 1 and "sweep ran 2 failed 0" in done.stdout


def test_no_page_tells_a_reader_to_guard_a_sweep_with_main():
    for page in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = " ".join(page.read_text().split())
        for said in re.findall(r"[^.]*__main__[^.]*\.", text):
            assert re.search(r"\bno\b|\bnot\b|without", said), f"{page}: {said}"


def documented_report_files(page: Path) -> set[str]:
    """The file names (``*.csv``, ``*.md``, ``*.png``, ``*.html``) a page's report section names."""
    text = page.read_text()
    if page.name == "sweeps.md":
        text = text[text.index("## `lucid-sim report`"):text.index("## Live views")]
    else:
        text = text[:text.index("## Pictures of a run")]
    return set(re.findall(r"`([\w-]+\.(?:csv|md|png|html))`", text)) - {"gantt-N.png"}


@pytest.fixture(scope="module")
def replica_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    assert run_sweep(build_grid(["synth:jobs=150,nodes=2,vcs=1,seed=1"], ["fifo", "sjf"], [0], replicas=3,
                                perturb="bootstrap"), out, workers=2).failed == 0
    return write_report([out], tmp_path_factory.mktemp("report") / "r")


@pytest.mark.parametrize("page", ["sweeps.md", "report.md"])
def test_the_docs_list_every_file_a_report_writes(replica_report, page):
    written = {name for name in replica_report.files if not name.startswith("gantt-")}
    assert {"queue_cdf.png", "differences.csv"} <= written
    assert documented_report_files(REPO / "docs" / page) == written


# --- trace check counts what a run uses -------------------------------------------------------------------

def run_gpus(trace: str, tmp_path: Path, *options: str) -> int:
    done = runner.invoke(app, ["run", "--trace", trace, "--policy", "fifo", "--out", str(tmp_path / "run"),
                               "--json", *options])
    assert done.exit_code == 0, done.output
    return int(json.loads(done.stdout)["gpus"])


def check_json(trace: str, *options: str) -> dict:
    done = runner.invoke(app, ["trace", "check", trace, "--json", *options])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def test_trace_check_counts_the_gpus_a_run_of_a_pollux_workload_uses(tmp_path):
    workload = shared_data_dir() / "pollux" / "workloads" / "0.5" / "workload-1.csv"
    if not workload.is_file():
        pytest.skip("the Pollux workloads are not in ../shared/data")
    seen = check_json(str(workload))
    gpus = run_gpus(str(workload), tmp_path)
    assert seen["load"]["cluster"]["gpus"] == gpus == 64  # 16 nodes of 4 GPUs, not of --gpus-per-node's 8
    done = runner.invoke(app, ["trace", "check", str(workload)], env={"COLUMNS": "200"})
    assert re.search(r"│ all\s+│\s+16 │\s+64 │", done.stdout), done.stdout


def test_trace_check_counts_the_gpus_of_a_job_log_as_a_run_does(tmp_path):
    runner.invoke(app, ["trace", "synth", "--jobs", "200", "--nodes", "6", "--vcs", "2", "--gpus-per-node", "4",
                        "--out", str(tmp_path / "t")])
    seen = check_json(str(tmp_path / "t"), "--gpus-per-node", "4")
    assert seen["load"]["cluster"]["gpus"] == run_gpus(str(tmp_path / "t"), tmp_path, "--gpus-per-node", "4") == 24


# --- misread offered load -----------------------------------------------------------------------------------

def kiloseconds_log(tmp_path: Path) -> Path:
    """300 jobs a few hours long whose submit times are kiloseconds (every 5 ks over 17 days), read as seconds:
    all within 25 minutes."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"job_id": range(300), "submit_time": np.arange(300) * 5,
                          "gpu_num": rng.choice([1, 2, 4, 8], 300), "duration": rng.integers(3600, 20_000, 300)})
    frame.to_csv(tmp_path / "log.csv", index=False)
    return tmp_path / "log.csv"


def test_an_offered_load_no_cluster_sees_is_said_with_what_was_seen_and_the_option(tmp_path):
    log = str(kiloseconds_log(tmp_path))
    seen = check_json(log, "--nodes", "4")
    said = [w for w in seen["warnings"] if w.startswith("offered load")]
    assert len(said) == 1 and "× the cluster: 300 jobs submitted within 25 minutes" in said[0]
    assert "--duration-unit" in said[0] and "seconds" in said[0]
    done = runner.invoke(app, ["run", "--trace", log, "--nodes", "4", "--dry-run"])
    assert done.exit_code == 0 and "offered load" in done.output


def test_milliseconds_read_as_seconds_stretch_the_span_and_are_said_too(tmp_path):
    """300 ten-minute 1-GPU jobs a minute apart, their submit times in milliseconds: 208 days read as seconds."""
    frame = pd.DataFrame({"job_id": range(300), "submit_time": np.arange(300) * 60_000, "gpu_num": 1,
                          "duration": 600})
    frame.to_csv(tmp_path / "ms.csv", index=False)
    said = [w for w in check_json(str(tmp_path / "ms.csv"), "--nodes", "4")["warnings"]
            if w.startswith("offered load")]
    assert len(said) == 1 and "within 208 days" in said[0] and "--time-format epoch-ms" in said[0]


def test_a_plausible_load_is_not_doubted(tmp_path):
    runner.invoke(app, ["trace", "synth", "--jobs", "300", "--nodes", "8", "--vcs", "2", "--out", str(tmp_path / "t")])
    assert not [w for w in check_json(str(tmp_path / "t"))["warnings"] if w.startswith("offered load")]
