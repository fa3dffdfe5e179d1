"""Comparison reports over finished runs: a table (CSV, Markdown, Rich, HTML) and PNG plots.

Inputs are run folders (with ``summary.json``) and sweep folders (with
``runs.csv`` and ``runs/<run-id>/``).  Runs are grouped into configurations —
same trace and settings, any seed (:mod:`simcluster.experiments.aggregate`) —
and every figure is the mean over seeds with its min–max, or over replicas with its 95 % interval
(:mod:`simcluster.experiments.uncertainty`).  The report folder is written like a run folder:
everything appears together, or nothing does.

- ``comparison.csv`` / ``comparison.md``: per configuration (``label``), a row per VC and an ``all``
  row: jobs, avg/p50/p99 JCT, avg/p99/max/p99.9 queueing delay, the share of jobs waiting longer than each
  wait bound, bounded slowdown (:mod:`simcluster.metrics.tail`), makespan, GPU utilization, preemptions,
  shared GPU time, Jain's index over users and finish-time fairness ρ (mean, p99, share > 1) —
  ``F``, ``F_min``, ``F_max`` (and ``F_low``, ``F_high`` over replicas) — and, with a baseline,
  ``F_vs_baseline``; ``notes``; the Markdown also lists the paired verdicts.
- ``runs.csv``: the same figures per run (no aggregation), with the run's label; ``differences.csv``: the
  paired differences and their verdicts, with replicas.
- ``avg_jct.png``, ``jct_cdf.png``, ``queue_cdf.png``, ``queue_by_vc.png``, ``utilization.png``,
  ``pending.png`` (:data:`PLOTS`, each :data:`simcluster.experiments.plots.WIDTH` × ``HEIGHT`` pixels;
  bars with error bars — a 95 % interval over replicas, else a min–max — and lines with a min–max band,
  each titled with what they are: :func:`render_plots`), and ``gantt-N.png``, a Gantt chart of jobs on GPUs
  for each of the first runs that recorded their placements (:mod:`simcluster.experiments.pictures`).
- Runs given a reliability option (``run --faults``, ``--checkpoint-cost``…: docs/failures.md): the table
  ``reliability.csv`` / a "Reliability" section of ``comparison.md`` and ``report.html`` (mean and GPU-weighted
  ETTR, interruptions, the share of the cluster's GPU-time by cause; with replicas, 95 % intervals, and the ETTR
  figures also in ``comparison.csv`` and ``runs.csv``), ``gpu_time_by_cause.png`` (GPU-time by cause over time)
  and ``ettr_by_size.png`` (ETTR against job size); a report of runs without them is as before
  (:func:`fill_reliability`).
- Runs on a cluster with a topology (``run --topology``: docs/topology.md): ``topology_spanning.png``, per
  configuration and level (top down) the share of the jobs and of the GPU-time that spanned it, and
  ``topology_stranded.png``, the share of the free GPU-time stranded per level, the share of the queueing during
  which the job's GPUs were free (``fit_but_waited``) and, where link contention was in play, the share of the jobs
  sharing an uplink; bars as above, a "Topology" section of ``comparison.md`` showing both (:func:`topology_plots`);
  a report of runs without a topology is as before.
- Runs of Kueue's ClusterQueues that wrote ``tiers_timeline.csv`` (:class:`simcluster.metrics.tiers.TierTimeline`):
  ``tiers_share_over_time.png`` (``tiers_share_over_time-N.png`` for each further run, up to six): each queue's
  GPUs in use over time with its nominal quota dashed, and the cluster's allocation rate (:func:`tier_share_plots`).
- ``report.html``: the table, the verdicts, interactive charts (Gantt charts, queue length and GPUs in use
  over time, CDFs of JCT and queueing delay: :mod:`simcluster.experiments.interactive`) and the plots with
  their captions, in one self-contained page that opens offline.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.experiments import interactive, plots
from simcluster.experiments.aggregate import (
    FIGURES,
    Configuration,
    aggregate,
    configurations,
    report_figures,
    same_name_notes,
    size_table,
    trace_of,
)
from simcluster.experiments.pictures import (
    FIT_BUT_WAITED,
    INTERVAL,
    MIN_MAX_REPLICAS,
    MIN_MAX_SEEDS,
    ONE_RUN,
    QUEUEING,
    SHARING_UPLINK,
    Pictures,
    TierShares,
    gather,
    runs_bar,
    spread_of,
)
from simcluster.experiments.replicas import FEWEST
from simcluster.experiments.uncertainty import (
    HEADLINE,
    MIN_INTERVAL,
    Uncertainty,
    interval_cell,
    posthoc_uncertainty,
    replica_uncertainty,
)
from simcluster.limits import MAX_REPLICAS, check_csv, shown
from simcluster.metrics.summary import current_names
from simcluster.metrics.tail import (
    DEFAULT_WAIT_BOUNDS,
    TAIL_FIGURES,
    bound_name,
    bound_of,
    frame_tail,
    over_key,
    size_figures,
)
from simcluster.results import table_problem, write_folder

CAUSES = ("productive", "lost", "checkpoint", "restart", "other_overhead", "down", "idle")  # (metrics.reliability)
RELIABILITY = ["ettr_mean", "ettr_gpu_weighted", "interruptions", *(f"gpu_share_{c}" for c in CAUSES)]
MAX_CAUSE_PANELS = 4  # configurations drawn in gpu_time_by_cause.png
RUN_COLUMNS = ["run", "label", "policy", "trace", "seed", "replica", "vc", *FIGURES]
PLOTS = ("avg_jct.png", "jct_cdf.png", "queue_cdf.png", "queue_by_vc.png", "utilization.png", "pending.png")
MAX_BARS = 40
MAX_CONSOLE_ROWS = 40  # more rows than this: the console shows the overall rows only


class ReportError(ValueError):
    """A folder that is neither a run nor a sweep, or a run folder missing a file."""


@dataclass
class RunRecord:
    label: str
    folder: Path
    summary: dict[str, Any]

    @property
    def policy(self) -> str:
        return str(self.summary.get("policy", "?"))

    def _table(self, name: str, columns: list[str]) -> pd.DataFrame:
        """The table ``name`` of the run, as it was written: a file cut short or changed is an error naming it."""
        for suffix in ("csv", "parquet"):
            path = self.folder / f"{name}.{suffix}"
            if path.is_file():
                try:
                    if suffix == "csv":
                        check_csv(path)
                        frame = pd.read_csv(path, usecols=columns)
                    else:
                        frame = pd.read_parquet(path, columns=columns)
                except (ValueError, OSError) as exc:  # (a TraceError from check_csv too)
                    why = shown(str(exc), 300)
                    raise ReportError(f"{path}: cannot read columns {', '.join(columns)} ({why})") from None
                problem = table_problem(path, len(frame), self.summary)
                if problem is not None:
                    raise ReportError(problem)
                return frame
        raise ReportError(f"{self.folder}: no {name}.csv or {name}.parquet")

    def problem(self) -> str | None:
        """What makes the run unfit to report, found without reading its tables whole: no jobs table, or one
        cut short (:func:`~simcluster.results.table_problem`); None when it looks whole."""
        for suffix in ("csv", "parquet"):
            path = self.folder / f"jobs.{suffix}"
            if path.is_file():
                return table_problem(path, None, self.summary)
        return f"{self.folder}: no jobs.csv or jobs.parquet"

    def jobs(self, extra: Sequence[str] = ()) -> pd.DataFrame:
        """vc, jct, queue, submit_time (and the columns ``extra``) of the finished jobs."""
        return self._table("jobs", ["vc", "jct", "queue", "submit_time", *extra]).dropna(subset=["jct"])

    def timeline(self) -> pd.DataFrame:
        return self._table("timeline", ["time", "busy_gpus", "pending_jobs"])

    def all_jobs(self) -> pd.DataFrame:
        """job_id and submit_time of every job, finished or not."""
        return self._table("jobs", ["job_id", "submit_time"])

    def allocations(self) -> pd.DataFrame | None:
        """Each elastic job's GPU count over time (written by runs of elastic policies), else None."""
        if not any((self.folder / f"allocations.{suffix}").is_file() for suffix in ("csv", "parquet")):
            return None
        return self._table("allocations", ["time", "job_id", "gpus"])

    def tiers_timeline(self) -> pd.DataFrame | None:
        """Each ClusterQueue's mean GPUs in use over each interval (runs of Kueue's queues), else None."""
        if not any((self.folder / f"tiers_timeline.{suffix}").is_file() for suffix in ("csv", "parquet")):
            return None
        return self._table("tiers_timeline", ["time", "end", "tier", "gpus"])

    def placements(self) -> pd.DataFrame | None:
        """Where each job ran (``run --placements``), None when the run did not record it."""
        if not any((self.folder / f"placements.{suffix}").is_file() for suffix in ("csv", "parquet")):
            return None
        return self._table("placements", ["job_id", "vc", "node", "gpu_type", "gpus", "start", "end"])


