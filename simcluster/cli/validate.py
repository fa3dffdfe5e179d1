"""`lucid-sim validate RUN --recorded FILE`: a run beside what a real cluster recorded."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from simcluster.cli.common import app, err, fail, out

RECORD = "Reading the record"


@app.command(rich_help_panel="Analyse")
def validate(
    run: Annotated[Path, typer.Argument(help="A run folder (`lucid-sim run --out`).", show_default=False)],
    recorded: Annotated[Path, typer.Option(
        "--recorded", help="What the cluster recorded: aggregate bins of jobs submitted and started (and GPUs "
        "started and ended), as Helios' cluster_throughput.csv, or a per-job log with submit, start and end "
        "times, as Helios' cluster_log.csv.", show_default=False)],
    epoch: Annotated[str | None, typer.Option(
        help="Wall-clock time of the run's second 0, to read the record's timestamps (default: the trace "
        "format's, 2020-04-01 00:00:00 for Helios/Venus logs, else the run's trace's own).",
        rich_help_panel=RECORD, show_default=False)] = None,
    start: Annotated[str | None, typer.Option(
        help="Start of the window compared (seconds on the run's clock, or a timestamp). Default: the run's "
        "first submission.", show_default=False)] = None,
    end: Annotated[str | None, typer.Option(
        help="End of the window (default: the run's last submission, so that the record's later arrivals, "
        "which the run lacks, are left out).", show_default=False)] = None,
    bin_seconds: Annotated[float, typer.Option(
        "--bin", help="Bin width (s) for a per-job record; an aggregate record keeps its own bins.",
        rich_help_panel=RECORD)] = 600.0,
    backlog: Annotated[str, typer.Option(
        help="Jobs already waiting when an aggregate record starts: 'min' (the fewest that keep the waiting "
        "count at or above zero: a lower bound) or a number.", rich_help_panel=RECORD)] = "min",
    running_at_start: Annotated[str, typer.Option(
        help="GPUs already running when an aggregate record starts: 'min' (as --backlog) or a number.",
        rich_help_panel=RECORD)] = "min",
    earlier_jobs: Annotated[str, typer.Option(
        help="Jobs waiting when the window opens, submitted before it: 'first' (they start before the "
        "window's own jobs and are left out of the count as they do, so both sides count the window's "
        "arrivals) or 'count' (kept in).", rich_help_panel=RECORD)] = "first",
    columns: Annotated[str | None, typer.Option(
        help="FIELD=COLUMN,… for a record whose columns are named otherwise. Aggregate fields: time, "
        "submitted, started, gpus_started, gpus_ended; per-job: submit_time, start_time, end_time, gpu_num.",
        rich_help_panel=RECORD, show_default=False)] = None,
    top: Annotated[int, typer.Option(min=1, help="How many of the most divergent days to list.")] = 5,
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="Folder for validation.json, series.csv, days.csv, waiting.png and running_gpus.png "
        "(written atomically). Default: results/validate-RUN.", show_default=False)] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace --out even if simcluster did not write it.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON (and still write --out).")]
    = False,
) -> None:
    """Compare a run with what a real cluster recorded: average queueing delay of each, the waiting-jobs and
    running-GPUs series side by side with their correlation, a table per day and the days that differ most.

    The recorded average queueing delay of an aggregate record comes from Little's law: the time-average of the
    jobs waiting (backlog + submitted − started, bin by bin) divided by the arrival rate. The run is read the
    same way from its jobs.csv.
    """
    from simcluster.paths import resolve_data
    from simcluster.results import OutputError, check_output, to_json
    from simcluster.traces.errors import TraceError
    from simcluster.validate import ValidateError
    from simcluster.validate import validate as compare

    target = out_dir or Path("results") / f"validate-{run.resolve().name}"
    try:
        items = [item for item in (columns or "").split(",") if item.strip()]
        if any("=" not in item for item in items):
            raise ValidateError(f"--columns: expected FIELD=COLUMN items separated by commas, got {columns!r}")
        given = dict(item.split("=", 1) for item in items)
        check_output(target, "validate", [run, resolve_data(recorded)], overwrite)
        with err.status("reading the run and the record…", spinner="dots"):
            result = compare(run, recorded, epoch=epoch, start=start, end=end, bin_seconds=bin_seconds,
                             backlog=_count_or_min(backlog), running_at_start=_count_or_min(running_at_start),
                             earlier_jobs=earlier_jobs, columns={k.strip(): v.strip() for k, v in given.items()})
            result.write(target, overwrite, top)
    except (ValidateError, TraceError, OutputError) as exc:
        fail(exc)
    if as_json:
        print(to_json(result.as_dict(top)))
        return
    print_validation(result, top)
    out.print(f"wrote validation.json, series.csv, days.csv and plots to [bold]{target}[/]", highlight=False)


def _count_or_min(value: str) -> str | int:
    text = value.strip()
    return int(text) if text.isdigit() and len(text) < 19 else text  # (a longer one: said to be out of range)


def print_validation(result: Any, top: int) -> None:
    """The headline table, the per-day table, the most divergent days and the notes."""
    f = result.figures()
    bins = f"{result.bin_seconds / 60:g}-minute bins"
    table = Table(title=f"{result.run} against {result.record} ({result.kind} record, {bins})", title_justify="left")
    for col in ("", "recorded", "simulated", "sim ÷ rec"):
        table.add_column(col, justify="left" if not col else "right")

    def row(name: str, rec: Any, sim: Any, fmt: str = "{:,.0f}", ratio: bool = True) -> None:
        shown = [fmt.format(v) if v is not None and not (isinstance(v, float) and math.isnan(v)) else "–"
                 for v in (rec, sim)]
        table.add_row(name, *shown, f"{sim / rec:.2f}" if ratio and rec and sim is not None else "")

    row("avg queueing delay (s), Little's law", f["recorded_avg_queue"], f["simulated_avg_queue"])
    if f["recorded_avg_queue_per_job"] is not None:
        row("avg queueing delay (s), per job", f["recorded_avg_queue_per_job"], f["simulated_avg_queue_per_job"])
    row("jobs arrived", f["recorded_arrivals"], f["simulated_arrivals"])
    row("jobs waiting (mean)", f["recorded_mean_waiting"], f["simulated_mean_waiting"], "{:,.1f}")
    row("GPUs running (mean)", f["recorded_mean_running_gpus"], f["simulated_mean_running_gpus"])
    out.print(table)
    running = f["correlation_running_gpus"]
    out.print(f"correlation of the {bins}: jobs waiting r = {f['correlation_waiting']:.3f}"
              + (f", GPUs running r = {running:.3f}" if running is not None else ""), highlight=False)
    out.print(_days_table(result.days(), "per day"))
    out.print(_days_table(result.divergent_days(top), f"the {top} days that differ most (waiting-job-days)"))
    settings = result.settings
    if "backlog_jobs" in settings:
        out.print(f"[dim]backlog when the record starts: {settings['backlog_jobs']} job(s) (--backlog "
                  f"{settings['backlog']}); waiting when the window opens: {settings['waiting_at_window_start']} "
                  f"(--earlier-jobs {settings['earlier_jobs']})[/]", highlight=False)
    for note in result.notes:
        out.print(f"[yellow]note:[/] {note}", highlight=False)


def _days_table(days: Any, title: str) -> Table:
    """Days as rows, each figure as a recorded and a simulated column (narrow enough for 80 columns)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    heads = {"date": "day", "recorded_arrivals": "arrived\nrec", "simulated_arrivals": "\nsim",
             "recorded_waiting": "waiting\nrec", "simulated_waiting": "\nsim", "recorded_wait": "queue s\nrec",
             "simulated_wait": "\nsim", "recorded_running_gpus": "GPUs\nrec", "simulated_running_gpus": "\nsim"}
    shown = [c for c in heads if c in days]
    years = {str(d)[:5] for d in days["date"]}
    if len(years) == 1 and str(days["date"].iloc[0])[4:5] == "-":  # one year: 09-01 rather than 2020-09-01
        days = days.assign(date=[str(d)[5:] for d in days["date"]])
        heads["date"] = f"day\n{years.pop()[:4]}"
    for col in shown:
        table.add_column(heads[col], justify="left" if col == "date" else "right", no_wrap=True)
    for _, day in days.iterrows():
        table.add_row(*(str(day[c]) if c == "date" else _number(day[c], ".1f" if "waiting" in c else ",.0f")
                        for c in shown))
    return table


def _number(value: Any, fmt: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)
