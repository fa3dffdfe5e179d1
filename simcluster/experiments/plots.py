"""The report's plots, as PNG bytes of a fixed pixel size (matplotlib's Agg canvas: no display, no pyplot).

Every function takes plain data (series name → arrays) and returns the PNG;
:mod:`simcluster.experiments.report` gathers the data from run folders.  Where a series is
several runs of one configuration, bars carry error bars (low, high) and lines a band; what they are (a 95 %
interval over replicas, a min–max over seeds) the caller says in the title.
"""

from __future__ import annotations

import textwrap
import zlib
from collections.abc import Mapping, Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from simcluster.canvas import DPI, HEIGHT, WIDTH, new_figure, png_bytes


def jct_cdf(series: Mapping[str, np.ndarray], title: str = "JCT CDF per policy",
            xlabel: str = "job completion time (s, log scale)") -> bytes:
    """Empirical CDF of job completion times (or another time, ``xlabel``), one line per series, log-scaled
    time axis."""
    fig, ax = new_figure()
    for name, jct in series.items():
        values = np.sort(np.maximum(np.asarray(jct, dtype=float), 1.0))  # log axis: at least 1 s
        if len(values):
            ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post", label=name)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.01)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    if series:
        ax.legend(loc="lower right", fontsize="small")
    return png_bytes(fig)


Spread = tuple[float, float, float]  # mean, low, high: the error bar's ends (an interval, or min and max)


def _bar(ax: Axes, x: np.ndarray, spreads: Sequence[Spread], width: float, label: str | None = None,
         horizontal: bool = False, color: str | None = None) -> matplotlib.container.BarContainer:
    """Bars at the means, with error bars from low to high where they differ from the mean."""
    mean = np.nan_to_num(np.array([s[0] for s in spreads], dtype=float))
    low = np.nan_to_num(mean - np.array([s[1] for s in spreads], dtype=float)).clip(0)
    high = np.nan_to_num(np.array([s[2] for s in spreads], dtype=float) - mean).clip(0)
    errors = np.vstack([low, high]) if (low.any() or high.any()) else None
    if horizontal:
        return ax.barh(x, mean, width, label=label, xerr=errors, capsize=3, color=color)
    return ax.bar(x, mean, width, label=label, yerr=errors, capsize=3, color=color)


BarPanel = tuple[str, Sequence[tuple[str, str]], Mapping[str, Mapping[str, Spread]]]  # see grouped_shares
MAX_LABELLED_BARS = 16  # more bars in a panel than this: no value written over each