def collect(paths: Iterable[Path], allow_missing: bool = False, left_out: list[str] | None = None
            ) -> list[RunRecord]:
    """The runs under ``paths`` (run folders, sweep folders), labelled uniquely.

    A run folder whose jobs table is cut short, and a sweep whose ``runs.csv`` lists a finished run whose
    folder is gone or incomplete, are errors naming them; with ``allow_missing`` such runs of a sweep are
    left out instead, and said in ``left_out``.
    """
    records: list[RunRecord] = []
    for path in map(Path, paths):
        if not path.exists():
            raise ReportError(f"{path}: no such folder")
        if (path / "summary.json").is_file():
            record = _record(path.name, path)
            problem = record.problem()
            if problem is not None:
                raise ReportError(problem)
            records.append(record)
        elif (path / "runs.csv").is_file() or (path / "runs").is_dir():
            records.extend(_sweep_records(path, allow_missing, left_out if left_out is not None else []))
        else:
            raise ReportError(f"{path}: neither a run folder (no summary.json) nor a sweep folder (no runs.csv)")
    labels = [r.label for r in records]
    for r in records:  # the same run name from two sweeps: say which sweep
        if labels.count(r.label) > 1:
            r.label = f"{r.folder.parent.parent.name}/{r.label}" if r.folder.parent.name == "runs" else str(r.folder)
    return records


def _sweep_records(path: Path, allow_missing: bool, left_out: list[str]) -> list[RunRecord]:
    """The finished runs of the sweep folder ``path``: every run its ``runs.csv`` lists as ok must be there,
    whole (see :func:`collect`)."""
    listed: list[str] = []
    if (path / "runs.csv").is_file():
        try:
            check_csv(path / "runs.csv")
            runs = pd.read_csv(path / "runs.csv", dtype={"run_id": str, "status": str}, keep_default_na=False,
                               usecols=lambda c: c in ("run_id", "status"))
        except (ValueError, OSError) as exc:
            raise ReportError(f"{path / 'runs.csv'}: cannot be read ({shown(str(exc), 300)})") from None
        if {"run_id", "status"} - set(runs.columns):
            raise ReportError(f"{path / 'runs.csv'}: not a sweep's runs.csv (no run_id and status columns)")
        listed = [r for r, status in zip(runs["run_id"], runs["status"], strict=True) if status == "ok"]
    found = {p.parent.name for p in (path / "runs").glob("*/summary.json")} if (path / "runs").is_dir() else set()
    records, missing = [], []
    for name in sorted(found | set(listed)):
        if name not in found:
            missing.append(f"{name} (its folder is gone)")
            continue
        record = _record(name, path / "runs" / name, source=path.name)
        problem = record.problem()
        if problem is not None:
            missing.append(f"{name} ({problem})")
            continue
        records.append(record)
    if missing:
        if not allow_missing:
            raise ReportError(f"{path}: runs.csv lists {len(missing)} finished run(s) that cannot be read: "
                              f"{_named(missing)}. Run the sweep again to redo them, or add --allow-missing to "
                              "report without them")
        left_out.append(f"{path}: left out {len(missing)} run(s) listed in runs.csv: {_named(missing)}")
    if not records:
        raise ReportError(f"{path}: a sweep folder with no finished run (no runs/*/summary.json)")
    return records


def _named(items: Sequence[str], shown_at_most: int = 5) -> str:
    more = len(items) - shown_at_most
    return "; ".join(items[:shown_at_most]) + (f"; and {more} more" if more > 0 else "")


def _record(label: str, folder: Path, source: str = "") -> RunRecord:
    path = folder / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(summary, dict):
        raise ReportError(f"{path}: not a run summary (a JSON object)")
    missing = [k for k in ("policy", "per_vc", "avg_jct") if k not in summary]
    if missing:
        raise ReportError(f"{path}: not a run summary (missing {', '.join(missing)})")
    return RunRecord(label, folder, current_names(summary))


def fill_tail(records: Sequence[RunRecord], figures: Sequence[str], bounds: Sequence[float]) -> None:
    """Give each run the tail figures (:mod:`simcluster.metrics.tail`) among ``figures`` that its summary lacks —
    a folder written before they existed, or a ``--wait-bound`` it was not run with — computed from its jobs
    table, overall, per VC and per job size (its summary in memory only; the folder is not written)."""
    wanted = [f for f in figures if f in TAIL_FIGURES or bound_of(f) is not None]
    overs = [over_key(b) for b in bounds]
    for r in records:
        sizes = r.summary.get("per_size")
        sized = isinstance(sizes, dict) and all(k in f for f in sizes.values() for k in overs)
        if sized and all(f in r.summary for f in wanted):
            continue
        jobs = r.jobs(["duration", "gpu_num"])
        vcs = jobs["vc"].astype(str).to_numpy()
        for vc, target in [("all", r.summary), *r.summary.get("per_vc", {}).items()]:
            rows = jobs if vc == "all" else jobs[vcs == str(vc)]
            for name, value in frame_tail(rows, bounds).items():
                target.setdefault(name, value)
        if not sized:
            r.summary["per_size"] = size_figures(jobs.assign(end_time=0.0), bounds)


