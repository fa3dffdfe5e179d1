"""``kill`` (SIGTERM) stops `lucid-sim sweep` and `lucid-sim run` as Ctrl-C does: every child process ended
(workers, the fork server, the resource tracker), nothing half-written, one line said and no traceback, exit
status 143.  Run as a user runs them, in a process of their own, and signalled while they work.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simcluster.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the children through /proc (Linux)")
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def start(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "simcluster.cli", *args], cwd=cwd, env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def descendants(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid:
                found += [int(entry.name), *descendants(int(entry.name))]
    return found


def alive(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


def wait_for(condition, process: subprocess.Popen, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the command never got that far"
        time.sleep(0.1)


def terminate(process: subprocess.Popen) -> tuple[int, str, list[int]]:
    """SIGTERM the command; its exit status, its stderr and the children it had that are still alive after it."""
    children = descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    try:
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    return process.returncode, stderr, [pid for pid in children if alive(pid)]


def test_sigterm_stops_a_sweep_and_every_process_it_started_keeping_what_finished(tmp_path):
    out = tmp_path / "sweep"
    sweep = start("sweep", "-q", "--trace", "synth:jobs=20000,nodes=64,vcs=4", "--policy", "fifo,sjf,srtf,tiresias",
                  "--seed", "1,2,3", "--workers", "2", "--split-vcs", "never", "--out", str(out), cwd=tmp_path)
    wait_for(lambda: len(list((out / "runs").glob("*/summary.json"))) >= 1 and len(descendants(sweep.pid)) >= 3,
             sweep)
    code, stderr, left = terminate(sweep)
    assert code == 143, stderr
    assert "interrupted (SIGTERM): finished runs are kept" in stderr and "Traceback" not in stderr
    assert left == []  # workers, fork server and resource tracker: none outlives the sweep
    time.sleep(1)  # a run in flight would land now if its worker had lived on
    runs = out / "runs"
    assert not list(runs.glob(".*")), list(runs.glob(".*"))  # no temporary folder of a run cut off
    finished = sorted(p.name for p in runs.iterdir())
    assert 1 <= len(finished) < 12
    for folder in runs.iterdir():  # each whole: its marker names what it holds
        assert (folder / ".simcluster.json").is_file() and (folder / "jobs.csv").is_file()
    listed = (out / "runs.csv").read_text().splitlines()[1:]
    assert sorted(line.split(",")[0] for line in listed) == finished


def test_sigterm_stops_a_run_and_writes_nothing(tmp_path):
    made = subprocess.run([sys.executable, "-m", "simcluster.cli", "trace", "synth", "--jobs", "40000", "--nodes",
                           "64", "--vcs", "2", "--out", str(tmp_path / "trace")], env=ENV, capture_output=True,
                          check=False)
    assert made.returncode == 0, made.stderr
    out = tmp_path / "results" / "run"
    run = start("run", "--trace", str(tmp_path / "trace"), "--policy", "tiresias", "--out", str(out), cwd=tmp_path)
    wait_for(lambda: cpu_seconds(run.pid) >= 3.0, run)  # past loading: simulating
    code, stderr, left = terminate(run)
    assert code == 143, stderr
    assert "interrupted (SIGTERM): nothing was written" in stderr and "Traceback" not in stderr
    assert left == []
    assert not out.exists()
    assert not (out.parent.exists() and list(out.parent.iterdir()))  # no temporary folder either


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
