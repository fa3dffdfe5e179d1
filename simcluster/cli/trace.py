"""`lucid-sim trace …`: make, check and convert traces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from simcluster.cli.common import fail, out, trace_app
from simcluster.cli.options import parameter, with_parameters
from simcluster.cli.trace_options import (
    load_trace_from,
    print_trace_warnings,
    sizing_parameters,
    trace_parameters,
)


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
    preset: Annotated[str, typer.Option(
        help="A documented mix: venus-2020 (Venus-like) or llm-era (a few 1k-16k-GPU jobs among many small "
        "ones; needs VCs of 16,384 GPUs). Its sizes, durations and arrivals apply where not given; it holds "
        "the load.", show_default=False)] = "",
    sizes: Annotated[str | None, typer.Option(
        help="GPUs per job: venus, pow2:MAX[,decay=D], SIZE:WEIGHT,SIZE:WEIGHT,... or trace:PATH (a job "
        "log's sizes). [default: the preset's, else venus]", show_default=False)] = None,
    durations: Annotated[str | None, typer.Option(
        help="Seconds per job: venus, lognormal:mu=M,sigma=S[,max=X][,grow=G] (grow: log-seconds added per "
        "doubling of GPUs) or trace:PATH. [default: the preset's, else venus]", show_default=False)] = None,
    arrivals: Annotated[str | None, typer.Option(
        help="diurnal, poisson or bursts:size=K (K jobs at one instant). [default: the preset's, else "
        "diurnal]", show_default=False)] = None,
    hold_load: Annotated[bool | None, typer.Option(
        "--hold-load/--no-hold-load", help="Choose the arrival rate so that the realised load (work run "
        "while jobs are still submitted) is --load. [default: held with a preset or any shape but Venus']",
        show_default=False)] = None,
) -> None:
    """Generate a synthetic trace: Venus-shaped by default (GPU counts, durations, diurnal arrivals,
    workloads), or of chosen sizes, durations and arrivals at a held load (docs/synthetic.md); or like
    Gavel's."""
    from simcluster.cli.gavel import synth_gavel
    from simcluster.results import check_writable
    from simcluster.traces.realised import realised_by_vc
    from simcluster.traces.synth import SynthSpec, save_trace, synthesize

    try:  # a place that cannot be written: said before anything is drawn
        check_writable(out_dir.parent if style == "gavel" and out_dir.suffix == ".trace" else out_dir)
    except ValueError as exc:
        fail(exc)
    if style == "gavel":
        try:
            out.print(synth_gavel(out_dir, jobs, jobs_per_hour, seed), highlight=False)
        except (ValueError, OSError) as exc:
            fail(exc)
        return
    if style != "venus":
        fail(f"--style must be venus or gavel, got {style!r}")
    try:
        spec = SynthSpec(jobs=jobs, nodes=nodes, vcs=vcs, gpus_per_node=gpus_per_node, load=load, users=users,
                         seed=seed, preset=preset, sizes=sizes, durations=durations, arrivals=arrivals,
                         hold_load=hold_load)
        trace = synthesize(spec)  # a load that cannot be held, sizes that do not fit: nothing written
    except ValueError as exc:
        fail(exc)
    try:
        folder = save_trace(trace, out_dir)
    except ValueError as exc:  # results.OutputError: --out holds files simcluster did not write, or is `.`
        fail(exc)
    out.print(f"wrote {jobs:,} jobs on {nodes} nodes × {gpus_per_node} GPUs in {vcs} VCs to [bold]{folder}[/]")
    realised = realised_by_vc(trace.frame, trace.vc_nodes, gpus_per_node)["cluster"]
    why = (f"held at --load {load:g}" if spec.holds_load else f"--load {load:g} is the total work's: "
           "GPU-seconds asked ÷ (GPUs × span); --hold-load holds this one")
    out.print(f"  realised offered load {realised:.3f} ({why})", highlight=False)


def _load(values: dict[str, Any], sized: bool) -> Any:
    from simcluster.traces import TraceError

    try:
        return load_trace_from(values, sized=sized)
    except (TraceError, ValueError) as exc:
        fail(exc)


JSON_OPTION = parameter("as_json", Annotated[bool, typer.Option("--json", help="Print it as one JSON document.")],
                        False)


