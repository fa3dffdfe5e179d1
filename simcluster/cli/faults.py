"""`lucid-sim faults …`: read and fit fault logs (docs/failures.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from simcluster.cli.common import App, app, fail, out

faults_app = App(help="Read and fit fault logs of a fleet's servers (InfiniteHBD JSON, or CSV node,start,end[,class]).")
app.add_typer(faults_app, name="faults", rich_help_panel="Analyse")

LogArgument = Annotated[Path, typer.Argument(
    help="The fault log: InfiniteHBD fault_trace.json (times in days) or a CSV node,start,end[,class] (times in "
    "seconds since the observation began, or timestamps; an empty end: never recovered; other column names: "
    "--columns).", show_default=False)]
ServersOption = Annotated[int | None, typer.Option(
    "--servers", min=1, help="Servers observed, those that never failed included. [default: 400 for the "
    "InfiniteHBD JSON (its dataset's count; the file lists only servers that failed), the distinct servers "
    "seen for a CSV]", show_default=False)]
SpanOption = Annotated[float | None, typer.Option(
    "--span-days", min=0.0001, help="Days observed. [default: from 0 to the last event]", show_default=False)]
OpenOption = Annotated[str, typer.Option(
    "--open-faults", help="A fault that never ends: error, or span-end (down to the end of the observation, its "
    "repair not fitted).")]
FormatOption = Annotated[str | None, typer.Option(
    "--format", help="infinitehbd or csv. [default: by the file's suffix: .json is infinitehbd]",
    show_default=False)]
ColumnsOption = Annotated[str | None, typer.Option(
    "--columns", help="A CSV log's own column names as FIELD=COLUMN,… (fields node, start, end, class, level, desc), "
    "e.g. node=hostname, start=down_at, end=up_at, class=reason; other columns are then ignored. Its times may be "
    "seconds since the observation began, ISO 8601 timestamps or Unix epoch seconds (then counted from the "
    "earliest start).", show_default=False)]
JsonOption = Annotated[bool, typer.Option("--json", help="Print it as one JSON document.")]


def _read(log: Path, servers: int | None, span_days: float | None, open_faults: str, format: str | None,
          columns: str | None) -> Any:
    from simcluster.errors import TraceError
    from simcluster.faults import read_fault_log
    from simcluster.faults.log import DAY
    from simcluster.paths import resolve_data

    try:
        return read_fault_log(resolve_data(log), servers=servers, span_s=None if span_days is None else span_days * DAY,
                              open_faults=open_faults, format=format, columns=columns)  # type: ignore[arg-type]
    except (TraceError, ValueError) as exc:
        fail(exc)


@faults_app.command("show")
def faults_show(log: LogArgument, servers: ServersOption = None, span_days: SpanOption = None,
                open_faults: OpenOption = "error", format: FormatOption = None, columns: ColumnsOption = None,
                as_json: JsonOption = False) -> None:
    """What a fault log holds: servers (failed and observed), span, faults, availability, faults per class, and
    the choices its reading needed (sorted events, merged overlaps)."""
    summary = _read(log, servers, span_days, open_faults, format, columns).summary()
    if as_json:
        from simcluster.results import to_json

        print(to_json(summary, indent=2))
        return
    from rich.table import Table

    out.print(f"[bold]{summary['path']}[/] ({summary['format']}): {summary['faults']:,} faults on "
              f"{summary['servers_failed']:,} of {summary['servers']:,} servers over {summary['span_days']:,.1f} days; "
              f"{summary['faults_per_1000_server_days']:.2f} faults per 1,000 server-days; availability "
              f"{summary['availability']:.2%}", highlight=False)
    for note in summary["notes"]:
        out.print(f"  note: {note}", highlight=False)
    table = Table(title="faults by class", title_justify="left")
    table.add_column("class")
    table.add_column("faults", justify="right")
    table.add_column("share", justify="right")
    for name, count in summary["classes"].items():
        table.add_row(name, f"{count:,}", f"{count / summary['faults']:.1%}")
    out.print(table)


@faults_app.command("fit")
def faults_fit(log: LogArgument,
               out_file: Annotated[Path | None, typer.Option(
                   "--out", help="Write the fit here as JSON (fitted.json; docs/failures.md gives its schema), for "
                   "a run on a cluster of any size.", show_default=False)] = None,
               servers: ServersOption = None, span_days: SpanOption = None, open_faults: OpenOption = "error",
               format: FormatOption = None, columns: ColumnsOption = None, as_json: JsonOption = False) -> None:
    """Fit a fault log: per class its share of the faults, its rate per 1,000 server-days of up time and its
    median repair time, each with a 95 % interval (exact Poisson, Clopper-Pearson, order statistics), and a
    log-normal fit of its repair times."""
    from simcluster.faults import fit_faults

    fit = fit_faults(_read(log, servers, span_days, open_faults, format, columns))
    if out_file is not None:
        from simcluster.errors import OutputError

        if out_file.is_dir():
            fail(f"--out {out_file}: is a folder; give a file name such as {out_file / 'fitted.json'}")
        if out_file.exists() and out_file.resolve() == log.resolve():
            fail(f"--out {out_file}: is the fault log being fit (the same file named twice); writing the fit there "
                 f"would overwrite the log: give another file, such as {out_file.with_name('fitted.json')}")
        try:
            fit.save(out_file)
        except OutputError as exc:
            fail(exc)
    if as_json:
        from simcluster.results import to_json

        print(to_json(fit.to_dict(), indent=2))
        return
    _print_fit(fit, out_file)


def _print_fit(fit: Any, out_file: Path | None) -> None:
    from rich.table import Table

    def hours(seconds: float | None) -> str:
        return "–" if seconds is None else f"{seconds / 3600:,.1f}"

    table = Table(title=f"{fit.faults:,} faults of {fit.servers:,} servers over {fit.span_days:,.1f} days: "
                  f"{1000 * fit.rate:.2f} [{1000 * fit.rate_low:.2f}, {1000 * fit.rate_high:.2f}] per 1,000 "
                  "server-days of up time", title_justify="left")
    table.add_column("class (level)")
    for name in ("faults", "share % [95 %]", "per 1000 server-days", "median repair h"):
        table.add_column(name, justify="right")
    for c in fit.classes:
        level = c.level.split()[0].lower() if c.level else ""
        table.add_row(f"{c.cls} ({level})" if level else c.cls, f"{c.faults:,}",
                      f"{100 * c.share:.1f} [{100 * c.share_low:.1f}, {100 * c.share_high:.1f}]",
                      f"{1000 * c.rate:.3f} [{1000 * c.rate_low:.3f}, {1000 * c.rate_high:.3f}]",
                      f"{hours(c.median_s)} [{hours(c.median_low_s)}, {hours(c.median_high_s)}]")
    out.print(table)
    for servers in (256, 2048, 16_384):
        out.print(f"  a job on {servers:,} servers: a fault every {fit.interruption_interval_s(servers) / 3600:,.2f} h",
                  highlight=False)
    if out_file is not None:
        out.print(f"wrote [bold]{out_file}[/]")