def fill_reliability(records: Sequence[RunRecord]) -> bool:
    """Give each run that has reliability figures (``ettr_mean``: a run given a reliability option) the figures
    of :data:`RELIABILITY`, ``gpu_share_by_cause`` flattened (its summary in memory only); whether any run has
    them."""
    found = False
    for r in records:
        if "ettr_mean" not in r.summary:
            continue
        found = True
        check_reliability_figures(r.summary, r.folder / "summary.json")
        for cause, share in (r.summary.get("gpu_share_by_cause") or {}).items():
            r.summary.setdefault(f"gpu_share_{cause}", share)
    return found


def check_reliability_figures(summary: dict[str, Any], path: Path) -> None:
    """Refuse a summary whose reliability figures no run could have written (a file edited by hand, or
    another program's): an ETTR or a share of GPU time outside [0, 1], a count of interruptions below 0 — a
    :class:`ReportError` naming the file and the field, rather than a report that copies the figure.

    >>> check_reliability_figures({"ettr_mean": 7.5}, Path("run/summary.json"))
    Traceback (most recent call last):
    ...
    simcluster.experiments.report.ReportError: run/summary.json: ettr_mean is 7.5, but an ETTR is a ratio from 0 to 1 (productive time over the time held); the file was not written so by a run
    """
    shares = summary.get("gpu_share_by_cause")
    sizes = summary.get("per_size_reliability")
    ratios = [("ettr_mean", summary.get("ettr_mean"), "an ETTR"),
              ("ettr_gpu_weighted", summary.get("ettr_gpu_weighted"), "an ETTR"),
              *((f"gpu_share_by_cause.{cause}", value, "a share of GPU time")
                for cause, value in (shares.items() if isinstance(shares, dict) else ())),
              *((f"per_size_reliability.{size}.ettr_mean", (value or {}).get("ettr_mean"), "an ETTR")
                for size, value in (sizes.items() if isinstance(sizes, dict) else ()) if isinstance(value, dict))]
    for field, value, what in ratios:
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise ReportError(f"{path}: {field} is {value!r}, but {what} is a ratio from 0 to 1 (productive time "
                              f"over the time held); the file was not written so by a run")
    count = summary.get("interruptions")
    number = not isinstance(count, bool) and isinstance(count, (int, float))
    if count is not None and not (number and 0 <= count < float("inf")):
        raise ReportError(f"{path}: interruptions is {count!r}, but it counts the faults that stopped jobs: a whole "
                          "number from 0")


def runs_table(records: Sequence[RunRecord], groups: Sequence[Configuration],
               figures: Sequence[str] = FIGURES) -> pd.DataFrame:
    """``runs.csv``: one row per run and VC plus an ``all`` row per run, with the run's configuration label (and
    its replica index, for runs that are replicas)."""
    label = {id(r): g.label for g in groups for r in g.runs}
    rows = []
    for r in records:
        s = r.summary
        base = {"run": r.label, "label": label[id(r)], "policy": r.policy, "trace": trace_of(s)[1],
                "seed": s.get("seed"), "replica": (s.get("sweep_run") or {}).get("replica")}
        for vc, found in s["per_vc"].items():
            rows.append({**base, "vc": vc, **{k: found.get(k) for k in figures}})
        rows.append({**base, "vc": "all", **{k: s.get(k) for k in figures}})
    return pd.DataFrame(rows, columns=[*RUN_COLUMNS[:RUN_COLUMNS.index("jobs")], *figures])


# --- formatting ----------------------------------------------------------------------------------------

_HEADERS = {"gpus": "GPUs per job", "label": "configuration", "avg_jct": "avg JCT", "p50_jct": "p50 JCT", "p99_jct": "p99 JCT",
            "avg_queue": "avg queue", "p99_queue": "p99 queue", "gpu_utilization": "util",
            "preemptions": "preempt", "shared_gpu_fraction": "shared", "jain_users": "Jain", "rho_mean": "ρ mean",
            "rho_p99": "ρ p99", "rho_above_1": "ρ>1", "avg_jct_vs_baseline": "Δ avg JCT", "runs": "n",
            "max_queue": "max queue", "p999_queue": "p99.9 queue", "avg_bounded_slowdown": "bnd slowdown",
            "seeds": "seeds / replicas", "ettr_mean": "ETTR mean", "ettr_gpu_weighted": "ETTR GPU-weighted",
            "interruptions": "interruptions", **{f"gpu_share_{c}": c.replace("_", " ") for c in CAUSES}}
_PERCENT = {"gpu_utilization", "shared_gpu_fraction", "rho_above_1", *(f"gpu_share_{c}" for c in CAUSES)}
_RATIO = {"jain_users", "rho_mean", "rho_p99", "avg_bounded_slowdown", "ettr_mean", "ettr_gpu_weighted"}


def _header(name: str) -> str:
    bound = bound_of(name)
    return f"waited > {bound_name(bound)}" if bound is not None else _HEADERS.get(name, name)


def _value(name: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return ""
    if name.endswith("_vs_baseline"):
        return f"{value:+.1%}"
    if name in _PERCENT or bound_of(name) is not None:
        return f"{value:.1%}"
    if name in _RATIO:
        return f"{value:.3f}" if value < 10 else f"{value:,.1f}"
    if name in ("jobs", "preemptions", "runs"):
        return f"{value:,.0f}"
    if name == "interruptions":
        return f"{value:,.1f}" if value != round(value) else f"{value:,.0f}"
    return f"{value:,.0f}"


def _cell(row: Any, name: str, spread: str) -> str:
    """A figure's mean, with its 95 % interval over replicas ('mean [low–high]') when it has replicas, else its
    spread over seeds: 'range' → 'mean (min–max)', 'percent' → 'mean ±x%'."""
    text = _value(name, row[name])
    with_interval = interval_cell(row, name, text, _value)
    if with_interval is not None:
        return with_interval
    low, high = row.get(f"{name}_min"), row.get(f"{name}_max")
    if not text or low is None or high is None or not np.isfinite(low) or high == low:
        return text
    if spread == "range":
        return f"{text} ({_value(name, low)}–{_value(name, high)})"
    mean = row[name]
    return f"{text} ±{(high - low) / 2 / abs(mean):.0%}" if mean else text


def shown_columns(table: pd.DataFrame) -> list[str]:
    """The columns of the Markdown/HTML table, in order."""
    columns = ["label", "trace", "seeds", "vc", *figures_of(table)]
    if "baseline" in table.columns:
        columns.insert(columns.index("avg_jct") + 1, "avg_jct_vs_baseline")
        columns.insert(columns.index("makespan") + 1, "makespan_vs_baseline")
    if table["trace"].nunique() == 1:
        columns.remove("trace")
    return [*columns, "notes"]


def formatted(table: pd.DataFrame, columns: Sequence[str], spread: str = "range") -> pd.DataFrame:
    shown = {}
    for name in columns:
        if name in ("label", "trace", "seeds", "vc", "notes", "baseline", "gpus"):
            shown[name] = table[name].astype(str).tolist()
        else:
            shown[name] = [_cell(row, name, spread) for row in table.to_dict("records")]
    return pd.DataFrame(shown, columns=list(columns))


def figures_of(table: pd.DataFrame) -> list[str]:
    """The figures a comparison table holds, in its order (:func:`~simcluster.experiments.aggregate.report_figures`)."""
    return [c for c in table.columns if c in FIGURES or bound_of(c) is not None]


def what_cells_show(table: pd.DataFrame) -> str:
    """One sentence: what a cell of the table is — the mean over replicas with its 95 % interval, or over seeds
    with their min–max — and, where some configurations have too few replicas for an interval, which."""
    replicas = table.get("replicas", pd.Series(0, index=table.index)).fillna(0)
    with_interval = any(c.endswith("_low") for c in table.columns)
    few = sorted({str(label) for label, n in zip(table["label"], replicas) if 0 < n < MIN_INTERVAL})
    parts = []
    if with_interval:
        parts.append("for configurations with replicas, each figure is the mean over the replicas with its 95 % "
                     "interval `mean [low–high]` (2.5th–97.5th percentile of the replica values; docs/uncertainty.md)")
    if few:
        parts.append(f"{', '.join(few)}: fewer than {MIN_INTERVAL} replicas, too few for a 95 % interval: the mean "
                     "with the replicas' (min–max)")
    if (replicas == 0).any() or not with_interval and not few:
        parts.append("for configurations without replicas, each figure is the mean over the seeds with their (min–max)")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def size_columns(sizes: pd.DataFrame) -> list[str]:
    """The columns of the by-size table, in order."""
    return ["label", "gpus", *(c for c in sizes.columns if c not in ("label", "trace", "gpus", "runs")
                               and not c.endswith(("_min", "_max")))]


def _size_lines(sizes: pd.DataFrame) -> list[str]:
    columns = size_columns(sizes)
    shown = formatted(sizes.assign(seeds="", vc="", notes=""), columns)
    lines = ["| " + " | ".join(_header(c) for c in columns) + " |",
             "| " + " | ".join("---" if c in ("label", "gpus") else "---:" for c in columns) + " |"]
    lines += ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in shown.itertuples(index=False)]
    return lines


