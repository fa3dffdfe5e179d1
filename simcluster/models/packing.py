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


# a few dozen configurations: small leaves and coarse bins (held-out accuracy 0.50 → 0.63 on Lucid's table)
SETTINGS: dict[str, Any] = {"interactions": 0, "outer_bags": 2, "n_jobs": 1, "min_samples_leaf": 2, "max_bins": 32}


def _fit(rows: pd.DataFrame, labels: np.ndarray, seed: int) -> Any:
    from interpret.glassbox import ExplainableBoostingClassifier  # heavy import, only when used

    model = ExplainableBoostingClassifier(feature_types=FEATURE_TYPES, random_state=seed, **SETTINGS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # missing utilization of CPU-profiled rows is expected
        model.fit(rows[FEATURES], labels)
    return model


class PackingModel:
    """Sharing score 0/1/2 of any job from its profile, learned from the colocation tables.

    ``colocation`` is a :class:`~simcluster.colocation.model.ColocationModel`: its measured
    single and pair tables train the classifier, and its single-job lookups (which never fail)
    give the profile of a job to score.  ``cached``: train once per set of tables and keep what a
    run reads of the classifier (:mod:`simcluster.models.cache`), as the paper trains it offline;
    ``model`` (the EBM itself) is then None where the cache answered, and the scores, top terms and
    held-out accuracy are the fitted classifier's all the same.
    """

    def __init__(self, colocation: Any, thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS, seed: int = 0,
                 cached: bool = False) -> None:
        self.colocation = colocation
        self.thresholds: tuple[float, float] = (float(thresholds[0]), float(thresholds[1]))
        self.seed = seed
        labels = sharing_labels(colocation.pair, self.thresholds)
        self.data = labels.merge(colocation.single[SINGLE_KEY + ["gpu_util", "gmem_util", "gmem"]],
                                 on=SINGLE_KEY, how="inner")
        self.classes = sorted(set(self.data["label"]))
        self.model: Any = None
        self._predict: AdditivePredictor | None = None
        self._importances: list[tuple[str, float]] = []  # (term, importance), most important first
        self._key = self._cache_key() if cached else None
        if len(self.classes) > 1 and not self._load():
            self.model = _fit(self.data, self.data["label"].to_numpy(), seed)
            self._predict = AdditivePredictor(self.model)
            from simcluster.models.explanation import term_importances

            self._importances = list(term_importances(self.model).itertuples(index=False, name=None))
            self._store()
        self._cache: dict[tuple[Workload, int], int] = {}

    def _cache_key(self) -> str:
        from simcluster.models.cache import digest

        rows = self.data[[*FEATURES, "label"]]
        return digest("packing", {"rows": rows.to_csv(index=False), "dtypes": [str(t) for t in rows.dtypes],
                                  "types": FEATURE_TYPES, "settings": SETTINGS, "seed": self.seed})

    def _load(self) -> bool:
        """Take the classifier's tables from the cache; False where it has none (or is off)."""
        if self._key is None:
            return False
        from simcluster.models.cache import read_entry

        entry = read_entry("packing", self._key)
        try:
            self._predict = AdditivePredictor.from_tables(entry["predictor"])  # type: ignore[index]
            self._importances = [(str(term), float(value)) for term, value in entry["importances"]]  # type: ignore
        except (TypeError, KeyError, ValueError):
            self._predict, self._importances = None, []
            return False
        return True

    def _store(self) -> None:
        if self._key is not None and self._predict is not None:
            from simcluster.models.cache import write_entry

            write_entry("packing", self._key, {"predictor": self._predict.tables(),
                                               "importances": [[t, float(v)] for t, v in self._importances]})

    def top_terms(self, top: int = 3) -> list[str]:
        """The ``top`` most important terms (mean absolute score over the training data), most important first."""
        return [term for term, _ in self._importances[:top]]

    def profile(self, workload: Workload, gpus: int, memory: float = 0.0) -> dict[str, Any]:
        """What profiling a job yields: utilization, memory-bandwidth utilization, memory, AMP, batch size, model."""
        c = self.colocation
        return {"gpu_util": c.solo_util(workload, gpus), "gmem_util": c.solo_mem_util(workload, gpus),
                "gmem": memory or c.memory_mib(workload, gpus), "amp": int(workload.amp),
                "batchsize": int(workload.batchsize), "model": workload.model}

    def score(self, workload: Workload, gpus: int, memory: float = 0.0) -> int:
        """0 (shares well), 1 or 2 (shares badly)."""
        key = (workload, gpus, memory)  # (the memory is a feature of the profile it is read from)
        cached = self._cache.get(key)
        if cached is None:
            if self._predict is None:  # every measured configuration got one label (or none was measured)
                cached = self.classes[0] if self.classes else 0
            else:  # the model's own answer, read from its tables (model.predict costs ~5 ms of pandas a call)
                profile = self.profile(workload, gpus, memory)
                cached = int(self._predict.classify([profile[f] for f in FEATURES]))
            self._cache[key] = cached
        return cached

    def evaluate_for(self, colocation_spec: str) -> dict[str, Any]:
        """:meth:`evaluate`, against the authors' labels too when the tables are Lucid's (``--colocation lucid``)."""
        authors = None
        if colocation_spec == "lucid":
            from simcluster.colocation.importers import read_lucid_labels

            authors = read_lucid_labels()
        return {"colocation": self.colocation.source, **self._evaluation(authors)}

    def _evaluation(self, authors: pd.DataFrame | None) -> dict[str, Any]:
        """:meth:`evaluate`'s report, from the cache where the classifier came from it (five more fits)."""
        if self._key is None:
            return self.evaluate(authors=authors)
        from simcluster.models.cache import digest, read_entry, write_entry

        key = digest("packing-evaluation", {"model": self._key, "authors": None if authors is None else
                                            authors[SINGLE_KEY + ["label"]].to_csv(index=False)})
        entry = read_entry("packing-evaluation", key)
        report = entry.get("report") if entry is not None else None
        if isinstance(report, dict) and isinstance(report.get("labels"), list):  # (JSON's keys are strings)
            return {k: {int(c): int(n) for c, n in v} if k == "labels" else v for k, v in report.items()}
        report = self.evaluate(authors=authors)
        write_entry("packing-evaluation", key, {"report": {
            k: [[int(c), int(n)] for c, n in v.items()] if k == "labels" else v for k, v in report.items()}})
        return report

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
