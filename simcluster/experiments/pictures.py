"""What the report draws, gathered once from the run folders: CDFs, time series, Gantt charts and, for runs of
elastic jobs, each job's GPU count over time.

Both renderings read these records — static PNGs (:mod:`simcluster.experiments.plots`, matplotlib)
and the interactive page (:mod:`simcluster.experiments.interactive`, plotly) — so the two show the
same data.

A **Gantt chart** shows one run's jobs on the cluster's GPUs: a row per node (a band of its GPUs),
a bar per stretch of time a job held GPUs there (from ``placements.csv``, which ``lucid-sim run
--placements`` writes), spanning the job's GPUs on that node.  A large run is sampled so the chart
stays readable and light: at most :data:`MAX_NODES` nodes (evenly spaced in the cluster's order) and,
unless a time window is given, the stretch from the first start holding at most :data:`MAX_BARS` bars.
The chart's note says what was left out.

A **GPU-count chart** shows one run of elastic jobs (``allocations.csv``, which every run of an elastic policy
writes): a row per job (in submission order, at most :data:`MAX_JOBS` evenly spaced), a bar per stretch of time
the job held the same number of GPUs, coloured by that number.

A **ClusterQueue chart** shows one run of Kueue's queues (``tiers_timeline.csv``: each queue's mean GPUs in use
over each interval, :class:`simcluster.metrics.tiers.TierTimeline`): a line per queue, its nominal quota dashed
(``summary.json``'s ``tiers.timeline.nominal_gpus``), and the share of the cluster's GPUs allocated below it.

>>> parse_window("36h:2d")
(129600.0, 172800.0)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simcluster.experiments.aggregate import Configuration
from simcluster.experiments.plots import binned_mean

MAX_LINES = 12  # configurations drawn in the line plots (the first ones; the table has them all)
MAX_GANTTS = 6  # runs with a Gantt chart (the first ones with placements)
MAX_NODES = 40
MAX_BARS = 3000
MAX_JOBS = 160  # rows of a GPU-count chart
MAX_QUEUES = 10  # lines of a ClusterQueue chart (the queues that used the most; the others summed as one)
TIME_BINS = 400
CDF_POINTS = 400
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

Band = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # days, mean, min, max over a configuration's runs


def parse_window(text: str) -> tuple[float, float]:
    """``START:END`` in seconds from the first submission, each a number with an optional unit (s, m, h, d)."""
    parts = text.split(":")
    if len(parts) != 2:
        raise ValueError(f"--gantt-window: expected START:END (e.g. 0:6h, 2d:3d), got {text!r}")
    bounds = []
    for part in parts:
        found = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([smhd]?)\s*", part)
        if found is None:
            raise ValueError(f"--gantt-window: {part!r} is not a time such as 90m, 6h or 2d")
        bounds.append(float(found[1]) * _UNITS[found[2]])
    if bounds[1] <= bounds[0]:
        raise ValueError(f"--gantt-window: the end must come after the start, got {text!r}")
    return bounds[0], bounds[1]


@dataclass
class Gantt:
    """One run's bars: ``bars`` has row (node position), gpu_low, gpu_high, start, end (hours from the first
    submission), job_id, vc; ``rows`` the nodes drawn, ``gpus`` each one's GPU count."""

    label: str
    rows: list[str]
    gpus: list[int]
    bars: pd.DataFrame
    note: str
    hours: tuple[float, float] = (0.0, 0.0)  # the stretch of time drawn


@dataclass
class GpuCounts:
    """One run's jobs' GPU counts: ``bars`` has row (the job's position), start, end (hours from the first
    submission), gpus, job_id; ``rows`` the jobs drawn, top first."""

    label: str
    rows: list[str]
    bars: pd.DataFrame
    note: str


@dataclass
class TierShares:
    """One run's ClusterQueues' GPUs in use over time: ``hours`` the intervals' edges (hours since the first
    submission), ``gpus`` each queue's mean GPUs over each interval (the queues that used the most, the others
    summed as "other"), ``allocation`` the share of the cluster's GPUs allocated over each, ``allocation_mean``
    its time average; ``fair_share`` the GPUs each queue is due (its nominal quota), where the run said."""

    label: str
    hours: np.ndarray
    gpus: dict[str, np.ndarray]
    allocation: np.ndarray
    allocation_mean: float
    fair_share: dict[str, float] = field(default_factory=dict)
    note: str = ""


