"""The baselines as batch schedulers run them: fifo-backfill, easy-backfill and slurm."""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import replace
from unittest import mock

from conftest import make_trace
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.policies.easy_backfill import EasyBackfill
from simcluster.policies.fifo_backfill import FifoBackfill
from simcluster.policies.slurm import DecayingUsage, Slurm
from simcluster.scope import unused_settings


def schedule(rows, vc_nodes, policy, **cfg):
    result = simulate(make_trace(rows, vc_nodes), SimConfig(policy=policy, **cfg))
    jobs = result.jobs.set_index("job_id")
    return [(jobs.at[f"j{i}", "start_time"], jobs.at[f"j{i}", "end_time"]) for i in range(len(rows))], result


@contextmanager
def policy_settings(cls, **changes):
    """Runs of ``cls`` (and its subclasses) with these settings changed (until --set reaches policies)."""
    original = cls.__init__

    def init(self, config=None):
        original(self, config)
        self.settings = replace(self.settings, **changes)

    with mock.patch.object(cls, "__init__", init):
        yield


def test_fifo_backfill_starts_a_small_job_behind_a_head_that_does_not_fit():
    # one 8-GPU node: j1 (8 GPUs) waits for j0; j2 (1 GPU) fits beside j0 and starts at once (fifo: at 150)
    rows = [("a", 4, 0, 100), ("a", 8, 1, 50), ("a", 1, 2, 10)]
    assert schedule(rows, {"a": 1}, "fifo-backfill")[0] == [(0, 100), (100, 150), (2, 12)]
    assert schedule(rows, {"a": 1}, "fifo")[0] == [(0, 100), (100, 150), (150, 160)]


def test_easy_backfill_starts_only_jobs_that_do_not_delay_the_heads_reservation():
    # j1 (8 GPUs) is the head, reserved for t=100 when j0 ends, with no GPUs to spare then: j2 would still run
    # then (ends at 202) and waits; j3 ends at 53 and starts at once
    rows = [("a", 4, 0, 100), ("a", 8, 1, 50), ("a", 2, 2, 200), ("a", 2, 3, 50)]
    assert schedule(rows, {"a": 1}, "easy-backfill")[0] == [(0, 100), (100, 150), (150, 350), (3, 53)]
    # first-fit backfill starts j2 at once, and the head waits for it
    assert schedule(rows, {"a": 1}, "fifo-backfill")[0] == [(0, 100), (202, 252), (2, 202), (3, 53)]


def test_easy_backfill_lets_a_long_job_use_the_gpus_the_head_leaves_over():
    # two nodes: j2 (10 GPUs) is reserved for t=100 with 12 free then, 2 to spare; j3 (2 GPUs, long) takes
    # them at once; j4 (2 GPUs, long) finds none left and waits for the head to finish
    rows = [("a", 8, 0, 100), ("a", 4, 0, 1000), ("a", 10, 1, 50), ("a", 2, 2, 5000), ("a", 2, 3, 5000)]
    times, _ = schedule(rows, {"a": 2}, "easy-backfill")
    assert [t[0] for t in times] == [0, 0, 100, 2, 150]


def test_easy_backfill_reads_its_estimator():
    assert unused_settings(SimConfig(policy="easy-backfill", estimator="history")) == []
    assert unused_settings(SimConfig(policy="slurm", estimator="history")) == []
    [unused] = unused_settings(SimConfig(policy="fifo-backfill", estimator="history"))
    assert unused.name == "estimator" and "easy-backfill" in unused.readers


def test_easy_backfill_reports_its_estimates():
    _, result = schedule([("a", 8, 0, 100), ("a", 8, 0, 50)], {"a": 1}, "easy-backfill")
    assert result.summary["estimator"] == "oracle" and result.summary["estimate_quality"]["mae"] == 0


jobs_on_one_node = st.lists(st.tuples(st.integers(1, 8), st.integers(0, 50), st.integers(1, 100)),
                            min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(jobs_on_one_node)
def test_with_exact_estimates_a_head_starts_by_its_first_reservation(jobs):
    """EASY's promise: backfilled jobs never delay the head (one node: placement is exactly a GPU count)."""
    first: dict[str, float] = {}
    original = EasyBackfill.reserve

    def recording(self, head, vc, now):
        shadow, spare = original(self, head, vc, now)
        first.setdefault(head.job_id, shadow)
        return shadow, spare

    rows = [("a", gpus, submit, duration) for gpus, submit, duration in sorted(jobs, key=lambda j: j[1])]
    with mock.patch.object(EasyBackfill, "reserve", recording):
        result = simulate(make_trace(rows, {"a": 1}), SimConfig(policy="easy-backfill"))
    started = result.jobs.set_index("job_id")["start_time"]
    for job_id, shadow in first.items():
        assert started[job_id] <= shadow, (job_id, started[job_id], shadow)


@settings(max_examples=60, deadline=None)
@given(jobs_on_one_node)
def test_fifo_backfill_leaves_no_waiting_job_that_would_fit(jobs):
    original = FifoBackfill.schedule

    def checked(self, vc, ctx):
        original(self, vc, ctx)
        assert all(job.gpu_num > vc.free_gpus for job in vc.pending)

    rows = [("a", gpus, submit, duration) for gpus, submit, duration in sorted(jobs, key=lambda j: j[1])]
    with mock.patch.object(FifoBackfill, "schedule", checked):
        simulate(make_trace(rows, {"a": 1}), SimConfig(policy="fifo-backfill"))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ab"), st.integers(1, 16), st.integers(0, 3000), st.integers(1, 2000),
                          st.sampled_from(["u1", "u2", "u3"])), min_size=1, max_size=30))
