"""How the duration and throughput models boost: their accuracy at a fortieth of the CPU.

InterpretML's defaults suit a model fitted once, offline, on data of any shape.
Ours are refitted inside a simulation on a few tables of modest size (tens of
thousands of jobs or 10-minute bins, 8–11 features), where each boosting round
costs mostly Python overhead, so the CPU goes with bags × rounds × bins.
:data:`FAST_BOOSTING` cuts each where the held-out error does not suffer.

Measured on venus_sept with ``benchmarks/bench_models.py --before --ablation`` (2-core machine
shared with other work: CPU-s noisy, ±20 %).  In the run, lucid ``--colocation lucid``, seed 0:
the duration model's three weekly trainings (on ~5,700, 12,700 and 18,900 finished jobs; the
schedule follows the estimates, so each variant learns from the jobs its own run finished) and
the MAE of the run's 23,859 estimates:

=========================================  ==============  =======  =========  ===========
settings                                   CPU-s (3 fits)  MAE (s)  med. rel.  avg JCT (s)
=========================================  ==============  =======  =========  ===========
``--boosting interpret`` (the former)      15.6            9,936    0.743      13,094
:data:`FAST_BOOSTING` (``fast``)           0.38            9,601    0.732      13,091
… but ``outer_bags=2``                     0.62            9,599    0.736      13,085
… but ``learning_rate=0.04``               0.45            9,538    0.732      13,087
… but ``max_bins=1024``                    0.53            9,769    0.737      13,063
… but ``early_stopping_rounds=100``        0.51            9,679    0.731      13,092
… but ``smoothing_rounds=500``             0.74            9,734    0.732      13,091
… but ``early_stopping_tolerance=1e-5``    0.75            9,680    0.730      13,090
=========================================  ==============  =======  =========  ===========

Held out, on the same sets (``lucid-sim explain``: trained on the first 80 % of jobs, tested on
the rest; seeds 0, 1, 2): the duration model's MAE 7,399 / 7,469 / 7,466 s with ``fast``,
7,849 / 7,898 / 7,792 s with ``interpret``; the throughput forecast's (trained once on the
22,000 bins of the cluster's log before the trace) 17.05 / 17.04 / 17.03 submissions an hour,
17.11 / 17.22 / 17.08 with ``interpret``; fitting the whole log (26,053 bins) takes
0.24 CPU-s, 3.8 with ``interpret``.  On a longer trace the tolerance matters most: Philly
(82,229 jobs, 15 weeks; qssf ``--estimator ebm``, seven trainings on up to 80,147 jobs)
trains in 3.4 CPU-s with it, 19.0 without, for an MAE of 16,051 s against 16,583.

- ``outer_bags=1`` (default 14; ours was 2): bagging averages models fitted on resamples,
  for smoother curves on small data; with thousands of rows it doubles the cost for nothing.
- ``learning_rate=0.1`` (default 0.04): the same fit in fewer rounds.
- ``max_bins=64`` (default 1024): the continuous features (GPU count, hour, a user's recent
  mean log duration; recent submissions) need no finer curves; finer ones cost more per
  round and over-fit (the MAE above grows with them).
- ``smoothing_rounds=50`` (default 500), ``early_stopping_rounds=30`` (default 100) and
  ``early_stopping_tolerance=1e-3`` (default 1e-5): fewer rounds of random splits before
  greedy boosting, and a stop once 30 rounds have not improved the validation loss by
  0.1 %.  Boosting on the log scale past that point chases noise: the MAE of the durations
  themselves gets worse, not better (Philly's models ran 17,000–28,000 rounds without it).

The packing model keeps its own settings (``packing._fit``): a few dozen configurations fit
in ~0.1–0.5 CPU-s, and other settings would change its scores.

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
