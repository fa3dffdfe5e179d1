"""tiresias-gittins' array keys, with fewer numpy calls per pass (issue 55, item 2), held to the plain ways.

:meth:`GittinsIndex.indices` keys every running job of a busy VC at each pass; a VC holds tens to hundreds of
running jobs, so its cost is numpy's per-call cost, and it now makes fewer calls (no ``np.where`` where the last
queue's end already gives every service, a division only where the index is not 0).  Held here bit for bit to the
way before (kept below as :func:`plain_indices`) and to the scalar :meth:`GittinsIndex.index`, and a whole run
taking the array path to the same run keying one job at a time.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_incremental import outcome, random_jobs

from simcluster.config import SimConfig
from simcluster.policies.tiresias_gittins import GittinsIndex, TiresiasGittins


def plain_indices(gittins: GittinsIndex, attained: np.ndarray, quantum_ends: np.ndarray) -> np.ndarray | None:
    """:meth:`GittinsIndex.indices` as it was before (issue 55, session 7)."""
    services, prefix = gittins._services, gittins._prefix
    n = len(services)
    last = np.isinf(quantum_ends)
    alive = np.searchsorted(services, attained, "right")
    with np.errstate(divide="ignore", invalid="ignore"):
        quantum = quantum_ends - attained
        done = np.where(last, n, np.searchsorted(services, attained + quantum, "right"))
        count = done - alive
        served = prefix[done] - prefix[alive] - attained * count + (n - done) * np.where(last, 0.0, quantum)
        index = np.where((count > 0) & ((served > 0) | last), count / served, 0.0)
    if np.any(last & (count > 0) & (served == 0)):
        return None
    return index


def scalar_indices(gittins: GittinsIndex, attained: list[float], ends: list[float]) -> list[float] | None:
    """:meth:`GittinsIndex.index` one job at a time (None where it divides by zero)."""
    try:
        return [gittins.index(a, end - a) for a, end in zip(attained, ends)]
    except ZeroDivisionError:
        return None


THRESHOLDS = [(18_000.0,), (3_600.0, 36_000.0), (1_000.0, 7_000.0, 40_000.0), (0.3,)]
# services: whole GPU-seconds (many exactly on a threshold), fractions, and repeats
SERVICES = st.lists(st.sampled_from([0.3, 1_000.0, 3_600.0, 7_000.0, 18_000.0, 36_000.0, 40_000.0]) | st.integers(1, 200_000)
                    .map(float) | st.floats(0.01, 200_000.0), max_size=60)
ATTAINED = st.lists(st.sampled_from([0.0, 0.0063, 1_000.0, 3_600.0, 18_000.0, 40_000.0]) | st.floats(0.0, 250_000.0)
                    | st.integers(0, 250_000).map(float), min_size=1, max_size=40)


@settings(max_examples=400, deadline=None)
@given(services=SERVICES, later=SERVICES, attained=ATTAINED, thresholds=st.sampled_from(THRESHOLDS))
def test_array_indices_are_the_plain_ways_floats(services, later, attained, thresholds):
    gittins = GittinsIndex()
    for batch in (services, later):  # (two refreshes: the prefix sums extended from the first changed place)
        for service in batch:
            gittins.add(service)
        gittins.refresh()
        ends = np.array([*thresholds, np.inf])
        # each job's queue as the policy finds it (bisect_left: a job exactly on a threshold is still above it)
        queues = [bisect_left(thresholds, a) for a in attained]
        quantum_ends = ends[queues]
        got = gittins.indices(np.array(attained), quantum_ends.copy())
        plain = plain_indices(gittins, np.array(attained), quantum_ends.copy())
        assert (got is None) == (plain is None)
        if got is not None:
            assert got.tobytes() == plain.tobytes()  # (bit for bit: the same floats, the same signs of zero)
            scalar = scalar_indices(gittins, attained, quantum_ends.tolist())
            if scalar is not None:
                assert got.tolist() == scalar


def test_a_quantum_end_rounded_below_a_finished_service_leaves_it_out_as_the_scalar_way_does():
    """0.0063 + (0.3 - 0.0063) is just below 0.3: the job that finished at exactly 0.3 outlived the quantum, as
    :meth:`GittinsIndex.index` counts it (the threshold itself would count it as finished within)."""
    gittins = GittinsIndex()
    for service in (0.3, 1.0):
        gittins.add(service)
    gittins.refresh()
    assert 0.0063 + (0.3 - 0.0063) < 0.3
    got = gittins.indices(np.array([0.0063]), np.array([0.3]))
    assert got.tolist() == [gittins.index(0.0063, 0.3 - 0.0063)] == [0.0]


def test_no_finished_job_yet_gives_index_zero_everywhere():
    gittins = GittinsIndex()
    gittins.refresh()
    got = gittins.indices(np.array([0.0, 5.0, 20_000.0]), np.array([18_000.0, 18_000.0, np.inf]))
    assert got.tolist() == [0.0, 0.0, 0.0]


def test_a_last_queue_job_dividing_by_zero_is_told():
    """A job in the last queue whose remaining service sums to 0 (the scalar way raises): None, so the policy keys
    its VC one job at a time and raises as before."""
    gittins = GittinsIndex()
    gittins.add(10.0)
    gittins.refresh()
    assert gittins.indices(np.array([0.0]), np.array([np.inf])).tolist() == [0.1]
    gittins._prefix = np.array([0.0, 0.0])  # (a distribution whose prefix sum is 0: served is 0 - 0 * 1)
    assert gittins.indices(np.array([0.0]), np.array([np.inf])) is None
    with pytest.raises(ZeroDivisionError):
        gittins.index(0.0, float("inf"))


class ArrayGittins(TiresiasGittins):
    """tiresias-gittins keying running jobs as arrays from 4 on (the test's VCs hold a few dozen)."""

    RANKED_FROM = 4


class ScalarGittins(TiresiasGittins):
    """The same, keying every running job one at a time (:meth:`_split_running`)."""

    RANKED_FROM = 10_000


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 1_000_000), thresholds=st.sampled_from(THRESHOLDS[:3]), mtbf=st.sampled_from([0.0, 50_000.0]))
def test_a_run_keyed_as_arrays_is_the_run_keyed_one_job_at_a_time(seed, thresholds, mtbf):
    config = SimConfig(policy="tiresias-gittins", thresholds=thresholds, node_mtbf=mtbf, node_repair=900,
                       on_no_progress="abandon", until=400_000.0)
    arrays = outcome(random_jobs(seed, 150), config, policy=ArrayGittins(config))
    assert arrays == outcome(random_jobs(seed, 150), config, policy=ScalarGittins(config))


def test_the_array_way_is_taken_and_preempts():
    """Not a test of nothing: on a busy run the array way keys the VCs at many passes, and jobs are preempted."""
    config = SimConfig(policy="tiresias-gittins", until=400_000.0)
    policy = ArrayGittins(config)
    calls = [0]
    ranked = policy._ranked

    def counted(vc, now):
        calls[0] += 1
        return ranked(vc, now)

    policy._ranked = counted
    lives, _ = outcome(random_jobs(3, 200), config, policy=policy)
    assert calls[0] > 100 and sum(life[2] for life in lives) > 10, (calls[0], sum(life[2] for life in lives))
