"""`lucid-sim diff A B`: two results compared job by job, overall and per VC, with the first divergence."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from simcluster.cli.common import app, fail, out


@app.command(rich_help_panel="Analyse")
def diff(
    a: Annotated[Path, typer.Argument(help="A run folder (jobs.csv) or a per-job CSV/parquet file, e.g. the Lucid "
                                      "artifact's <policy>_<placer>_all_log.csv.", show_default=False)],
    b: Annotated[Path, typer.Argument(help="The other side, in either form.", show_default=False)],
    tolerance: Annotated[float, typer.Option(min=0, help="Seconds within which two start or end times count as "
                                             "equal when looking for the first divergence.")] = 1.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare two results job by job: jobs matched, share of equal JCTs (exact, ≤ 1 s, ≤ 60 s), avg JCT of
    each and the difference, overall and per VC, and the first divergence (time, jobs, their starts in A and B).

    Jobs are matched by job_id; if the sides count time from different origins, B is shifted onto A.
    """
    from simcluster.experiments.diff import DiffError, diff_runs
    from simcluster.results import to_json

    try:
        result = diff_runs(a, b, tolerance)
    except DiffError as exc:
        fail(str(exc))
    if as_json:
        print(to_json(result.as_dict()))
        return
    print_diff(result)



def _percent(count: int, total: int) -> str:
    return f"{count / total:.1%}" if total else "–"


def print_diff(result: Any) -> None:
    title = f"A = {result.label_a}   B = {result.label_b}"
    if result.shift_b:
        title += f"   (B's times shifted by {result.shift_b:+,.0f} s onto A's origin)"
    table = Table(title=title, title_justify="left")
    for col in ("VC", "jobs", "= exact", "≤ 1 s", "≤ 60 s", "avg JCT A", "avg JCT B", "B − A"):
        table.add_column(col, justify="left" if col == "VC" else "right", no_wrap=True)
    divergences = Table(title="first divergence per VC (where to read the code)", title_justify="left")
    for col in ("VC", "time (s)", "differs", "jobs there"):
        divergences.add_column(col, justify="right" if col == "time (s)" else "left")
    for agreement in [*result.per_vc, result.overall]:
        bold = "bold" if agreement is result.overall else None
        table.add_row(
            agreement.vc, f"{agreement.matched:,}", _percent(agreement.equal_exact, agreement.matched),
            _percent(agreement.within_1s, agreement.matched), _percent(agreement.within_60s, agreement.matched),
            f"{agreement.avg_jct_a:,.0f}", f"{agreement.avg_jct_b:,.0f}",
            f"{agreement.jct_difference_relative:+.1%}" if agreement.matched else "–", style=bold,
        )
        if first := agreement.first:
            ids = ", ".join(job.job_id for job in first.jobs[:3]) + (" …" if len(first.jobs) > 3 else "")
            divergences.add_row(agreement.vc, f"{first.time:,.0f}", first.what, ids, style=bold)
    out.print(table)
    if divergences.row_count:
        out.print(divergences)
    if result.only_a or result.only_b:
        out.print(f"jobs only in A: {result.only_a:,}; only in B: {result.only_b:,}", highlight=False)
    first = result.overall.first
    if first is None:
        out.print("no divergence: every matched job starts and ends at the same times", highlight=False)
        return
    jobs = Table(title=f"first divergence at t={first.time:,.0f} s: the {first.what} times differ",
                 title_justify="left")
    what = first.what
    for col in ("job", "VC", "GPUs", "submit", f"{what} A", f"{what} B"):
        jobs.add_column(col, justify="left" if col in ("job", "VC") else "right", no_wrap=True)
    for job in first.jobs[:20]:
        times = (job.start_a, job.start_b) if what == "start" else (job.end_a, job.end_b)
        jobs.add_row(job.job_id, job.vc, "" if job.gpu_num is None else str(job.gpu_num), f"{job.submit_time:,.0f}",
                     *(f"{t:,.0f}" if math.isfinite(t) else "–" for t in times))
    out.print(jobs)
    if len(first.jobs) > 20:
        out.print(f"… and {len(first.jobs) - 20} more jobs at that instant", highlight=False)
