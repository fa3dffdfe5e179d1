"""Lucid's forecaster at the cost of what changed (issue 55, item 2): the same trainings and answers as before."""

from __future__ import annotations

import numpy as np

from simcluster.models.throughput import BIN, DAY, SubmissionSeries, ThroughputForecaster


def test_the_training_rows_are_counted_as_the_frame_would_hold_them():
    rng = np.random.default_rng(11)
    for first, length in [(0, 0), (5, 3), (100, 12), (7, 40), (1_000, 500)]:
        series = SubmissionSeries(first, rng.poisson(3, length).astype(float))
        for upto in range(first - 3, first + length + 15):
            assert series.training_rows(upto) == len(series.training_frame(upto)[0]), (first, length, upto)


def test_a_forecaster_counting_its_rows_trains_and_answers_as_one_building_every_frame(monkeypatch):
    counts = np.random.default_rng(5).poisson(np.tile(np.repeat([1.0, 9.0], 72), 5)).astype(float)

    def answers() -> tuple[list[bool], list[float], int]:
        series = SubmissionSeries(0)
        forecaster = ThroughputForecaster(series, min_rate=2.0, retrain_growth=0.25)
        highs = []
        for b, n in enumerate(counts):
            series.record(b * BIN, n)
            highs.append(forecaster.high(b * BIN))
        return highs, list(forecaster.forecasts.values()), forecaster.trainings

    counted = answers()
    monkeypatch.setattr(SubmissionSeries, "training_rows", lambda self, upto: len(self.training_frame(upto)[0]))
    built = answers()
    assert counted == built and counted[2] >= 2 and len(counts) > 2 * DAY
    assert 0 < sum(counted[0]) < len(counts)  # the level was crossed both ways


def bin_by_bin(series: SubmissionSeries, b: int) -> tuple:
    """The forecaster's features at bin ``b`` read one bin at a time (what ``features`` did before it summed
    slices): NaN wherever a window leaves the series."""
    def at(k: int) -> float:
        i = k - series.first
        return series.counts[i] if 0 <= i < len(series.counts) else float("nan")

    def window(start: int, n: int) -> float:
        values = [at(k) for k in range(start, start + n)]
        return float("nan") if any(np.isnan(v) for v in values) else sum(values)

    return (*[at(b - k) for k in range(1, 7)], window(b - 6, 6), window(b - DAY, 6), window(b - 7 * DAY, 6),
            window(b, 6))


def test_the_features_summed_by_slices_are_the_bin_by_bin_sums_to_the_last_bit():
    rng = np.random.default_rng(3)
    series = SubmissionSeries(40, rng.exponential(2.0, 8 * DAY))  # floats whose sums depend on their order
    for b in [*range(30, 60), *range(DAY + 30, DAY + 50), *range(7 * DAY + 35, 7 * DAY + 50),
              *range(8 * DAY + 30, 8 * DAY + 50)]:
        features = (*series.features(b)[:9], series.next_hour(b))
        expected = bin_by_bin(series, b)
        assert np.array_equal(np.array(features), np.array(expected), equal_nan=True), b
