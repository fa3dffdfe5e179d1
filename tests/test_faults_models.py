"""Failure models from parameters, the replay of a log, the fit of a log and its fitted.json, and the closed-form
ETTR against a Monte-Carlo simulation of the same renewal process."""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections import Counter

import numpy as np
import pytest

from simcluster.errors import TraceError
from simcluster.faults import (
    FaultClass,
    LogReplay,
    RateModel,
    Repair,
    daly_interval,
    ettr,
    expected_wall_time,
    fit_faults,
    fit_from_dict,
    load_fit,
    optimal_interval,
    read_fault_log,
    young_interval,
)
from simcluster.faults.log import DAY
from simcluster.limits import LimitError
from simcluster.paths import shared_data_dir

INFINITEHBD = shared_data_dir() / "faults" / "infinitehbd"
needs_log = pytest.mark.skipif(not (INFINITEHBD / "fault_trace.json").is_file(),
                               reason=f"the InfiniteHBD fault log is absent from {shared_data_dir()}")


def count_per_node(outages):
    return Counter(o.node for o in outages)


# --- models from parameters -------------------------------------------------------------------------------------

def test_a_model_draws_the_same_outages_for_the_same_seed_and_others_for_another():
    model = RateModel.from_mtbf(10 * DAY, Repair.lognormal(DAY, 1.0))
    first = list(model.outages(500, 8, 200 * DAY, seed=3))
    assert first == list(model.outages(500, 8, 200 * DAY, seed=3))
    assert first != list(model.outages(500, 8, 200 * DAY, seed=4))
    weibull = RateModel.from_mtbf(10 * DAY, DAY, shape=0.7)
    assert list(weibull.outages(50, 8, 100 * DAY, 1)) == list(weibull.outages(50, 8, 100 * DAY, 1))


@pytest.mark.parametrize("shape", [1.0, 0.7, 1.5])
def test_over_a_long_horizon_a_node_fails_once_per_mean_up_time_plus_repair(shape):
    nodes, mtbf, repair, horizon = 100, 10 * DAY, DAY, 2000 * DAY
    outages = list(RateModel.from_mtbf(mtbf, repair, shape=shape).outages(nodes, 8, horizon, seed=11))
    expected = nodes * horizon / (mtbf + repair)  # a renewal process of up time then repair
    assert len(outages) == pytest.approx(expected, rel=0.03)
    assert [o.down_at for o in outages] == sorted(o.down_at for o in outages)
    assert all(0 <= o.down_at < horizon and o.up_at == pytest.approx(o.down_at + repair) for o in outages)


def test_a_node_never_fails_while_it_is_down():
    model = RateModel.from_mtbf(DAY, Repair.lognormal(DAY, 1.5))  # repairs as long as the time to failure
    outages = model.outages(20, 8, 400 * DAY, seed=2)
    for node, mine in outages.by_node().items():
        assert all(b.down_at >= a.up_at for a, b in itertools.pairwise(mine)), node
        assert list(outages.node(node)) == mine


def test_a_per_gpu_rate_is_multiplied_by_the_gpus_and_classes_share_by_rate():
    classes = (FaultClass("gpu", 3 / (1000 * DAY), Repair.fixed(0)), FaultClass("nic", 1 / (1000 * DAY), Repair.fixed(0)))
    model = RateModel(classes, per="gpu")
    assert model.node_rate(8) == pytest.approx(8 * 4 / (1000 * DAY))
    outages = list(model.outages(1000, 8, 100 * DAY, seed=5))
    assert len(outages) == pytest.approx(1000 * 100 * 8 * 4 / 1000, rel=0.05)
    shares = Counter(o.cls for o in outages)
    assert shares["gpu"] / len(outages) == pytest.approx(0.75, abs=0.02)


def test_a_large_cluster_that_rarely_fails_costs_only_its_failures():
    model = RateModel.from_mtbf(1e6 * DAY, DAY)
    outages = model.outages(16_384, 8, 54 * DAY, seed=0)
    assert len(list(outages)) < 10
    assert list(outages.node(123)) == [o for o in outages if o.node == 123]


