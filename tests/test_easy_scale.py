"""EASY's backfill over an index of the waiting jobs decides exactly as the walk over every waiting job (issue 55).

The index (:class:`~simcluster.policies.easy_backfill.WaitingIndex`) files each VC's waiting jobs by GPU count in
queue order, each count's blocks with their shortest expected duration; a pass asks it for the next job it would
try instead of stepping over every job.  Here the index is held to a sorted list, and whole runs with it to runs
of the plain walk (:meth:`EasyBackfill.walk_queue`) on random traces: estimates exact and not, node failures,
borrowing, several VCs, tiers.
"""

from __future__ import annotations

import random
from unittest.mock import patch

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.policies.easy_backfill import REFILE_AFTER, SHORT_QUEUE, EasyBackfill, WaitingIndex
from simcluster.policies.fifo_backfill import FifoBackfill
from simcluster.policies.slurm import Slurm
from tests.test_incremental import outcome

# --- the index against a sorted list ---------------------------------------------------------------------------

steps = st.lists(st.tuples(st.sampled_from(["add", "add", "add", "remove"]), st.integers(0, 199),
                           st.integers(0, 30), st.integers(0, 50)), min_size=1, max_size=400)
asks = st.lists(st.tuples(st.integers(-1, 199), st.integers(0, 20), st.integers(0, 20), st.integers(0, 60)),
                min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(steps=steps, asks=asks)
def test_the_waiting_index_answers_as_a_scan_of_a_sorted_list(steps, asks):
    with patch("simcluster.policies.easy_backfill._BLOCK", 2):  # blocks of 2 to 4: many blocks, splits, a deep tree
        check_index_against_a_sorted_list(steps, asks)


def check_index_against_a_sorted_list(steps, asks) -> None:
    jobs = [Job(index=i, job_id=str(i), vc="v", gpu_num=(1, 2, 4, 8, 3)[i % 5], submit_time=0, duration=1)
            for i in range(200)]
    index, model = WaitingIndex(), {}  # model: job → (key, duration)
    for op, i, key, duration in steps:
        job = jobs[i]
        if op == "add" and job not in model:
            index.add(job, key, float(duration))
            model[job] = (key, float(duration))
        elif op == "remove" and job in model:
            index.remove(job)
            del model[job]
    assert len(index) == len(model)
    ordered = sorted((key, job.index, job) for job, (key, _) in model.items())
    for at, free, spare, now in asks:
        after = ordered[at] if 0 <= at < len(ordered) else None  # a filed entry, or from the start
        later = ordered[ordered.index(after) + 1:] if after is not None else ordered
        assert index.next_job(after) == (later[0] if later else None)
        shadow = now + 20.0
        expected = {}
        for entry in later:  # each GPU count's first job that fits free and fits spare or ends by the shadow
            gpus, duration = entry[2].gpu_num, model[entry[2]][1]
            if gpus <= free and (gpus <= spare or now + duration <= shadow) and gpus not in expected:
                expected[gpus] = entry
        assert index.candidates(after, free, spare, float(now), shadow) == expected
        for gpus, entry in expected.items():
            assert index.candidate(gpus, after, spare, float(now), shadow) == entry


def test_a_job_filed_again_under_a_new_key_moves_in_the_order():
    jobs = [Job(index=i, job_id=str(i), vc="v", gpu_num=1, submit_time=0, duration=1) for i in range(3)]
    index = WaitingIndex()
    index.load([(job, 10 * i, 5.0) for i, job in enumerate(jobs)])
    index.remove(jobs[0])
    index.add(jobs[0], 25, 5.0)
    order, after = [], None
    while (after := index.next_job(after)) is not None:
        order.append(after[2].job_id)
    assert order == ["1", "2", "0"]


# --- whole runs: the index against the plain walk ---------------------------------------------------------------

class PlainEasy(EasyBackfill):
    """EASY walking every waiting job at every pass."""

    def walk_index(self, vc, ctx, index):
        self.walk_queue(vc, ctx)


class PlainSlurm(Slurm):
    """Slurm walking every waiting job, and each job's priority computed on its own."""

    def walk_index(self, vc, ctx, index):
        self.walk_queue(vc, ctx)

    def recalculate(self, jobs, now):
        for job in jobs:
            self.priority[job] = self.job_priority(job, now)


def random_jobs(seed: int, n: int, vcs: str = "ab") -> list[Job]:
    rng = random.Random(seed)
    return [Job(index=i, job_id=str(i), vc=rng.choice(vcs), gpu_num=rng.choice((1, 1, 1, 2, 3, 4, 8, 8, 12, 16, 24)),
                submit_time=rng.randrange(0, 15_000) // 7 * 7, duration=rng.randrange(1, 40_000) + rng.random(),
                user=f"u{rng.randrange(4)}") for i in range(n)]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(["easy-backfill", "slurm"]),
       estimator=st.sampled_from(["oracle", "history"]), mtbf=st.sampled_from([0.0, 40_000.0]),
       borrow=st.booleans())
