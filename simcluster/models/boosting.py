"""How the duration and throughput models boost: InterpretML's accuracy at a fraction of its CPU.

InterpretML's defaults suit a model fitted once, offline, on data of any shape.
Ours are refitted inside a simulation on a few tables of modest size (tens of
thousands of jobs or 10-minute bins, 8–11 features), where each boosting round
costs mostly Python overhead, so the CPU goes with bags × rounds × bins.
:data:`FAST_BOOSTING` cuts each where the held-out error does not suffer (the
ablation that chose each value is ``benchmarks/bench_models.py --ablation``; its
figures are in ``benchmarks/RESULTS.md``):

- ``outer_bags=1`` (default 14; ours was 2): bagging averages models fitted on resamples,
  for smoother curves on small data; with thousands of rows it doubles the cost for nothing.
- ``learning_rate=0.1`` (default 0.04): the same fit in fewer rounds.
- ``max_bins=64`` (default 1024): the continuous features (GPU count, hour, a user's recent
  mean log duration; recent submissions) need no finer curves; finer ones cost more per
  round and over-fit.
- ``smoothing_rounds=50`` (default 500), ``early_stopping_rounds=30`` (default 100) and
  ``early_stopping_tolerance=1e-3`` (default 1e-5): fewer rounds of random splits before
  greedy boosting, and a stop once 30 rounds have not improved the validation loss by
  0.1 %.  Boosting on the log scale past that point chases noise: the MAE of the durations
  themselves gets worse, not better, and a long trace's models run for tens of thousands
  of rounds.

The packing model keeps its own settings (``packing._fit``): a few dozen configurations fit
in a fraction of a CPU-second, and other settings would change its scores.

Not taken: warm starts — InterpretML has no ``warm_start``; ``fit(init_score=model)`` boosts
a second model on the first's residuals, with bins of its own, so the result would not be
one readable EBM; training on a sample or a window of recent jobs — once a training costs
a fraction of a second there is little left to save, and a user's long history is what the
model learns from.  Trainings are fewer instead where a trace is long: ``--retrain-growth``
(:class:`~simcluster.estimators.ebm.ExplainableBoosting`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

FAST_BOOSTING: dict[str, Any] = {"interactions": 0, "outer_bags": 1, "learning_rate": 0.1, "max_bins": 64,
                                 "smoothing_rounds": 50, "early_stopping_rounds": 30, "early_stopping_tolerance": 1e-3,
                                 "n_jobs": 1}
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
