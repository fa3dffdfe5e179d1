"""Fast single-row predictions of a main-effects EBM.

An Explainable Boosting Machine without interactions is additive: its
prediction is an intercept plus one score per feature, read from the bin the
feature's value falls in.  ``ebm.predict`` pays about a millisecond of pandas
and validation per call; a policy that estimates one job at a time (tens of
thousands of calls per run) reads the same tables directly instead.  A
classifier's scores are logits, one per class (a single one for two classes):
:meth:`AdditivePredictor.classify` picks the class ``ebm.predict`` would.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np


class AdditivePredictor:
    """``predict(row)`` == ``ebm.predict([row])[0]`` for a regressor (on the model's own scale).

    Only for EBMs whose terms are the single features in order (``interactions=0``).
    """

    def __init__(self, ebm: Any) -> None:
        if any(len(t) != 1 or t[0] != i for i, t in enumerate(ebm.term_features_)):
            raise ValueError("AdditivePredictor needs an EBM of main effects only (interactions=0)")
        intercept = np.asarray(ebm.intercept_, dtype=float).ravel()
        self.classes = list(getattr(ebm, "classes_", [])) or None  # a classifier's labels
        self._multiclass = len(intercept) > 1
        self.intercept: Any = intercept if self._multiclass else float(intercept[0])
        self._lookups: list[tuple[bool, Any, list[Any]]] = []
        for i, kind in enumerate(ebm.feature_types_in_):
            bins, table = ebm.bins_[i][0], np.asarray(ebm.term_scores_[i], dtype=float)
            scores = list(table) if self._multiclass else [float(s) for s in table.ravel()]
            self._lookups.append((kind == "nominal", bins if isinstance(bins, dict) else list(bins), scores))

    def predict(self, row: Sequence[Any]) -> Any:
        """The model's score of ``row``: a float, or a classifier's logits per class (three or more classes)."""
        total = self.intercept.copy() if self._multiclass else self.intercept
        for value, (nominal, bins, scores) in zip(row, self._lookups):
            if nominal:
                total += scores[bins.get(str(value), len(scores) - 1)]
            elif value is None or (isinstance(value, float) and math.isnan(value)):
                total += scores[0]
            else:
                total += scores[1 + bisect_right(bins, value)]
        return total

    def classify(self, row: Sequence[Any]) -> Any:
        """The class a classifier's ``ebm.predict([row])[0]`` gives: the highest logit (two classes: above 0)."""
        if self.classes is None:
            raise ValueError("classify needs an EBM classifier")
        score = self.predict(row)
        return self.classes[int(np.argmax(score))] if self._multiclass else self.classes[int(score > 0)]
