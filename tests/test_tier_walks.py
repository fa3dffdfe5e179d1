"""Tiers in the walks of the preemptive policies (srtf, tiresias, tiresias-gittins; docs/tiers.md, "Priorities and
evictions"): where the trace gives tiers, running and waiting jobs are walked by tier first, so a waiting job
preempts only jobs of its tier (by the policy's own key) or of a lower one, and a higher tier goes first."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.policies import quota
from simcluster.tiers.eviction import tier_rank

WALKING = ("srtf", "tiresias", "tiresias-gittins")
COLUMNS = ["job_id", "gpu_num", "submit_time", "duration", "priority"]


def run(policy: str, rows: list[tuple], nodes: int = 1, columns: list[str] = COLUMNS, **settings) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=columns)
    result = simulate(load_trace(frame, nodes=nodes), SimConfig(policy=policy, **settings))
    return result.jobs.set_index("job_id")


# --- srtf, worked by hand (checkpoint overhead 40 s on a preemption) --------------------------------------------
def test_srtf_a_shorter_lower_tier_job_waits_for_a_higher_tier_one():
    jobs = run("srtf", [("high", 8, 0, 1000, 5), ("low", 8, 100, 50, 0)])
    assert (jobs.loc["high", "start_time"], jobs.loc["high", "end_time"], jobs.loc["high", "preemptions"]) == (0, 1000, 0)
    assert (jobs.loc["low", "start_time"], jobs.loc["low", "end_time"]) == (1000, 1050)


def test_srtf_a_higher_tier_job_preempts_a_lower_tier_one_however_short():
    jobs = run("srtf", [("low", 8, 0, 1000, 0), ("high", 8, 100, 5000, 5)])
    assert (jobs.loc["high", "start_time"], jobs.loc["high", "end_time"]) == (100, 5100)
    # low ran 100 s: 900 s left and the 40 s overhead, from 5100
    assert (jobs.loc["low", "end_time"], jobs.loc["low", "preemptions"]) == (5100 + 900 + 40, 1)


def test_srtf_within_a_tier_the_shorter_remaining_time_preempts_as_before():
    jobs = run("srtf", [("long", 8, 0, 1000, 5), ("short", 8, 100, 50, 5)])
    assert (jobs.loc["short", "start_time"], jobs.loc["short", "end_time"]) == (100, 150)
    assert (jobs.loc["long", "end_time"], jobs.loc["long", "preemptions"]) == (150 + 900 + 40, 1)


def test_srtf_a_guaranteed_job_preempts_a_spot_job_of_its_priority():
    columns = ["job_id", "gpu_num", "submit_time", "duration", "preemptible"]
    jobs = run("srtf", [("spot", 8, 0, 1000, True), ("prod", 8, 100, 5000, False)], columns=columns)
    assert jobs.loc["prod", "start_time"] == 100 and jobs.loc["spot", "preemptions"] == 1
    jobs = run("srtf", [("prod", 8, 0, 1000, False), ("spot", 8, 100, 50, True)], columns=columns)
    assert jobs.loc["spot", "start_time"] == 1000 and jobs.loc["prod", "preemptions"] == 0


def test_srtf_sharing_walks_by_tier_too():
    frame = pd.DataFrame([("high", 8, 0, 1000, 5), ("low", 8, 100, 50, 0)], columns=COLUMNS)
    jobs = simulate(load_trace(frame, nodes=1), SimConfig(policy="srtf-ars", colocation="lucid")).jobs
    jobs = jobs.set_index("job_id")
    assert jobs.loc["high", "preemptions"] == 0 and jobs.loc["high", "start_time"] == 0


# --- tiresias and 2D-Gittins, worked by hand (decisions on 60 s boundaries) ---------------------------------------
@pytest.mark.parametrize("policy", ["tiresias", "tiresias-gittins"])
def test_tiresias_a_higher_tier_job_preempts_at_the_next_boundary(policy):
    jobs = run(policy, [("low", 8, 0, 1000, 0), ("high", 8, 100, 5000, 5)])
    assert (jobs.loc["high", "start_time"], jobs.loc["high", "end_time"]) == (120, 5120)
    # low ran 120 s (880 left), restarts at the boundary 5160 and pays the 40 s overhead
    assert (jobs.loc["low", "end_time"], jobs.loc["low", "preemptions"]) == (5160 + 880 + 40, 1)


@pytest.mark.parametrize("policy", ["tiresias", "tiresias-gittins"])
def test_tiresias_a_lower_tier_job_with_less_service_waits(policy):
    # long crosses the 18,000 GPU-s threshold at 2,250 s: in the same tier the newcomer (queue 0) preempts it at 3000
    same = run(policy, [("long", 8, 0, 10_000, 5), ("new", 8, 3000, 100, 5)])
    assert same.loc["new", "start_time"] == 3000 and same.loc["long", "preemptions"] == 1
    tiered = run(policy, [("long", 8, 0, 10_000, 5), ("new", 8, 3000, 100, 0)])
    assert tiered.loc["long", "preemptions"] == 0 and tiered.loc["long", "end_time"] == 10_000
    assert tiered.loc["new", "start_time"] == 10_020


# --- properties ---------------------------------------------------------------------------------------------------
def random_rows(rng: random.Random, n: int, tiers: bool, crowded: bool = False) -> list[tuple]:
    """``n`` random jobs; ``crowded``: small ones arriving fast, so that over 64 run at once on 16 nodes (srtf's
    kept order is then walked by jumps)."""
    sizes, span = ([1, 1, 2], 5000) if crowded else ([1, 1, 1, 2, 4, 8], 20_000)
    rows = []
    for i in range(n):
        row = (f"j{i}", rng.choice(sizes), rng.randrange(0, span), rng.randrange(30, 8000))
        rows.append((*row, rng.choice([0, 1, 2]), rng.random() < 0.3) if tiers else row)
    return rows


@pytest.mark.parametrize(("policy", "settings"), [*((p, {}) for p in WALKING), ("tiresias", {"promote_knob": 2.0}),
                                                  ("tiresias-gittins", {"promote_knob": 2.0})])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_job_is_ever_preempted_for_a_lower_tier_job(policy, settings, seed, monkeypatch):
    """At every walk's decision each job it preempts could not have kept its GPUs beside the jobs of its tier or a
    higher one that hold GPUs after it (those kept running and those it starts): a lower tier only takes what the
    victim could not use.  On 3 nodes, and on 16 crowded ones (:func:`random_rows`)."""
    checked = []
    carry_out = quota._carry_out

    def checking(ctx, to_preempt, to_start):
        vc = ctx.vc
        holding = [j for j in vc.running if j not in set(to_preempt)] + list(to_start)
        for victim in to_preempt:
            rank = tier_rank(victim)
            beside = sum(j.gpu_num for j in holding if tier_rank(j) <= rank)
            assert beside + victim.gpu_num > vc.total_gpus, (victim.job_id, rank, beside)
            checked.append(any(tier_rank(j) < rank for j in holding))
        return carry_out(ctx, to_preempt, to_start)

    monkeypatch.setattr(quota, "_carry_out", checking)
    rng = random.Random(seed)
    columns = [*COLUMNS, "preemptible"]
    for nodes, n, crowded in ((3, 60, False), (16, 600, True)):
        jobs = run(policy, random_rows(rng, n, True, crowded), nodes=nodes, columns=columns, **settings)
        assert jobs["end_time"].notna().all()
    assert any(checked)  # (the traces do preempt jobs for higher tiers)


@pytest.mark.parametrize("policy", WALKING)
def test_one_tier_for_every_job_decides_as_no_tiers(policy):
    """A priority column that gives every job the same tier keys every job by tier first and changes nothing (on a
    crowded cluster too: :func:`random_rows`)."""
    for rows, nodes in ((random_rows(random.Random(7), 200, False), 6),
                        (random_rows(random.Random(8), 600, False, crowded=True), 16)):
        plain = run(policy, rows, nodes=nodes, columns=COLUMNS[:4])
        tiered = run(policy, [(*row, 3) for row in rows], nodes=nodes)
        assert plain["preemptions"].sum() > 0
        times = ["start_time", "end_time", "preemptions"]
        pd.testing.assert_frame_equal(plain[times], tiered[times])
