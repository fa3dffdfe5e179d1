"""Fast single-row predictions of a main-effects EBM.

An Explainable Boosting Machine without interactions is additive: its
prediction is an intercept plus one score per feature, read from the bin the
feature's value falls in.  ``ebm.predict`` pays about a millisecond of pandas
and validation per call; a policy that estimates one job at a time (tens of
thousands of calls per run) reads the same tables directly instead.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np


class AdditivePredictor:
    """``predict(row)`` == ``ebm.predict([row])[0]`` (regression: on the model's own scale).

    Only for EBMs whose terms are the single features in order (``interactions=0``).
    """

    def __init__(self, ebm: Any) -> None:
        if any(len(t) != 1 or t[0] != i for i, t in enumerate(ebm.term_features_)):
            raise ValueError("AdditivePredictor needs an EBM of main effects only (interactions=0)")
        self.intercept = float(np.asarray(ebm.intercept_).ravel()[0])
        self._lookups: list[tuple[bool, Any, list[float]]] = []
        for i, kind in enumerate(ebm.feature_types_in_):
            bins, scores = ebm.bins_[i][0], [float(s) for s in np.asarray(ebm.term_scores_[i]).ravel()]
            self._lookups.append((kind == "nominal", bins if isinstance(bins, dict) else list(bins), scores))

    def predict(self, row: Sequence[Any]) -> float:
        total = self.intercept
        for value, (nominal, bins, scores) in zip(row, self._lookups):
            if nominal:
                total += scores[bins.get(str(value), len(scores) - 1)]
            elif value is None or (isinstance(value, float) and math.isnan(value)):
                total += scores[0]
            else:
                total += scores[1 + bisect_right(bins, value)]
        return total
