"""The guard bounds passes as well as simulated time (simcluster/guard.py, issue 54 item 6).

A plug-in that sets a one-minute timer on every pass and never starts anything ran `lucid-sim run` on venus_sept
for more than 20 minutes: the no-progress patience is 10 × the longest job of simulated time, 149 days of
one-minute passes in 15 VCs.  Now 10,000 passes in a row on a VC where nothing runs, nothing changes and a
waiting job fits the idle GPUs end the run within seconds, with the message a stuck plug-in gets.  (Kueue bounds
fruitless retries by count too: waitForPodsReady's requeuingStrategy.backoffLimitCount deactivates a workload
requeued that many times, KEP-1282 and kubernetes-sigs/kueue#1709.)
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import load_trace, simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.guard import IDLE_PASS_LIMIT, PluginFailed

DAY = 86_400.0
POLLS_AND_STARTS_NOTHING = '''
    from simcluster.sdk import Policy


    class Poller(Policy):
        def schedule(self, vc, ctx):
            ctx.wake_at(ctx.now + 60)  # <-
'''
POLLS_AND_STARTS_IN_ORDER = '''
    from simcluster.sdk import Policy, start_in_order_until_blocked


    class Patient(Policy):
        def schedule(self, vc, ctx):
            start_in_order_until_blocked(vc, ctx)
            ctx.wake_at(ctx.now + 60)
'''


def policy_file(tmp_path: Path, body: str) -> tuple[Path, int]:
    """The plug-in's file, and the line marked ``# <-`` (where its timer is set)."""
    text = textwrap.dedent(body).lstrip()
    path = tmp_path / "poller.py"
    path.write_text(text)
    return path, next((i for i, line in enumerate(text.splitlines(), 1) if "# <-" in line), 0)


def month_long_jobs(tmp_path: Path | None = None) -> object:
    """Two 30-day jobs that fit a 2-node VC: the patience in simulated time is 300 days (432,000 passes)."""
    frame = pd.DataFrame({"submit_time": [0, 60], "gpu_num": [8, 16], "duration": [30 * DAY, 30 * DAY]})
    if tmp_path is None:
        return load_trace(frame, nodes=2)
    frame.insert(0, "vc", "a")
    frame.insert(0, "job_id", ["j0", "j1"])
    folder = tmp_path / "trace"
    folder.mkdir()
    frame.to_csv(folder / "cluster_log.csv", index=False)
    (folder / "vc_config.csv").write_text("vc,num\na,2\n")
    return folder


def test_a_plugin_that_polls_for_ever_and_starts_nothing_is_stopped_within_seconds(tmp_path):
    path, line = policy_file(tmp_path, POLLS_AND_STARTS_NOTHING)
    began = time.perf_counter()
    with pytest.raises(PluginFailed) as stopped:
        simulate(month_long_jobs(), SimConfig(policy=f"{path}:Poller"))
    assert time.perf_counter() - began < 10
    message = str(stopped.value)
    assert f"started nothing in {IDLE_PASS_LIMIT:,} passes in a row on VC" in message
    assert "policy Poller" in message and "job 0 (8 GPUs) fitted its 16 idle GPUs" in message
    assert f"(wake_at at {path} line {line})" in message and stopped.value.rule == "no-progress"
    # 10,000 one-minute passes from the first: t = 9,999 × 60, far below the 300 days of patience
    assert f"at t={(IDLE_PASS_LIMIT - 1) * 60:,} s" in message


def test_lucid_sim_run_of_such_a_plugin_exits_non_zero_with_the_message(tmp_path):
    path, line = policy_file(tmp_path, POLLS_AND_STARTS_NOTHING)
    out = tmp_path / "out"
    done = CliRunner().invoke(app, ["run", "--trace", str(month_long_jobs(tmp_path)), "--policy", f"{path}:Poller",
                                    "--out", str(out), "-q"])
    message = " ".join(done.stderr.split())
    assert done.exit_code == 1 and "Traceback" not in done.stderr and not out.exists()
    assert "policy Poller started nothing" in message and f"wake_at at {path} line {line}" in message


def test_a_plugin_that_polls_while_its_jobs_run_is_not_stopped(tmp_path):
    # a month of one-minute passes (86,400 of them) with a job running on the VC: the run moves on, no error
    path, _ = policy_file(tmp_path, POLLS_AND_STARTS_IN_ORDER)
    result = simulate(month_long_jobs(), SimConfig(policy=f"{path}:Patient"))
    assert result.jobs["end_time"].tolist() == [30 * DAY, 60 * DAY]
