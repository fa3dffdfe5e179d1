"""A sweep outlives its failures and its interrupts (issue 54, item 6).

A run that fails — a plug-in policy that raises, or settings that one cell of the grid combines and the policy
refuses — is recorded in runs.csv with its error and the others go on; the command then exits 1 saying how many
failed (with ``--json``, one JSON document that lists them).  A value that every cell refuses is bad input and
stops the sweep before it starts.  Ctrl-C ends a sweep in words — what finished, where, how to resume — with exit
code 130, no traceback from it or its workers, no process left and no half-written file.

The workers are a process pool whose idle workers, like the sweep, receive a terminal's Ctrl-C; the pool is
ended and its manager thread joined before the sweep returns (CPython's ``concurrent.futures`` wakes a pool left
running at exit through a pipe that the pool closes as it ends: the once-seen ``Bad file descriptor``).  Kueue
treats a workload it cannot admit alike: the Workload's status says why, and the queue goes on with the others
(https://kueue.sigs.k8s.io/docs/tasks/troubleshooting/troubleshooting_jobs/; KEP-10852, inadmissible workloads
observability).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.experiments.backends import LocalBackend
from simcluster.experiments.sweep import SweepError, build_grid, parse_sets, read_runs, run_sweep
from simcluster.paths import REPO_ROOT
from tests.test_signals import alive, descendants

TINY = "synth:jobs=30,nodes=2,vcs=1,seed=3"
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

RAISES = '''
from simcluster.sdk import Policy


class Raises(Policy):
    name = "raises"

    def pending_key(self, job):
        raise RuntimeError("this policy always fails")
'''

# two policies that take a setting of the same name over different ranges: 50 suits lax, not strict
LIMITED = '''
from dataclasses import dataclass

from simcluster.sdk import Policy, setting, start_in_order_until_blocked


@dataclass(frozen=True)
class Limit:
    limit: float = setting(1.0, "A bound.", min=0, max={top})


class Limited(Policy):
    name = "{name}"
    Settings = Limit

    def pending_key(self, job):
        return job.submit_time

    schedule = staticmethod(start_in_order_until_blocked)
'''

# a run still going when the sweep is interrupted: it says so in a file, then takes its time
SLOW = '''
import time
from pathlib import Path

from simcluster.sdk import Policy, start_in_order_until_blocked


class Slow(Policy):
    name = "slow"

    def pending_key(self, job):
        Path(__file__).with_name("slow-started").touch()
        time.sleep(0.2)
        return job.submit_time

    schedule = staticmethod(start_in_order_until_blocked)
'''


def plugin(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def rows_by_policy(folder: Path) -> dict[str, dict]:
    return {row["policy"]: row for row in read_runs(folder / "runs.csv").to_dict("records")}


# --- failures ------------------------------------------------------------------------------------------

def test_a_plugin_that_raises_is_recorded_with_its_error_and_the_other_runs_finish(tmp_path):
    specs = build_grid([TINY], ["fifo", str(plugin(tmp_path, "raises.py", RAISES)), "sjf"], [0])
    outcome = run_sweep(specs, tmp_path / "s", workers=2)
    rows = rows_by_policy(tmp_path / "s")
    assert (outcome.ran, outcome.failed) == (3, 1)
    assert rows["fifo"]["status"] == rows["sjf"]["status"] == "ok"
    assert rows["raises"]["status"] == "failed"
    assert "this policy always fails" in rows["raises"]["error"] and "raises.py line" in rows["raises"]["error"]
    assert "Traceback" in (tmp_path / "s" / "failed" / f"{rows['raises']['run_id']}.txt").read_text()
    assert not (tmp_path / "s" / "runs" / rows["raises"]["run_id"]).exists()
    again = run_sweep(specs, tmp_path / "s", workers=2)  # a failed run is tried again, the finished ones are not
    assert (again.skipped, again.ran, again.failed) == (2, 1, 1)


def test_a_combination_one_policy_refuses_is_a_failed_run_and_the_rest_of_the_grid_runs(tmp_path):
    lax = plugin(tmp_path, "lax.py", LIMITED.format(name="lax", top=1000))
    strict = plugin(tmp_path, "strict.py", LIMITED.format(name="strict", top=10))
    specs = build_grid([TINY], [str(lax), str(strict)], [0], parse_sets(["limit=5,50"]))
    assert [s.refused is not None for s in specs] == [False, False, False, True]
    outcome = run_sweep(specs, tmp_path / "s", workers=2)
    assert (outcome.ran, outcome.failed) == (4, 1)
    rows = read_runs(tmp_path / "s" / "runs.csv").set_index(["policy", "limit"])
    refused = rows.loc[("strict", 50)]
    assert refused["status"] == "failed"
    assert "policy strict" in refused["error"] and "'limit'" in refused["error"] and "50" in refused["error"]
    assert (rows.drop(index=[("strict", 50)])["status"] == "ok").all()
    assert not (tmp_path / "s" / "runs" / refused["run_id"]).exists()  # never simulated
    assert "nothing was simulated" in (tmp_path / "s" / "failed" / f"{refused['run_id']}.txt").read_text()


def test_a_value_every_cell_refuses_stops_the_sweep_before_anything_is_written(tmp_path):
    lax = plugin(tmp_path, "lax.py", LIMITED.format(name="lax", top=1000))
    with pytest.raises(SweepError, match="policy lax: setting 'limit'"):
        build_grid([TINY], [str(lax), "fifo"], [0], parse_sets(["limit=5,-1"]))
    with pytest.raises(SweepError, match="quantum"):
        build_grid([TINY], ["fifo", "srtf"], [0], parse_sets(["quantum=60,-5"]))
    done = CliRunner().invoke(app, ["sweep", "--trace", TINY, "--policy", f"{lax},fifo", "--set", "limit=5,-1",
                                    "--out", str(tmp_path / "s"), "-q"])
    assert done.exit_code == 2 and "setting 'limit'" in done.stderr, done.output
    assert not (tmp_path / "s").exists()


def test_the_cli_exits_1_naming_how_many_failed_even_when_quiet(tmp_path):
    raises = plugin(tmp_path, "raises.py", RAISES)
    done = CliRunner().invoke(app, ["sweep", "--trace", TINY, "--policy", f"fifo,{raises},sjf", "--workers", "2",
                                    "--out", str(tmp_path / "s"), "-q"])
    assert done.exit_code == 1, done.output
    said = " ".join(done.stderr.split())
    assert "error: 1 of 3 run(s) failed" in said and "raises" in said and "runs.csv" in said
    assert "Traceback" not in done.output


def test_json_is_one_document_listing_the_failed_runs_with_their_errors(tmp_path):
    raises = plugin(tmp_path, "raises.py", RAISES)
    done = subprocess.run([sys.executable, "-m", "simcluster.cli", "sweep", "--trace", TINY, "--policy",
                           f"fifo,{raises}", "--workers", "1", "--out", str(tmp_path / "s"), "--json"],
                          env=ENV, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)  # the whole of stdout: one document
    assert found["failed"] == 1 and found["runs"] == 2
    [failed] = found["failed_runs"]
    assert "raises" in failed["run_id"] and "this policy always fails" in failed["error"]
    assert "1 of 2 run(s) failed" in done.stderr and "Traceback" not in done.stderr


# --- interrupts -------------------------------------------------------------------------------------------

@pytest.mark.skipif(not (hasattr(os, "killpg") and Path("/proc").is_dir()),
                    reason="needs POSIX process groups (a terminal's Ctrl-C) and /proc to find the workers")
@pytest.mark.parametrize("ctrl_c", ["terminal", "terminal, pressed thrice", "kill"])
def test_ctrl_c_ends_a_sweep_in_words_with_130_and_leaves_nothing_half_written(tmp_path, ctrl_c):
    """A terminal's Ctrl-C reaches every process of the group — the sweep, the busy worker and the idle one —
    where ``kill -INT`` reaches the sweep alone; pressed again while the sweep ends, it is held off.  Either way
    the sweep says what finished and where."""
    slow = plugin(tmp_path, "slow.py", SLOW)
    out = tmp_path / "sweep"
    sweep = subprocess.Popen([sys.executable, "-m", "simcluster.cli", "sweep", "--trace", TINY, "--policy",
                              f"fifo,sjf,{slow}", "--workers", "2", "--split-vcs", "never", "--out", str(out)],
                             cwd=tmp_path, env=ENV, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)  # its own group, as a terminal's foreground job
    try:
        deadline = time.monotonic() + 120
        while not ((tmp_path / "slow-started").exists() and len(list(out.glob("runs/*/summary.json"))) == 2):
            assert sweep.poll() is None, sweep.communicate()
            assert time.monotonic() < deadline, "the sweep never got that far"
            time.sleep(0.05)
        children = descendants(sweep.pid)
        if ctrl_c == "kill":
            sweep.send_signal(signal.SIGINT)
        for _ in range(3 if "thrice" in ctrl_c else 1 if ctrl_c == "terminal" else 0):
            os.killpg(sweep.pid, signal.SIGINT)
            time.sleep(0.02)
        _, stderr = sweep.communicate(timeout=60)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
    said = " ".join(stderr.split())
    assert sweep.returncode == 130, stderr
    assert f"interrupted (Ctrl-C): finished runs are kept in {out}" in said and "2 of 3 finished" in said, said
    for sign in ("Traceback", "Process ", "Errno", "KeyboardInterrupt"):
        assert sign not in stderr, stderr
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in children if alive(pid)]  # workers, fork server, resource tracker
    half = [p for p in out.rglob(".*") if p.name != ".simcluster.json"]
    assert half == [], half
    finished = sorted(p.name for p in (out / "runs").iterdir())
    assert sorted(read_runs(out / "runs.csv")["run_id"]) == finished and len(finished) == 2


# --- the pool --------------------------------------------------------------------------------------------

def test_a_pool_worker_ignores_ctrl_c_which_is_the_sweeps_to_handle():
    pool = LocalBackend(1)
    try:
        handle = pool.submit(signal.getsignal, signal.SIGINT)
        assert pool.result(handle) == signal.SIG_IGN
    finally:
        pool.close(cancel=False)


def test_a_cancelled_pool_leaves_no_worker_and_no_thread_for_the_interpreters_exit_to_wake():
    """The pool's manager thread closes its wake-up pipe as it ends, and the interpreter's exit writes to that
    pipe unlocked: a thread still ending when ``close`` returns raced the exit (``Bad file descriptor``).  Here
    the thread ends late, as on a loaded machine, and ``close`` still returns only after it."""
    pool = LocalBackend(2)
    handles = [pool.submit(time.sleep, 60) for _ in range(3)]
    pool.wait(handles, timeout=0.2)
    workers = list(pool._pool._processes.values())
    manager = pool._pool._executor_manager_thread
    assert workers and all(w.is_alive() for w in workers) and manager.is_alive()
    ending = manager.join_executor_internals

    def late() -> None:
        time.sleep(1.0)
        ending()

    manager.join_executor_internals = late
    started = time.monotonic()
    pool.close(cancel=True)
    assert time.monotonic() - started < 15  # the calls in flight were ended, not awaited
    assert not any(w.is_alive() for w in workers)
    assert not manager.is_alive()
