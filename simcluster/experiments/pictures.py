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

**Topology bars** show runs on a cluster with a topology (``summary.json``'s ``topology``, and ``link_contention``
where link contention was in play; docs/topology.md): per configuration, per level from the top down, the share of
the jobs and of the GPU-time that spanned it and the share of the free GPU-time stranded at it; the share of the
queueing that the free GPUs alone do not explain (``fit_but_waited``) and of the jobs that shared an uplink with
another job (Crux's figure).  Each bar is the mean over the configuration's runs, its error bar a 95 % interval over
replicas, else a min–max (:func:`topology_bars`).

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
from simcluster.experiments.plots import Spread, binned_mean
from simcluster.experiments.replicas import interval
from simcluster.experiments.uncertainty import MIN_INTERVAL

MAX_LINES = 12  # configurations drawn in the line plots (the first ones; the table has them all)
MAX_GANTTS = 6  # runs with a Gantt chart (the first ones with placements)
MAX_NODES = 40
MAX_BARS = 3000
MAX_JOBS = 160  # rows of a GPU-count chart
MAX_QUEUES = 10  # lines of a ClusterQueue chart (the queues that used the most; the others summed as one)
MAX_CONFIGURATIONS = 40  # configurations in a bar chart (the first ones; the table has them all)
TIME_BINS = 400
CDF_POINTS = 400
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

Band = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # days, mean, min, max over a configuration's runs

# what a bar's error bar is (its captions say it: simcluster.experiments.report.bars_caption)
INTERVAL, MIN_MAX_REPLICAS, MIN_MAX_SEEDS, ONE_RUN = ("95 % interval", "min–max of too few replicas",
                                                      "min–max over seeds", "one run")
LEVEL_FIGURES = ("jobs_spanning", "gpu_time_spanning", "stranded_share")  # per level, in summary's topology
QUEUEING = "queueing"  # the figure of the groups below, not per level
FIT_BUT_WAITED, SHARING_UPLINK = "fit_but_waited", "jobs_sharing_uplink"


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
class TopologyBars:
    """The topology bars (see the module's docstring): ``bars[figure][label][group]`` the bar (mean, low, high) of
    a configuration, ``figure`` one of :data:`LEVEL_FIGURES` (groups: ``levels``, top down, ``node`` last) or
    :data:`QUEUEING` (groups: :data:`FIT_BUT_WAITED`, the share of queueing, and, where ``sharing``,
    :data:`SHARING_UPLINK`); a configuration lacking a figure has no bar for it.  ``kinds``: what the error bars
    are (:data:`INTERVAL`…); ``groups`` the configurations drawn."""

    levels: list[str]
    bars: dict[str, dict[str, dict[str, Spread]]]
    kinds: list[str]
    sharing: bool
    groups: list[Configuration]


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
    topology: TopologyBars | None = None  # runs on a cluster with a topology (none: None)
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
    pictures.topology = topology_bars(groups[:MAX_CONFIGURATIONS])
    return pictures


def spread_of(values: np.ndarray) -> Spread:
    """(mean, min, max) of the finite ``values``; NaNs where none is.

    >>> spread_of(np.array([1.0, np.nan, 3.0]))
    (2.0, 1.0, 3.0)
    """
    finite = values[np.isfinite(values)]
    if not len(finite):
        return (np.nan, np.nan, np.nan)
    return (float(finite.mean()), float(finite.min()), float(finite.max()))


def runs_bar(values: np.ndarray, replicas: int, runs: int) -> tuple[Spread, str]:
    """A bar over a configuration's runs (``values``, one per run, NaN where a run lacks it; ``replicas`` how many
    of its ``runs`` are replicas): the mean with the replicas' 95 % interval where at least
    :data:`~simcluster.experiments.uncertainty.MIN_INTERVAL` have the figure, else with the runs' min–max; and
    what the error bar is.

    >>> runs_bar(np.array([0.1, 0.3]), 0, 2)
    ((0.2, 0.1, 0.3), 'min–max over seeds')
    """
    finite = values[np.isfinite(values)]
    if replicas >= MIN_INTERVAL and len(finite) >= MIN_INTERVAL:
        found = interval(finite)
        return (found.mean, found.low, found.high), INTERVAL
    return spread_of(values), MIN_MAX_REPLICAS if replicas else MIN_MAX_SEEDS if runs > 1 else ONE_RUN


def topology_values(summary: dict[str, Any]) -> dict[tuple[str, str], float] | None:
    """A run's topology figures, (figure, group) → value (see :class:`TopologyBars`), from its ``summary``; None
    for a run without a topology.  A figure the run did not record (a run written before it existed) is left out.

    >>> values = topology_values({"topology": {"levels": ["rack", "node"], "jobs_spanning": {"rack": 0.25},
    ...                           "fit_but_waited": {"share_of_queueing": 0.5}},
    ...                           "link_contention": {"jobs_sharing_uplink": 0.125}})
    >>> values[("jobs_spanning", "rack")], values[("queueing", "fit_but_waited")], values[("queueing", "jobs_sharing_uplink")]
    (0.25, 0.5, 0.125)
    """
    topology = summary.get("topology")
    if not isinstance(topology, dict):
        return None
    values = {(figure, str(level)): float(value) for figure in LEVEL_FIGURES
              for level, value in (topology.get(figure) or {}).items() if value is not None}
    waited = (topology.get("fit_but_waited") or {}).get("share_of_queueing")
    if waited is not None:
        values[(QUEUEING, FIT_BUT_WAITED)] = float(waited)
    sharing = (summary.get("link_contention") or {}).get(SHARING_UPLINK)
    if sharing is not None:
        values[(QUEUEING, SHARING_UPLINK)] = float(sharing)
    return values


def topology_bars(groups: Sequence[Configuration]) -> TopologyBars | None:
    """The topology bars of the configurations among ``groups`` whose runs had a topology (none: None): per
    figure and group the mean over each configuration's runs with its spread (:func:`runs_bar`).  Levels are
    merged top down across topologies in the order first met, ``node`` last."""
    found = [(g, [topology_values(r.summary) for r in g.runs]) for g in groups]
    found = [(g, [v for v in values if v is not None]) for g, values in found if any(v is not None for v in values)]
    if not found:
        return None
    named = [str(level) for g, _ in found for r in g.runs for level in (r.summary.get("topology") or {}).get("levels")
             or []]
    levels = [*dict.fromkeys(level for level in named if level != "node"), "node"]
    sharing = any((QUEUEING, SHARING_UPLINK) in v for _, values in found for v in values)
    groups_of = {**{figure: levels for figure in LEVEL_FIGURES},
                 QUEUEING: [FIT_BUT_WAITED, *([SHARING_UPLINK] if sharing else [])]}
    bars: dict[str, dict[str, dict[str, Spread]]] = {figure: {} for figure in groups_of}
    kinds: set[str] = set()
    for g, values in found:
        for figure, names in groups_of.items():
            for name in names:
                runs = np.array([v.get((figure, name), np.nan) for v in values], dtype=float)
                if not np.isfinite(runs).any():
                    continue
                bar, kind = runs_bar(runs, len(g.replicas), len(values))
                bars[figure].setdefault(g.label, {})[name] = bar
                kinds.add(kind)
    return TopologyBars(levels, bars, sorted(kinds), sharing, [g for g, _ in found])


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