def test_a_rate_of_zero_fails_nothing_and_nan_is_an_error():
    assert list(RateModel((FaultClass("none", 0.0, Repair.fixed(1)),)).outages(10, 8, DAY, 0)) == []
    with pytest.raises(LimitError, match="failure rate of class 'x'"):
        RateModel((FaultClass("x", float("nan"), Repair.fixed(1)),))
    with pytest.raises(LimitError, match="horizon"):
        RateModel.from_mtbf(DAY, 1).outages(10, 8, float("inf"), 0)
    with pytest.raises(LimitError, match="Weibull shape"):
        RateModel.from_mtbf(DAY, 1, shape=0)


def test_repairs_are_fixed_lognormal_or_drawn_from_recorded_times():
    rng = np.random.default_rng(0)
    assert Repair.fixed(5).draw(rng) == 5
    draws = [Repair.lognormal(3600, 0.5).draw(rng) for _ in range(4000)]
    assert statistics.median(draws) == pytest.approx(3600, rel=0.05)
    assert {Repair.empirical([1, 2, 3]).draw(rng) for _ in range(100)} == {1, 2, 3}


# --- replaying a log --------------------------------------------------------------------------------------------

def small_log(tmp_path):
    path = tmp_path / "faults.csv"
    path.write_text("node,start,end,class\n"
                    "a,100,200,GPU\nb,1000,1500,NIC\na,5000,5400,GPU\nc,9000,9500,Fan\nc,9400,9600,GPU\n")
    return read_fault_log(path, servers=5, span_s=10_000)


def test_a_cluster_no_larger_than_the_log_replays_its_outages_as_they_were(tmp_path):
    log = small_log(tmp_path)
    outages = list(LogReplay(log).outages(5, 8, 10_000, seed=7))
    assert sorted((o.down_at, o.up_at, o.cls) for o in outages) == [
        (100, 200, "GPU"), (1000, 1500, "NIC"), (5000, 5400, "GPU"), (9000, 9600, "Fan")]  # c's two merged
    assert len({o.node for o in outages if o.down_at in (100, 5000)}) == 1  # one node holds a's history
    holders = {seed: sorted(o.node for o in LogReplay(log).outages(5, 8, 10_000, seed)) for seed in range(7, 12)}
    assert len({tuple(nodes) for nodes in holders.values()}) > 1  # the mapping is the seed's


def test_an_offset_moves_the_log_and_a_longer_horizon_repeats_it(tmp_path):
    log = small_log(tmp_path)
    shifted = sorted((o.down_at, o.up_at) for o in LogReplay(log, offset_s=900).outages(5, 8, 10_000, seed=7))
    assert shifted[0] == (100, 600)  # b's 1000..1500
    assert (9200, 9300) in shifted  # a's 100..200, one span later (100 - 900 + 10,000)
    twice = list(LogReplay(log).outages(5, 8, 20_000, seed=7))
    assert len(twice) == 8
    once = list(LogReplay(log, repeat=False).outages(5, 8, 20_000, seed=7))
    assert len(once) == 4


def test_a_cluster_larger_than_the_log_draws_histories_in_rounds_deterministically(tmp_path):
    log = small_log(tmp_path)
    replay = LogReplay(log)
    big = replay.outages(1000, 8, 10_000, seed=1)
    outages = list(big)
    assert outages == list(replay.outages(1000, 8, 10_000, seed=1))
    servers = Counter(int(s) for s in big.server)
    assert set(servers.values()) == {200}  # 1,000 nodes, 5 servers: each history 200 times
    # copies are shifted in time: a's 100 s outage starts at many different instants
    assert len({round(o.down_at) for o in outages if o.up_at - o.down_at == pytest.approx(100)}) > 100
    assert len(outages) == pytest.approx(200 * 4, rel=0.05)


@needs_log
def test_the_infinitehbd_log_covers_a_2048_node_cluster():
    log = read_fault_log(INFINITEHBD / "fault_trace.json")
    outages = list(LogReplay(log).outages(2048, 8, log.span_s, seed=0))
    merged = sum(len(s) for s in log.outages().values())
    assert len(outages) == pytest.approx(2048 / 400 * merged, rel=0.05)


# --- fitting a log ----------------------------------------------------------------------------------------------

def raw_events():
    return json.loads((INFINITEHBD / "fault_trace.json").read_text())


def plain_repairs(events, cls):
    """Repair times (hours) of one class, paired the plain way: each end closes its node's open start."""
    opened, hours = {}, []
    for e in events:
        key = (e["node_id"], json.dumps(e["fault_type"]))
        if e["event_type"] == "fault_start":
            opened.setdefault(key, []).append(e["event_time"])
        elif e["fault_type"]["Class"] == cls:
            hours.append(24 * (e["event_time"] - opened[key].pop(0)))
    return hours


