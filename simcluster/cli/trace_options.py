"""The options that say which trace to load and how, shared by the commands that read a trace.

``run`` gets them as ``--trace PATH`` beside its settings (``--gpus-per-node`` and ``--cluster`` are
:class:`~simcluster.config.SimConfig` fields there); ``trace check`` and ``trace convert`` take the
trace as an argument and add those two (:func:`sizing_parameters`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from simcluster.cli.common import err
from simcluster.cli.options import parameter
from simcluster.config import SimConfig
from simcluster.paths import DEFAULT_TRACE

TRACE = "Trace"
TRACE_HELP = ("A job log (Helios/Venus, Philly, ITP, or any CSV with --columns), a Gavel .trace file, an openb pod "
              "list, or a folder holding one of them (and vc_config.csv).")


LOADER_OPTIONS = ("epoch", "columns", "nodes", "load", "duration_unit", "time_format", "delimiter")


def trace_parameters(positional: bool = False) -> list[Any]:
    """``--trace`` (or the ``TRACE`` argument), ``--vc-config``, ``--columns``, ``--nodes``, ``--load``,
    ``--epoch``, ``--duration-unit``, ``--time-format``, ``--delimiter`` and ``--skip-invalid``."""
    if positional:
        trace = parameter("trace", Annotated[Path, typer.Argument(help=TRACE_HELP, show_default=False)])
    else:
        trace = parameter("trace", Annotated[Path | None, typer.Option(
            help=TRACE_HELP + " Default: the embedded trace.", rich_help_panel=TRACE, show_default=False)])
    return [
        trace,
        parameter("vc_config", Annotated[Path | None, typer.Option(
            help="Nodes per VC (vc,num or vc,node num). Default: vc_config.csv beside the job log.",
            rich_help_panel=TRACE, show_default=False)]),
        parameter("columns", Annotated[str | None, typer.Option(
            help="A job log's column names, FIELD=COLUMN,… for submit_time, gpu_num, duration, job_id, vc, user "
            "(vc= : no VCs). Known formats need none.", rich_help_panel=TRACE, show_default=False)]),
        parameter("nodes", Annotated[int | None, typer.Option(
            min=1, help="Size of a job log without VCs: one VC of N nodes.",
            rich_help_panel=TRACE, show_default=False)]),
        parameter("load", Annotated[float | None, typer.Option(
            help="Size of a job log without VCs: the fewest nodes with offered load (GPU-seconds asked ÷ "
            "(GPUs × span)) ≤ X, e.g. 0.8.", rich_help_panel=TRACE,
            show_default=False)]),
        parameter("epoch", Annotated[str | None, typer.Option(
            help="Time zero of submit times (default: the format's: 2020-04-01 for Venus logs, else midnight of "
            "the first day); earlier jobs are invalid.",
            rich_help_panel=TRACE, show_default=False)]),
        parameter("duration_unit", Annotated[str | None, typer.Option(
            help="Unit of a job log's durations: s, ms, min or h (default: s); other units may have fractions "
            "and are rounded to whole seconds.", rich_help_panel=TRACE, show_default=False,
            metavar="s|ms|min|h")]),
        parameter("time_format", Annotated[str | None, typer.Option(
            help="How submit times are written: epoch-s, epoch-ms (Unix time) or a strftime pattern such as "
            "'%d/%m/%Y %H:%M' (default: told from the values; `lucid-sim trace inspect` shows the reading).",
            rich_help_panel=TRACE, show_default=False)]),
        parameter("delimiter", Annotated[str | None, typer.Option(
            help="Field delimiter of a CSV job log: comma, semicolon, tab or pipe (or the character); default: "
            "the one its header uses.", rich_help_panel=TRACE, show_default=False)]),
        parameter("skip_invalid", Annotated[bool, typer.Option(
            help="Drop invalid trace rows (and report how many and why) instead of stopping at the first.",
            rich_help_panel=TRACE)], False),
    ]


def sizing_parameters() -> list[Any]:
    """``--gpus-per-node`` and ``--cluster``, for commands without the SimConfig options."""
    return [
        parameter("gpus_per_node", Annotated[int, typer.Option(min=1, help="GPUs in every node.",
                                                               rich_help_panel=TRACE)], 8),
        parameter("cluster", Annotated[str | None, typer.Option(
            help="Size of a job log without VCs in GPUs (e.g. v100:512); a Gavel trace's GPU types.",
            rich_help_panel=TRACE, show_default=False)]),
    ]


def load_trace_from(values: dict[str, Any], config: SimConfig | None = None, sized: bool = True) -> Any:
    """The trace that the trace options in ``values`` name (the embedded one by default).

    ``--gpus-per-node`` and ``--cluster`` come from ``config`` when given, else from ``values``; with
    ``--topology`` and no size given, a job log without VCs is the topology file's nodes.
    """
    from simcluster.traces import load_trace
    from simcluster.traces.sizing import cluster_gpus

    gpus_per_node = config.gpus_per_node if config else values.get("gpus_per_node", 8)
    cluster = config.cluster if config else values.get("cluster")
    if cluster:
        cluster_gpus(cluster)  # a size beyond the limit is refused before anything is built
    options = {name: values.get(name) for name in LOADER_OPTIONS}
    if config is not None and config.topology and not (cluster or options["nodes"] or options["load"]):
        sized = False  # a job log without VCs is then as large as the topology file (features.topology)
    return load_trace(values["trace"] or DEFAULT_TRACE, values.get("vc_config"), gpus_per_node=gpus_per_node,
                      skip_invalid=values.get("skip_invalid", False), cluster=cluster, sized=sized, **options)


def print_trace_warnings(loaded: Any) -> None:
    """Where the trace looks misread (:mod:`simcluster.traces.doubts`), on stderr."""
    for doubt in loaded.warnings:
        err.print(f"[yellow]warning:[/] {loaded.source}: {doubt}", highlight=False)
