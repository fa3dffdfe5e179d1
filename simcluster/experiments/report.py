"""Comparison reports over finished runs: a table (CSV, Markdown, Rich, HTML) and PNG plots.

Inputs are run folders (with ``summary.json``) and sweep folders (with
``runs.csv`` and ``runs/<run-id>/``).  Runs are grouped into configurations —
same trace and settings, any seed (:mod:`simcluster.experiments.aggregate`) —
and every figure is the mean over seeds with its min–max.  The report folder is
written like a run folder: everything appears together, or nothing does.

- ``comparison.csv`` / ``comparison.md``: per configuration (``label``), a row per VC and an ``all``
  row: jobs, avg/p50/p99 JCT, avg/p99 queueing delay, makespan, GPU utilization, preemptions,
  shared GPU time, Jain's index over users and finish-time fairness ρ (mean, p99, share > 1) —
  ``F``, ``F_min``, ``F_max`` — and, with a baseline, ``F_vs_baseline``; ``notes``.
- ``runs.csv``: the same figures per run (no aggregation), with the run's label.
- ``avg_jct.png``, ``jct_cdf.png``, ``queue_cdf.png``, ``queue_by_vc.png``, ``utilization.png``,
  ``pending.png`` (:data:`PLOTS`, each :data:`simcluster.experiments.plots.WIDTH` × ``HEIGHT`` pixels;
  bars with min–max error bars and lines with a min–max band over seeds), and ``gantt-N.png``, a
  Gantt chart of jobs on GPUs for each of the first runs that recorded their placements
  (:mod:`simcluster.experiments.pictures`).
- ``report.html``: the table, interactive charts (Gantt charts, queue length and GPUs in use over
  time, CDFs of JCT and queueing delay: :mod:`simcluster.experiments.interactive`) and the plots, in
  one self-contained page that opens offline.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.experiments import interactive, plots
from simcluster.experiments.aggregate import FIGURES, Configuration, aggregate, configurations, trace_of
from simcluster.experiments.pictures import Pictures, gather
from simcluster.experiments.uncertainty import interval_cell, posthoc_uncertainty, replica_uncertainty
from simcluster.limits import MAX_REPLICAS, check_csv, shown
from simcluster.results import table_problem, write_folder

RUN_COLUMNS = ["run", "label", "policy", "trace", "seed", "vc", *FIGURES]
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

    def jobs(self) -> pd.DataFrame:
        """vc, jct, queue, submit_time of the finished jobs."""
        return self._table("jobs", ["vc", "jct", "queue", "submit_time"]).dropna(subset=["jct"])

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
    return RunRecord(label, folder, summary)


def runs_table(records: Sequence[RunRecord], groups: Sequence[Configuration]) -> pd.DataFrame:
    """``runs.csv``: one row per run and VC plus an ``all`` row per run, with the run's configuration label."""
    label = {id(r): g.label for g in groups for r in g.runs}
    rows = []
    for r in records:
        s = r.summary
        base = {"run": r.label, "label": label[id(r)], "policy": r.policy, "trace": trace_of(s)[1],
                "seed": s.get("seed")}
        for vc, figures in s["per_vc"].items():
            rows.append({**base, "vc": vc, **{k: figures.get(k) for k in FIGURES}})
        rows.append({**base, "vc": "all", **{k: s.get(k) for k in FIGURES}})
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


# --- formatting ----------------------------------------------------------------------------------------

_HEADERS = {"label": "configuration", "avg_jct": "avg JCT", "p50_jct": "p50 JCT", "p99_jct": "p99 JCT",
            "avg_queue": "avg queue", "p99_queue": "p99 queue", "gpu_utilization": "util",
            "preemptions": "preempt", "shared_gpu_fraction": "shared", "jain_users": "Jain", "rho_mean": "ρ mean",
            "rho_p99": "ρ p99", "rho_above_1": "ρ>1", "avg_jct_vs_baseline": "Δ avg JCT", "runs": "n"}
_PERCENT = {"gpu_utilization", "shared_gpu_fraction", "rho_above_1"}
_RATIO = {"jain_users", "rho_mean", "rho_p99"}


