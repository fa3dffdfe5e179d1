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

    def tables(self) -> dict[str, Any]:
        """What a prediction reads, as plain lists and dicts (JSON keeps every float exactly):
        :meth:`from_tables` makes the same predictor again without the EBM, or InterpretML loaded."""
        def plain(scores: list[Any]) -> list[Any]:
            return [[float(x) for x in s] for s in scores] if self._multiclass else scores

        intercept = [float(x) for x in self.intercept] if self._multiclass else [self.intercept]
        classes = None if self.classes is None else [c.item() if hasattr(c, "item") else c for c in self.classes]
        terms = [{"nominal": nominal, "bins": {k: int(v) for k, v in bins.items()} if nominal else
                  [float(b) for b in bins], "scores": plain(scores)} for nominal, bins, scores in self._lookups]
        return {"intercept": intercept, "classes": classes, "terms": terms}

    @classmethod
    def from_tables(cls, tables: dict[str, Any]) -> AdditivePredictor:
        """The predictor whose :meth:`tables` these are.

        >>> tables = {"intercept": [0.5], "classes": None,
        ...           "terms": [{"nominal": False, "bins": [10.0], "scores": [0.0, -1.0, 1.0]}]}
        >>> fast = AdditivePredictor.from_tables(tables)
        >>> fast.predict([3]), fast.predict([12]), fast.predict([float("nan")]), fast.tables() == tables
        (-0.5, 1.5, 0.5, True)
        """
        self = cls.__new__(cls)
        intercept = tables["intercept"]
        self.classes = tables["classes"]
        self._multiclass = len(intercept) > 1
        self.intercept = np.asarray(intercept, dtype=float) if self._multiclass else float(intercept[0])
        self._lookups = []
        for term in tables["terms"]:
            scores = term["scores"]
            if self._multiclass:
                scores = [np.asarray(s, dtype=float) for s in scores]
            self._lookups.append((term["nominal"], term["bins"], scores))
        return self

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