def markdown(table: pd.DataFrame, found: Uncertainty | None = None, sizes: pd.DataFrame | None = None,
             reliability: pd.DataFrame | None = None, topology: Mapping[str, str] | None = None) -> str:
    """``comparison.md``: the Reliability section first where runs have one (it is what such a report is for),
    then what the cells show, the table, and the sections that the runs call for — by job size, topology
    (``topology``: picture → caption, each shown as an image beside the file), verdicts."""
    columns = shown_columns(table)
    shown = formatted(table, columns)
    left = {"label", "trace", "seeds", "vc", "notes"}
    lines = []
    if reliability is not None and len(reliability):
        header, cells = _reliability_lines(reliability)
        lines += ["## Reliability", "", RELIABILITY_TEXT, "", "| " + " | ".join(header) + " |",
                  "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |"]
        lines += ["| " + " | ".join(v.replace("|", "\\|") for v in row) + " |" for row in cells]
        lines += ["", "## All figures", ""]
    lines += [what_cells_show(table).replace("`", ""), "",
              "| " + " | ".join(_header(c) for c in columns) + " |",
              "| " + " | ".join("---" if c in left else "---:" for c in columns) + " |"]
    for row in shown.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    if sizes is not None and len(sizes):
        lines += ["", "## By job size (GPUs per job)", "", "Each figure's mean over the runs (min–max).", ""]
        lines += _size_lines(sizes)
    if topology:
        lines += ["", "## Topology", ""]
        for name, caption in topology.items():
            lines += [f"![{name}]({name})", "", f"{name}: {caption}", ""]
        lines.pop()
    if found is not None and (found.differences or found.left_out_note):
        lines += ["", "## Paired differences", "", found.method + ".", ""]
        lines += [f"- {d.verdict}" for d in found.differences]
        if found.left_out_note:
            lines += ["", found.left_out_note + "."]
    return "\n".join(lines) + "\n"


def reliability_table(table: pd.DataFrame) -> pd.DataFrame:
    """``reliability.csv``: the rows ``all`` of the comparison ``table`` of the configurations that have
    reliability figures, with those figures (mean, min, max, and 95 % interval over replicas where they have
    one)."""
    rows = table[(table["vc"] == "all") & table["ettr_mean"].notna()] if "ettr_mean" in table else table.iloc[:0]
    keep = ["label", "trace", "seeds", "replicas", "runs"]
    suffixes = ("", "_min", "_max", "_sd", "_low", "_high", "_replicas")
    return rows[[*keep, *(f"{n}{x}" for n in RELIABILITY for x in suffixes if f"{n}{x}" in rows.columns)]
                ].reset_index(drop=True)


