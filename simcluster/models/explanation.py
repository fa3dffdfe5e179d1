"""What a main-effects EBM learned: term importances and the shape functions of its top terms."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.atomic import atomic_write


@dataclass
class Shape:
    """One term's shape function: its score (per class for a classifier) in each bin or category."""

    term: str
    nominal: bool
    bins: list[Any]  # categories, or bin edges (one more than scores)
    scores: np.ndarray  # (bins,) or (bins, classes)


def term_importances(ebm: Any) -> pd.DataFrame:
    """``term, importance`` (mean absolute score over the training data), most important first."""
    frame = pd.DataFrame({"term": list(ebm.term_names_), "importance": np.asarray(ebm.term_importances(), float)})
    return frame.sort_values("importance", ascending=False, kind="stable").reset_index(drop=True)


def top_shapes(ebm: Any, top: int = 3) -> list[Shape]:
    """Shape functions of the ``top`` most important terms."""
    explanation = ebm.explain_global()
    names = list(ebm.term_names_)
    shapes = []
    for term in term_importances(ebm)["term"].head(top):
        data = explanation.data(names.index(term))
        nominal = ebm.feature_types_in_[names.index(term)] == "nominal"
        shapes.append(Shape(term, nominal, list(data["names"]), np.asarray(data["scores"], float)))
    return shapes


def plot_shape(shape: Shape, path: Path, title: str, class_names: list[str] | None = None,
               size: tuple[float, float] = (6.4, 4.0), dpi: int = 100) -> Path:
    """Draw one shape function as a PNG (atomically): steps for a continuous term, bars for a nominal one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=size, dpi=dpi)
    scores = shape.scores if shape.scores.ndim == 2 else shape.scores[:, None]
    labels: list[str | None] = [None] if scores.shape[1] == 1 else [f"class {i}" for i in range(scores.shape[1])]
    if class_names:
        labels = list(class_names)
    if shape.nominal:
        order = np.argsort(-np.abs(scores).max(axis=1))[:25]  # the 25 categories that matter most
        x = np.arange(len(order))
        width = 0.8 / scores.shape[1]
        for k in range(scores.shape[1]):
            ax.bar(x + k * width, scores[order, k], width, label=labels[k])
        ax.set_xticks(x + 0.4 - width / 2, [str(shape.bins[i]) for i in order], rotation=60, ha="right", fontsize=7)
    else:
        edges = np.asarray(shape.bins, float)
        for k in range(scores.shape[1]):
            ax.step(edges[:-1], scores[:, k], where="post", label=labels[k])
        ax.set_xlabel(shape.term)
    ax.axhline(0, color="grey", linewidth=0.5)
    ax.set_ylabel("contribution to the prediction")
    ax.set_title(title)
    if scores.shape[1] > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        return atomic_write(path, lambda handle: fig.savefig(handle, format="png"))
    finally:
        plt.close(fig)
