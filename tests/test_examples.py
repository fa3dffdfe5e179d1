"""examples/policies/ run from a folder outside the repository, as a user copies them: by file path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from simcluster.paths import REPO_ROOT, shared_data_dir
from simcluster.testing import check_policy

EXAMPLES = sorted((REPO_ROOT / "examples" / "policies").glob("*.py"))
POLICY_FILES = [p for p in EXAMPLES if not p.name.endswith("_placement.py")]
PLACEMENT_FILES = [p for p in EXAMPLES if p.name.endswith("_placement.py")]
LUCID_SIM = [sys.executable, "-m", "simcluster.cli"]


def venus() -> Path:
    path = shared_data_dir() / "venus_sept"
    if not path.is_dir():
        pytest.skip(f"reference data not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    return path


def lucid_sim(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # the checkout under test, whatever is installed
    return subprocess.run([*LUCID_SIM, *args], cwd=folder, env=env, capture_output=True, text=True, check=False,
                          timeout=900)


@pytest.fixture
def user_folder(tmp_path: Path) -> Path:
    """An empty folder outside the repository holding copies of the examples."""
    folder = tmp_path / "my-experiments"
    folder.mkdir()
    for path in EXAMPLES:
        shutil.copy(path, folder / path.name)
    return folder


def test_every_example_is_a_working_policy_or_placement():
    assert {p.name for p in POLICY_FILES} >= {"srtf_minimal.py", "srtf_kept.py", "las2.py", "fair_share.py"}
    assert PLACEMENT_FILES
    assert len((REPO_ROOT / "examples/policies/srtf_minimal.py").read_text().splitlines()) <= 60


@pytest.mark.parametrize("path", POLICY_FILES, ids=lambda p: p.name)
def test_each_example_policy_keeps_the_rules(path):
    check_policy(str(path))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_each_example_runs_on_venus_by_file_path_with_json(user_folder, path):
    option = "--placement" if path in PLACEMENT_FILES else "--policy"
    done = lucid_sim(user_folder, "run", option, f"./{path.name}", "--trace", str(venus()), "--json",
                     "--out", "out")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # exactly one JSON document
    assert summary["jobs"] == 23_859
    source = summary["placement_source" if path in PLACEMENT_FILES else "policy_source"]
    assert source["location"] == str(user_folder / path.name)


@pytest.mark.parametrize("example", ["srtf_minimal.py", "srtf_kept.py"])
def test_the_srtf_examples_match_the_built_in_srtf_job_by_job(user_folder, example):
    for policy, out in ((f"./{example}", "example"), ("srtf", "builtin")):
        done = lucid_sim(user_folder, "run", "--policy", policy, "--trace", str(venus()), "--out", out, "-q")
        assert done.returncode == 0, done.stderr
    mine = pd.read_csv(user_folder / "example" / "jobs.csv")
    builtin = pd.read_csv(user_folder / "builtin" / "jobs.csv")
    assert len(mine) == 23_859
    pd.testing.assert_frame_equal(mine[["job_id", "start_time", "end_time", "preemptions"]],
                                  builtin[["job_id", "start_time", "end_time", "preemptions"]])


def test_a_sweep_over_a_built_in_and_a_plugin_runs_on_the_process_pool(user_folder):
    done = lucid_sim(user_folder, "sweep", "--policy", "fifo,./las2.py", "--seed", "1,2", "--trace", str(venus()),
                     "--out", "sweep", "--workers", "2", "-q")
    assert done.returncode == 0, done.stderr + done.stdout
    runs = pd.read_csv(user_folder / "sweep" / "runs.csv")
    assert len(runs) == 4 and set(runs["status"]) == {"ok"} and set(runs["jobs"]) == {23_859}
    assert not (user_folder / "sweep" / "failed").exists()


def test_an_api_sweep_from_a_script_needs_no_main_guard(tmp_path):
    script = tmp_path / "study.py"
    script.write_text(
        "from pathlib import Path\n"
        "from simcluster.experiments.sweep import build_grid, run_sweep\n"
        "from simcluster.sdk import Policy, start_in_order_until_blocked\n\n"
        "class BigFirst(Policy):\n"
        "    '''Largest jobs first.'''\n"
        "    def pending_key(self, job):\n"
        "        return (-job.gpu_num, job.index)\n"
        "    schedule = staticmethod(start_in_order_until_blocked)\n\n"
        "specs = build_grid(['synth:jobs=30,nodes=2,vcs=1'], ['fifo', 'mine.py'], [0, 1])\n"
        "outcome = run_sweep(specs, Path('out'), workers=2)\n"
        "print('ran', outcome.ran, 'failed', outcome.failed)\n")
    (tmp_path / "mine.py").write_text(script.read_text().split("specs =")[0])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "ran 4 failed 0"
