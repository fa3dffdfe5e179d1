"""Lucid's Packing Analyze Model: from a job's profile to how well it shares a GPU (ASPLOS'23 §4.2).

Labels come from the colocation tables, not from people: a configuration's
mean speed over every measured pair it took part in (both sides of the pair
table) below ``thresholds[0]`` (0.85) makes it 2 "shares badly", below
``thresholds[1]`` (0.95) 1, else 0 "shares well".  An Explainable Boosting
classifier learns the label from the profile a short profiling run yields —
GPU utilization, memory-bandwidth utilization, memory, AMP, batch size and
model — so a configuration never measured in pairs still gets a score, and
a person can read which part of the profile drives it.

>>> import pandas as pd
>>> pair = pd.DataFrame({"model1": ["A", "A"], "dataset1": "d", "batchsize1": 32, "amp1": 0, "gpu_num1": 1,
...     "model2": ["B", "C"], "dataset2": "d", "batchsize2": 32, "amp2": 0, "gpu_num2": 1,
...     "speed1": [0.8, 0.84], "speed2": [0.99, 0.9]})
>>> sharing_labels(pair).to_dict("records")[0]
{'model': 'A', 'dataset': 'd', 'batchsize': 32, 'amp': 0, 'gpu_num': 1, 'mean_speed': 0.82, 'pairs': 2, 'label': 2}
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from simcluster.colocation.schema import SINGLE_KEY
from simcluster.job import Workload
from simcluster.models.additive import AdditivePredictor

FEATURES = ["gpu_util", "gmem_util", "gmem", "amp", "batchsize", "model"]
FEATURE_TYPES = ["continuous", "continuous", "continuous", "nominal", "continuous", "nominal"]
CLASS_NAMES = ["0 shares well", "1 some slowdown", "2 shares badly"]
DEFAULT_THRESHOLDS = (0.85, 0.95)


def sharing_labels(pair: pd.DataFrame, thresholds: tuple[float, float] = DEFAULT_THRESHOLDS) -> pd.DataFrame:
    """Per configuration (the single table's key): its mean speed when sharing, its pair count and its label."""
    sides = []
    for i in (1, 2):
        side = pair[[f"{k}{i}" for k in SINGLE_KEY] + [f"speed{i}"]]
        sides.append(side.set_axis([*SINGLE_KEY, "speed"], axis=1))
    both = pd.concat(sides, ignore_index=True).dropna(subset=["speed"])
    grouped = both.groupby(SINGLE_KEY, sort=True)["speed"].agg(mean_speed="mean", pairs="size").reset_index()
    low, mid = thresholds
    grouped["mean_speed"] = grouped["mean_speed"].round(6)
    grouped["label"] = np.where(grouped["mean_speed"] < low, 2, np.where(grouped["mean_speed"] < mid, 1, 0))
    return grouped


def _fit(rows: pd.DataFrame, labels: np.ndarray, seed: int) -> Any:
    from interpret.glassbox import ExplainableBoostingClassifier  # heavy import, only when used

    # a few dozen configurations: small leaves and coarse bins (held-out accuracy 0.50 → 0.63 on Lucid's table)
    model = ExplainableBoostingClassifier(feature_types=FEATURE_TYPES, interactions=0, outer_bags=2, n_jobs=1,
                                          min_samples_leaf=2, max_bins=32, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # missing utilization of CPU-profiled rows is expected
        model.fit(rows[FEATURES], labels)
    return model


class PackingModel:
    """Sharing score 0/1/2 of any job from its profile, learned from the colocation tables.

    ``colocation`` is a :class:`~simcluster.colocation.model.ColocationModel`: its measured
    single and pair tables train the classifier, and its single-job lookups (which never fail)
    give the profile of a job to score.
    """

    def __init__(self, colocation: Any, thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS, seed: int = 0) -> None:
        self.colocation = colocation
        self.thresholds: tuple[float, float] = (float(thresholds[0]), float(thresholds[1]))
        self.seed = seed
        labels = sharing_labels(colocation.pair, self.thresholds)
        self.data = labels.merge(colocation.single[SINGLE_KEY + ["gpu_util", "gmem_util", "gmem"]],
                                 on=SINGLE_KEY, how="inner")
        self.classes = sorted(set(self.data["label"]))
        self.model: Any = None
        self._predict: AdditivePredictor | None = None
        if len(self.classes) > 1:
            self.model = _fit(self.data, self.data["label"].to_numpy(), seed)
            self._predict = AdditivePredictor(self.model)
        self._cache: dict[tuple[Workload, int], int] = {}

    def profile(self, workload: Workload, gpus: int, memory: float = 0.0) -> dict[str, Any]:
        """What profiling a job yields: utilization, memory-bandwidth utilization, memory, AMP, batch size, model."""
        c = self.colocation
        return {"gpu_util": c.solo_util(workload, gpus), "gmem_util": c.solo_mem_util(workload, gpus),
                "gmem": memory or c.memory_mib(workload, gpus), "amp": int(workload.amp),
                "batchsize": int(workload.batchsize), "model": workload.model}

    def score(self, workload: Workload, gpus: int, memory: float = 0.0) -> int:
        """0 (shares well), 1 or 2 (shares badly)."""
        key = (workload, gpus)
        cached = self._cache.get(key)
        if cached is None:
            if self.model is None:  # every measured configuration got one label (or none was measured)
                cached = self.classes[0] if self.classes else 0
            else:  # the model's own answer, read from its tables (model.predict costs ~5 ms of pandas a call)
                profile = self.profile(workload, gpus, memory)
                # (self._predict is set together with self.model)
                cached = int(self._predict.classify([profile[f] for f in FEATURES]))  # type: ignore[union-attr]
            self._cache[key] = cached
        return cached

    def evaluate_for(self, colocation_spec: str) -> dict[str, Any]:
        """:meth:`evaluate`, against the authors' labels too when the tables are Lucid's (``--colocation lucid``)."""
        authors = None
        if colocation_spec == "lucid":
            from simcluster.colocation.importers import read_lucid_labels

            authors = read_lucid_labels()
        return {"colocation": self.colocation.source, **self.evaluate(authors=authors)}

    def evaluate(self, folds: int = 5, authors: pd.DataFrame | None = None) -> dict[str, Any]:
        """Accuracy on held-out configurations (stratified k-fold), against our labels and the authors'.

        ``authors``: a table with the single key and ``label`` (Lucid's ``single_data.csv``); the
        held-out configurations that it labels are compared with it too.
        """
        from sklearn.model_selection import StratifiedKFold

        data = self.data
        report: dict[str, Any] = {"configurations": len(data), "labels": data["label"].value_counts().sort_index()
                                  .to_dict(), "thresholds": list(self.thresholds)}
        counts = data["label"].value_counts()
        k = min(folds, int(counts.min())) if len(counts) > 1 else 0
        if k < 2:
            report["note"] = "too few configurations per label for a held-out accuracy"
            return report
        predicted = np.empty(len(data), dtype=np.int64)
        for train, test in StratifiedKFold(k, shuffle=True, random_state=self.seed).split(data, data["label"]):
            model = _fit(data.iloc[train], data["label"].to_numpy()[train], self.seed)
            predicted[test] = model.predict(data.iloc[test][FEATURES])
        report["folds"] = k
        report["accuracy"] = float((predicted == data["label"].to_numpy()).mean())
        if authors is not None:
            joined = data.assign(predicted=predicted).merge(
                authors[SINGLE_KEY + ["label"]].rename(columns={"label": "authors_label"}), on=SINGLE_KEY)
            if len(joined):
                report["accuracy_vs_authors"] = float((joined["predicted"] == joined["authors_label"]).mean())
                report["our_labels_vs_authors"] = float((joined["label"] == joined["authors_label"]).mean())
                report["compared_with_authors"] = len(joined)
        return report
