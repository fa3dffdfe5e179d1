from __future__ import annotations

import numpy as np
import pandas as pd

from simcluster.estimators.base import ESTIMATORS, Estimator
from simcluster.estimators.history import History
from simcluster.job import Job

FEATURES = ["user", "vc", "gpu_num", "model", "hour", "weekday"]
FEATURE_TYPES = ["nominal", "nominal", "continuous", "nominal", "continuous", "nominal"]
EPOCH_WEEKDAY = 2  # 2020-04-01, the default epoch, was a Wednesday (Monday = 0)
MIN_TRAINING_JOBS = 100


def submission_features(jobs: list[Job]) -> pd.DataFrame:
    """What is known when a job is submitted: who, where, how big, what model, and when."""
    submit = np.array([j.submit_time for j in jobs], dtype=np.int64)
    return pd.DataFrame({
        "user": [j.user for j in jobs],
        "vc": [j.vc for j in jobs],
        "gpu_num": [j.gpu_num for j in jobs],
        "model": [j.workload.model if j.workload else "" for j in jobs],
        "hour": (submit // 3600) % 24,
        "weekday": ((submit // 86400 + EPOCH_WEEKDAY) % 7).astype(str),
    })


@ESTIMATORS.register("ebm")
class ExplainableBoosting(Estimator):
    """An InterpretML Explainable Boosting regressor of log duration, retrained on finished jobs.

    Trained on submission-time features (user, VC, GPU count, model, hour,
    weekday) of the jobs finished so far, every ``retrain_interval`` of
    simulated time (a week by default); until the first training it answers
    like ``history``.  Main effects only: each term is a shape function a
    person can read, and training stays a couple of CPU-seconds.
    """

    def __init__(self, config) -> None:
        super().__init__(config)
        self._history = History(config)
        self._finished: list[Job] = []
        self._model = None
        self._cache: dict[tuple, float] = {}
        self._next_training: float | None = None
        self.trainings = 0

    def estimate(self, job: Job, now: float) -> float:
        if self._next_training is None:
            self._next_training = now + self.config.retrain_interval
        elif now >= self._next_training:
            self._train(now)
        if self._model is None:
            return self._history.estimate(job, now)
        features = submission_features([job])
        key = tuple(features.iloc[0])
        if key not in self._cache:  # many jobs share their features; predict() costs ~1 ms a call
            self._cache[key] = float(np.expm1(self._model.predict(features)[0]))
        return self._cache[key]

    def observe(self, job: Job, now: float) -> None:
        self._history.observe(job, now)
        self._finished.append(job)

    def _train(self, now: float) -> None:
        from interpret.glassbox import ExplainableBoostingRegressor  # heavy import, only when used

        while self._next_training is not None and self._next_training <= now:
            self._next_training += self.config.retrain_interval
        if len(self._finished) < MIN_TRAINING_JOBS:
            return
        model = ExplainableBoostingRegressor(feature_types=FEATURE_TYPES, interactions=0, outer_bags=2,
                                             n_jobs=1, random_state=self.config.seed)
        model.fit(submission_features(self._finished), np.log1p([j.duration for j in self._finished]))
        self._model = model
        self._cache.clear()
        self.trainings += 1
