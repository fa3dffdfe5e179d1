"""The reliability study's bounds and intervals (issue 54, item 5): the caps ``lucid-sim run`` and ``lucid-sim
reliability`` put on a study refused in words by the Python API too, ETTR intervals inside [0, 1], and each
interval named for what it is and computed as named (the mean's confidence interval with Student's t; the
middle 95 % of the runs) (simcluster/experiments/reliability.py, simcluster/cli/reliability.py, docs/failures.md).

Kueue bounds what it admits in words too (a ClusterQueue's quotas are validated by its webhook, e.g. at most 16
flavors and 16 resources, apis/kueue/v1beta1/clusterqueue_types.go); a failure study is outside Kueue, and these
bounds are ours, each beside its reason in :mod:`simcluster.experiments.reliability`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import t
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.experiments.reliability import (
    MAX_JOB_NODES,
    MAX_SIZES,
    check_intervals,
    check_sizes,
    mean_interval,
    reliability_study,
    runs_spread,
)
from simcluster.limits import LimitError

DAY = 86_400.0
runner = CliRunner()


@pytest.mark.parametrize("gpus, says", [
    ([8] * (MAX_SIZES + 1), "--gpus: at most 200 job sizes in one study"),
    ([], "--gpus: at most 200 job sizes in one study (as --points stops at 200), and at least one, got 0"),
    ([10_000_000], "--gpus 10,000,000: a job of at most 131,072 nodes"),
    ([12], "--gpus 12: a job of whole nodes, a multiple of --gpus-per-node 8"),
    ([0], "--gpus must be at least 1"),
])
def test_the_api_refuses_the_sizes_the_command_refuses_in_the_same_words(gpus, says):
    """A 10M-GPU size was a MemoryError from Python, where the command line refused it."""
    with pytest.raises(LimitError) as caught:
        reliability_study(gpus, [1800.0], "mtbf=5d", replicas=2, work=3600.0)
    assert says in str(caught.value)


@pytest.mark.parametrize("intervals, says", [
    ([864e6], "--checkpoint-interval: an interval must be at most 30 days (2,592,000 s), as `lucid-sim run` takes it"),
    ([1e300], "at most 30 days"),
    ([0.0], "--checkpoint-interval must be greater than 0"),
    ([math.inf], "--checkpoint-interval must be a finite number"),
    ([60.0] * 201, "--checkpoint-interval: give 1 to 200 intervals in seconds, got 201"),
])
def test_the_api_refuses_the_intervals_run_refuses(intervals, says):
    """`run` caps the interval at 30 days; the study from Python overflowed in the closed form."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(LimitError) as caught:
            reliability_study([8], intervals, "mtbf=5d", replicas=2, work=3600.0)
    assert says in str(caught.value)


@pytest.mark.parametrize("option, value, says", [
    ("replicas", 1, "--replicas must be at least 2"),
    ("work", 20 * 365 * DAY, "--work must be at most"),
    ("checkpoint_cost", 31 * DAY, "--checkpoint-cost must be at most"),
    ("spare_swap", -1.0, "--spare-swap must be at least 0"),
    ("gpus_per_node", 0, "--gpus-per-node must be at least 1"),
])
def test_the_api_names_the_option_of_every_other_bad_value(option, value, says):
    with pytest.raises(LimitError, match=says.replace("(", r"\(")):
        reliability_study([8], [1800.0], "mtbf=5d", **{"replicas": 2, "work": 3600.0, option: value})


def test_the_caps_are_the_command_s():
    assert check_sizes([8, 8 * MAX_JOB_NODES], 8) == (8, 8 * MAX_JOB_NODES)
    assert check_intervals([30 * DAY]) == (30 * DAY,)
    done = runner.invoke(app, ["reliability", "--faults", "mtbf=1d", "--gpus", "8,12", "--out", "/nonexistent"])
    assert done.exit_code == 2 and "--gpus 12: a job of whole nodes" in done.output


def test_the_mean_s_interval_uses_student_s_t_not_1_96():
    """With 2 replicas it was mean ± 1.96·sd/√n, 6.5 times too narrow: t₀.₉₇₅,₁ = 12.71."""
    values = [0.50, 0.52]
    low, high = mean_interval(values)
    half = t.ppf(0.975, 1) * np.std(values, ddof=1) / math.sqrt(2)
    assert (low, high) == pytest.approx((0.51 - half, 0.51 + half))
    assert (high - low) / (2 * 1.96 * np.std(values, ddof=1) / math.sqrt(2)) == pytest.approx(6.48, abs=0.01)
    twenty = np.linspace(0.4, 0.6, 20)
    low, high = mean_interval(twenty)
    assert high - low == pytest.approx(2 * t.ppf(0.975, 19) * twenty.std(ddof=1) / math.sqrt(20))


def test_a_ratio_s_interval_stays_in_zero_to_one_and_around_its_mean():
    """reliability.csv had ETTR intervals of 1.0026 and 1.065; a sweep whose replicas agree put the mean 1e-16
    above its interval."""
    low, high = mean_interval([0.99, 1.0, 0.999])
    assert 0 <= low <= high == 1.0
    assert mean_interval([0.02, 0.0, 0.001])[0] == 0.0
    same = [0.1 + 0.2] * 5
    low, high = mean_interval(same)
    assert low <= float(np.mean(same)) <= high
    assert runs_spread([0.3, 0.3, 0.3]) == (0.3, 0.3)


def test_a_study_s_intervals_are_each_what_their_name_says_and_inside_zero_to_one():
    study = reliability_study([8, 32], [600.0, 3600.0], "mtbf=2d,repair=1h", replicas=5, work=DAY, spare_nodes=2)
    table, runs = study.table, study.runs
    assert len(runs) == len(table) * 5
    for row in table.itertuples():
        values = runs[(runs["gpus"] == row.gpus) & (runs["interval_s"] == row.interval_s)]["ettr"].to_numpy()
        assert row.ettr_mean == pytest.approx(values.mean())
        half = t.ppf(0.975, 4) * values.std(ddof=1) / math.sqrt(5)
        assert row.ettr_low == pytest.approx(max(0.0, values.mean() - half))
        assert row.ettr_high == pytest.approx(min(1.0, values.mean() + half))
        assert (row.ettr_runs_low, row.ettr_runs_high) == pytest.approx(tuple(np.quantile(values, [0.025, 0.975])))
    ratios = table[["ettr_low", "ettr_high", "ettr_runs_low", "ettr_runs_high", "closed_form"]]
    assert ((ratios >= 0) & (ratios <= 1)).all().all()
    assert (table["ettr_low"] <= table["ettr_mean"]).all() and (table["ettr_mean"] <= table["ettr_high"]).all()


def test_the_command_names_each_interval_for_what_it_is(tmp_path):
    done = runner.invoke(app, ["reliability", "--faults", "mtbf=5d,repair=1h", "--gpus", "8", "--checkpoint-interval",
                               "30m", "--replicas", "3", "--work", "12h", "--restart-cost", "5m", "--spare-swap",
                               "1m", "--out", str(tmp_path)], terminal_width=200)
    assert done.exit_code == 0, done.output
    assert "mean's CI" in done.output and "runs' 95 %" in done.output
    assert "95 % confidence interval of the mean, mean ± Student's t" in done.output
    assert "the middle 95 % of the runs" in done.output and "offsets into the log" not in done.output
    bad = runner.invoke(app, ["reliability", "--faults", "mtbf=5d", "--gpus", "8", "--checkpoint-cost", "40d",
                              "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "--checkpoint-cost must be at most" in bad.output
