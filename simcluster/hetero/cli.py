"""The heterogeneous-cluster parts of ``lucid-sim`` (kept here so that ``simcluster/cli.py`` only calls in)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from simcluster.colocation.importers import gavel_path
from simcluster.hetero.policies import HETERO_POLICIES
from simcluster.hetero.throughputs import job_key, load_throughputs
from simcluster.hetero.trace import HeteroTrace
from simcluster.registry import UnknownPlugin
from simcluster.traces.errors import TraceError


def check_policy(name: str) -> None:
    """Raise UnknownPlugin (listing both families) unless ``name`` is a known policy."""
    from simcluster.policies import POLICIES

    if name in HETERO_POLICIES or name in POLICIES:
        return
    raise UnknownPlugin(f"unknown policy {name!r}; choose one of: {', '.join(POLICIES.names())} "
                        f"(event-driven) or {', '.join(HETERO_POLICIES.names())} (heterogeneous clusters, rounds)")


def describe_policies() -> dict[str, str]:
    return HETERO_POLICIES.describe()


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
        for job_type, scale, line in loaded.frame[["job_type", "gpu_num", "line"]].itertuples(index=False):
            if job_key(str(job_type), int(scale)) not in table.solo:
                error = TraceError(loaded.source, f"job type {job_type!r} with scale factor {scale} is not in the "
                                   f"throughput table ({table.source})", line=int(line), field="job_type")
                Console(stderr=True).print(f"[bold red]error:[/] {error}", highlight=False)
                raise typer.Exit(2)
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
    cluster = ", ".join(f"{t}:{v['gpus']}" for t, v in summary.get("cluster", {}).items())
    return (f"cluster {cluster} · {summary['rounds']:,} rounds of {summary['round_seconds']:g} s · "
            f"{summary['allocations']:,} allocations ({summary['lp_solves']:,} LPs) · "
            f"{summary['lease_extensions']:,} lease extensions · {summary['migrations']:,} migrations")