def _value(name: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return ""
    if name.endswith("_vs_baseline"):
        return f"{value:+.1%}"
    if name in _PERCENT:
        return f"{value:.1%}"
    if name in _RATIO:
        return f"{value:.3f}" if value < 10 else f"{value:,.1f}"
    if name in ("jobs", "preemptions", "runs"):
        return f"{value:,.0f}"
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
    columns = ["label", "trace", "seeds", "vc", *FIGURES]
    if "baseline" in table.columns:
        columns.insert(columns.index("avg_jct") + 1, "avg_jct_vs_baseline")
        columns.insert(columns.index("makespan") + 1, "makespan_vs_baseline")
    if table["trace"].nunique() == 1:
        columns.remove("trace")
    return [*columns, "notes"]


def formatted(table: pd.DataFrame, columns: Sequence[str], spread: str = "range") -> pd.DataFrame:
    shown = {}
    for name in columns:
        if name in ("label", "trace", "seeds", "vc", "notes", "baseline"):
            shown[name] = table[name].astype(str).tolist()
        else:
            shown[name] = [_cell(row, name, spread) for row in table.to_dict("records")]
    return pd.DataFrame(shown, columns=list(columns))


def markdown(table: pd.DataFrame) -> str:
    columns = shown_columns(table)
    shown = formatted(table, columns)
    left = {"label", "trace", "seeds", "vc", "notes"}
    lines = ["| " + " | ".join(_HEADERS.get(c, c) for c in columns) + " |",
             "| " + " | ".join("---" if c in left else "---:" for c in columns) + " |"]
    for row in shown.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"


# the console table's columns, most wanted first; the configuration's label is always shown
CONSOLE_COLUMNS = ["avg_jct", "avg_jct_vs_baseline", "p99_jct", "avg_queue", "gpu_utilization", "jain_users",
                   "rho_above_1", "preemptions", "shared_gpu_fraction", "runs", "p50_jct", "p99_queue", "makespan",
                   "rho_p99"]


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
    for name in CONSOLE_COLUMNS:
        if name not in rows.columns or (name == "runs" and rows["runs"].max() <= 1):
            continue
        cells = [_cell(row, name, "percent") for row in rows.to_dict("records")]
        if not any(cells):
            continue
        need = max(len(_HEADERS.get(name, name)), *map(len, cells)) + 3
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
        out.add_column(_HEADERS.get(name, name), justify="left" if name in ("label", "vc") else "right",
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

def _spread(values: np.ndarray) -> plots.Spread:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return (np.nan, np.nan, np.nan)
    return (float(finite.mean()), float(finite.min()), float(finite.max()))


def render_plots(groups: Sequence[Configuration], pictures: Pictures) -> dict[str, bytes]:
    """Every PNG: one bar or line per configuration (lines: the first :data:`~simcluster.experiments.pictures.MAX_LINES`), and the Gantt charts."""
    bars = list(groups[:MAX_BARS])
    more = pictures.more
    vcs = list(dict.fromkeys(vc for g in bars for vc in g.vcs))
    queue = {g.label: {vc: _spread(g.figure("avg_queue", vc)) for vc in g.vcs} for g in bars}
    jct = {g.label: _spread(g.figure("avg_jct")) for g in bars}
    gantts = {f"gantt-{i}.png": plots.gantt(g.rows, g.gpus, g.bars, f"Jobs on GPUs: {g.label}"
                                            + (f"\n{g.note}" if g.note else ""), g.hours)
              for i, g in enumerate(pictures.gantts, start=1)}
    counts = {f"gpus-{i}.png": plots.gpu_counts(g.rows, g.bars, f"GPUs per job: {g.label}"
                                                + (f"\n{g.note}" if g.note else ""))
              for i, g in enumerate(pictures.gpu_counts, start=1)}
    return {
        "avg_jct.png": plots.figure_bars(jct, "average JCT (s): mean over seeds, min–max bars",
                                         "Average JCT per configuration"),
        "jct_cdf.png": plots.jct_cdf(pictures.jct, title=f"JCT CDF per configuration (seeds pooled){more}"),
        "queue_cdf.png": plots.jct_cdf({k: np.maximum(v, 1.0) for k, v in pictures.queue.items()},
                                       title=f"Queueing delay CDF per configuration (seeds pooled){more}",
                                       xlabel="queueing delay (s, log scale; 0 drawn at 1 s)"),
        "queue_by_vc.png": plots.queue_by_vc(queue, vcs),
        "utilization.png": plots.over_time(pictures.utilization, "GPU utilization (%)",
                                           f"GPU utilization over time{more}", percent=True),
        "pending.png": plots.over_time(pictures.pending, "pending jobs", f"Pending jobs over time{more}"),
        **gantts,
        **counts,
    }


def html_page(table: pd.DataFrame, images: dict[str, bytes], sources: Sequence[str],
              charts: Sequence[interactive.Chart] = ()) -> str:
    columns = shown_columns(table)
    shown = formatted(table, columns)
    rows = "\n".join(
        "<tr{}>{}</tr>".format(' class="all"' if vc == "all" else "",
                               "".join(f"<td>{html.escape(str(v))}</td>" for v in row))
        for row, vc in zip(shown.itertuples(index=False), table["vc"])
    )
    head = "".join(f"<th>{html.escape(_HEADERS.get(c, c))}</th>" for c in columns)
    figures = "\n".join(
        f'<figure><img alt="{name}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'
        f"<figcaption>{name}</figcaption></figure>" for name, data in images.items()
    )
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
tr.all {{ font-weight: bold; background: #f4f4f4; }}
img {{ max-width: 100%; }}
section.chart {{ margin: 1em 0; }}
</style>{script}</head><body>
<h1>Comparison</h1>
<p>Sources: {html.escape(", ".join(sources))}. Times in seconds; each figure is the mean over a configuration's
seeds, with (min–max). Fairness: Jain's index over users of their mean 1/ρ; ρ = JCT ÷ JCT alone on a fair
1/n share of the job's VC (simcluster.metrics.fairness).</p>
<table><thead><tr>{head}</tr></thead><tbody>
{rows}
</tbody></table>
<h2>Charts</h2>
<p>Drag to zoom, double-click to zoom out, hover a bar or a line for its values; a legend entry hides its line.</p>
{live}
<h2>Plots</h2>
{figures}
</body></html>
"""


@dataclass
class Report:
    table: pd.DataFrame  # comparison.csv
    runs: pd.DataFrame  # runs.csv
    folder: Path
    files: list[str]
    notes: list[str]


def write_report(paths: Sequence[Path], out: Path, overwrite: bool = False, baseline: str | None = None,
                 replicas: int = 0, perturb: str | None = None, seed: int = 0,
                 gantt_window: tuple[float, float] | None = None, allow_missing: bool = False) -> Report:
    """Collect the runs under ``paths``, write the report folder ``out`` atomically, return the tables.

    ``out`` is replaced only if it is a report folder simcluster wrote, or with ``overwrite``
    (:func:`simcluster.results.check_output`); never a folder that holds one of ``paths``.
    ``baseline``: a policy; each configuration's figures are also given relative to that policy's
    configuration on the same trace (:func:`~simcluster.experiments.aggregate.baseline_of`).
    Runs that are replicas (``sweep --replicas``), or ``replicas`` > 0 (a post-hoc bootstrap of the runs over
    their trace's days), give each figure a 95 % interval and pairs of configurations their paired difference
    (:mod:`simcluster.experiments.uncertainty`).  A missing or cut input is an error naming it; with
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
    groups = configurations(records)
    if baseline is not None and not any(g.policy == baseline for g in groups):
        raise ReportError(f"--baseline {baseline}: no run of that policy among "
                          f"{', '.join(sorted({g.policy for g in groups}))}")
    table = aggregate(groups, baseline)
    try:
        found = (posthoc_uncertainty(groups, replicas, perturb, seed, baseline) if replicas
                 else replica_uncertainty(groups, baseline))
    except ValueError as exc:
        raise ReportError(str(exc)) from None
    extra: dict[str, bytes] = {}
    if found is not None:
        table = found.with_intervals(table)
        extra["differences.csv"] = found.differences_frame().to_csv(index=False).encode()
    runs = runs_table(records, groups)
    pictures = gather(groups, gantt_window)
    images = render_plots(groups, pictures)
    files: dict[str, bytes] = {
        "comparison.csv": table.to_csv(index=False).encode(),
        "comparison.md": markdown(table).encode(),
        "runs.csv": runs.to_csv(index=False).encode(),
        **extra,
        **images,
        "report.html": html_page(table, images, [str(p) for p in paths], interactive.charts(pictures)).encode(),
    }
    write_folder(Path(out), {}, files=files, kind="report", inputs=paths, overwrite=overwrite)
    notes = left_out + [f"{row.label}: {row.notes}" for row in table.itertuples() if row.vc == "all" and row.notes]
    if baseline is not None:
        notes += [f"{row.label}: no {baseline} run on its trace to compare with" for row in table.itertuples()
                  if row.vc == "all" and not row.baseline]
    if found is not None:
        notes += [found.method] + [text for *_, text in found.differences]
    return Report(table, runs, Path(out), list(files), notes)
