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


def fit_duration_model(rows: pd.DataFrame, durations: np.ndarray, seed: int = 0) -> Any:
    """An EBM regressor of log(1 + duration) on :data:`FEATURES` (main effects: one readable curve each)."""
    import warnings

    from interpret.glassbox import ExplainableBoostingRegressor  # heavy import, only when used

    model = ExplainableBoostingRegressor(feature_types=FEATURE_TYPES, interactions=0, outer_bags=2,
                                         n_jobs=1, random_state=seed)
    with warnings.catch_warnings():  # "missing values detected": a user's first job has no history, on purpose
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing history column early on
        model.fit(rows, np.log1p(durations))
    return model


@ESTIMATORS.register("ebm")
class ExplainableBoosting(Estimator):
    """An InterpretML Explainable Boosting regressor of log duration, retrained on finished jobs.

    Trained on submission-time features (user, VC, GPU count, model, hour,
    weekday, and the mean duration of the user's last 10 jobs overall and of
    this GPU count) of the jobs finished so far, every ``retrain_interval`` of
    simulated time (a week by default); until the first training it answers
    like ``history``.  Main effects only: each term is a shape function a
    person can read, training stays a few CPU-seconds, and a prediction is a
    sum of table lookups (:class:`~simcluster.models.additive.AdditivePredictor`).
    """

    def __init__(self, config: SimConfig) -> None:
        super().__init__(config)
        self._history = History(config)
        self._recent = UserHistory()
        self._rows: dict[Job, tuple[Any, ...]] = {}  # features as they were at submission
        self._finished: list[Job] = []
        self.model: Any = None
        self._predict: AdditivePredictor | None = None
        self._next_training: float | None = None
        self.trainings = 0

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
        if job in self._rows:
            self._finished.append(job)

    def _train(self, now: float) -> None:
        while self._next_training is not None and self._next_training <= now:
            self._next_training += self.config.retrain_interval
        if len(self._finished) < MIN_TRAINING_JOBS:
            return
        rows = pd.DataFrame([self._rows[j] for j in self._finished], columns=FEATURES)
        self.model = fit_duration_model(rows, np.array([j.duration for j in self._finished], dtype=float),
                                        self.config.seed)
        self._predict = AdditivePredictor(self.model)
        self.trainings += 1