def _reliability_lines(rows: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The Reliability section's header and cells (each figure as the comparison table shows it)."""
    columns = ["label", *RELIABILITY]
    shown = formatted(rows.assign(vc="all", notes=""), columns)
    return [_header(c) for c in columns], [list(map(str, row)) for row in shown.itertuples(index=False)]


RELIABILITY_TEXT = ("Runs given a reliability option (docs/failures.md): ETTR = a job's productive time ÷ the time "
                    "from its first start to its end, its mean over the jobs that started and weighted by their "
                    "GPUs; interruptions per run; the share of the cluster's GPU-time (GPUs × makespan) by cause. "
                    "Each figure as in the table above (95 % interval over replicas where they have one).")


# the console table's columns, most wanted first; the configuration's label is always shown
CONSOLE_COLUMNS = ["avg_jct", "avg_jct_vs_baseline", "p99_jct", "avg_queue", "gpu_utilization", "max_queue",
                   over_key(DEFAULT_WAIT_BOUNDS[0]), "avg_bounded_slowdown", "jain_users", "rho_above_1", "preemptions",
                   "shared_gpu_fraction", "runs", "p50_jct", "p99_queue", "p999_queue", "makespan", "rho_p99"]


def rich_table(table: pd.DataFrame, width: int = 80) -> Any:
    """The comparison for a terminal ``width`` columns wide: the configuration column whole, then as many
    figure columns as fit, in the order of :data:`CONSOLE_COLUMNS` (all of them are in comparison.csv).

    With several traces, each trace's rows come under a line naming it, and labels drop the trace.
    """
    from rich.table import Table

    per_vc = len(table) <= MAX_CONSOLE_ROWS and table["vc"].nunique() > 1
    rows = table if per_vc else table[table["vc"] == "all"]
    traces = list(dict.fromkeys(rows["trace"]))
    if len(traces) > 1:
        rows = pd.concat([rows[rows["trace"] == t] for t in traces])
    labels = [str(label).removeprefix(f"{trace}: ") if len(traces) > 1 else str(label)
              for label, trace in zip(rows["label"], rows["trace"])]
    label_width = max(max(map(len, labels), default=5), len(_HEADERS["label"]), *(
        len(t) for t in traces if len(traces) > 1))
    longest_word = max((len(w) for label in labels for w in label.split()), default=5)
    label_width = min(label_width, max(24, longest_word, width * 2 // 5))  # wraps between words, never inside
    used = 1 + label_width + 3
    columns = ["label"]
    if per_vc:
        columns.append("vc")
        used += max(2, max(len(str(v)) for v in rows["vc"])) + 3
    overs = [c for c in rows.columns if bound_of(c) is not None]
    for name in [n for c in CONSOLE_COLUMNS for n in (overs if c == over_key(DEFAULT_WAIT_BOUNDS[0]) else [c])]:
        if name not in rows.columns or (name == "runs" and rows["runs"].max() <= 1):
            continue
        cells = [_cell(row, name, "percent") for row in rows.to_dict("records")]
        if not any(cells):
            continue
        need = max(len(_header(name)), *map(len, cells)) + 3
        if used + need <= width:
            columns.append(name)
            used += need
    shown = formatted(rows, columns, spread="percent")
    shown["label"] = labels
    if per_vc:  # a configuration's label once, on its first row
        shown.loc[shown["label"].eq(shown["label"].shift()) & rows["trace"].eq(rows["trace"].shift()).to_numpy(),
                  "label"] = ""
    spread = ("mean over replicas [95 % interval]" if any(c.endswith("_low") for c in rows.columns)
              else "mean over seeds, ± half their range relative to the mean")
    title = f"Comparison: {spread}" + (", per VC and overall" if per_vc else "")
    out = Table(title=title, title_justify="left")
    for name in columns:
        out.add_column(_header(name), justify="left" if name in ("label", "vc") else "right",
                       overflow="fold", no_wrap=name != "label", min_width=label_width if name == "label" else None)
    current = None
    for row, trace, vc in zip(shown.itertuples(index=False), rows["trace"], rows["vc"]):
        if len(traces) > 1 and trace != current:
            current = trace
            out.add_section()
            out.add_row(f"[italic]{trace}[/]", *[""] * (len(columns) - 1))
        out.add_row(*map(str, row), style="bold" if per_vc and vc == "all" else None)
    return out


# --- plots ---------------------------------------------------------------------------------------------

def bar_of(g: Configuration, name: str, vc: str, found: Uncertainty | None) -> tuple[plots.Spread, str]:
    """A configuration's bar for figure ``name``: (mean, low, high) and what the error bar is — the 95 % interval of
    its replicas' values (:data:`INTERVAL`), their min–max when they are too few for one, or the min–max over its
    seeds (none when it has one run)."""
    n = len(g.replicas)
    found_interval = found.interval_of(g.label, name, vc) if found is not None and n else None
    if found_interval is not None:
        return (found_interval.mean, found_interval.low, found_interval.high), INTERVAL
    kind = MIN_MAX_REPLICAS if n else (MIN_MAX_SEEDS if len(g.runs) > 1 else ONE_RUN)
    return spread_of(g.figure(name, vc)), kind


def bars_caption(what: str, kinds: Sequence[str], groups: Sequence[Configuration]) -> str:
    """What a bar chart's bars and error bars are, in words (the kinds of error bar among its bars)."""
    counts = sorted({len(g.replicas) for g in groups if g.replicas})
    replicas = (f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}") + " replicas" if counts else ""
    said = []
    if INTERVAL in kinds:
        rough = f", rough with fewer than {FEWEST} replicas" if counts and counts[0] < FEWEST else ""
        said.append(f"error bars: 95 % interval over {replicas} (2.5th–97.5th percentile of the replicas' values"
                    f"{rough})")
    if MIN_MAX_REPLICAS in kinds:
        said.append(f"min–max where fewer than {MIN_INTERVAL} replicas (too few for an interval)")
    if MIN_MAX_SEEDS in kinds:
        said.append("min–max over seeds for configurations without replicas")
    if not said:
        said.append("one run per configuration: no error bars")
    bars = "mean over replicas" if INTERVAL in kinds or MIN_MAX_REPLICAS in kinds else "mean over seeds"
    return f"{what}: bars: {bars}; " + "; ".join(said)


def render_plots(groups: Sequence[Configuration], pictures: Pictures, found: Uncertainty | None = None
                 ) -> tuple[dict[str, bytes], dict[str, str]]:
    """Every PNG (one bar or line per configuration; lines: the first
    :data:`~simcluster.experiments.pictures.MAX_LINES`), the Gantt charts, and a caption for each saying what its
    bars, error bars and bands are."""
    bars = list(groups[:MAX_BARS])
    more = pictures.more
    vcs = list(dict.fromkeys(vc for g in bars for vc in g.vcs))
    jct_bars = {g.label: bar_of(g, "avg_jct", "all", found) for g in bars}
    queue_bars = {g.label: {vc: bar_of(g, "avg_queue", vc, found) for vc in g.vcs} for g in bars}
    mixed = len({kind for _, kind in jct_bars.values()}) > 1
    jct = {(f"{label} [{kind}]" if mixed else label): spread for label, (spread, kind) in jct_bars.items()}
    queue = {label: {vc: spread for vc, (spread, _) in per_vc.items()} for label, per_vc in queue_bars.items()}
    jct_caption = bars_caption("Average JCT per configuration", [k for _, k in jct_bars.values()], bars)
    queue_caption = bars_caption("Average queueing delay per VC", [k for v in queue_bars.values() for _, k in v.values()],
                                 bars)
    band = ("band: min–max over its replicas" if any(g.replicas for g in groups) else "band: min–max over its seeds")
    gantts = {f"gantt-{i}.png": plots.gantt(g.rows, g.gpus, g.bars, f"Jobs on GPUs: {g.label}"
                                            + (f"\n{g.note}" if g.note else ""), g.hours)
              for i, g in enumerate(pictures.gantts, start=1)}
    counts = {f"gpus-{i}.png": plots.gpu_counts(g.rows, g.bars, f"GPUs per job: {g.label}"
                                                + (f"\n{g.note}" if g.note else ""))
              for i, g in enumerate(pictures.gpu_counts, start=1)}
    pooled = "replicas pooled" if any(g.replicas for g in groups) else "seeds pooled"
    captions = {
        "avg_jct.png": jct_caption,
        "jct_cdf.png": f"JCT CDF per configuration ({pooled}){more}",
        "queue_cdf.png": f"Queueing delay CDF per configuration ({pooled}){more}",
        "queue_by_vc.png": queue_caption,
        "utilization.png": f"GPU utilization over time{more}: each configuration's mean over its runs; {band}",
        "pending.png": f"Pending jobs over time{more}: each configuration's mean over its runs; {band}",
        **{name: f"Jobs on GPUs: {g.label}" for name, g in zip(gantts, pictures.gantts)},
        **{name: f"GPUs per job: {g.label}" for name, g in zip(counts, pictures.gpu_counts)},
    }
    images = {
        "avg_jct.png": plots.figure_bars(jct, "average JCT (s)", _wrapped(jct_caption)),
        "jct_cdf.png": plots.jct_cdf(pictures.jct, title=captions["jct_cdf.png"]),
        "queue_cdf.png": plots.jct_cdf({k: np.maximum(v, 1.0) for k, v in pictures.queue.items()},
                                       title=captions["queue_cdf.png"],
                                       xlabel="queueing delay (s, log scale; 0 drawn at 1 s)"),
        "queue_by_vc.png": plots.queue_by_vc(queue, vcs, _wrapped(queue_caption)),
        "utilization.png": plots.over_time(pictures.utilization, "GPU utilization (%)",
                                           _wrapped(captions["utilization.png"]), percent=True),
        "pending.png": plots.over_time(pictures.pending, "pending jobs", _wrapped(captions["pending.png"])),
        **gantts,
        **counts,
    }
    return images, captions


def reliability_plots(groups: Sequence[Configuration], found: Uncertainty | None = None
                      ) -> tuple[dict[str, bytes], dict[str, str]]:
    """``gpu_time_by_cause.png`` and ``ettr_by_size.png`` of the configurations whose runs have reliability
    figures (none: nothing), and their captions."""
    reliable = [g for g in groups if any("ettr_mean" in r.summary for r in g.runs)]
    if not reliable:
        return {}, {}
    panels = {}
    for g in reliable:
        run = next((r for r in g.runs if r.summary.get("gpu_time_by_cause_over_time")), None)
        if run is None or len(panels) >= MAX_CAUSE_PANELS:
            continue
        series = run.summary["gpu_time_by_cause_over_time"]
        width, gpus = float(series["bin_s"]), float(run.summary.get("gpus") or 0)
        hours = width * (np.arange(int(series["bins"])) + 0.5) / 3600.0  # since the run's first submission
        shares = {c: np.asarray(v, dtype=float) / (gpus * width) if gpus and width else np.zeros(len(hours))
                  for c, v in series["gpu_seconds"].items()}
        panels[g.label] = (hours, shares)
    more = (f" (the first {MAX_CAUSE_PANELS} configurations)"
            if sum(1 for g in reliable if any(r.summary.get("gpu_time_by_cause_over_time") for r in g.runs))
            > MAX_CAUSE_PANELS else "")
    causes_caption = (f"The cluster's GPU-time by cause over time{more}: each configuration's first run (hours since its "
                      "first submission), the share of "
                      "its GPUs in each of 100 bins of the makespan that were productive, lost to failures (drawn "
                      "over the work lost), checkpointing, restarting, other overhead, down or idle (the rest of a "
                      "job's held time split in its own proportions; simcluster.metrics.reliability.CauseTimeline)")
    lines: dict[str, list[tuple[str, plots.Spread]]] = {}
    kinds = set()
    for g in reliable[:MAX_BARS]:
        buckets = list(dict.fromkeys(b for r in g.runs for b in (r.summary.get("per_size_reliability") or {})))
        points = []
        for bucket in sorted(buckets, key=lambda b: int(b.split("-")[0].rstrip("+"))):
            values = np.array([np.nan if (v := (r.summary.get("per_size_reliability") or {}).get(bucket, {})
                                           .get("ettr_mean")) is None else float(v) for r in g.runs])
            if not np.isfinite(values).any():
                continue
            point, kind = runs_bar(values, len(g.replicas), len(g.runs))
            points.append((bucket, point))
            kinds.add(kind)
        if points:
            lines[g.label] = points
    ettr_caption = bars_caption("ETTR against job size (mean ETTR of the jobs of each size bucket)", sorted(kinds),
                                reliable).replace("bars: mean", "points: mean")
    return ({"gpu_time_by_cause.png": plots.causes_over_time(panels, "GPU-time by cause over time (share of the "
                                                             "cluster's GPUs; each configuration's first run)"),
             "ettr_by_size.png": plots.ettr_by_size(lines, _wrapped(ettr_caption, 90))},
            {"gpu_time_by_cause.png": causes_caption, "ettr_by_size.png": ettr_caption})


TOPOLOGY_PLOTS = ("topology_spanning.png", "topology_stranded.png")
_QUEUEING_NAMES = {FIT_BUT_WAITED: "fit but waited\n(share of queueing)",
                   SHARING_UPLINK: "jobs sharing\nan uplink"}


def topology_plots(pictures: Pictures) -> tuple[dict[str, bytes], dict[str, str]]:
    """``topology_spanning.png`` and ``topology_stranded.png`` of the configurations whose runs had a topology
    (:class:`~simcluster.experiments.pictures.TopologyBars`; none: nothing), and their captions."""
    found = pictures.topology
    if found is None:
        return {}, {}
    spanning = bars_caption("Topology: the share of the jobs that started (left) and of the GPU-time held (right) "
                            "that spanned each level, top down (more than one of its domains; node: more than one "
                            "node), per configuration", found.kinds, found.groups)
    sharing = ("; and the share of the jobs that started that shared an uplink with another job (Crux's figure; no "
               "bar: a run without link contention)" if found.sharing else "")
    stranded = bars_caption("Topology: left, the share of the free GPU-time stranded at each level, top down (free "
                            "GPUs in a domain with fewer free than the smallest job waiting in its VC); right, the "
                            "share of the queueing during which the job's VC had its GPUs free (fit but waited: the "
                            "queueing the free GPUs alone do not explain)" + sharing, found.kinds, found.groups)
    bars_said = bars_caption("", found.kinds, found.groups).removeprefix(": ")  # (what the bars are, alone)
    shown = "Topology per configuration: {}\n" + _wrapped(bars_said, 90)
    levels = [(level, level) for level in found.levels]
    queueing = [(name, _QUEUEING_NAMES[name]) for name in (FIT_BUT_WAITED, SHARING_UPLINK)
                if name != SHARING_UPLINK or found.sharing]
    images = {
        "topology_spanning.png": plots.grouped_shares(
            [("% of the jobs spanning", levels, found.bars["jobs_spanning"]),
             ("% of the GPU-time spanning", levels, found.bars["gpu_time_spanning"])],
            shown.format("the jobs (left) and GPU-time (right) spanning each level")),
        "topology_stranded.png": plots.grouped_shares(
            [("% of the free GPU-time stranded", levels, found.bars["stranded_share"]),
             ("share (%)", queueing, found.bars[QUEUEING])],
            shown.format("free GPU-time stranded per level (left); queueing and uplinks (right)")),
    }
    return images, {"topology_spanning.png": spanning, "topology_stranded.png": stranded}


def tier_share_plots(pictures: Pictures) -> tuple[dict[str, bytes], dict[str, str]]:
    """``tiers_share_over_time.png`` of the first run that wrote ``tiers_timeline.csv`` (``-2``, ``-3``… of the
    next ones; none: nothing), and their captions."""
    images, captions = {}, {}
    for i, shares in enumerate(pictures.tier_shares, start=1):
        name = "tiers_share_over_time.png" if i == 1 else f"tiers_share_over_time-{i}.png"
        what = "ClusterQueues'" if shares.fair_share else "Tiers'"
        captions[name] = (f"{what} GPUs over time: {shares.label} (hours since its first submission): each "
                          "queue's (without Kueue, each priority and kind's) mean GPUs in use over each interval "
                          "(exact averages of the step function), its nominal quota dashed where the run gave it; "
                          "below, the share of the cluster's GPUs allocated, its time average dotted"
                          + (f"; {shares.note}" if shares.note else ""))
        images[name] = tier_shares_png(shares, f"{what} GPUs over time: {shares.label}")
    return images, captions


def tier_shares_png(shares: TierShares, title: str, fair_share: Mapping[str, float] | None = None) -> bytes:
    """Each queue's GPUs in use over time (a step per interval), its fair share (``fair_share``, queue → GPUs;
    by default the run's nominal quotas) as a dashed line of its colour, and the cluster's allocation rate in a
    second panel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from simcluster.canvas import DPI, HEIGHT, WIDTH, png_bytes

    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    queues, rate = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    due = shares.fair_share if fair_share is None else fair_share
    for name, gpus in shares.gpus.items():
        drawn = queues.stairs(gpus, shares.hours, label=name, linewidth=1.2, baseline=None)
        if name in due:
            queues.axhline(due[name], color=drawn.get_edgecolor(), linestyle="--", linewidth=0.9)
    queues.set_ylabel("GPUs in use")
    queues.set_ylim(bottom=0)
    queues.grid(True, alpha=0.3)
    if shares.gpus:
        queues.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    queues.set_title(title + ("\n(dashed: nominal quota)" if due else ""), fontsize="medium")
    rate.stairs(100 * shares.allocation, shares.hours, color="black", linewidth=1.0, label="allocated", baseline=None)
    rate.axhline(100 * shares.allocation_mean, color="grey", linestyle=":",
                 label=f"mean {shares.allocation_mean:.1%}")
    rate.set_ylim(0, max(100.0, 100 * float(shares.allocation.max(initial=0.0))))
    rate.set_xlim(float(shares.hours[0]), float(shares.hours[-1]))
    rate.set_ylabel("% of GPUs allocated", fontsize="small")
    rate.set_xlabel("simulated time (hours since the first submission)")
    rate.grid(True, alpha=0.3)
    rate.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return png_bytes(fig)


def _wrapped(text: str, width: int = 100) -> str:
    """A long caption as a plot title of lines at most ``width`` characters (at the '; ' between its parts)."""
    lines: list[str] = []
    for part in text.split("; "):
        if lines and len(lines[-1]) + len(part) + 2 <= width:
            lines[-1] += "; " + part
        else:
            lines.append(part)
    return "\n".join(lines)


def html_page(table: pd.DataFrame, images: dict[str, bytes], sources: Sequence[str],
              charts: Sequence[interactive.Chart] = (), captions: dict[str, str] | None = None,
              found: Uncertainty | None = None, sizes: pd.DataFrame | None = None,
              reliability: pd.DataFrame | None = None) -> str:
    columns = shown_columns(table)
    shown = formatted(table, columns)
    rows = "\n".join(
        "<tr{}>{}</tr>".format(' class="all"' if vc == "all" else "",
                               "".join(f"<td>{html.escape(str(v))}</td>" for v in row))
        for row, vc in zip(shown.itertuples(index=False), table["vc"])
    )
    head = "".join(f"<th>{html.escape(_header(c))}</th>" for c in columns)
    figures = "\n".join(
        f'<figure><img alt="{name}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'
        f"<figcaption>{name}: {html.escape((captions or {}).get(name, ''))}</figcaption></figure>"
        for name, data in images.items()
    )
    by_size = ""
    if sizes is not None and len(sizes):
        columns_by_size = size_columns(sizes)
        cells = formatted(sizes.assign(seeds="", vc="", notes=""), columns_by_size)
        body = "\n".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                         for row in cells.itertuples(index=False))
        by_size = ("<h2>By job size (GPUs per job)</h2>\n<p>Each figure's mean over a configuration's runs "
                   "(min–max).</p>\n<table><thead><tr>" + "".join(f"<th>{html.escape(_header(c))}</th>"
                                                           for c in columns_by_size)
                   + f"</tr></thead><tbody>\n{body}\n</tbody></table>")
    first = ""  # (the Reliability section leads a report of reliability runs: it is what such a report is for)
    if reliability is not None and len(reliability):
        header, cells = _reliability_lines(reliability)
        body = "\n".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in cells)
        first = ('<h2 id="reliability">Reliability</h2>\n<p>' + html.escape(RELIABILITY_TEXT) + "</p>\n"
                 '<table class="reliability"><thead><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in header)
                 + f"</tr></thead><tbody>\n{body}\n</tbody></table>\n<h2>All figures</h2>")
    verdicts = ""
    if found is not None and (found.differences or found.left_out_note):
        items = "\n".join(f'<li class="{"told" if d.told else "untold"}">{html.escape(d.verdict, quote=False)}</li>'
                           for d in found.differences)
        left = f"\n<p>{html.escape(found.left_out_note)}.</p>" if found.left_out_note else ""
        verdicts = (f"<h2>Paired differences</h2>\n<p>{html.escape(found.method)}. A difference is told only when its "
                    f"95 % interval excludes 0.</p>\n<ul>\n{items}\n</ul>{left}")
    live = "\n".join(f'<section class="chart" aria-label="{html.escape(title)}">{chart}</section>'
                      for title, chart in charts)
    script = interactive.plotly_script() if charts else ""
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>simcluster comparison</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }}
td:nth-child(-n+3), td:last-child, th {{ text-align: left; }}
li.untold {{ color: #666; }}
tr.all {{ font-weight: bold; background: #f4f4f4; }}
img {{ max-width: 100%; }}
section.chart {{ margin: 1em 0; }}
</style>{script}</head><body>
<h1>Comparison</h1>
{first}
<p>Sources: {html.escape(", ".join(sources))}. Times in seconds. {html.escape(what_cells_show(table).replace("`", ""))}
Tail: max and p99.9 queueing delay, the share of jobs that waited longer than a bound, bounded slowdown =
mean of max(1, JCT ÷ max(duration, 10 s)) (simcluster.metrics.tail). Fairness: Jain's index over users of their
mean 1/ρ; ρ = JCT ÷ JCT alone on a fair 1/n share of the job's VC (simcluster.metrics.fairness).</p>
<table><thead><tr>{head}</tr></thead><tbody>
{rows}
</tbody></table>
{verdicts}
{by_size}
<h2>Charts</h2>
<p>Drag to zoom, double-click to zoom out, hover a bar or a line for its values; a legend entry hides its line.
Lines over time: each configuration's mean over its runs, the shaded band their min–max (not an interval).</p>
{live}
<h2>Plots</h2>
{figures}
</body></html>
"""


def baseline_policy(baseline: str | Path | type | None, groups: Sequence[Configuration]) -> str | None:
    """The policy ``baseline`` names as the report's tables name it (``--baseline``'s specs, as ``--policy``
    takes them): a name shown in the table as it is; else the spec loaded and named by its declared name
    (:func:`simcluster.plugins.policy_label`) — and where plug-ins of different code share that name, the one
    whose file's SHA-256 matches.  :class:`ReportError` when no run, or more than one policy, answers to it."""
    if baseline is None:
        return None
    from simcluster.plugins import PluginError, origin_of, policy_label

    spec: str | type = str(baseline) if isinstance(baseline, Path) else baseline
    given = spec if isinstance(spec, str) else getattr(spec, "__qualname__", str(spec))
    shown = sorted({g.policy for g in groups})
    if isinstance(spec, str) and spec in shown:
        return spec
    try:
        name = policy_label(spec)
        digest = origin_of(spec).sha256
    except PluginError:
        name, digest = given, None
    named = sorted({g.policy for g in groups if g.policy_name == name})
    if not named:
        raise ReportError(f"--baseline {given}: no run of that policy among {', '.join(shown)}")
    if len(named) > 1:
        same = sorted({g.policy for g in groups if g.policy_name == name and digest and g.code == digest})
        if len(same) == 1:
            return same[0]
        raise ReportError(f"--baseline {given}: the runs hold {len(named)} different policies named {name} "
                          f"({'; '.join(named)}); name the one to compare with by its file (--baseline "
                          f"path/to/file.py) or as the table shows it (--baseline '{named[0]}')")
    return named[0]


@dataclass
class Report:
    table: pd.DataFrame  # comparison.csv
    runs: pd.DataFrame  # runs.csv
    folder: Path
    files: list[str]
    notes: list[str]
    uncertainty: Uncertainty | None = None


def write_report(paths: Sequence[Path], out: Path, overwrite: bool = False, baseline: str | Path | type | None = None,
                 replicas: int = 0, perturb: str | None = None, seed: int = 0,
                 gantt_window: tuple[float, float] | None = None, allow_missing: bool = False,
                 metrics: Sequence[str] | None = None, wait_bounds: Sequence[float] | None = None) -> Report:
    """Collect the runs under ``paths``, write the report folder ``out`` atomically, return the tables.

    ``out`` is replaced only if it is a report folder simcluster wrote, or with ``overwrite``
    (:func:`simcluster.results.check_output`); never a folder that holds one of ``paths``.
    ``baseline``: a policy, as ``--baseline`` takes it — a name (a built-in's, a plug-in's declared name, or the
    policy as the table shows it), a plug-in's file (a path, relative to the current directory), ``module:Class``
    or a policy class (:func:`baseline_policy`); each configuration's figures are also given relative to that
    policy's configuration on the same trace (:func:`~simcluster.experiments.aggregate.baseline_of`).
    Runs that are replicas (``sweep --replicas``), or ``replicas`` > 0 (a post-hoc bootstrap of the runs over
    their trace's days), give each figure a 95 % interval and pairs of configurations the paired differences of
    ``metrics`` (:data:`~simcluster.experiments.uncertainty.HEADLINE` by default) with verdicts
    (:mod:`simcluster.experiments.uncertainty`).  ``wait_bounds``: the waits whose share of jobs exceeding them is
    a figure (default: those the runs recorded, else 4 h).  A missing or cut input is an error naming it; with
    ``allow_missing`` the runs of a sweep that cannot be read are left out, and the notes name them.
    """
    if perturb is not None and not replicas:
        raise ReportError(f"--perturb needs --replicas N (N ≥ 1): without replicas --perturb {shown(perturb)} "
                          "resamples nothing")
    if not 0 <= replicas <= MAX_REPLICAS:
        raise ReportError(f"--replicas must be from 0 to {MAX_REPLICAS:,}, got {replicas:,}")
    perturb = perturb or "bootstrap"
    left_out: list[str] = []
    records = collect(paths, allow_missing, left_out)
    bounds = sorted(set(wait_bounds or [b for r in records for b in r.summary.get("wait_bounds") or []]
                        or DEFAULT_WAIT_BOUNDS))
    figures = report_figures(bounds)
    reliable = fill_reliability(records)
    if reliable:  # (only then: a report of runs without reliability options is as before)
        figures = [*figures, *RELIABILITY]
    chosen = list(HEADLINE if metrics is None else metrics)
    if reliable and metrics is None:
        chosen += ["ettr_mean", "ettr_gpu_weighted"]
    if metrics is None and bounds != list(DEFAULT_WAIT_BOUNDS):
        chosen = [c for c in chosen if bound_of(c) is None] + [over_key(b) for b in bounds]
    unknown = [m for m in chosen if m not in figures]
    if unknown:
        raise ReportError(f"--metrics {','.join(unknown)}: not a figure of the report; choose among "
                          f"{', '.join(f for f in figures if f != 'jobs')} (a queue_over_BOUND figure needs "
                          "--wait-bound BOUND)")
    fill_tail(records, figures, bounds)
    groups = configurations(records)
    baseline = baseline_policy(baseline, groups)
    table = aggregate(groups, baseline, figures)
    try:
        found = (posthoc_uncertainty(groups, replicas, perturb, seed, baseline, chosen, bounds) if replicas
                 else replica_uncertainty(groups, figures, baseline, chosen))
    except ValueError as exc:
        raise ReportError(str(exc)) from None
    extra: dict[str, bytes] = {}
    if found is not None:
        table = found.with_intervals(table)
        extra["differences.csv"] = found.differences_frame().to_csv(index=False).encode()
    runs = runs_table(records, groups, figures)
    sizes = size_table(groups, bounds)
    pictures = gather(groups, gantt_window)
    images, captions = render_plots(groups, pictures, found)
    reliability = reliability_table(table) if reliable else None
    if reliable:
        more_images, more_captions = reliability_plots(groups, found)
        images |= more_images
        captions |= more_captions
    tier_images, tier_captions = tier_share_plots(pictures)
    images |= tier_images
    captions |= tier_captions
    topology_images, topology_captions = topology_plots(pictures)
    images |= topology_images
    captions |= topology_captions
    files: dict[str, bytes] = {
        "comparison.csv": table.to_csv(index=False).encode(),
        "comparison.md": markdown(table, found, sizes, reliability, topology_captions).encode(),
        "runs.csv": runs.to_csv(index=False).encode(),
        **({"sizes.csv": sizes.to_csv(index=False).encode()} if len(sizes) else {}),
        **({"reliability.csv": reliability.to_csv(index=False).encode()} if reliability is not None else {}),
        **extra,
        **images,
        "report.html": html_page(table, images, [str(p) for p in paths], interactive.charts(pictures), captions,
                                 found, sizes, reliability).encode(),
    }
    write_folder(Path(out), {}, files=files, kind="report", inputs=paths, overwrite=overwrite)
    notes = left_out + same_name_notes(groups)
    notes += [f"{row.label}: {row.notes}" for row in table.itertuples() if row.vc == "all" and row.notes]
    if baseline is not None:
        notes += [f"{row.label}: no {baseline} run on its trace to compare with" for row in table.itertuples()
                  if row.vc == "all" and not row.baseline]
    few = [g.label for g in groups if 0 < len(g.replicas) < MIN_INTERVAL]
    if few:
        notes.append(f"{', '.join(few)}: fewer than {MIN_INTERVAL} replicas, too few for a 95 % interval; the "
                     "table and plots show their min–max")
    if found is not None:
        notes += [found.method] + [d.verdict for d in found.differences]
        notes += [found.left_out_note] if found.left_out_note else []
    return Report(table, runs, Path(out), list(files), notes, found)