def test_easy_and_slurm_decide_with_the_index_as_with_the_walk(seed, policy, estimator, mtbf, borrow):
    """Every queue indexed from its first pass on, in blocks of 2 to 4 (the runs' queues are a few dozen jobs)."""
    config = SimConfig(policy=policy, estimator=estimator, node_mtbf=mtbf, node_repair=900, on_no_progress="abandon",
                       until=300_000.0, policy_settings={"borrow_idle": borrow})
    walk_index, indexed_passes = EasyBackfill.walk_index, []

    def noted(self, vc, ctx, index):
        indexed_passes.append(len(index))
        walk_index(self, vc, ctx, index)

    with patch("simcluster.policies.easy_backfill.SHORT_QUEUE", 0), \
            patch("simcluster.policies.easy_backfill.REFILE_AFTER", 0), \
            patch("simcluster.policies.easy_backfill._BLOCK", 2), patch.object(EasyBackfill, "walk_index", noted), \
            patch.object(Slurm, "indexes_queue", True):  # (Slurm walks by default: its queue is re-sorted so often)
        indexed = outcome(random_jobs(seed, 200), config)
    assert max(indexed_passes) > 8  # (many blocks)
    plain = (PlainEasy if policy == "easy-backfill" else PlainSlurm)(config)
    assert indexed == outcome(random_jobs(seed, 200), config, policy=plain)


def test_a_long_queue_is_indexed_once_plain_walks_have_stepped_over_it_a_few_times_and_stays_indexed():
    passes = []  # ("walk" or "index", waiting jobs, idle GPUs)
    walk_queue, walk_index = EasyBackfill.walk_queue, EasyBackfill.walk_index

    def noted_walk(self, vc, ctx):
        passes.append(("walk", len(vc.pending), vc.free_gpus))
        walk_queue(self, vc, ctx)

    def noted_index(self, vc, ctx, index):
        passes.append(("index", len(index), vc.free_gpus))
        walk_index(self, vc, ctx, index)

    with patch.object(EasyBackfill, "walk_queue", noted_walk), patch.object(EasyBackfill, "walk_index", noted_index):
        outcome(random_jobs(3, 600, vcs="a"), SimConfig(policy="easy-backfill"))
    first = passes.index(next(p for p in passes if p[0] == "index"))
    stepped = sum(waiting for how, waiting, free in passes[:first] if free)  # (a pass with no idle GPU walks none)
    assert stepped >= REFILE_AFTER * passes[first][1] > 0
    assert all(how == "index" for how, waiting, _ in passes[first:] if waiting > SHORT_QUEUE)
    assert all(waiting > SHORT_QUEUE for how, waiting, _ in passes if how == "index")


def test_a_queue_ranked_by_tiers_is_walked_not_indexed():
    """A tier's priority orders the queue before the policy's key: the index (in the policy's order alone) would
    try jobs in another order, so every pass walks the queue, as before the index."""
    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame({"job_id": [f"j{i}" for i in range(n)], "gpu_num": 2 ** rng.integers(0, 5, n),
                          "submit_time": np.sort(rng.integers(0, 20_000, n)), "duration": rng.integers(10, 3000, n),
                          "preemptible": rng.random(n) < 0.4, "priority": rng.integers(0, 3, n)})
    trace = load_trace(frame, nodes=8)
    for name in ("easy-backfill", "slurm"):
        with patch("simcluster.policies.easy_backfill.SHORT_QUEUE", 0), \
                patch("simcluster.policies.easy_backfill.REFILE_AFTER", 0), \
                patch.object(EasyBackfill, "walk_index", side_effect=AssertionError("indexed a ranked queue")):
            result = simulate(trace, SimConfig(policy=name, checkpoint_interval=600))
        assert result.jobs["end_time"].notna().all() and "evictions" in result.summary["tiers"], name


def test_fifo_backfill_sends_borrowers_through_send():
    sent = []
    with patch.object(FifoBackfill, "send", lambda self, ctx, job, to: (sent.append(to), ctx.move(job, to))):
        outcome(random_jobs(5, 150), SimConfig(policy="fifo-backfill", policy_settings={"borrow_idle": True}))
    assert sent and set(sent) <= {"a", "b"}
