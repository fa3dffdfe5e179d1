"""srtf's kept order of running jobs (issue 55, session 7): :meth:`RunningOrder.first_over` and
:meth:`RunningOrder.locate` under srtf's key maps, with their steps inlined, held to a plain walk over the jobs
in order, on orders of one block and of many, with keys that float rounding makes near-ties of."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.job import Job
from simcluster.policies.running_order import Minus, RunningOrder, TierMinus

NEAR = [0.1, 0.2, 0.30000000000000004, 0.3, 1e-9, 100.0, 100.00000000000001, 1e6]  # (sums that round)


def built(keys: list[float], gpus: list[int], tiers: list[int] | None = None) -> tuple[RunningOrder, list]:
    """An order of jobs with these stored keys (with tiers: (tier, key)), and its entries sorted plainly."""
    order = RunningOrder()
    entries = []
    for index, (key, g) in enumerate(zip(keys, gpus)):
        job = Job(index=index, job_id=str(index), vc="v", gpu_num=g, submit_time=0, duration=1)
        stored = ((tiers[index],), key) if tiers is not None else key
        order.add(stored, job)
        entries.append((stored, index, job))
    order.check()
    return order, sorted(entries)


def plain_first_over(entries: list, first: int, budget: float) -> tuple[int | None, int]:
    held = 0
    for n in range(first, len(entries)):
        if held + entries[n][2].gpu_num > budget:
            return n, held
        held += entries[n][2].gpu_num
    return None, held


def flat(order: RunningOrder, at) -> int | None:
    """A position as the count of jobs before it."""
    if at is None:
        return None
    b, i = at
    return sum(len(block) for block in order._blocks[:b]) + i


def position(order: RunningOrder, n: int):
    """The position of the ``n``-th job (the end for ``len(order)``)."""
    at = order.start
    for _ in range(n):
        at = order.following(at)
    return at


keys_and_gpus = st.lists(st.tuples(st.one_of(st.sampled_from(NEAR), st.floats(0, 1e4)), st.integers(1, 16)),
                         max_size=1_200)


@settings(max_examples=150, deadline=None)
@given(jobs=keys_and_gpus, first=st.integers(0, 1_300), budget=st.one_of(st.integers(0, 400), st.floats(0, 5e3)))
def test_first_over_is_the_plain_walk(jobs, first, budget):
    order, entries = built([k for k, _ in jobs], [g for _, g in jobs])
    first = min(first, len(entries))
    over, fitted = order.first_over(position(order, first), budget)
    assert (flat(order, over), fitted) == plain_first_over(entries, first, budget)
    if over is not None:
        assert order.job_at(over) is entries[flat(order, over)][2]


@settings(max_examples=150, deadline=None)
@given(jobs=keys_and_gpus, offset=st.one_of(st.sampled_from(NEAR), st.floats(0, 1e4)),
       probe=st.one_of(st.sampled_from(NEAR), st.floats(-1e4, 1e4)), after_ties=st.booleans(),
       tiered=st.booleans(), tier=st.integers(0, 2), tie=st.one_of(st.none(), st.integers(0, 1_200)))
def test_locate_under_srtf_key_maps_is_the_plain_scan(jobs, offset, probe, after_ties, tiered, tier, tie):
    if tie is not None and jobs:
        probe = jobs[tie % len(jobs)][0] - offset  # (a running job's remaining time exactly: ties and roundings)
    tiers = [index % 3 for index in range(len(jobs))] if tiered else None
    order, entries = built([k for k, _ in jobs], [g for _, g in jobs], tiers)
    key, probed = (TierMinus(offset), ((tier,), probe)) if tiered else (Minus(offset), probe)
    plain = next((n for n, (stored, _, _) in enumerate(entries)
                  if (key(stored) > probed if after_ties else key(stored) >= probed)), len(entries))
    assert flat(order, order.locate(probed, key, after_ties)) == plain