@trace_app.command("check")
@with_parameters([*trace_parameters(positional=True), *sizing_parameters(), JSON_OPTION])
def trace_check(ctx: typer.Context, **values: Any) -> None:
    """Validate a trace and print what it holds: format, time rule, jobs and offered load per VC, GPU-count
    histogram, duration percentiles, submission span (and, for a log without VCs, --nodes per target load)."""
    from simcluster.cli.gavel import check_lines

    loaded = _load(values, sized=False)
    print_trace_warnings(loaded)
    if values["as_json"]:
        import json

        from simcluster.traces.inspection import inspect_trace

        seen = inspect_trace(loaded, values["gpus_per_node"])
        print(json.dumps({"valid": True, **seen}, indent=2, default=str))
        return
    hetero = check_lines(loaded)
    if hetero is not None:
        for line in hetero:
            out.print(line, highlight=False)
    try:
        _print_check(loaded, values["gpus_per_node"], values.get("cluster"))
    except (ValueError, KeyError) as exc:  # e.g. a Gavel trace without the throughput table: durations unknown
        out.print(f"[yellow]no statistics:[/] {exc}", highlight=False)


@trace_app.command("inspect")
@with_parameters([*trace_parameters(positional=True), *sizing_parameters(),
                  parameter("as_json", Annotated[bool, typer.Option(
                      "--json", help="Print what was understood as one JSON document.")], False)])
def trace_inspect(ctx: typer.Context, **values: Any) -> None:
    """Show what the loader understood before a long run: which column holds each field and in what unit, the
    delimiter, how submit times were read and the dates they span, durations, GPUs per job, and warnings
    where the data looks misread (durations in minutes read as seconds, milliseconds read as seconds...)."""
    import json

    from simcluster.traces.inspection import inspect_trace

    seen = inspect_trace(_load(values, sized=False), values["gpus_per_node"])
    if values["as_json"]:
        print(json.dumps(seen, indent=2, default=str))
        return
    _print_inspection(seen)


@trace_app.command("convert")
@with_parameters([*trace_parameters(positional=True), *sizing_parameters(),
                  parameter("out_dir", Annotated[Path, typer.Option("--out", help="Folder to write (atomically): "
                            "cluster_full_log.csv, vc_config.csv and conversion.json.", show_default=False)]),
                  parameter("overwrite", Annotated[bool, typer.Option(
                      help="Replace --out even if simcluster did not write it (never the input's folder); an earlier "
                      "conversion is replaced without it.")], False), JSON_OPTION])
def trace_convert(ctx: typer.Context, **values: Any) -> None:
    """Write any supported trace in our canonical folder format (Helios/Venus job log + vc_config.csv)."""
    from simcluster.traces.convert import check_target, job_log, write_canonical
    from simcluster.traces.joblog import JobLog
    from simcluster.traces.sizing import cluster_gpus

    try:
        check_target(values["out_dir"], values["trace"], values["overwrite"])
    except ValueError as exc:
        fail(exc)
    loaded = _load(values, sized=True)
    try:
        gpus = cluster_gpus(values["cluster"]) if values.get("cluster") and not isinstance(loaded, JobLog) else None
        frame, vc_nodes, notes = job_log(loaded, values["gpus_per_node"], values.get("nodes"), gpus)
    except ValueError as exc:
        fail(exc)
    provenance = {
        "source": loaded.source, "format": loaded.format,
        "time_rule": getattr(loaded, "time_rule", "seconds, as given"),
        "epoch": getattr(loaded, "epoch", None), "sizing": loaded.sizing,
        "gpus_per_node": values["gpus_per_node"], "jobs": len(frame), "skipped_rows": dict(loaded.skipped),
        "notes": notes, "submit_time": "whole seconds from the epoch",
    }
    folder = write_canonical(values["out_dir"], frame, vc_nodes, provenance, inputs=(values["trace"],),
                             overwrite=values["overwrite"])
    if values["as_json"]:
        import json

        print(json.dumps({"folder": str(folder), "vc_nodes": vc_nodes, **provenance}, indent=2, default=str))
        return
    out.print(f"wrote {len(frame):,} jobs in {len(vc_nodes)} VC(s) ({sum(vc_nodes.values()):,} nodes × "
              f"{values['gpus_per_node']} GPUs) from a {provenance['format']} trace to [bold]{folder}[/]", highlight=False)
    if values["gpus_per_node"] != 8:
        out.print(f"  load it with --gpus-per-node {values['gpus_per_node']}", highlight=False)
    for note in notes:
        out.print(f"  note: {note}", highlight=False)
    for why, n in loaded.skipped.most_common():
        out.print(f"  skipped {n:,} × {why}", highlight=False)


