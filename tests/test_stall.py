"""``ctx.stall``: a running fixed-size job pauses where it is, keeps its GPUs and progress, and ends that much later."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import make_trace

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.sdk import Policy, start_in_order_until_blocked
from simcluster.testing import policy_problems


class StallsAtForty(Policy):
    """FIFO that stalls every running job by each of ``pauses`` seconds at t=40."""

    pauses: tuple[float, ...] = (30.0,)

    def schedule(self, vc, ctx):
        if ctx.now == 40:
            for job in vc.running:
                for seconds in self.pauses:
                    ctx.stall(job, seconds)
        start_in_order_until_blocked(vc, ctx)
        if ctx.now < 40:
            ctx.wake_at(40)


class StallsTwice(StallsAtForty):
    pauses = (10.0, 0.0, 5.0)


class StallsBackwards(StallsAtForty):
    """Stalls a running job for a negative time: a value the context turns down."""

    pauses = (-5.0,)


def run(policy: Any, kernel: str = "fast"):  # (a class: SimConfig takes a policy's name or class)
    # j0 holds the node's 8 GPUs for 100 s of work; j1 waits for them
    trace = make_trace([("a", 8, 0, 100), ("a", 8, 10, 50)], {"a": 1})
    return simulate(trace, SimConfig(policy=policy), kernel=kernel).jobs.set_index("job_id")


@pytest.mark.parametrize("kernel", ["fast", "reference"])
def test_a_stalled_job_keeps_its_gpus_and_progress_and_ends_that_much_later(kernel):
    jobs = run(StallsAtForty, kernel)
    assert jobs.at["j0", "end_time"] == 130  # 40 s of work, 30 s paused, the 60 s left
    assert jobs.at["j0", "overhead"] == 30 and jobs.at["j0", "busy_time"] == 130
    assert jobs.at["j0", "mean_speed"] == 1.0  # the pause is no slower work
    assert jobs.at["j0", "preemptions"] == 0
    assert jobs.at["j1", "start_time"] == 130  # the GPUs stayed with j0 through its pause


def test_stalls_add_up():
    jobs = run(StallsTwice)
    assert jobs.at["j0", "end_time"] == 115 and jobs.at["j0", "overhead"] == 15


def test_a_plug_in_that_stalls_for_a_negative_time_breaks_a_rule_and_nothing_changes():
    report = policy_problems(StallsBackwards)
    assert "bad-value" in report.broken()
    assert "stalled job" in str(report) and "give a number >= 0" in str(report)