@dataclass
class Pictures:
    jct: dict[str, np.ndarray]  # configuration → every finished job's JCT (seeds pooled)
    queue: dict[str, np.ndarray]  # … and queueing delay
    utilization: dict[str, Band]
    pending: dict[str, Band]
    busy: dict[str, Band]  # GPUs in use
    gantts: list[Gantt] = field(default_factory=list)
    gpu_counts: list[GpuCounts] = field(default_factory=list)
    tier_shares: list[TierShares] = field(default_factory=list)
    more: str = ""  # "(first 12 of 30)" when configurations were left out of the line plots


def gather(groups: Sequence[Configuration], window: tuple[float, float] | None = None) -> Pictures:
    """The report's pictures' data for ``groups`` (lines: the first :data:`MAX_LINES`)."""
    lines = list(groups[:MAX_LINES])
    more = f" (first {MAX_LINES} of {len(groups)})" if len(groups) > MAX_LINES else ""
    jobs = {g.label: [r.jobs() for r in g.runs] for g in lines}
    pictures = Pictures({label: np.concatenate([j["jct"].to_numpy(float) for j in frames]) for label, frames in jobs.items()},
                        {label: np.concatenate([j["queue"].to_numpy(float) for j in frames])
                         for label, frames in jobs.items()}, {}, {}, {}, more=more)
    for g in lines:
        series = []
        for r, frame in zip(g.runs, jobs[g.label]):
            t = r.timeline()
            start = float(frame["submit_time"].min()) if len(frame) else 0.0
            series.append((t["time"].to_numpy(float) - start, t["busy_gpus"].to_numpy(float),
                           t["pending_jobs"].to_numpy(float), float(max(1, r.summary.get("gpus", 1)))))
        span = max((float(tt[-1]) for tt, *_ in series if len(tt)), default=1.0) or 1.0
        edges = np.linspace(0.0, span, TIME_BINS + 1)
        days = (edges[:-1] + edges[1:]) / 2 / 86400
        busy = np.array([binned_mean(tt, b, edges) for tt, b, _, _ in series])
        pending = np.array([binned_mean(tt, p, edges) for tt, _, p, _ in series])
        util = np.array([binned_mean(tt, b / gpus, edges) for tt, b, _, gpus in series])
        pictures.busy[g.label] = _band(days, busy)
        pictures.pending[g.label] = _band(days, pending)
        pictures.utilization[g.label] = _band(days, util)
    for g in groups:
        for r in g.runs:
            label = g.label if len(g.runs) == 1 else f"{g.label} ({r.label})"
            placements = r.placements() if len(pictures.gantts) < MAX_GANTTS else None
            if placements is not None and len(placements):
                first = float(r.jobs()["submit_time"].min())
                pictures.gantts.append(gantt_of(label, placements, first, r.summary, window))
            allocations = r.allocations() if len(pictures.gpu_counts) < MAX_GANTTS else None
            if allocations is not None and len(allocations):
                pictures.gpu_counts.append(gpu_counts_of(label, allocations, r.all_jobs(), r.summary))
            shares = r.tiers_timeline() if len(pictures.tier_shares) < MAX_GANTTS else None
            if shares is not None and len(shares):
                first = float(r.all_jobs()["submit_time"].min())
                pictures.tier_shares.append(tier_shares_of(label, shares, first, r.summary))
    return pictures