def _print_check(loaded: Any, gpus_per_node: int, cluster: str | None) -> None:
    """The Rich summary of ``trace check``."""
    import pandas as pd
    from rich.table import Table

    from simcluster.traces.columns import by_name
    from simcluster.traces.joblog import JobLog
    from simcluster.traces.stats import run_vc_gpus, sizes_for_loads, trace_stats

    vc_gpus: dict[str, int] = {}
    if isinstance(loaded, JobLog):
        frame, vc_nodes, total = loaded.frame, loaded.vc_nodes, None
        vc_gpus = run_vc_gpus(loaded, gpus_per_node)  # (the GPUs a run counts: a trace's own cluster first)
        fmt = by_name(loaded.format) if loaded.format in ("venus", "philly", "itp", "csv") else None
        vcs = "one VC (no VC column)" if loaded.sizing.startswith("one VC") else \
            f"{len(vc_nodes)} VC{'s' if len(vc_nodes) != 1 else ''}"
        out.print(f"[bold]{loaded.source}[/]: {len(frame):,} valid jobs in {vcs}", highlight=False)
        out.print(f"format: [bold]{loaded.format}[/]" + (f" — {fmt.description}" if fmt else ""), highlight=False)
        for note in fmt.notes if fmt else ():
            out.print(f"  note: {note}", highlight=False)
        out.print(f"submit times: {loaded.time_rule}", highlight=False)
        out.print(f"cluster: {loaded.sizing}", highlight=False)
        for why, n in loaded.skipped.most_common():
            out.print(f"  skipped {n:,} × {why}", highlight=False)
    else:
        from simcluster.traces.convert import hetero_durations
        from simcluster.traces.sizing import cluster_gpus

        f = loaded.frame
        frame = pd.DataFrame({"vc": f["vc"], "gpu_num": f["gpu_num"] * f["gpu_milli"] / 1000.0,
                              "duration": hetero_durations(loaded), "submit_time": f["submit_time"]})
        total = cluster_gpus(cluster) if cluster else (loaded.cluster.total_gpus if loaded.cluster else None)
        vc_nodes = {}
        out.print(f"format: [bold]{loaded.kind}[/]; durations: "
                  + ("seconds (1 iteration/s)" if loaded.uniform else "on each job's fastest GPU type, alone"),
                  highlight=False)
    stats = trace_stats(frame, vc_nodes, gpus_per_node, total, vc_gpus or None)
    epoch = getattr(loaded, "epoch", None)

    def when(seconds: float) -> str:
        text = f"{seconds:,.0f} s"
        if epoch:
            text += f" ({pd.Timestamp(epoch) + pd.Timedelta(seconds=seconds)})"
        return text

    out.print(f"submitted from {when(stats.first_submit)} to {when(stats.last_submit)}: span "
              f"{stats.span:,.0f} s ({stats.span / 86400:,.1f} days)", highlight=False)

    realised = _realised(frame, vc_gpus, 1, total) if vc_gpus else _realised(frame, vc_nodes, gpus_per_node, total)
    table = Table(title="Virtual clusters (offered load = GPU-seconds asked ÷ (GPUs × span); realised = "
                  "the part of it run within the span, had every job started when submitted)",
                  title_justify="left")
    for col in ("VC", "nodes", "GPUs", "jobs", "largest job", "GPU-hours asked", "offered load",
                "realised load"):  # (no header word cut short at 80 columns)
        table.add_column(col, justify="left" if col == "VC" else "right",
                         min_width=max(map(len, col.split())))

    def add(v: Any, load: float | None, **style: Any) -> None:
        table.add_row(v.name, "—" if v.nodes is None else f"{v.nodes:,}", "—" if v.gpus is None else f"{v.gpus:,}",
                      f"{v.jobs:,}", f"{v.largest_job:,}", f"{v.gpu_seconds / 3600:,.0f}",
                      "—" if v.load is None else f"{v.load:.3f}", "—" if load is None else f"{load:.3f}",
                      **style)

    if len(stats.vcs) > 1:
        for v in stats.vcs:
            add(v, realised["vcs"].get(v.name))
    add(stats.total, realised["cluster"], style="bold")
    out.print(table)

    histogram = Table(title="GPUs per job", title_justify="left")
    for col in ("GPUs", "jobs", "share", ""):
        histogram.add_column(col, justify="right" if col else "left")
    top = max(n for _, n in stats.gpu_histogram)
    for gpus, n in stats.gpu_histogram:
        histogram.add_row(f"{gpus:,}", f"{n:,}", f"{n / stats.jobs:.1%}", "█" * max(1, round(24 * n / top)))
    out.print(histogram)

    durations = Table(title="Duration (s)", title_justify="left")
    for key in stats.durations:
        durations.add_column(key, justify="right")
    durations.add_row(*(f"{v:,.0f}" for v in stats.durations.values()))
    out.print(durations)

    one_vc = isinstance(loaded, JobLog) and loaded.sizing.startswith("one VC")
    if one_vc:
        sizes = Table(title=f"Sizes for a target load (nodes of {gpus_per_node} GPUs)", title_justify="left")
        for col in ("target", "--nodes", "GPUs", "offered load"):
            sizes.add_column(col, justify="right")
        for target, nodes, actual in sizes_for_loads(stats, gpus_per_node):
            sizes.add_row(f"{target:g}", f"{nodes:,}", f"{nodes * gpus_per_node:,}", f"{actual:.3f}")
        out.print(sizes)


