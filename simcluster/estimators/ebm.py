from __future__ import annotations

import math
from collections import defaultdict, deque
from typing import Any

import numpy as np
import pandas as pd

from simcluster.config import SimConfig
from simcluster.estimators.base import ESTIMATORS, Estimator
from simcluster.estimators.history import History
from simcluster.job import Job
from simcluster.models.additive import AdditivePredictor
from simcluster.models.boosting import fit_regressor

FEATURES = ["user", "vc", "gpu_num", "model", "hour", "weekday", "user_recent", "user_gpus_recent"]
FEATURE_TYPES = ["nominal", "nominal", "continuous", "nominal", "continuous", "nominal", "continuous", "continuous"]
EPOCH_WEEKDAY = 2  # 2020-04-01, the default epoch, was a Wednesday (Monday = 0)
MIN_TRAINING_JOBS = 100
RECENT = 10  # finished jobs per user (and per user and GPU count) that the history features average


class UserHistory:
    """log(1 + duration) of each user's most recently finished jobs, overall and per GPU count."""

    def __init__(self) -> None:
        self._user: defaultdict[str, deque[float]] = defaultdict(lambda: deque(maxlen=RECENT))
        self._user_gpus: defaultdict[tuple[str, int], deque[float]] = defaultdict(lambda: deque(maxlen=RECENT))

    def observe(self, job: Job) -> None:
        value = math.log1p(job.duration)
        self._user[job.user].append(value)
        self._user_gpus[(job.user, job.gpu_num)].append(value)

    def features(self, job: Job) -> tuple[float, float]:
        """Mean log duration of the user's recent jobs and of their recent jobs of this GPU count (NaN: none)."""
        recent, same = self._user.get(job.user), self._user_gpus.get((job.user, job.gpu_num))
        return (sum(recent) / len(recent) if recent else math.nan,
                sum(same) / len(same) if same else math.nan)


def submission_row(job: Job, history: UserHistory | None = None) -> tuple[Any, ...]:
    """What is known when a job is submitted: who, where, how big, what model, when, and the user's record."""
    recent = history.features(job) if history is not None else (math.nan, math.nan)
    return (job.user, job.vc, job.gpu_num, job.workload.model if job.workload else "",
            (job.submit_time // 3600) % 24, str((job.submit_time // 86400 + EPOCH_WEEKDAY) % 7), *recent)


def fit_duration_model(rows: pd.DataFrame, durations: np.ndarray, seed: int = 0, boosting: str = "fast") -> Any:
    """An EBM regressor of log(1 + duration) on :data:`FEATURES` (main effects: one readable curve each).

    ``boosting="fast"`` (:data:`~simcluster.models.boosting.FAST_BOOSTING`): on venus_sept a fortieth
    of the CPU of InterpretML's defaults (``"interpret"``), for the same or a slightly lower MAE (the
    table in :mod:`simcluster.models.boosting`).
    """
    return fit_regressor(rows, np.log1p(durations), FEATURE_TYPES, seed, boosting)


@ESTIMATORS.register("ebm")
class ExplainableBoosting(Estimator):
    """An InterpretML Explainable Boosting regressor of log duration, retrained on finished jobs.

    Trained on submission-time features (user, VC, GPU count, model, hour,
    weekday, and the mean duration of the user's last 10 jobs overall and of
    this GPU count) of the jobs finished so far, every ``retrain_interval`` of
    simulated time (a week by default); until the first training it answers
    like ``history``.  Main effects only: each term is a shape function a
    person can read, and a prediction is a sum of table lookups
    (:class:`~simcluster.models.additive.AdditivePredictor`).

    What it costs: on venus_sept its three trainings take ~0.3–0.4 CPU-s
    (:mod:`simcluster.models.boosting`).  A training's cost grows with the jobs
    it learns from, so on a long trace weekly retraining on everything would
    grow with the square of the trace's length; a training is skipped while
    the jobs finished since the last one are fewer than ``retrain_growth``
    (25 %) of those it learned from, which keeps the total below five times
    one training on all jobs (1 + 1/1.25 + 1/1.25² + …).  venus_sept's
    trainings grow by 121 % and 49 %: none is skipped.  On Philly (82,229
    jobs over 15 weeks; qssf ``--estimator ebm``) it trains 7 times instead
    of 13: 3.4 CPU-s instead of 6.4, for an MAE of 16,051 s instead of 15,935
    (+0.7 %) and an avg JCT of 13,201.5 s instead of 13,204.8 s.  Each
    finished job's features are kept as it finishes, so a training builds no
    rows, only the table.
    """

    def __init__(self, config: SimConfig) -> None:
        super().__init__(config)
        self._history = History(config)
        self._recent = UserHistory()
        self._rows: dict[Job, tuple[Any, ...]] = {}  # features as they were at submission, until the job finishes
        self._finished_rows: list[tuple[Any, ...]] = []  # what the model learns from, in finishing order
        self._finished_durations: list[float] = []
        self.model: Any = None
        self._predict: AdditivePredictor | None = None
        self._next_training: float | None = None
        self.trainings = 0
        self.trained_on = 0  # finished jobs the current model learned from

    def estimate(self, job: Job, now: float) -> float:
        if self._next_training is None:
            self._next_training = now + self.config.retrain_interval
        elif now >= self._next_training:
            self._train(now)
        row = self._rows[job] = submission_row(job, self._recent)
        if self._predict is None:
            return self._history.estimate(job, now)
        return max(0.0, math.expm1(self._predict.predict(row)))

    def observe(self, job: Job, now: float) -> None:
        self._history.observe(job, now)
        self._recent.observe(job)
        row = self._rows.pop(job, None)
        if row is not None:
            self._finished_rows.append(row)
            self._finished_durations.append(float(job.duration))

    def due(self) -> bool:
        """Have enough jobs finished to train: at least 100, and ``retrain_growth`` more than last time?"""
        finished = len(self._finished_rows)
        return finished >= MIN_TRAINING_JOBS and finished >= self.trained_on * (1.0 + self.config.retrain_growth)

    def _train(self, now: float) -> None:
        while self._next_training is not None and self._next_training <= now:
            self._next_training += self.config.retrain_interval
        if not self.due():
            return
        rows = pd.DataFrame(self._finished_rows, columns=FEATURES)
        self.model = fit_duration_model(rows, np.array(self._finished_durations), self.config.seed,
                                        self.config.boosting)
        self._predict = AdditivePredictor(self.model)
        self.trainings += 1
        self.trained_on = len(rows)