def grouped_shares(panels: Sequence[BarPanel], title: str) -> bytes:
    """Shares as grouped bars in percent, the panels side by side: each panel (its y label, its groups left to
    right as (key, name shown), series name → group key → (mean, low, high)) has one bar per series in each group,
    error bars low–high; a series without a group's key draws no bar there.  A series keeps its colour across
    panels; the legend, once, is below them.  Each bar carries its value (a share of 0 draws no bar but says 0 %)
    where a panel has at most :data:`MAX_LABELLED_BARS`."""
    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    widths = [max(len(groups), 1.5) for _, groups, _ in panels] or [1]
    axes = fig.subplots(1, max(len(panels), 1), squeeze=False, width_ratios=widths)[0]
    names = list(dict.fromkeys(name for _, _, series in panels for name in series))
    n = max(len(names), 1)
    width = 0.8 / n
    for ax, (ylabel, groups, series) in zip(axes, panels, strict=False):
        keys = {key for key, _ in groups}
        labelled = sum(len(keys & set(by_group)) for by_group in series.values()) <= MAX_LABELLED_BARS
        for i, name in enumerate(names):
            drawn = [(k, series[name][key]) for k, (key, _) in enumerate(groups)
                     if key in series.get(name, {}) and np.isfinite(series[name][key][0])]
            if drawn:
                x = np.array([k for k, _ in drawn], dtype=float) + (i - (n - 1) / 2) * width
                bars = _bar(ax, x, [tuple(100 * v for v in spread) for _, spread in drawn], width,
                            color=f"C{i % 10}")
                if labelled:
                    ax.bar_label(bars, labels=[f"{100 * spread[0]:.3g} %" for _, spread in drawn],
                                 fontsize="x-small", padding=2)
        ax.set_xticks(np.arange(len(groups)), [shown for _, shown in groups], fontsize="small")
        ax.set_xlim(-0.6, len(groups) - 0.4)
        ax.set_ylim(bottom=0)
        ax.set_ylabel(ylabel, fontsize="small")
        ax.grid(True, axis="y", alpha=0.3)
    if names:
        labels = [wrapped_label(name, 100) for name in names]
        handles = [matplotlib.patches.Patch(color=f"C{i % 10}", label=label) for i, label in enumerate(labels)]
        widest = max(len(line) for label in labels for line in label.splitlines())
        across = max(1, min(len(names), 3, 120 // widest))  # columns that fit the width
        fig.legend(handles=handles, loc="outside lower center", ncols=across, fontsize="small")
    fig.suptitle(title, fontsize="medium")
    return png_bytes(fig)


def queue_by_vc(values: Mapping[str, Mapping[str, Spread]], vcs: Sequence[str],
                title: str = "Queueing delay per VC per configuration") -> bytes:
    """Average queueing delay per VC (groups), one bar per series within each group (error bars low–high)."""
    fig, ax = new_figure()
    n = max(len(values), 1)
    x = np.arange(len(vcs))
    width = 0.8 / n
    for i, (name, per_vc) in enumerate(values.items()):
        _bar(ax, x + (i - (n - 1) / 2) * width, [per_vc.get(vc, (0.0, 0.0, 0.0)) for vc in vcs], width, name)
    ax.set_xticks(x, list(vcs), rotation=45 if len(vcs) > 6 else 0, ha="right" if len(vcs) > 6 else "center",
                  fontsize="small")
    ax.set_ylabel("average queueing delay (s)")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, axis="y", alpha=0.3)
    if values:
        ax.legend(fontsize="small")
    return png_bytes(fig)


def wrapped_label(name: str, width: int = 40) -> str:
    """A series' name in lines of at most ``width`` characters (at spaces), so that a long configuration label
    (settings, a topology file's path) leaves the plot its room.

    >>> wrapped_label("fifo placement=random topology=/a/long/path.csv", 25)
    'fifo placement=random\\ntopology=/a/long/path.csv'
    """
    return "\n".join(textwrap.wrap(name, width, break_long_words=False, break_on_hyphens=False)) or name


def figure_bars(values: Mapping[str, Spread], xlabel: str, title: str) -> bytes:
    """One horizontal bar per series (its mean, error bars low–high), first series on top."""
    fig, ax = new_figure()
    y = np.arange(len(values))[::-1]
    _bar(ax, y, list(values.values()), 0.7, horizontal=True)
    ax.set_yticks(y, [wrapped_label(name) for name in values], fontsize="small")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    return png_bytes(fig)


def over_time(series: Mapping[str, tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                         np.ndarray]],
              ylabel: str, title: str, percent: bool = False) -> bytes:
    """Lines of (days since the first submission, value) per series; (days, mean, min, max) adds a band."""
    fig, ax = new_figure()
    scale = 100 if percent else 1
    for name, line in series.items():
        days, value = line[0], line[1]
        (drawn,) = ax.plot(days, value * scale, label=name, linewidth=1.2)
        if len(line) == 4 and np.any(line[3] > line[2]):
            ax.fill_between(days, line[2] * scale, line[3] * scale, color=drawn.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel("simulated time (days)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if percent:
        ax.set_ylim(0, 100)
    ax.grid(True, alpha=0.3)
    if series:
        ax.legend(fontsize="small")
    return png_bytes(fig)


def gantt(rows: Sequence[str], gpus: Sequence[int], bars: pd.DataFrame, title: str,
          hours: tuple[float, float] | None = None) -> bytes:
    """Jobs on GPUs: a band per node (``rows``, top first; ``gpus`` its GPU count), a bar per stretch a job held
    GPUs there (``bars``: row, gpu_low, gpu_high, start, end in hours, job_id), coloured by job; ``hours``: the
    stretch of time shown."""
    fig, ax = new_figure()
    tab20 = matplotlib.colormaps["tab20"]
    palette = [tab20(i) for i in range(tab20.N)]
    colours = [palette[zlib.crc32(job.encode()) % len(palette)] for job in bars["job_id"]]
    rows_total = len(rows)
    for (row, low, high, start, end), colour in zip(
            bars[["row", "gpu_low", "gpu_high", "start", "end"]].itertuples(index=False), colours):
        per_gpu = 0.9 / max(gpus[int(row)], 1)
        bottom = rows_total - 1 - row + 0.05 + low * per_gpu
        ax.broken_barh([(start, max(end - start, 1e-6))], (bottom, (high - low + 1) * per_gpu),
                       facecolors=colour, edgecolors="white", linewidth=0.2)
    ax.set_yticks(np.arange(rows_total) + 0.5, list(rows)[::-1], fontsize="x-small" if rows_total > 20 else "small")
    ax.set_ylim(0, max(rows_total, 1))
    if hours is not None and hours[1] > hours[0]:
        ax.set_xlim(*hours)
    ax.set_xlabel("simulated time (hours since the first submission)")
    ax.set_ylabel("node (a band of its GPUs)")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    return png_bytes(fig)


def gpu_counts(rows: Sequence[str], bars: pd.DataFrame, title: str) -> bytes:
    """Each elastic job's GPU count over time: a row per job (``rows``, top first), a bar per stretch at one count
    (``bars``: row, start, end in hours, gpus), coloured by the count."""
    fig, ax = new_figure()
    top = max(float(bars["gpus"].max()) if len(bars) else 1.0, 1.0)
    norm = matplotlib.colors.LogNorm(vmin=1, vmax=max(top, 2.0))
    cmap = matplotlib.colormaps["viridis"]
    total = len(rows)
    for row, start, end, gpus in bars[["row", "start", "end", "gpus"]].itertuples(index=False):
        ax.broken_barh([(start, max(end - start, 1e-6))], (total - 1 - row + 0.1, 0.8), facecolors=cmap(norm(gpus)),
                       edgecolors="none")
    scale = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
    ticks = [2 ** i for i in range(int(np.log2(max(top, 2.0))) + 1)]
    bar = fig.colorbar(scale, ax=ax, label="GPUs held")
    bar.set_ticks(ticks, labels=[str(t) for t in ticks])
    bar.minorticks_off()
    ax.set_ylim(0, max(total, 1))
    ax.set_yticks([])
    ax.set_xlabel("simulated time (hours since the first submission)")
    ax.set_ylabel(f"job ({total}, in submission order, first at the top)")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    return png_bytes(fig)


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


CAUSE_COLOURS = {"productive": "#2ca02c", "lost": "#d62728", "checkpoint": "#1f77b4", "restart": "#ff7f0e",
                 "other_overhead": "#9467bd", "down": "#7f7f7f", "idle": "#e8e8e8"}


def causes_over_time(panels: Mapping[str, tuple[np.ndarray, Mapping[str, np.ndarray]]], title: str) -> bytes:
    """The cluster's GPU-time by cause over time, one panel per series (name → (bin centres in hours, cause →
    share of the cluster's GPUs in each bin)): stacked areas that fill 0–100 %."""
    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    names = list(panels)
    axes = fig.subplots(max(1, len(names)), 1, squeeze=False, sharex=False)[:, 0]
    for ax, name in zip(axes, names, strict=False):
        hours, shares = panels[name]
        causes = [c for c in CAUSE_COLOURS if c in shares]
        ax.stackplot(hours, *[100 * np.asarray(shares[c]) for c in causes], labels=causes,
                     colors=[CAUSE_COLOURS[c] for c in causes], step=None)
        ax.set_ylim(0, 100)
        ax.set_xlim(float(hours[0]) if len(hours) else 0, float(hours[-1]) if len(hours) else 1)
        ax.set_ylabel("% of GPUs", fontsize="small")
        ax.set_title(name, fontsize="small", loc="left")
    axes[-1].set_xlabel("hours since the first submission")
    if names:
        axes[0].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    fig.suptitle(title, fontsize="medium")
    return png_bytes(fig)


def ettr_by_size(lines: Mapping[str, Sequence[tuple[str, Spread]]], title: str) -> bytes:
    """ETTR against job size: one line per series (name → (size bucket, (mean, low, high)) in size order), error
    bars from low to high."""
    fig, ax = new_figure()
    buckets = list(dict.fromkeys(b for points in lines.values() for b, _ in points))
    place = {b: i for i, b in enumerate(buckets)}
    shift = 0.06 * (np.arange(len(lines)) - (len(lines) - 1) / 2)
    for offset, (name, points) in zip(shift, lines.items(), strict=True):
        x = np.array([place[b] for b, _ in points], dtype=float) + offset
        mean = np.array([s[0] for _, s in points])
        low = np.array([s[1] for _, s in points])
        high = np.array([s[2] for _, s in points])
        ax.errorbar(x, mean, yerr=[np.nan_to_num(mean - low), np.nan_to_num(high - mean)], marker="o", capsize=3,
                    label=name)
    ax.set_xticks(range(len(buckets)), buckets)
    ax.set_xlabel("GPUs per job")
    ax.set_ylabel("ETTR (mean over the bucket's jobs)")
    lows = [s[1] if np.isfinite(s[1]) else s[0] for points in lines.values() for _, s in points]
    ax.set_ylim(max(0.0, np.floor((min(lows, default=0.0) - 0.02) * 20) / 20), 1.005)
    ax.grid(True, alpha=0.3)
    ax.set_title(title, fontsize="medium")
    if lines:
        ax.legend(loc="lower left", fontsize="small")
    return png_bytes(fig)


def against_spares(lines: Mapping[str, Sequence[tuple[str, Spread, Spread]]], title: str) -> bytes:
    """ETTR (left panel) and wall-clock days (right) against hot spares: one line per series (name → (spares as
    given, ETTR's (mean, low, high), days' (mean, low, high)) in spares order), the spares values as categories on
    the x axis, error bars from low to high.  A series' infinite days (a job that never finished in some run) are
    a ▲ at the top of the right panel, its ETTR drawn as it is."""
    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ettr_ax, days_ax = fig.subplots(1, 2)
    categories = list(dict.fromkeys(spares for points in lines.values() for spares, _, _ in points))
    place = {spares: i for i, spares in enumerate(categories)}
    shift = 0.06 * (np.arange(len(lines)) - (len(lines) - 1) / 2)
    for i, (offset, (name, points)) in enumerate(zip(shift, lines.items(), strict=True)):
        x = np.array([place[spares] for spares, _, _ in points], dtype=float) + offset
        for ax, k in ((ettr_ax, 1), (days_ax, 2)):
            spreads = np.array([point[k] for point in points], dtype=float).reshape(-1, 3)
            finite = np.isfinite(spreads).all(axis=1)
            mean, low, high = spreads[finite].T
            ax.errorbar(x[finite], mean, yerr=[np.clip(mean - low, 0, None), np.clip(high - mean, 0, None)],
                        marker="o", capsize=3, color=f"C{i % 10}", label=wrapped_label(name, 60) if k == 1 else None)
            if k == 2 and not finite.all():
                ax.plot(x[~finite], np.full((~finite).sum(), 0.97), marker="^", linestyle="none", color=f"C{i % 10}",
                        transform=ax.get_xaxis_transform(), clip_on=False)
    for ax, label in ((ettr_ax, "ETTR (productive ÷ wall time)"), (days_ax, "wall-clock of the job (days)")):
        ax.set_xticks(range(len(categories)), categories)
        ax.set_xlim(-0.5, len(categories) - 0.5)
        ax.set_xlabel("hot spares (nodes, or a share of the job's nodes)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    ettr_ax.set_ylim(0, 1.02)
    days_ax.set_ylim(bottom=0)
    if lines:
        fig.legend(loc="outside lower center", ncols=min(len(lines), 3), fontsize="small")
    fig.suptitle(title, fontsize="small", wrap=True)
    return png_bytes(fig)
