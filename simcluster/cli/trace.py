"""`lucid-sim trace …`: make and check traces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simcluster.cli.common import fail, out, trace_app


@trace_app.command("synth")
def trace_synth(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write cluster_full_log.csv and vc_config.csv to "
                                          "(--style gavel: a .trace file, or a folder that gets gavel.trace).")],
    style: Annotated[str, typer.Option(help="venus (job log, VCs) or gavel (Gavel's .trace format).")] = "venus",
    jobs_per_hour: Annotated[float, typer.Option(min=0.001, help="--style gavel: Poisson arrival rate.")] = 4.0,
    jobs: Annotated[int, typer.Option(min=1, help="Number of jobs.")] = 2000,
    nodes: Annotated[int, typer.Option(min=1, help="Nodes in the cluster, split among the VCs.")] = 32,
    vcs: Annotated[int, typer.Option(min=1, help="Number of virtual clusters.")] = 4,
    gpus_per_node: Annotated[int, typer.Option(min=1, help="GPUs per node.")] = 8,
    load: Annotated[float, typer.Option(min=0.01, help="Offered load (GPU-seconds asked / available).")] = 0.8,
    users: Annotated[int, typer.Option(min=1, help="Number of users.")] = 50,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Generate a synthetic trace shaped like Venus (GPU counts, durations, diurnal arrivals, workloads), or like Gavel's."""
    from simcluster.cli.gavel import synth_gavel
    from simcluster.traces.synth import SynthSpec, save_trace, synthesize

    if style == "gavel":
        try:
            out.print(synth_gavel(out_dir, jobs, jobs_per_hour, seed), highlight=False)
        except (ValueError, OSError) as exc:
            fail(str(exc))
        return
    if style != "venus":
        fail(f"--style must be venus or gavel, got {style!r}")
    try:
        spec = SynthSpec(jobs=jobs, nodes=nodes, vcs=vcs, gpus_per_node=gpus_per_node, load=load, users=users, seed=seed)
    except ValueError as exc:
        fail(str(exc))
    try:
        folder = save_trace(synthesize(spec), out_dir)
    except ValueError as exc:  # results.OutputError: --out holds files simcluster did not write, or is `.`
        fail(str(exc))
    out.print(f"wrote {jobs:,} jobs on {nodes} nodes × {gpus_per_node} GPUs in {vcs} VCs to [bold]{folder}[/]")


@trace_app.command("check")
def trace_check(
    trace: Annotated[Path, typer.Argument(help="Trace folder or CSV file.")],
    vc_config: Annotated[Path | None, typer.Option(help="VC config CSV.")] = None,
    gpus_per_node: Annotated[int, typer.Option(min=1, help="GPUs per node.")] = 8,
    skip_invalid: Annotated[bool, typer.Option(help="Count invalid rows instead of stopping at the first.")] = False,
) -> None:
    """Validate a trace and print what it holds."""
    from simcluster.cli.gavel import check_lines
    from simcluster.traces import TraceError, load_trace

    try:
        loaded = load_trace(trace, vc_config, gpus_per_node=gpus_per_node, skip_invalid=skip_invalid)
    except TraceError as exc:
        fail(str(exc))
    hetero = check_lines(loaded)
    if hetero is not None:
        for line in hetero:
            out.print(line, highlight=False)
        return
    f = loaded.frame
    out.print(f"{loaded.source}: {len(f):,} valid jobs in {len(loaded.vc_nodes)} VCs "
              f"({sum(loaded.vc_nodes.values())} nodes); submit span {f['submit_time'].max() - f['submit_time'].min():,} s; "
              f"{int((f['gpu_num'] * f['duration']).sum()):,} GPU-seconds asked", highlight=False)
    for why, n in loaded.skipped.most_common():
        out.print(f"  skipped {n} × {why}", highlight=False)
