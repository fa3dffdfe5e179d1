"""``lucid-sim topology``: placements × topology requests on one topology and trace, over replicas, with 95 %
intervals (:mod:`simcluster.experiments.topology`, docs/topology.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from simcluster.cli.common import app, err, exit_code, fail, interrupted_by, out, terminate_as_interrupt
from simcluster.cli.options import parameter, with_parameters
from simcluster.cli.trace_options import TRACE, sizing_parameters, trace_parameters

STUDY = "Study"

PARAMETERS = [
    parameter("topology", Annotated[str, typer.Option(
        help="The cluster's topology file, as `lucid-sim run --topology` takes it (a CSV node,LEVEL,…, Slurm's "
        "topology.conf or a Kubernetes node list); a name in the shared data is found there.",
        rich_help_panel=STUDY, show_default=False)], ...),  # (... : required)
    parameter("trace", Annotated[str, typer.Option(
        help="A trace, as `lucid-sim sweep --trace` takes it: a job log (folder or CSV) or a synthetic trace "
        "synth:FIELD=VALUE,… (e.g. synth:jobs=5000,nodes=847,vcs=1). Its nodes must match the topology's.",
        rich_help_panel=TRACE, show_default=False)], ...),
    *trace_parameters()[1:],  # (--vc-config, --columns, … as `run` has them)
    *sizing_parameters(),
    parameter("placements", Annotated[str | None, typer.Option(
        help="Placements, comma-separated. Default: consolidate and every topology-aware placement "
        "(`lucid-sim placements`).", rich_help_panel=STUDY, show_default=False)]),
    parameter("requests", Annotated[str | None, typer.Option(
        help="Request kinds, comma-separated: none, preferred:LEVEL, required:LEVEL. Default: none, "
        "preferred and required at the topology's lowest level. A placement that does not read requests runs "
        "with none only.", rich_help_panel=STUDY, show_default=False)]),
    parameter("topology_slowdown", Annotated[str | None, typer.Option(
        help="What spanning costs, as `lucid-sim run` takes it: LEVEL=X,… (a job spanning LEVEL runs at "
        "1/(1 + X)).", rich_help_panel=STUDY, show_default=False)]),
    parameter("topology_levels", Annotated[str | None, typer.Option(
        help="A Kubernetes node list's levels: label keys top-down, or a Kueue Topology YAML.",
        rich_help_panel=STUDY, show_default=False)]),
    parameter("policy", Annotated[str, typer.Option(help="The scheduling policy of every run.",
                                                    rich_help_panel=STUDY)], "fifo"),
    parameter("replicas", Annotated[int, typer.Option(
        help="Runs of each combination, on replicas of the trace made by --perturb (the same for every "
        "combination); at least 2.", rich_help_panel=STUDY)], 10),
    parameter("perturb", Annotated[str | None, typer.Option(
        help="How replicas are made (docs/uncertainty.md): seeds (a synthetic trace drawn again with each "
        "replica's seed), bootstrap, jitter. Default: seeds for a synthetic trace, else bootstrap.",
        rich_help_panel=STUDY, show_default=False)]),
    parameter("workers", Annotated[int | None, typer.Option(
        min=1, help="Processes. Default: every CPU.", rich_help_panel=STUDY, show_default=False)]),
    parameter("out_dir", Annotated[Path | None, typer.Option(
        "--out", help="Folder for topology.csv (the table) and topology_runs.csv (one row per run).",
        show_default=False)]),
    parameter("quiet", Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no table.")],
              False),
    parameter("as_json", Annotated[bool, typer.Option(
        "--json", help="Print the study as one JSON document (its settings, the table's rows, the notes and the "
        "files written) instead of the table.")], False),
]


@app.command(rich_help_panel="Analyse")
@with_parameters(PARAMETERS)
def topology(ctx: typer.Context, **values: Any) -> None:
    """Compare placements × topology requests on a topology and a trace: avg JCT, queueing, utilization, GPU-time
    lost to spanning and the jobs spanning each level, each with its 95 % interval over replicas.

    Example: `lucid-sim topology --topology ../shared/data/topology/lingjun/topo.csv --trace
    synth:jobs=5000,nodes=847,vcs=1,sizes=pow2:256,decay=1.6 --topology-slowdown PSW=0.3,ASW=0.15`
    """
    from simcluster.cli.trace_options import LOADER_OPTIONS
    from simcluster.config import SimConfig
    from simcluster.errors import TraceError
    from simcluster.experiments.topology import topology_study
    from simcluster.registry import UnknownPlugin
    from simcluster.results import check_writable

    quiet = values["quiet"] or values["as_json"]
    options = {name: values.get(name) for name in (*LOADER_OPTIONS, "skip_invalid") if values.get(name)}
    try:
        base = SimConfig.from_settings({"policy": values["policy"], "gpus_per_node": values["gpus_per_node"],
                                        "cluster": values["cluster"], "topology_levels": values["topology_levels"]},
                                       "command line")
        placements = [p.strip() for p in values["placements"].split(",") if p.strip()] if values["placements"] else None
        if values["out_dir"] is not None:  # a folder that cannot be written is refused before any run
            check_writable(values["out_dir"])
    except ValueError as exc:  # (ConfigError, OutputError: ValueErrors)
        fail(exc)
    progress = _progress(quiet)
    try:
        with terminate_as_interrupt(), progress:
            task = progress.add_task("", total=None)

            def advance(placement: str, request: str, replica: int) -> None:
                progress.update(task, advance=1, description=f"{placement} {request} replica {replica}")

            study = topology_study(values["trace"], values["topology"], placements, values["requests"],
                                   values["topology_slowdown"], values["replicas"], values["perturb"], base,
                                   values["vc_config"], options, values["workers"], on_run=advance)
        written = study.write(values["out_dir"]) if values["out_dir"] is not None else []
    except KeyboardInterrupt as stop:
        fail(f"interrupted ({interrupted_by(stop)}): nothing was written", exit_code(stop))
    except (TraceError, UnknownPlugin, ValueError, OSError) as exc:  # (ConfigError, SweepError: ValueErrors)
        fail(exc)
    if values["as_json"]:
        from simcluster.results import to_json

        print(to_json({"settings": study.settings, "rows": study.table.to_dict("records"), "notes": study.notes,
                       "written": [str(p) for p in written]}, indent=2))
        return
    if quiet:
        return
    print_study(study)
    if written:
        out.print("wrote " + ", ".join(str(p) for p in written), highlight=False)


def _progress(quiet: bool) -> Any:
    from rich.progress import MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]topology"), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.description}"), console=err, disable=quiet, transient=True)


def print_study(study: Any) -> None:
    """Two tables (what the jobs saw; what spanning cost), each figure's mean over its 95 % interval, then the notes
    on what was left out."""
    from rich.table import Table

    from simcluster.experiments.replicas import FEWEST

    settings, rows = study.settings, study.table.to_dict("records")
    levels = [level for level, count in settings["domains"].items() if count > 1]  # (one domain: never spanned)
    if len({row["spanning_node_mean"] for row in rows}) > 1:  # (else: the jobs larger than a node, whatever the placement)
        levels.append("node")
    tables = {
        f"{settings['policy']}, {settings['replicas']} replicas ({settings['perturb']}): mean and 95 % interval": {
            "avg JCT (s)": ("avg_jct", _seconds), "Δ JCT (s)": ("jct_change", _change),
            "avg queue (s)": ("avg_queue", _seconds), "GPU util": ("gpu_utilization", _percent)},
        "Spanning: GPU-time lost to it, and the jobs spanning each level": {
            "lost GPU-h": ("lost_gpu_hours", _seconds), "lost share": ("lost_share", _percent),
            **{f"jobs spanning {level}": (f"spanning_{level}", _percent) for level in levels}},
    }
    for title, columns in tables.items():
        table = Table(title=title, title_justify="left")
        table.add_column("placement, request", no_wrap=True)
        for name in columns:
            table.add_column(name, justify="right")
        for row in rows:
            table.add_row(f"{row['placement']}\n{row['request']}",
                          *(_cell(row, figure, form) for figure, form in columns.values()))
        out.print(table)
    out.print(f"trace {settings['trace']}\nΔ JCT: avg JCT minus {settings['baseline']}'s, replica by replica; lost "
              "GPU-h: the GPU-hours held beyond the work because spanning slowed the jobs (lost share: of all the "
              "GPU-time held)", highlight=False)
    for note in study.notes:
        out.print(f"[yellow]note:[/] {note}", highlight=False)
    if settings["replicas"] < FEWEST:
        out.print(f"[yellow]note:[/] fewer than {FEWEST} replicas: the 95 % intervals are rough", highlight=False)


def _cell(row: dict[str, Any], name: str, form: Any) -> str:
    """The mean, and below it the interval in short numbers (6.0k–6.1k), so that a table fits 80 columns."""
    low, high = form(row[f"{name}_low"], True), form(row[f"{name}_high"], True)
    return f"{form(row[f'{name}_mean'], False)}\n[dim]{low}–{high}[/]"


def _seconds(value: float, short: bool) -> str:
    if not short or abs(value) < 999.5:
        return f"{value:,.0f}"
    return f"{value / 1000:.0f}k" if abs(value) >= 9_950 else f"{value / 1000:.1f}k"


def _change(value: float, short: bool) -> str:
    return ("+" if value > 0 else "") + _seconds(value, short)


def _percent(value: float, short: bool) -> str:
    return f"{value:.1%}"
