"""The report's plots, as PNG bytes of a fixed pixel size (matplotlib's Agg canvas: no display, no pyplot).

Every function takes plain data (series name → arrays) and returns the PNG;
:mod:`simcluster.experiments.report` gathers the data from run folders.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

WIDTH, HEIGHT, DPI = 960, 540, 100  # pixels of every plot


def _figure() -> tuple[Figure, Axes]:
    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)  # no bbox_inches: the size stays WIDTH × HEIGHT
    return buffer.getvalue()


def jct_cdf(series: Mapping[str, np.ndarray]) -> bytes:
    """Empirical CDF of job completion times, one line per series, log-scaled time axis."""
    fig, ax = _figure()
    for name, jct in series.items():
        values = np.sort(np.maximum(np.asarray(jct, dtype=float), 1.0))  # log axis: at least 1 s
        if len(values):
            ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.01)
    ax.set_title("JCT CDF per policy")
    ax.grid(True, which="major", alpha=0.3)
    if series:
        ax.legend(loc="lower right", fontsize="small")
    return _png(fig)


def queue_by_vc(values: Mapping[str, Mapping[str, float]], vcs: Sequence[str]) -> bytes:
    """Average queueing delay per VC (groups), one bar per series within each group."""
    fig, ax = _figure()
    n = max(len(values), 1)
    x = np.arange(len(vcs))
    width = 0.8 / n
    for i, (name, per_vc) in enumerate(values.items()):
        ax.bar(x + (i - (n - 1) / 2) * width, [per_vc.get(vc, 0.0) for vc in vcs], width, label=name)
    ax.set_xticks(x, list(vcs), rotation=45 if len(vcs) > 6 else 0, ha="right" if len(vcs) > 6 else "center",
                  fontsize="small")
    ax.set_ylabel("average queueing delay (s)")
    ax.set_title("Queueing delay per VC per policy")
    ax.grid(True, axis="y", alpha=0.3)
    if values:
        ax.legend(fontsize="small")
    return _png(fig)


def over_time(series: Mapping[str, tuple[np.ndarray, np.ndarray]], ylabel: str, title: str,
              percent: bool = False) -> bytes:
    """Lines of (days since the first submission, value) per series."""
    fig, ax = _figure()
    for name, (days, value) in series.items():
        ax.plot(days, value * 100 if percent else value, label=name, linewidth=1.2)
    ax.set_xlabel("simulated time (days)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if percent:
        ax.set_ylim(0, 100)
    ax.grid(True, alpha=0.3)
    if series:
        ax.legend(fontsize="small")
    return _png(fig)


def binned_mean(time: np.ndarray, value: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-weighted mean of a step function (``value[i]`` from ``time[i]`` to ``time[i+1]``) in each bin.

    >>> binned_mean(np.array([0.0, 10.0]), np.array([1.0, 3.0]), np.array([0.0, 10.0, 20.0]))
    array([1., 3.])
    """
    time, value = np.asarray(time, dtype=float), np.asarray(value, dtype=float)
    if not len(time):
        return np.zeros(len(edges) - 1)
    area = np.concatenate([[0.0], np.cumsum(value[:-1] * np.diff(time))])

    def integral(at: np.ndarray) -> np.ndarray:
        k = np.searchsorted(time, at, side="right") - 1
        inside = k >= 0
        out = np.zeros(len(at))
        out[inside] = area[k[inside]] + value[k[inside]] * (at[inside] - time[k[inside]])
        return out

    return np.diff(integral(edges)) / np.maximum(np.diff(edges), 1e-12)
