"""Slurm's periodic priority recalculation costs one fair-share factor per user, not per job, and gives the same
floats (issue 55): the queue's order, and so every decision, is the one per-job recomputation gives."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.policies.slurm import Slurm

DAY = 86400.0


def slurm_with_usage(seed: int, favor_small: bool, config_changes: dict) -> tuple[Slurm, list[Job]]:
    """A Slurm whose users have run jobs (decayed usage of their own), and the jobs now waiting."""
    rng = random.Random(seed)
    config = SimConfig(policy="slurm", policy_settings={"priority_favor_small": favor_small, **config_changes})
    policy = Slurm(config)
    policy._cluster_gpus = 64
    jobs = [Job(index=i, job_id=str(i), vc="a", gpu_num=rng.choice((1, 2, 4, 8, 16, 64)),
                submit_time=rng.uniform(0, 40 * DAY), duration=100, user=f"u{rng.randrange(5)}") for i in range(80)]
    events = [(job.submit_time, 0, job) for job in jobs]  # (time, GPUs taken or given back; 0: submitted, job)
    for job in rng.sample(jobs, 40):  # these ran for a while: their users' usage grows, then decays
        start = job.submit_time + rng.uniform(0, DAY)
        events += [(start, job.gpu_num, job), (start + rng.uniform(0, DAY), -job.gpu_num, job)]
    for when, gpus, job in sorted(events, key=lambda e: e[:2]):
        if gpus:
            policy._use(job, gpus, when)
        else:
            policy.on_submit(job, when)
    return policy, jobs


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), favor_small=st.booleans(), later=st.floats(0, 30 * DAY),
       changes=st.sampled_from([{}, {"priority_max_age": 3 * DAY}, {"priority_decay_half_life": 0.0},
                                {"priority_weight_age": 0.0, "priority_weight_job_size": 0.0}]))
def test_recalculated_priorities_are_the_floats_each_job_gets_on_its_own(seed, favor_small, later, changes):
    """(With a 3-day max age many jobs' age factor is capped at 1.)"""
    policy, jobs = slurm_with_usage(seed, favor_small, changes)
    now = 41 * DAY + later
    apart = [policy.job_priority(job, now) for job in jobs]
    policy.recalculate(jobs, now)
    assert [policy.priority[job] for job in jobs] == apart
    assert len(set(apart)) > 1


def test_a_recalculation_settles_each_users_usage_once():
    policy, jobs = slurm_with_usage(3, False, {})
    settled = []
    fair_share = policy.fair_share
    policy.fair_share = lambda user, now: (settled.append(user), fair_share(user, now))[1]
    policy.recalculate(jobs, 50 * DAY)
    assert sorted(settled) == sorted({job.user for job in jobs})