def gpu_counts_of(label: str, allocations: pd.DataFrame, jobs: pd.DataFrame, summary: dict[str, Any]) -> GpuCounts:
    """One run's GPU-count chart (see the module's docstring): ``allocations`` (time, job_id, gpus: a row per
    change), ``jobs`` (job_id, submit_time) for the order and the time origin.

    >>> allocations = pd.DataFrame({"time": [0.0, 3600.0, 7200.0], "job_id": ["a", "a", "a"], "gpus": [2, 4, 0]})
    >>> chart = gpu_counts_of("x", allocations, pd.DataFrame({"job_id": ["a"], "submit_time": [0.0]}), {})
    >>> chart.bars[["start", "end", "gpus"]].values.tolist()
    [[0.0, 1.0, 2.0], [1.0, 2.0, 4.0]]
    """
    first = float(jobs["submit_time"].min()) if len(jobs) else 0.0
    end_of_run = float(summary.get("makespan") or 0.0) + first
    order = jobs.sort_values("submit_time", kind="stable")["job_id"].astype(str).tolist()
    order = [job for job in order if job in set(allocations["job_id"].astype(str))]
    note = ""
    if len(order) > MAX_JOBS:
        note = f"{MAX_JOBS} of {len(order)} jobs (evenly spaced in submission order)"
        order = list(dict.fromkeys(order[int(i)] for i in np.linspace(0, len(order) - 1, MAX_JOBS).round()))
    position = {job: i for i, job in enumerate(order)}
    frame = allocations.assign(job_id=allocations["job_id"].astype(str))
    frame = frame[frame["job_id"].isin(position)].sort_values(["job_id", "time"], kind="stable")
    following = frame.groupby("job_id")["time"].shift(-1).fillna(max(end_of_run, float(frame["time"].max())))
    held = frame.assign(end=following)
    held = held[held["gpus"] > 0]
    bars = pd.DataFrame({"row": held["job_id"].map(position).to_numpy(),
                         "start": (held["time"].to_numpy(float) - first) / 3600,
                         "end": (held["end"].to_numpy(float) - first) / 3600,
                         "gpus": held["gpus"].to_numpy(float), "job_id": held["job_id"].to_numpy()})
    return GpuCounts(label, order, bars.sort_values(["row", "start"]).reset_index(drop=True), note)


def tier_shares_of(label: str, table: pd.DataFrame, first_submit: float, summary: dict[str, Any]) -> TierShares:
    """One run's ClusterQueue chart (see the module's docstring) from ``table`` (``tiers_timeline.csv``: time, end,
    tier, gpus), its allocation rate the queues' GPUs over the run's (``summary["gpus"]``).

    >>> table = pd.DataFrame({"time": [0.0, 3600.0] * 2, "end": [3600.0, 7200.0] * 2,
    ...                       "tier": ["a", "a", "b", "b"], "gpus": [4.0, 2.0, 0.0, 6.0]})
    >>> chart = tier_shares_of("x", table, 0.0, {"gpus": 8, "tiers": {"timeline": {"nominal_gpus": {"a": 4}}}})
    >>> chart.hours.tolist(), chart.gpus["b"].tolist(), chart.allocation.tolist(), chart.allocation_mean
    ([0.0, 1.0, 2.0], [0.0, 6.0], [0.5, 1.0], 0.75)
    """
    wide = table.pivot_table(index=["time", "end"], columns="tier", values="gpus", aggfunc="sum",
                             fill_value=0.0).sort_index()
    starts, ends = wide.index.get_level_values("time"), wide.index.get_level_values("end")
    hours = (np.append(starts.to_numpy(float), ends.to_numpy(float)[-1:]) - first_submit) / 3600
    widths = ends.to_numpy(float) - starts.to_numpy(float)
    used = wide.to_numpy(float)
    gpus = float(summary.get("gpus") or 0)
    allocation = used.sum(axis=1) / gpus if gpus else np.zeros(len(wide))
    mean = float((allocation * widths).sum() / widths.sum()) if widths.sum() > 0 else 0.0
    by_use = sorted(wide.columns, key=lambda q: (-float((wide[q].to_numpy(float) * widths).sum()), str(q)))
    lines = {str(q): wide[q].to_numpy(float) for q in sorted(by_use[:MAX_QUEUES], key=str)}
    note = ""
    if len(by_use) > MAX_QUEUES:
        rest = by_use[MAX_QUEUES:]
        lines[f"other ({len(rest)} queues)"] = wide[rest].to_numpy(float).sum(axis=1)
        note = f"the {MAX_QUEUES} queues that used the most GPU-time; the other {len(rest)} summed as one line"
    told = ((summary.get("tiers") or {}).get("timeline") or {}).get("nominal_gpus") or {}
    fair = {str(q): float(v) for q, v in told.items() if str(q) in lines}
    return TierShares(label, hours, lines, allocation, mean, fair, note)


def _band(days: np.ndarray, values: np.ndarray) -> Band:
    return days, values.mean(axis=0), values.min(axis=0), values.max(axis=0)


