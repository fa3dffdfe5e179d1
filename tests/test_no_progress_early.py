"""A run headed for the no-progress error stops as soon as the outcome is certain (simcluster/engine/reliability.py:
:class:`Hopeless`, :class:`ReadAhead`; docs/failures.md, "A job that never fits is an error").

Issue 55, item 4: a job on every server of a fleet without spares, where some server is always down, used to
replay every fault of the model's century (one scheduler pass per repair: fifo 15 CPU-s, lucid over an hour on
256 nodes) before saying so.  Here: the error, its words, and that it comes after a handful of the model's faults
(counted, never timed); runs that can finish finish as before; the read-ahead agrees with a plain count.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.cluster import Cluster
from simcluster.config import SimConfig
from simcluster.engine import NoProgressError, reliability
from simcluster.engine.reliability import ReadAhead, nth_within, replay_order
from simcluster.faults import RateModel, Repair
from simcluster.faults.models import MAX_HORIZON_S, Outage, Outages
from simcluster.metrics.observer import Observer
from simcluster.traces import JobLog

DAY, YEAR = 86_400.0, 365 * 86_400.0


class Relay:
    """A failure model in which the given servers take turns to be down, each outage overlapping the next, from
    ``since`` to ``until`` (s): one of them is always down.  ``extra``: outages (server, down, up) besides."""

    def __init__(self, servers: tuple[int, ...], since: float = 500.0, until: float = 60 * YEAR,
                 extra: tuple[tuple[int, float, float], ...] = (), length: float = 1.5 * DAY) -> None:
        self.servers, self.since, self.until, self.extra, self.length = servers, since, until, extra, length
        self.read = 0  # outages handed out, over every reading of the model

    def node_rate(self, gpus_per_node: int) -> float:
        return 1 / DAY

    def outages(self, nodes: int, gpus_per_node: int, horizon_s: float, seed: int) -> Outages:
        model = self

        class Turns(Outages):
            def stream(self) -> Iterator[Outage]:
                given = [Outage(s, d, u, "test") for s, d, u in model.extra]
                t, turn = model.since, 0
                while t < model.until:  # each down 1.5 days (length), the next 1 day later: overlapping
                    given.append(Outage(model.servers[turn % len(model.servers)], t, t + model.length, "test"))
                    t, turn = t + DAY, turn + 1
                for outage in sorted(given, key=lambda o: (o.down_at, o.node)):
                    model.read += 1
                    yield outage

        return Turns(nodes, horizon_s)


class Downs(Observer):
    """Counts the nodes taken down: the faults the run replayed."""

    def __init__(self) -> None:
        self.count = 0

    def on_node_down(self, node_name: str, now: float) -> None:
        self.count += 1


def whole_fleet(nodes: int = 2, duration: float = 3600.0) -> object:
    """One job on every server of a one-VC fleet of 8-GPU nodes, submitted at 0."""
    return load_trace(pd.DataFrame({"submit_time": [0], "gpu_num": [8 * nodes], "duration": [duration]}),
                      nodes=nodes)


def test_a_job_on_every_server_where_one_is_always_down_stops_the_run_at_once():
    model, downs = Relay((0, 1)), Downs()
    with pytest.raises(NoProgressError) as stopped:
        simulate(whole_fleet(), SimConfig(), faults=model, observers=[downs])
    message = str(stopped.value)
    assert "no progress under faults: job 0 (16 GPUs, on at least 2 servers), submitted at t=0 s, can never " \
           "start: " in message
    assert "leave at most 8 GPUs (1 server) up at once in its VC 'cluster' from t=500 s on" in message
    assert "read ahead to its horizon (100 years)" in message and "--spare-nodes K" in message
    # it comes at the first fault, not after 60 years of them (21,900 outages, each a pass on a repair)
    assert downs.count == 1
    whole = sum(1 for _ in model.outages(2, 8, MAX_HORIZON_S, 0))
    assert whole == 21_900 and model.read <= 2 * whole + 2  # read once by the replay's start, once ahead


@pytest.mark.parametrize("policy", ["fifo", "sjf", "lucid"])
def test_every_policy_stops_early_and_lucids_profiler_does_not_count_for_the_job(policy):
    # lucid keeps a profiler partition of its own beside the VC (2 nodes here, always up), too small for the job
    downs = Downs()
    with pytest.raises(NoProgressError, match="job 0 .* can never start: .* at most 24 GPUs .* in its VC 'cluster'"):
        simulate(whole_fleet(nodes=4), SimConfig(policy=policy), faults=Relay((0, 1)), observers=[downs])
    assert downs.count == 1


def test_the_other_vcs_up_do_not_make_a_vc_too_small_for_its_job_hopeful():
    # (a VC as large as the job's would count: a policy may move a job there, as fifo-backfill lends VCs)
    trace = JobLog("test", pd.DataFrame({"job_id": ["big", "small"], "vc": ["a", "b"], "gpu_num": [16, 8],
                                         "submit_time": [0, 0], "duration": [3600, 3600], "user": ["u", "u"]}),
                   {"a": 2, "b": 1})
    downs = Downs()  # a's servers (0 and 1) take turns to be down, b's never fails: 2 of 3 servers always up
    with pytest.raises(NoProgressError, match="job big .* at most 8 GPUs .* in its VC 'a'"):
        simulate(trace, SimConfig(), faults=Relay((0, 1)), observers=[downs])
    assert downs.count == 1


def test_with_spares_the_sound_servers_count_wherever_they_are():
    # 2 slots and 1 spare, servers 0 and 1 taking turns: two servers are sound at any moment, and the job, requeued
    # when both were down, runs in half a day between
    result = simulate(whole_fleet(duration=5000.0), SimConfig(spare_nodes=1, spare_swap=0.0),
                      faults=Relay((0, 1)))
    assert result.jobs["end_time"].notna().all() and result.jobs["restarts"].iloc[0] >= 1
    # three servers taking turns from 0, each down 2.5 days, and the spare (server 2) down for the first day and a
    # half too: two of them always down, one slot at most, until the last faults are repaired (60 years on): the
    # last repair but one leaves 2 servers sound for a day before the last.  A job of 10 days can never finish
    turns = Relay((0, 1, 2), since=0.0, length=2.5 * DAY, extra=((2, 0.0, 1.5 * DAY),))
    downs = Downs()
    with pytest.raises(NoProgressError) as stopped:
        simulate(whole_fleet(duration=10 * DAY), SimConfig(spare_nodes=1), faults=turns, observers=[downs])
    message = str(stopped.value)
    assert "can never finish: " in message and "its 1 spare server counted," in message
    assert "at most 8 GPUs (1 server) up at once in its VC 'cluster'" in message
    assert "s before the last repair, less than its 864,000 s of work left" in message
    assert downs.count <= 4  # (of 21,901 faults)
    # a job of an hour fits in that day: no error, it ends 60 years on (as before: nothing here changes that)
    result = simulate(whole_fleet(), SimConfig(spare_nodes=1), faults=turns)
    assert 60 * YEAR < result.jobs["end_time"].iloc[0] < 60 * YEAR + 4 * DAY


def test_servers_taken_out_for_good_count_as_down_for_ever():
    # --exclude-after 1/1: a server's first fault takes it out.  Server 0 fails at 1000 (the job, started at 0,
    # is requeued), and server 1 fails only 55 years later: only then would the old replay have said so
    model = Relay((1,), since=55 * YEAR, until=55 * YEAR + DAY / 2, extra=((0, 1000.0, 2000.0),))
    downs = Downs()
    with pytest.raises(NoProgressError, match=r"at most 8 GPUs .* from t=1,000 s on; --exclude-after takes 2 "
                                              r"server\(s\) out for good"):
        simulate(whole_fleet(duration=10_000.0), SimConfig(exclude_after="1/1"), faults=model, observers=[downs])
    assert downs.count == 1


def test_faults_that_end_before_half_the_horizon_prove_nothing_and_the_job_runs_after_them():
    # (a log replayed once): after the last repair, at 10 years and a day and a half, every server is back
    ends = 10 * YEAR
    result = simulate(whole_fleet(), SimConfig(), faults=Relay((0, 1), until=ends))
    assert ends < result.jobs["end_time"].iloc[0] < ends + 2 * DAY + 3600


def test_the_state_after_the_last_repair_does_not_count():
    # one of the two servers down from 500 s to the century's end: the job fits only after the last event, when
    # the replay says so at once (the old message: no pass comes between the last repair and the error)
    model = Relay((0,), since=500.0, until=600.0, extra=((1, 600.0, MAX_HORIZON_S),))
    with pytest.raises(NoProgressError, match="can never start: .* at most 8 GPUs"):
        simulate(whole_fleet(duration=10_000.0), SimConfig(), faults=model)


def test_a_run_that_waits_for_a_repair_reads_ahead_and_ends_as_it_did(monkeypatch):
    # the job on both servers waits through 2 years of turns; both are up after that: it runs then.  With --until
    # (past its end) no read-ahead is made; the tables must be the same
    model = Relay((0, 1), since=1000.0, until=2 * YEAR)
    made = []
    monkeypatch.setattr(reliability, "ReadAhead", lambda *a, **k: made.append(1) or ReadAhead(*a, **k))
    watched = simulate(whole_fleet(duration=50_000.0), SimConfig(checkpoint_interval=3600.0), faults=model)
    assert made == [1]
    plain = simulate(whole_fleet(duration=50_000.0), SimConfig(checkpoint_interval=3600.0, until=5 * YEAR),
                     faults=model)
    assert watched.jobs["start_time"].iloc[0] == 0 and watched.jobs["restarts"].iloc[0] == 1
    assert 2 * YEAR < watched.jobs["end_time"].iloc[0] < 2 * YEAR + 2 * DAY + 50_000
    pd.testing.assert_frame_equal(watched.jobs, plain.jobs)
    pd.testing.assert_frame_equal(watched.timeline, plain.timeline)
    assert watched.summary["failures"] == plain.summary["failures"]


def test_a_job_that_fits_now_and_then_is_no_error_and_runs_when_it_can():
    # a rate model on 2 nodes: both are up about a quarter of the time; the job waits for such a moment
    model = RateModel.from_mtbf(DAY, Repair.fixed(DAY))
    result = simulate(whole_fleet(duration=3 * 3600.0), SimConfig(checkpoint_interval=600.0), faults=model)
    assert result.jobs["end_time"].notna().all()


def plain_count(outages: list[Outage], slots: int, spares: int, vcs: dict[int, int],
                rule: tuple[int, float] | None) -> tuple[list[int], list[float], int]:
    """The most GPUs that can be up in one VC after each event, counted the plain way (for the read-ahead's), the
    time of each, and the event of the last fault."""
    gpus_of = [8] * slots
    down, out, times, clock, found, at_times, last_fault = set(), set(), {}, 0.0, [], [], -1
    for event, (at, server, failed) in enumerate(replay_order(outages)):
        clock += max(0.0, at - clock)
        last_fault = event if failed else last_fault
        if server not in out:
            (down.add if failed else down.discard)(server)
            if failed and rule is not None and nth_within(times.setdefault(server, deque()), clock, rule):
                out.add(server)
        gone = down | out
        if spares:
            sound = slots + spares - len(gone)
            found.append(max(8 * min(size, sound) for size in vcs.values()))
        else:
            found.append(max(sum(gpus_of[s] for s in range(slots) if vcs_of(s, vcs) == vc and s not in gone)
                             for vc in vcs))
        at_times.append(clock)
    return found, at_times, last_fault


def vcs_of(server: int, vcs: dict[int, int]) -> int:
    first = 0
    for vc, size in vcs.items():
        if server < first + size:
            return vc
        first += size
    raise AssertionError(server)


def test_the_read_ahead_agrees_with_a_plain_count():
    # random fleets (1-3 nodes in each of 2 VCs, 0-2 spares, with and without --exclude-after) under a rate
    # model, asked from events further and further on for random needs, as a run asks it
    hits = misses = 0
    for seed in range(8):
        found = read_ahead_against_plain_count(seed)
        hits, misses = hits + found[0], misses + found[1]
    assert hits > 10 and misses > 10  # (both answers checked: enough up before the drain, and not)


def read_ahead_against_plain_count(seed: int) -> tuple[int, int]:
    rng = random.Random(seed)
    spares = rng.choice([0, 0, 1, 2])
    vcs = {0: rng.randint(1, 3), 1: rng.randint(1, 3)}
    slots = sum(vcs.values())
    rule = rng.choice([None, (2, 3 * DAY)])
    model = RateModel.from_mtbf(rng.choice([2, 5]) * DAY, Repair.lognormal(DAY, 1.0))
    outages = list(model.outages(slots + spares, 8, 400 * DAY, seed))
    counts, times, last_fault = plain_count(outages, slots, spares, vcs, rule)
    nodes = list(Cluster({"v0": vcs[0], "v1": vcs[1]}, 8).nodes)
    ahead = ReadAhead(iter(outages), nodes, ["v0", "v1"], spares, rule, 0.0)
    index, hits, misses = 0, 0, 0
    while index < len(counts) - 1:
        need = rng.choice([8, 16, 24, 8 * max(vcs.values()) + 8])  # (the last: more than any VC has)
        most = ahead.most_from(index, need)
        before = counts[index:last_fault]  # (the states from the last fault on are the drain's)
        if max(before, default=-1) >= need:
            assert most >= need and most in before
            hits += 1
        else:
            assert most == max(before, default=-1) and ahead.ended_at == times[-1]
            drain = list(zip(times[max(index, last_fault):-1], counts[max(index, last_fault):-1], strict=True))
            late = next((at for at, up in drain if up >= need), None)
            assert ahead.drained(index, need) == (max((up for _, up in drain if up < need), default=-1), late)
            misses += 1
        index += rng.randint(1, 40)
    assert ahead.index <= len(counts) - 1
    if misses:
        assert ahead.last_fault == last_fault and ahead.ended_at == times[-1]
    return hits, misses