@needs_log
def test_the_fit_reproduces_the_logs_own_shares_and_repair_medians():
    fit = fit_faults(read_fault_log(INFINITEHBD / "fault_trace.json"))
    stats = json.loads((INFINITEHBD / "fault_statistics.json").read_text())
    events = raw_events()
    starts = [e for e in events if e["event_type"] == "fault_start"]
    by_key = {c.key: c for c in fit.classes}
    assert fit.faults == len(starts) == sum(level["LevelTotal"] for level in stats.values())
    for level, classes in stats.items():
        for cls, entry in classes.items():
            if cls == "LevelTotal":
                continue
            counted = sum(1 for e in starts if (e["fault_type"]["Level"], e["fault_type"]["Class"]) == (level, cls))
            assert by_key[f"{level}/{cls}"].faults == entry["ClassTotal"] == counted
    gpu, nic = by_key["Hardware Failure/GPU"], by_key["Hardware Failure/NIC"]
    assert gpu.share == pytest.approx(0.27, abs=0.005) and nic.share == pytest.approx(0.05, abs=0.005)
    assert gpu.share_low < gpu.share < gpu.share_high
    assert gpu.median_s / 3600 == pytest.approx(statistics.median(plain_repairs(events, "GPU")))
    assert nic.median_s / 3600 == pytest.approx(statistics.median(plain_repairs(events, "NIC")))
    assert 16 < gpu.median_s / 3600 < 18 and 11 < nic.median_s / 3600 < 13
    assert 1000 * fit.rate == pytest.approx(4.2, abs=0.15)
    assert fit.rate_low < fit.rate < fit.rate_high


@needs_log
def test_a_fitted_model_fails_a_2048_node_cluster_at_the_fitted_rate(tmp_path):
    fit = fit_faults(read_fault_log(INFINITEHBD / "fault_trace.json"))
    path = fit.save(tmp_path / "fitted.json")
    again = load_fit(path)
    assert again.rate == fit.rate and [c.key for c in again.classes] == [c.key for c in fit.classes]
    assert again.classes[0].repairs_s == pytest.approx(fit.classes[0].repairs_s, abs=1e-3)
    horizon = 54 * DAY
    outages = list(again.model().outages(2048, 8, horizon, seed=0))
    # about 2048 × rate × 54 days (a little less: a node down for repair does not fail)
    assert len(outages) == pytest.approx(2048 * fit.rate * 54, rel=0.1)
    assert fit.interruption_interval_s(2048) / 3600 == pytest.approx(24 / (2048 * fit.rate))


def test_rates_have_exact_poisson_intervals_and_known_values(tmp_path):
    path = tmp_path / "faults.csv"
    path.write_text("node,start,end,class\n" + "".join(f"n{i},{i * DAY},{i * DAY + 3600 * (i + 1)},GPU\n"
                                                        for i in range(10)) + "n0,50000,50100,NIC\n")
    fit = fit_faults(read_fault_log(path, servers=20, span_s=100 * DAY))
    gpu = fit.classes[0]
    up_days = 20 * 100 - sum(3600 * (i + 1) for i in range(10)) / DAY - 100 / DAY
    assert gpu.rate == pytest.approx(10 / up_days)
    assert (gpu.rate_low * up_days, gpu.rate_high * up_days) == pytest.approx((4.7954, 18.3904), abs=1e-3)
    assert gpu.median_s == pytest.approx(5.5 * 3600) and gpu.share == pytest.approx(10 / 11)
    assert gpu.lognormal_mu == pytest.approx(statistics.mean(math.log(3600 * (i + 1)) for i in range(10)))


def test_reading_fitted_json_back_checks_every_field(tmp_path):
    path = tmp_path / "faults.csv"
    path.write_text("node,start,end,class\nn1,0,3600,GPU\nn2,100,200,NIC\n")
    good = fit_faults(read_fault_log(path, servers=4, span_s=DAY)).to_dict()
    assert fit_from_dict(json.loads(json.dumps(good))).faults == 2
    for change, field in [(lambda d: d.update(schema="x"), "schema"), (lambda d: d.update(version=2), "version"),
                          (lambda d: d.update(servers=0), "servers"), (lambda d: d.update(classes=[]), "classes"),
                          (lambda d: d["classes"][0].update(rate=-1), "classes[0].rate"),
                          (lambda d: d["classes"][1].update(share=float("nan")), "classes[1].share"),
                          (lambda d: d["classes"][0].update(repairs_s=["x"]), "classes[0].repairs_s[0]"),
                          (lambda d: d.update(rate_per_server_day=float("inf")), "rate_per_server_day")]:
        bad = json.loads(json.dumps(good))
        change(bad)
        target = tmp_path / "fitted.json"
        target.write_text(json.dumps(bad))
        with pytest.raises(TraceError) as caught:
            load_fit(target)
        assert caught.value.field == field and caught.value.path == str(target), (field, caught.value)


