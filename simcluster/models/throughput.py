"""Lucid's Throughput Predict Model: next hour's GPU-job submissions from the past (ASPLOS'23 §4.4).

The cluster's submissions are counted in 10-minute bins.  At a bin boundary
``b`` the forecast of the next hour (bins ``b … b+5``) is an Explainable
Boosting regressor of log(1 + count) on what is already known: the last six
bins, their sum, the same hour one day and one week earlier, the hour of day
and the weekday.  Lucid shares GPUs only while this forecast is high
(*prescient adaptive sharing*).

The series is either a cluster's own log (``cluster_throughput.csv``: the
model trains on its bins before the trace starts) or the simulated trace's
submissions as they arrive (the model retrains every simulated day once two
days are known, if the bins it can learn from grew by ``retrain_growth`` since
its last training; before that the forecast is the last hour's count).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.models.additive import AdditivePredictor
from simcluster.models.boosting import fit_regressor
from simcluster.side_files import read_side_csv, reject_first

BIN = 600  # seconds per bin
HOUR = 6  # bins per hour
DAY = 144
WEEK = 7 * DAY
FEATURES = ["last_10min", "last_20min", "last_30min", "last_40min", "last_50min", "last_60min", "last_hour",
            "next_hour_yesterday", "next_hour_last_week", "hour", "weekday"]
LAST_HOUR = FEATURES.index("last_hour")  # the persistence forecast: the last hour again
FEATURE_TYPES = ["continuous"] * 9 + ["continuous", "nominal"]
EPOCH_WEEKDAY = 2  # bin 0 starts on the epoch, 2020-04-01, a Wednesday


def read_throughput_log(path: str | Path, epoch: str) -> tuple[int, np.ndarray]:
    """(first bin index since ``epoch``, GPU-job submissions per bin) of a ``cluster_throughput.csv``."""
    frame = read_side_csv(path, "throughput log", ("time", "submit_gpu_job"))
    times = pd.to_datetime(frame["time"], errors="coerce")
    counts = pd.to_numeric(frame["submit_gpu_job"], errors="coerce")
    reject_first(path, frame, "time", times.isna(), "not a timestamp")
    reject_first(path, frame, "submit_gpu_job", counts.isna() | (counts < 0), "not a count")
    bins = ((times - pd.Timestamp(epoch)).dt.total_seconds() // BIN).astype(np.int64).to_numpy()
    first = int(bins.min())
    series = np.zeros(int(bins.max()) - first + 1)
    np.add.at(series, bins - first, counts.to_numpy(float))
    return first, series


class SubmissionSeries:
    """Counts per 10-minute bin from bin ``first`` on; grows as submissions are recorded."""

    def __init__(self, first: int = 0, counts: np.ndarray | None = None) -> None:
        self.first = first
        self.counts = list(counts) if counts is not None else []

    def record(self, now: float, n: float = 1.0) -> None:
        i = int(now // BIN) - self.first
        if i < 0:
            return
        if i >= len(self.counts):
            self.counts.extend([0.0] * (i + 1 - len(self.counts)))
        self.counts[i] += n

    def _at(self, b: int) -> float:
        i = b - self.first
        return self.counts[i] if 0 <= i < len(self.counts) else math.nan

    def _sum(self, start: int, n: int) -> float:
        """The sum of ``n`` bins from bin ``start`` on, added in order (NaN unless the series holds them all)."""
        i = start - self.first
        return sum(self.counts[i:i + n]) if 0 <= i and i + n <= len(self.counts) else math.nan

    def features(self, b: int) -> tuple[Any, ...]:
        """What is known at the start of bin ``b`` (NaN where the series does not reach)."""
        lags = [self._at(b - k) for k in range(1, HOUR + 1)]
        return (*lags, self._sum(b - HOUR, HOUR), self._sum(b - DAY, HOUR), self._sum(b - WEEK, HOUR),
                (b // HOUR) % 24, str((b // DAY + EPOCH_WEEKDAY) % 7))

    def next_hour(self, b: int) -> float:
        """The truth a forecast at bin ``b`` aims at (NaN if not yet known)."""
        return self._sum(b, HOUR)

    def training_rows(self, upto: int) -> int:
        """How many rows :meth:`training_frame` gives: the bins whose next hour lies inside the series
        before bin ``upto`` (the series' counts are never NaN, so a target is known exactly there).

        >>> series = SubmissionSeries(10, np.ones(30))
        >>> [(series.training_rows(upto), len(series.training_frame(upto)[0])) for upto in (12, 30, 40, 99)]
        [(0, 0), (9, 9), (19, 19), (19, 19)]
        """
        last = min(upto, self.first + len(self.counts)) - HOUR  # the last bin whose next hour is known
        return max(0, last - (self.first + HOUR) + 1)

    def training_frame(self, upto: int) -> tuple[pd.DataFrame, np.ndarray]:
        """Features and targets of every bin whose next hour ends before bin ``upto``.

        Row for row what :meth:`features` and :meth:`next_hour` give, built with array
        arithmetic (a running sum) rather than bin by bin: venus_sept's log (26,053 bins)
        takes ~0.2 CPU-s one bin at a time, ~10 ms this way.
        """
        bins = np.arange(self.first + HOUR, upto - HOUR + 1)
        counts = np.asarray(self.counts, dtype=float)
        running = np.concatenate(([0.0], np.cumsum(counts)))  # running[i]: sum of counts[:i]

        def window_sum(start: np.ndarray, n: int) -> np.ndarray:
            """Sums of ``n`` bins from each bin ``start`` on (NaN where the series does not reach)."""
            i = start - self.first
            inside = (i >= 0) & (i + n <= len(counts))
            safe = np.where(inside, i, 0)
            return np.where(inside, running[np.minimum(safe + n, len(counts))] - running[safe], math.nan)

        columns = {f"last_{10 * k}min": window_sum(bins - k, 1) for k in range(1, HOUR + 1)}
        columns.update(last_hour=window_sum(bins - HOUR, HOUR), next_hour_yesterday=window_sum(bins - DAY, HOUR),
                       next_hour_last_week=window_sum(bins - WEEK, HOUR), hour=(bins // HOUR) % 24,
                       weekday=((bins // DAY + EPOCH_WEEKDAY) % 7).astype(str))
        targets = window_sum(bins, HOUR)
        keep = ~np.isnan(targets)
        return pd.DataFrame(columns, columns=FEATURES)[keep].reset_index(drop=True), targets[keep]


def fit_throughput_model(rows: pd.DataFrame, targets: np.ndarray, seed: int = 0, boosting: str = "fast") -> Any:
    """An EBM regressor of log(1 + next hour's submissions); ``boosting="fast"``
    (:data:`~simcluster.models.boosting.FAST_BOOSTING`) fits months of a log (26,000 bins) in 0.24 CPU-s, not 3.8."""
    return fit_regressor(rows, np.log1p(targets), FEATURE_TYPES, seed, boosting)


class ThroughputForecaster:
    """Forecast of next hour's submissions at each bin, and the level above which load counts as high.

    ``history``: a series to train on once, up to ``train_until`` (a bin); without one, the series
    is the trace's own and the model retrains every ``retrain_bins`` once two days are known, if the
    bins it learns from grew by ``retrain_growth`` (a fraction) since its last training.  Daily
    retraining on everything costs the square of the trace's length: lucid on Philly (15 weeks,
    no log of its own) trained it 101 times in 15.3 CPU-s; with ``retrain_growth=0.25``, 14 times
    in 2.1 CPU-s, for a forecast MAE of 36.0 submissions an hour instead of 34.6 and an avg JCT
    of 14,019 s instead of 14,056 s.
    The level is either a fixed rate, ``min_rate`` submissions per bin (load is high above it), or,
    without one, the ``quantile`` of the hourly submissions trained on (high at or above it).
    """

    def __init__(self, series: SubmissionSeries, train_until: int | None = None, quantile: float = 0.5,
                 retrain_bins: int = DAY, seed: int = 0, min_rate: float | None = None,
                 boosting: str = "fast", retrain_growth: float = 0.0) -> None:
        self.series, self.quantile, self.seed, self.boosting = series, quantile, seed, boosting
        self.retrain_growth = retrain_growth
        self.min_rate = min_rate
        self.live = train_until is None
        self.retrain_bins = retrain_bins
        self.model: Any = None
        self._predict: AdditivePredictor | None = None
        self.threshold = 0.0 if min_rate is None else min_rate * HOUR
        self.trainings = self.trained_on = 0
        self._next_training: int | None = None
        self.forecasts: dict[int, float] = {}
        self._high: tuple[int, bool] | None = None  # (bin, high?): asked once per scheduler pass, changes per bin
        if train_until is not None:
            self.train(train_until)

    def train(self, upto: int) -> None:
        known = self.series.training_rows(upto)  # (counted before the frame is built: most calls stop here)
        if known < DAY or known < self.trained_on * (1.0 + self.retrain_growth):
            return  # too little to learn from, or too little new since the last training
        rows, targets = self.series.training_frame(upto)
        self._high = None
        self.model = fit_throughput_model(rows, targets, self.seed, self.boosting)
        self._predict = AdditivePredictor(self.model)
        if self.min_rate is None:
            self.threshold = float(np.quantile(targets, self.quantile))
        self.trainings += 1
        self.trained_on = len(rows)

    def forecast(self, now: float) -> float:
        """Forecast of the submissions in the hour starting at ``now``'s bin (memoized per bin)."""
        b = int(now // BIN)
        cached = self.forecasts.get(b)
        if cached is not None:
            return cached
        self._high = None  # (a new bin's forecast may train and move the threshold)
        if self.live:
            if self._next_training is None:
                self._next_training = self.series.first + 2 * DAY
            if b >= self._next_training:
                self.train(b)
                self._next_training = b + self.retrain_bins
        features = self.series.features(b)
        if self._predict is None:  # persistence: the last hour again
            value = 0.0 if math.isnan(features[LAST_HOUR]) else features[LAST_HOUR]
            if self.live and self.min_rate is None:
                known = self.series.counts[: b - self.series.first]
                hours = [sum(known[i:i + HOUR]) for i in range(0, len(known) - HOUR + 1, HOUR)]
                self.threshold = float(np.quantile(hours, self.quantile)) if hours else 0.0
        else:
            value = max(0.0, math.expm1(self._predict.predict(features)))
        self.forecasts[b] = value
        return value

    def high(self, now: float) -> bool:
        """Is the load forecast for the next hour high (above the fixed rate, or at or above the quantile)?"""
        b = int(now // BIN)
        if self._high is not None and self._high[0] == b:
            return self._high[1]
        answer = self._is_high(self.forecast(now))
        self._high = (b, answer)
        return answer

    def _is_high(self, forecast: float) -> bool:
        return forecast > self.threshold if self.min_rate is not None else forecast >= self.threshold

    def report(self) -> dict[str, Any]:
        """MAE of the forecasts made in the run, against what was then submitted."""
        pairs = [(f, self.series.next_hour(b)) for b, f in self.forecasts.items()]
        pairs = [(f, t) for f, t in pairs if not math.isnan(t)]
        report: dict[str, Any] = {"forecasts": len(self.forecasts), "trainings": self.trainings,
                                  "threshold": self.threshold}
        if pairs:
            f, t = np.array(pairs).T
            report["mae"] = float(np.abs(f - t).mean())
            report["mean_submissions_per_hour"] = float(t.mean())
            report["high_fraction"] = float(np.mean([self._is_high(v) for v in self.forecasts.values()]))
        return report
