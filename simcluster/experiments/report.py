"""Comparison reports over finished runs: a table (CSV, Markdown, Rich, HTML) and PNG plots.

Inputs are run folders (with ``summary.json``) and sweep folders (with
``runs.csv`` and ``runs/<run-id>/``).  The report folder is written like a run
folder: everything appears together, or nothing does.

- ``comparison.csv`` / ``comparison.md``: one row per run and VC plus an ``all`` row per run —
  avg/p50/p99 JCT, avg/p99 queueing delay, makespan, GPU utilization.
- ``jct_cdf.png``, ``queue_by_vc.png``, ``utilization.png``, ``pending.png``
  (:data:`PLOTS`, each :data:`simcluster.experiments.plots.WIDTH` × ``HEIGHT`` pixels).
- ``report.html``: the table and the plots in one self-contained page.
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

from simcluster.experiments import plots
from simcluster.results import write_folder

TABLE_COLUMNS = ["run", "policy", "trace", "seed", "vc", "jobs", "avg_jct", "p50_jct", "p99_jct", "avg_queue",
                 "p99_queue", "makespan", "gpu_utilization"]
PLOTS = ("jct_cdf.png", "queue_by_vc.png", "utilization.png", "pending.png")
MAX_LINES = 12  # more runs than this: runs of the same policy are pooled into one line
TIME_BINS = 400


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
        for suffix in ("csv", "parquet"):
            path = self.folder / f"{name}.{suffix}"
            if path.is_file():
                try:
                    if suffix == "csv":
                        return pd.read_csv(path, usecols=columns)
                    return pd.read_parquet(path, columns=columns)
                except (ValueError, OSError) as exc:
                    raise ReportError(f"{path}: cannot read columns {', '.join(columns)} ({exc})") from None
        raise ReportError(f"{self.folder}: no {name}.csv or {name}.parquet")

    def jobs(self) -> pd.DataFrame:
        return self._table("jobs", ["vc", "jct", "queue", "submit_time"])

    def timeline(self) -> pd.DataFrame:
        return self._table("timeline", ["time", "busy_gpus", "pending_jobs"])


def collect(paths: Iterable[Path]) -> list[RunRecord]:
    """The runs under ``paths`` (run folders, sweep folders), labelled uniquely."""
    records: list[RunRecord] = []
    for path in map(Path, paths):
        if not path.exists():
            raise ReportError(f"{path}: no such folder")
        if (path / "summary.json").is_file():
            records.append(_record(path.name, path))
        elif (path / "runs.csv").is_file() or (path / "runs").is_dir():
            found = sorted(p for p in (path / "runs").glob("*/summary.json")) if (path / "runs").is_dir() else []
            if not found:
                raise ReportError(f"{path}: a sweep folder with no finished run (no runs/*/summary.json)")
            records.extend(_record(p.parent.name, p.parent, source=path.name) for p in found)
        else:
            raise ReportError(f"{path}: neither a run folder (no summary.json) nor a sweep folder (no runs.csv)")
    labels = [r.label for r in records]
    for r in records:  # the same run name from two sweeps: say which sweep
        if labels.count(r.label) > 1:
            r.label = f"{r.folder.parent.parent.name}/{r.label}" if r.folder.parent.name == "runs" else str(r.folder)
    return records


def _record(label: str, folder: Path, source: str = "") -> RunRecord:
    path = folder / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: not readable JSON ({exc})") from None
    missing = [k for k in ("policy", "per_vc", "avg_jct") if k not in summary]
    if missing:
        raise ReportError(f"{path}: not a run summary (missing {', '.join(missing)})")
    return RunRecord(label, folder, summary)


def comparison_table(records: Sequence[RunRecord]) -> pd.DataFrame:
    rows = []
    for r in records:
        s = r.summary
        base = {"run": r.label, "policy": r.policy, "trace": Path(str(s.get("trace", ""))).parent.name
                or str(s.get("trace", "")), "seed": s.get("seed")}
        for vc, figures in s["per_vc"].items():
            rows.append({**base, "vc": vc, **{k: figures.get(k) for k in TABLE_COLUMNS[5:]}})
        rows.append({**base, "vc": "all", **{k: s.get(k) for k in TABLE_COLUMNS[5:]}})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _formatted(table: pd.DataFrame) -> pd.DataFrame:
    shown = table.astype(object).copy()
    for col in ("avg_jct", "p50_jct", "p99_jct", "avg_queue", "p99_queue", "makespan"):
        shown[col] = [f"{v:,.0f}" if pd.notna(v) else "" for v in table[col]]
    shown["jobs"] = [f"{int(v):,}" if pd.notna(v) else "" for v in table["jobs"]]
    shown["gpu_utilization"] = [f"{v:.1%}" if pd.notna(v) else "" for v in table["gpu_utilization"]]
    return shown


def markdown(table: pd.DataFrame) -> str:
    shown = _formatted(table)
    right = {c for c in shown.columns if c not in ("run", "policy", "trace", "vc")}
    lines = ["| " + " | ".join(shown.columns) + " |",
             "| " + " | ".join("---:" if c in right else "---" for c in shown.columns) + " |"]
    for row in shown.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"


_HEADERS = {"avg_jct": "avg JCT", "p50_jct": "p50 JCT", "p99_jct": "p99 JCT", "avg_queue": "avg queue",
            "p99_queue": "p99 queue", "gpu_utilization": "util"}


def rich_table(table: pd.DataFrame, max_rows: int = 200) -> Any:
    from rich.table import Table

    shown = _formatted(table).drop(columns=["policy", "trace", "seed"])  # the run's name says them
    names = list(dict.fromkeys(table["run"]))
    shown["run"] = shown["run"].map(dict(zip(names, short_labels(names))))
    if len(shown) > max_rows:  # many runs: the overall rows only (per-VC rows are in the CSV)
        shown = shown[table["vc"] == "all"]
    out = Table(title="Comparison (per VC and overall)", title_justify="left")
    for col in shown.columns:
        widest = max((len(str(v)) for v in shown[col]), default=4)
        out.add_column(_HEADERS.get(col, col), justify="left" if col in ("run", "vc") else "right",
                       overflow="fold" if col == "run" else "ellipsis", no_wrap=col != "run",
                       min_width=min(widest, 18) if col in ("run", "vc") else None)
    for row in shown.itertuples(index=False):
        out.add_row(*map(str, row), style="bold" if row.vc == "all" else None)
    return out


# --- plots ---------------------------------------------------------------------------------------------

def _series(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    """Lines of the plots: one per policy when each policy has one run, one per run when there are few,
    else the runs of a policy pooled."""
    by_policy: dict[str, list[RunRecord]] = {}
    for r in records:
        by_policy.setdefault(r.policy, []).append(r)
    if all(len(v) == 1 for v in by_policy.values()) or len(records) > MAX_LINES:
        return by_policy
    return dict(zip(short_labels([r.label for r in records]), ([r] for r in records)))


def short_labels(labels: Sequence[str]) -> list[str]:
    """Drop the '-'-separated parts every label shares (the trace, a constant setting...).

    >>> short_labels(["venus-fifo-seed1", "venus-sjf-seed1"])
    ['fifo', 'sjf']
    """
    parts = [label.split("-") for label in labels]
    if len(parts) < 2 or len({len(p) for p in parts}) != 1:
        return list(labels)
    keep = [i for i in range(len(parts[0])) if len({p[i] for p in parts}) > 1]
    short = ["-".join(p[i] for i in keep) or label for p, label in zip(parts, labels)]
    return short if len(set(short)) == len(short) else list(labels)


def render_plots(records: Sequence[RunRecord]) -> dict[str, bytes]:
    series = _series(records)
    jobs = {r.label: r.jobs() for r in records}
    cdf = {name: np.concatenate([jobs[r.label]["jct"].to_numpy(float) for r in runs]) for name, runs in series.items()}

    vcs = list(dict.fromkeys(vc for r in records for vc in r.summary["per_vc"]))
    queue = {}
    for name, runs in series.items():
        frame = pd.concat([jobs[r.label] for r in runs])
        queue[name] = frame.groupby("vc")["queue"].mean().to_dict()

    util: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    pending: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, runs in series.items():
        lines = []
        for r in runs:
            t = r.timeline()
            start = float(jobs[r.label]["submit_time"].min()) if len(jobs[r.label]) else 0.0
            lines.append((t["time"].to_numpy(float) - start, t["busy_gpus"].to_numpy(float) / max(1, r.summary.get(
                "gpus", 1)), t["pending_jobs"].to_numpy(float)))
        span = max((float(tt[-1]) for tt, _, _ in lines if len(tt)), default=1.0) or 1.0
        edges = np.linspace(0.0, span, TIME_BINS + 1)
        mids = (edges[:-1] + edges[1:]) / 2 / 86400
        util[name] = (mids, np.mean([plots.binned_mean(tt, u, edges) for tt, u, _ in lines], axis=0))
        pending[name] = (mids, np.mean([plots.binned_mean(tt, p, edges) for tt, _, p in lines], axis=0))
    return {
        "jct_cdf.png": plots.jct_cdf(cdf),
        "queue_by_vc.png": plots.queue_by_vc(queue, vcs),
        "utilization.png": plots.over_time(util, "GPU utilization (%)", "GPU utilization over time", percent=True),
        "pending.png": plots.over_time(pending, "pending jobs", "Pending jobs over time"),
    }


def html_page(table: pd.DataFrame, images: dict[str, bytes], sources: Sequence[str]) -> str:
    shown = _formatted(table)
    rows = "\n".join(
        "<tr{}>{}</tr>".format(' class="all"' if row.vc == "all" else "",
                               "".join(f"<td>{html.escape(str(v))}</td>" for v in row))
        for row in shown.itertuples(index=False)
    )
    head = "".join(f"<th>{html.escape(c)}</th>" for c in shown.columns)
    figures = "\n".join(
        f'<figure><img alt="{name}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'
        f"<figcaption>{name}</figcaption></figure>" for name, data in images.items()
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>simcluster comparison</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }}
td:nth-child(-n+5), th {{ text-align: left; }}
tr.all {{ font-weight: bold; background: #f4f4f4; }}
img {{ max-width: 100%; }}
</style></head><body>
<h1>Comparison</h1>
<p>Sources: {html.escape(", ".join(sources))}. Times in seconds.</p>
<table><thead><tr>{head}</tr></thead><tbody>
{rows}
</tbody></table>
<h2>Plots</h2>
{figures}
</body></html>
"""


@dataclass
class Report:
    table: pd.DataFrame
    folder: Path
    files: list[str]


def write_report(paths: Sequence[Path], out: Path, overwrite: bool = False) -> Report:
    """Collect the runs under ``paths``, write the report folder ``out`` atomically, return the table.

    ``out`` is replaced only if it is a report folder simcluster wrote, or with ``overwrite``
    (:func:`simcluster.results.check_output`); never a folder that holds one of ``paths``."""
    records = collect(paths)
    table = comparison_table(records)
    images = render_plots(records)
    buffer = table.to_csv(index=False)
    files: dict[str, bytes] = {
        "comparison.csv": buffer.encode(),
        "comparison.md": markdown(table).encode(),
        **images,
        "report.html": html_page(table, images, [str(p) for p in paths]).encode(),
    }
    write_folder(Path(out), {}, files=files, kind="report", inputs=paths, overwrite=overwrite)
    return Report(table, Path(out), list(files))
