"""The options that say which trace to load and how, shared by the commands that read a trace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from simcluster.cli.options import parameter
from simcluster.config import SimConfig
from simcluster.paths import DEFAULT_TRACE

TRACE = "Trace"
DEFAULT_EPOCH = "2020-04-01 00:00:00"  # as simcluster.traces.venus (not imported: it pulls in pandas)


def trace_parameters() -> list[Any]:
    return [
        parameter("trace", Annotated[Path | None, typer.Option(
            help="Trace: a folder with cluster_full_log.csv and vc_config.csv, a CSV file (then give --vc-config), "
            "a Gavel .trace file or an openb pod list. Default: the embedded trace.", rich_help_panel=TRACE,
            show_default=False)]),
        parameter("vc_config", Annotated[Path | None, typer.Option(
            help="VC config CSV (vc,num: nodes per VC).", rich_help_panel=TRACE, show_default=False)]),
        parameter("skip_invalid", Annotated[bool, typer.Option(
            help="Drop invalid trace rows (and report how many and why) instead of stopping at the first.",
            rich_help_panel=TRACE)], False),
        parameter("epoch", Annotated[str, typer.Option(
            help="Time zero for wall-clock submit times.", rich_help_panel=TRACE)], DEFAULT_EPOCH),
    ]


def load_trace_from(values: dict[str, Any], config: SimConfig) -> Any:
    """The trace that the trace options in ``values`` name (the embedded one by default)."""
    from simcluster.traces import load_trace

    return load_trace(values["trace"] or DEFAULT_TRACE, values["vc_config"], gpus_per_node=config.gpus_per_node,
                      skip_invalid=values["skip_invalid"], epoch=values["epoch"])
