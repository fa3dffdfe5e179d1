"""Sharing scores given by people instead of learned: a labels file such as the Lucid authors' ``single_data.csv``.

The Lucid artifact does not run its Packing Analyze Model inside the simulation; it reads the
authors' ``label`` column (0 shares well … 2 shares badly) per workload configuration — model,
dataset, batch size, AMP, whatever the GPU count.  :class:`LabelledScores` answers like
:class:`~simcluster.models.packing.PackingModel` from such a file; a workload it does not list
has no score (``None``), so the policy never pairs it.  ``--sharing-labels lucid`` names the
authors' own file in the shared data (``profiles/lucid_rtx3090/single_data.csv``).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "labels.csv"
>>> _ = path.write_text("model,dataset,batchsize,amp,label\\nResNet18,CIFAR-10,64,1,0\\n")
>>> scores = LabelledScores(path)
>>> scores.score(Workload("ResNet18", "CIFAR-10", 64, 1), gpus=4), scores.score(Workload("BERT", "SQuAD", 32, 0), 1)
(0, None)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from simcluster.job import Workload
from simcluster.side_files import read_side_csv, reject_first

KEY = ("model", "dataset", "batchsize", "amp")
AUTHORS = "lucid"  # the name that stands for the Lucid authors' labels in the shared data


def read_sharing_labels(path: str | Path) -> dict[Workload, int]:
    """{workload: label} of a CSV with ``model,dataset,batchsize,amp,label``; labels must be 0, 1 or 2."""
    frame = read_side_csv(path, "sharing labels file", (*KEY, "label"))
    numbers = {c: pd.to_numeric(frame[c], errors="coerce") for c in ("batchsize", "amp", "label")}
    for column, values in numbers.items():
        reject_first(path, frame, column, values.isna() | (values % 1 != 0), "not an integer")
    reject_first(path, frame, "label", ~numbers["label"].isin([0, 1, 2]), "not a label 0, 1 or 2")
    labels: dict[Workload, int] = {}
    for model, dataset, batch, amp, label in zip(frame["model"], frame["dataset"], numbers["batchsize"],
                                                 numbers["amp"], numbers["label"]):
        labels.setdefault(Workload(model, dataset, int(batch), int(amp)), int(label))
    return labels


class LabelledScores:
    """Sharing score 0/1/2 of a job looked up in a labels file (``--sharing-labels``)."""

    model: Any = None  # nothing learned: no terms to report

    def __init__(self, path: str | Path) -> None:
        if str(path) == AUTHORS:
            from simcluster.colocation.importers import lucid_dir

            path = lucid_dir() / "single_data.csv"
        self.path = str(path)
        self.labels = read_sharing_labels(path)
        self.unlabelled: set[Workload] = set()

    def score(self, workload: Workload, gpus: int, memory: float = 0.0) -> int | None:
        label = self.labels.get(workload)
        if label is None:
            self.unlabelled.add(workload)
        return label

    def top_terms(self, top: int = 3) -> list[str]:
        """Nothing learned, so no terms."""
        return []

    def evaluate_for(self, colocation_spec: str) -> dict[str, Any]:
        return {"labels_file": self.path, "configurations": len(self.labels),
                "unlabelled_workloads": len(self.unlabelled)}