# --- the closed-form ETTR against a Monte-Carlo simulation ------------------------------------------------------

def simulated_wall_times(work, interval, cost, rate, downtime, replicas, seed):
    """Wall time of a job of ``work`` s, simulated event by event: faults are one Poisson process on the clock
    of the time the job is exposed (running or checkpointing); each one throws away what was done since the
    last completed checkpoint and costs ``downtime``."""
    rng = np.random.default_rng(seed)
    walls = np.empty(replicas)
    for r in range(replicas):
        wall, kept, exposed = 0.0, 0.0, 0.0
        next_fault = rng.exponential(1 / rate)
        while kept < work:
            step = min(interval, work - kept)
            length = step + (cost if kept + step < work else 0.0)  # no checkpoint after the last stretch
            if exposed + length <= next_fault:
                exposed += length
                wall += length
                kept += step
            else:
                wall += next_fault - exposed + downtime
                exposed = next_fault
                next_fault += rng.exponential(1 / rate)
        walls[r] = wall
    return walls


POINTS = [  # work, τ, δ, Λ, D: ETTR from about 0.5 to 0.9
    (36_000, 1800, 120, 1 / 3600, 300),
    (6_000, 300, 30, 1 / 600, 60),
    (20_000, 700, 60, 1 / 7200, 900),
]


@pytest.mark.parametrize(("work", "interval", "cost", "rate", "downtime"), POINTS)
def test_the_closed_form_is_within_the_monte_carlo_95_percent_interval(work, interval, cost, rate, downtime):
    # a fixed seed: at any one point about 1 seed in 20 would fall outside its 95 % interval by chance
    walls = simulated_wall_times(work, interval, cost, rate, downtime, replicas=4000, seed=1)
    half = 1.96 * walls.std(ddof=1) / math.sqrt(len(walls))
    expected = expected_wall_time(work, interval, cost, rate, downtime)
    assert abs(walls.mean() - expected) <= half, (walls.mean(), expected, half)
    assert ettr(interval, cost, rate, downtime, work=work) == pytest.approx(work / expected)
    assert work / expected < 0.95  # a point where faults matter


def test_the_monte_carlo_check_rejects_a_formula_without_the_checkpoint_cost_or_the_downtime():
    work, interval, cost, rate, downtime = POINTS[0]
    walls = simulated_wall_times(work, interval, cost, rate, downtime, replicas=4000, seed=1)
    half = 1.96 * walls.std(ddof=1) / math.sqrt(len(walls))
    for wrong in (expected_wall_time(work, interval, 0.0, rate, downtime) + work / interval * cost,
                  expected_wall_time(work, interval, cost, rate, 0.0)):
        assert abs(walls.mean() - wrong) > half


def test_the_long_run_ettr_is_the_limit_of_long_jobs():
    args = (1800, 60, 1 / 86_400, 300)
    assert ettr(*args, work=1e9) == pytest.approx(ettr(*args), rel=1e-6)


@pytest.mark.parametrize(("cost", "rate"), [(60, 1 / 86_400), (300, 1 / 10_000), (600, 1 / 3600)])
def test_the_exact_optimum_beats_its_neighbours_and_young_and_daly_approach_it(cost, rate):
    best = optimal_interval(cost, rate)
    assert ettr(best, cost, rate) >= max(ettr(best * 0.95, cost, rate), ettr(best * 1.05, cost, rate))
    grid = np.linspace(best / 4, best * 4, 2001)
    assert best == pytest.approx(grid[np.argmax([ettr(t, cost, rate) for t in grid])], rel=0.01)
    assert daly_interval(cost, rate) == pytest.approx(best, rel=0.02)
    assert young_interval(cost, rate) == pytest.approx(math.sqrt(2 * cost / rate))
    assert ettr(young_interval(cost, rate), cost, rate) >= 0.98 * ettr(best, cost, rate)