def test_slurm_with_every_weight_zero_is_easy_backfill(jobs):
    rows = sorted(jobs, key=lambda j: j[2])
    trace = make_trace([r[:4] for r in rows], {"a": 2, "b": 2})
    trace.frame["user"] = [r[4] for r in rows]
    easy = simulate(trace, SimConfig(policy="easy-backfill")).jobs
    with policy_settings(Slurm, priority_weight_age=0.0, priority_weight_fairshare=0.0, priority_weight_job_size=0.0):
        slurm = simulate(trace, SimConfig(policy="slurm")).jobs
    assert slurm["start_time"].tolist() == easy["start_time"].tolist()


def test_slurm_puts_a_light_users_job_before_a_heavy_users_older_one():
    # u1 holds the node for 1000 s; at its end u2's job (no usage: fair share 1) goes before u1's older one
    trace = make_trace([("a", 8, 0, 1000), ("a", 8, 10, 100), ("a", 8, 20, 100)], {"a": 1})
    trace.frame["user"] = ["u1", "u1", "u2"]
    starts = simulate(trace, SimConfig(policy="slurm")).jobs["start_time"].tolist()
    assert starts == [0, 1100, 1000]
    assert simulate(trace, SimConfig(policy="easy-backfill")).jobs["start_time"].tolist() == [0, 1000, 1100]


def test_slurm_ages_a_waiting_job_up_to_its_max_age():
    policy = Slurm()
    policy._cluster_gpus = 8
    from simcluster.job import Job

    job = Job(index=0, job_id="j", vc="a", gpu_num=8, submit_time=0, duration=1, user="u")
    policy.on_submit(job, 0.0)  # no usage yet: fair share 1
    week, s = 7 * 86400.0, policy.settings
    assert policy.job_priority(job, week) == s.priority_weight_age / 2 + s.priority_weight_fairshare + \
        s.priority_weight_job_size
    assert policy.job_priority(job, 4 * week) == s.priority_weight_age + s.priority_weight_fairshare + \
        s.priority_weight_job_size


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(-8, 8), st.floats(0, 500)), min_size=1, max_size=8),
       st.floats(10, 1000))
def test_decaying_usage_is_the_decayed_integral_of_the_gpus_in_use(changes, half_life):
    usage, now, gpus, segments = DecayingUsage(), 0.0, 0, []
    for delta, wait in changes:
        delta = max(delta, -gpus)  # never below 0 GPUs
        segments.append((now, now + wait, gpus))
        now += wait
        usage.run(now, delta, half_life)
        gpus += delta
    usage.settle(now, half_life)
    # midpoint rule over each segment, fine enough for a 1e-4 relative error
    exact = 0.0
    for begin, end, held in segments:
        steps = 2000
        width = (end - begin) / steps
        exact += sum(held * 2 ** (-(now - (begin + (k + 0.5) * width)) / half_life) * width for k in range(steps))
    assert math.isclose(usage.value, exact, rel_tol=1e-4, abs_tol=1e-6)


def test_a_job_borrows_idle_gpus_of_another_vc_and_keeps_its_own_vc_in_the_results():
    rows = [("a", 8, 0, 100), ("a", 4, 1, 10), ("b", 8, 50, 10)]
    assert schedule(rows, {"a": 1, "b": 1}, "fifo-backfill")[0][1] == (100, 110)
    with policy_settings(FifoBackfill, borrow_idle=True):
        times, result = schedule(rows, {"a": 1, "b": 1}, "fifo-backfill")
    assert times == [(0, 100), (1, 11), (50, 60)]  # b's own job finds its GPUs free again at 50
    assert result.jobs.set_index("job_id").at["j1", "vc"] == "a"


def test_a_borrower_that_cannot_be_placed_there_comes_home_and_starts_there():
    # b has 9 idle GPUs (3 on each node) but no idle node; j4 (9 GPUs) needs one under consolidate: it goes to
    # b, comes home, and starts there when a's nodes free up
    rows = [("b", 5, 0, 500), ("b", 5, 0, 500), ("b", 5, 0, 500), ("a", 16, 0, 100), ("a", 9, 1, 10)]
    with policy_settings(FifoBackfill, borrow_idle=True):
        times, _ = schedule(rows, {"a": 2, "b": 3}, "fifo-backfill")
    assert times[4] == (100, 110)
    with policy_settings(FifoBackfill, borrow_idle=True):
        times, _ = schedule(rows, {"a": 2, "b": 3}, "easy-backfill")
    assert times[4] == (100, 110)


def test_the_baselines_are_listed_with_the_other_policies():
    import json

    from typer.testing import CliRunner

    from simcluster.cli import app

    listed = json.loads(CliRunner().invoke(app, ["policies", "--json"]).stdout)
    assert {"fifo-backfill", "easy-backfill", "slurm"} <= set(listed)