def _realised(frame: Any, vc_nodes: dict[str, int], gpus_per_node: int, total: int | None) -> dict[str, Any]:
    """The realised load of each VC and of the cluster (``total`` GPUs where a heterogeneous one has them)."""
    import math

    from simcluster.traces.realised import realised_by_vc, realised_load

    realised = realised_by_vc(frame, vc_nodes, gpus_per_node)
    if total:
        whole = realised_load(frame["submit_time"], frame["duration"], frame["gpu_num"], total)
        realised["cluster"] = whole if math.isfinite(whole) else None
    return realised


def _print_inspection(seen: dict[str, Any]) -> None:
    """The Rich view of ``trace inspect``."""
    from rich.table import Table

    out.print(f"[bold]{seen['source']}[/]: {seen['jobs']:,} jobs, format [bold]{seen['format']}[/] — "
              f"{seen['format_description']}", highlight=False)
    out.print(f"fields split at the {seen['delimiter']}", highlight=False)
    columns = Table(title="Columns read", title_justify="left")
    for name in ("field", "column", "unit"):
        columns.add_column(name)
    for name, where in seen["columns"].items():
        columns.add_row(name, "—" if where["column"] is None else str(where["column"]), where["unit"])
    out.print(columns)
    out.print(f"submit times: {seen['submit_times']}", highlight=False)
    span = seen["submitted"]["span_seconds"]
    out.print(f"first submitted at {seen['submitted']['first']}, last at {seen['submitted']['last']} "
              f"(span {span:,.0f} s, {span / 86400:,.1f} days)", highlight=False)
    out.print(f"cluster: {seen['cluster']}", highlight=False)
    durations = Table(title="Duration (s)" if seen["format"] != "gavel" else "Length (iterations)",
                      title_justify="left")
    for key in seen["durations"]:
        durations.add_column(key, justify="right")
    durations.add_row(*(f"{v:,.0f}" for v in seen["durations"].values()))
    out.print(durations)
    histogram = Table(title="GPUs per job", title_justify="left")
    for col in ("GPUs", "jobs", "share", ""):
        histogram.add_column(col, justify="right" if col else "left")
    top = max(seen["gpu_histogram"].values())
    for gpus, n in seen["gpu_histogram"].items():
        histogram.add_row(gpus, f"{n:,}", f"{n / seen['jobs']:.1%}", "█" * max(1, round(24 * n / top)))
    out.print(histogram)
    for why, n in seen["skipped"].items():
        out.print(f"  skipped {n:,} × {why}", highlight=False)
    for doubt in seen["warnings"]:
        out.print(f"[yellow]warning:[/] {doubt}", highlight=False)
