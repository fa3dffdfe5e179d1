"""What ``lucid-sim`` says about Gavel traces and round policies: ``trace check`` and ``trace synth --style gavel``
for Gavel's format, and the rounds line of a round policy's summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from simcluster.colocation.importers import gavel_path
from simcluster.errors import TraceError
from simcluster.throughputs import load_throughputs
from simcluster.traces.hetero import HeteroTrace


def check_lines(loaded: Any, throughputs: str | None = None) -> list[str] | None:
    """What ``lucid-sim trace check`` prints for a heterogeneous trace (None for other traces).

    A Gavel trace's job types are also looked up in the throughput table (default: the shared Gavel
    table, when present); a missing one stops with file, line and field and exit code 2.
    """
    if not isinstance(loaded, HeteroTrace):
        return None
    lines = [loaded.describe()]
    if loaded.kind == "gavel" and (throughputs or gavel_path().is_file()):
        table = load_throughputs(throughputs)
        try:
            loaded.make_jobs(table)  # looks every job type up, as a run would
        except TraceError as error:
            Console(stderr=True).print(f"[bold red]error:[/] {error}", highlight=False)
            raise typer.Exit(2) from None
        lines.append(f"  every job type is in the throughput table ({table.source})")
    lines += [f"  note: {note}" for note in loaded.notes]
    lines += [f"  skipped {n} × {why}" for why, n in loaded.skipped.most_common()]
    return lines


def synth_gavel(out_dir: Path, jobs: int, jobs_per_hour: float, seed: int, multi_gpu: bool = True,
                throughputs: str | None = None) -> str:
    """``lucid-sim trace synth --style gavel``: write a Gavel-format trace; returns what was written."""
    from simcluster.traces.gavel import GavelSynthSpec, save_gavel_trace, synthesize_gavel

    spec = GavelSynthSpec(jobs=jobs, jobs_per_hour=jobs_per_hour, multi_gpu=multi_gpu, seed=seed,
                          throughputs=throughputs)
    trace = synthesize_gavel(spec)
    path = save_gavel_trace(trace, out_dir)
    return f"wrote {jobs:,} Gavel-style jobs ({jobs_per_hour:g} per hour) to {path}"


def rounds_line(summary: dict[str, Any]) -> str:
    """A round policy's figures: rounds, allocations, LPs, lease extensions (and the cluster's GPU types)."""
    cluster = ", ".join(f"{t}:{v['gpus']}" for t, v in summary.get("cluster", {}).items())
    return ((f"cluster {cluster} · " if cluster else "")
            + f"{summary['rounds']:,} rounds of {summary['round_seconds']:g} s · "
            f"{summary['allocations']:,} allocations ({summary['lp_solves']:,} LPs) · "
            f"{summary['lease_extensions']:,} lease extensions · {summary.get('migrations', 0):,} migrations")
