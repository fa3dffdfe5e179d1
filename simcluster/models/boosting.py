"""How the duration and throughput models boost: their accuracy at a thirtieth of the CPU.

InterpretML's defaults suit a model fitted once, offline, on data of any shape.
Ours are refitted inside a simulation on a few tables of modest size (tens of
thousands of jobs or 10-minute bins, 8–11 features), where each boosting round
costs mostly Python overhead, so the CPU goes with bags × rounds × bins.
:data:`FAST_BOOSTING` cuts each where the held-out error does not suffer.

Measured on venus_sept (lucid, ``--colocation lucid``): the duration model's three
weekly trainings (on 5,734, 12,664 and 18,919 finished jobs, refitted offline on
exactly those sets) and the MAE of the run's 23,859 estimates, seed 0 (mean of
seeds 0–3 in brackets).  CPU-s on a shared 2-core machine (noisy, ±20 %):

======================================  =============  ================  =========
settings                                CPU-s (3 fits)  MAE (s)           med. rel.
======================================  =============  ================  =========
before: defaults, ``outer_bags=2``      15.1 (17.4)    9,936 (10,044)    0.743
:data:`FAST_BOOSTING`                   0.46 (0.57)    9,491 (9,654)     0.734
… but ``outer_bags=2``                  1.11 (1.20)    9,616 (9,662)     0.735
… but ``learning_rate=0.04``            0.77 (1.00)    9,454 (9,628)     0.734
… but ``max_bins=1024``                 1.32 (2.05)    9,640 (9,957)     0.741
… but ``early_stopping_rounds=100``     0.59 (0.82)    9,496 (9,714)     0.735
… but ``smoothing_rounds=500``          0.95 (1.09)    9,598 (9,792)     0.739
======================================  =============  ================  =========

- ``outer_bags=1``: bagging averages models fitted on resamples, for smoother curves
  on small data; with thousands of rows it doubles the cost and gains nothing.
- ``learning_rate=0.1`` (default 0.04): the same fit in fewer rounds.
- ``max_bins=64`` (default 1024): the continuous features (GPU count, hour, a user's
  recent mean log duration; recent submissions) need no finer curves; finer ones cost
  more per round and over-fit (the MAE above grows with them).
- ``smoothing_rounds=50`` (default 500) and ``early_stopping_rounds=30`` (default 100):
  fewer rounds of random splits before greedy boosting, and an earlier stop once the
  validation loss stops improving.

The throughput model (22,021 bins of the cluster's log before the trace) fits in
0.37 CPU-s instead of 1.43, with its forecast's MAE over the trace's bins 17.10
submissions an hour instead of 17.11.  The packing model keeps its own settings: 56
configurations fit in 0.08 CPU-s, and other settings would change its scores.

Not taken: a sliding window of the last 8,000 jobs (0.2 CPU-s less, the MAE 7 %
worse: long-running users' history matters), and warm starts — InterpretML has no
``warm_start``; ``fit(init_score=model)`` boosts a second model on the first's
residuals, with bins of its own, so the result would not be one readable EBM.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

FAST_BOOSTING: dict[str, Any] = {"interactions": 0, "outer_bags": 1, "learning_rate": 0.1, "max_bins": 64,
                                 "smoothing_rounds": 50, "early_stopping_rounds": 30, "n_jobs": 1}
#: InterpretML's defaults but for main effects only and two outer bags: what the models used before.
INTERPRET_BOOSTING: dict[str, Any] = {"interactions": 0, "outer_bags": 2, "n_jobs": 1}
#: the choices of ``SimConfig.boosting`` (``--boosting``)
BOOSTINGS: dict[str, dict[str, Any]] = {"fast": FAST_BOOSTING, "interpret": INTERPRET_BOOSTING}


def fit_regressor(rows: pd.DataFrame, targets: np.ndarray, feature_types: Sequence[str], seed: int = 0,
                  boosting: str = "fast") -> Any:
    """An EBM regressor of main effects boosted as :data:`BOOSTINGS` ``[boosting]`` says.

    Missing values are expected (a user's first job has no history) and ignored quietly.
    """
    from interpret.glassbox import ExplainableBoostingRegressor  # heavy import, only when used

    if boosting not in BOOSTINGS:
        raise ValueError(f"boosting must be one of {', '.join(BOOSTINGS)}, got {boosting!r}")
    model = ExplainableBoostingRegressor(feature_types=list(feature_types), random_state=seed, **BOOSTINGS[boosting])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "missing values detected": e.g. a user's first job
        warnings.simplefilter("ignore", RuntimeWarning)  # a column still all missing (no job a week ago)
        model.fit(rows, targets)
    return model