def gantt_of(label: str, placements: pd.DataFrame, first_submit: float, summary: dict[str, Any],
             window: tuple[float, float] | None = None) -> Gantt:
    """One run's Gantt chart, sampled (see the module's docstring)."""
    end_of_run = float(summary.get("makespan") or 0.0) + first_submit
    frame = placements.assign(end=placements["end"].fillna(end_of_run))
    nodes = list(dict.fromkeys(sorted(frame["node"].unique(), key=_natural)))
    notes = []
    if len(nodes) > MAX_NODES:
        kept = [nodes[int(i)] for i in np.linspace(0, len(nodes) - 1, MAX_NODES).round()]
        notes.append(f"{MAX_NODES} of {len(nodes)} nodes (evenly spaced)")
        nodes = list(dict.fromkeys(kept))
        frame = frame[frame["node"].isin(nodes)]
    frame = frame.sort_values("start", kind="stable")
    hours = (0.0, (float(frame["end"].max()) - first_submit) / 3600 if len(frame) else 1.0)
    if window is not None:
        hours = (window[0] / 3600, window[1] / 3600)
        low, high = first_submit + window[0], first_submit + window[1]
        frame = frame[(frame["end"] > low) & (frame["start"] < high)]
        notes.append(f"from {window[0] / 3600:g} h to {window[1] / 3600:g} h")
    elif len(frame) > MAX_BARS:
        cut = float(frame["start"].iloc[MAX_BARS])
        frame = frame[frame["start"] < cut]
        hours = (0.0, (cut - first_submit) / 3600)
        notes.append(f"the first {cut / 3600 - first_submit / 3600:,.1f} h ({MAX_BARS:,} runs of jobs); "
                     "--gantt-window shows another stretch")
    ids = frame["gpus"].astype(str).str.split(",")
    low_gpu = ids.map(lambda g: min(map(int, g)))
    high_gpu = ids.map(lambda g: max(map(int, g)))
    position = {node: i for i, node in enumerate(nodes)}
    bars = pd.DataFrame({"row": frame["node"].map(position), "gpu_low": low_gpu, "gpu_high": high_gpu,
                         "start": (frame["start"] - first_submit) / 3600, "end": (frame["end"] - first_submit) / 3600,
                         "job_id": frame["job_id"].astype(str), "vc": frame["vc"].astype(str)}).reset_index(drop=True)
    gpus = _node_gpus(placements, nodes, summary)
    types = placements.drop_duplicates("node").set_index("node")["gpu_type"] if "gpu_type" in placements else None
    if types is not None and types.nunique() > 1:  # a heterogeneous cluster: say each node's GPU type
        nodes = [f"{n} ({types[n]})" for n in nodes]
    return Gantt(label, nodes, gpus, bars, "; ".join(notes), hours)


def _node_gpus(placements: pd.DataFrame, nodes: list[str], summary: dict[str, Any]) -> list[int]:
    """Each node's GPU count: ``--gpus-per-node``, or fewer when its type has fewer GPUs in all (``--cluster
    v100:4``), and never fewer than the highest GPU a job used there."""
    highest = placements.assign(top=placements["gpus"].astype(str).str.split(",").map(lambda g: max(map(int, g))))
    tops = highest.groupby("node")["top"].max()
    per_node = int((summary.get("config") or {}).get("gpus_per_node") or 8)
    per_type = {t: int(v.get("gpus", per_node)) for t, v in (summary.get("cluster") or {}).items()
                if isinstance(v, dict)}
    types = placements.drop_duplicates("node").set_index("node")["gpu_type"] if "gpu_type" in placements else {}
    return [max(min(per_node, per_type.get(str(types.get(n, "")), per_node)), int(tops.get(n, 0)) + 1)
            for n in nodes]


def _natural(name: str) -> list[Any]:
    """``vc/n10`` after ``vc/n9``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def cdf_points(values: np.ndarray, points: int = CDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(value, share of values ≤ it) at up to ``points`` quantiles: a CDF line light enough for a web page.

    >>> x, y = cdf_points(np.arange(1.0, 1001.0), points=5)
    >>> x.tolist(), y.tolist()
    ([1.0, 251.0, 501.0, 750.0, 1000.0], [0.001, 0.251, 0.501, 0.75, 1.0])
    """
    values = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    if not len(values):
        return values, values
    index = np.unique(np.linspace(0, len(values) - 1, min(points, len(values))).round().astype(int))
    return values[index], (index + 1) / len(values)
