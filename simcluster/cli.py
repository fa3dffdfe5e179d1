"""``lucid-sim``: replay a job trace on a GPU cluster under a scheduling policy.

Examples::

    lucid-sim run                                   # embedded default trace, fifo
    lucid-sim --policy srtf --trace ../shared/data/venus_sept --out results/venus-srtf
    lucid-sim policies
    lucid-sim trace synth --jobs 100000 --nodes 200 --out traces/big
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.estimators import ESTIMATORS
from simcluster.job import Job
from simcluster.metrics import Observer
from simcluster.paths import DEFAULT_TRACE
from simcluster.placement import PLACEMENTS
from simcluster.policies import POLICIES
from simcluster.registry import UnknownPlugin
from simcluster.results import FORMATS, write_run
from simcluster.traces import TraceError, load_trace
from simcluster.traces.synth import SynthSpec, save_trace, synthesize
from simcluster.traces.venus import DEFAULT_EPOCH

app = typer.Typer(
    help="Trace-driven, event-driven simulator of multi-tenant GPU clusters.\n\n"
    "`lucid-sim --policy NAME ...` with no command means `lucid-sim run --policy NAME ...`.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",
)
trace_app = typer.Typer(help="Make and check traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


class _ProgressObserver(Observer):
    """Advances a Rich progress bar as jobs finish (every 1% of the trace, so it costs nothing)."""

    def __init__(self, progress: Progress, task: Any, total: int) -> None:
        self.progress, self.task = progress, task
        self.step = max(1, total // 100)
        self.done = 0

    def on_finish(self, job: Job, now: float) -> None:
        self.done += 1
        if self.done % self.step == 0:
            self.progress.update(self.task, completed=self.done, description=f"t={now / 86400:,.1f} d")


@app.command()
def run(
    trace: Annotated[Path | None, typer.Option(help="Trace: a folder with cluster_full_log.csv and vc_config.csv, "
                                                  "or a CSV file (then give --vc-config). Default: the embedded trace.")] = None,
    policy: Annotated[str, typer.Option(help="Scheduling policy; `lucid-sim policies` lists them.")] = "fifo",
    placement: Annotated[str, typer.Option(help="Placement; `lucid-sim placements` lists them.")] = "consolidate",
    out_dir: Annotated[Path | None, typer.Option("--out", help="Results folder (replaced atomically). "
                                                    "Default: results/<trace>-<policy>-<placement>.")] = None,
    vc_config: Annotated[Path | None, typer.Option(help="VC config CSV (vc,num: nodes per VC).")] = None,
    gpus_per_node: Annotated[int, typer.Option(min=1, help="GPUs per node.")] = 8,
    seed: Annotated[int, typer.Option(help="Seed for random placement and node failures.")] = 0,
    node_mtbf: Annotated[float, typer.Option(min=0, help="Mean seconds between failures of each node (0: never).")] = 0.0,
    node_repair: Annotated[float, typer.Option(min=0, help="Seconds a failed node stays down.")] = 3600.0,
    checkpoint_interval: Annotated[float, typer.Option(min=0, help="Seconds of progress between checkpoints; a "
                                                       "failure loses the work since the last (0: none).")] = 0.0,
    preempt_overhead_small: Annotated[float, typer.Option(min=0, help="Preemption overhead (s), jobs of ≤ 8 GPUs.")] = 40.0,
    preempt_overhead_large: Annotated[float, typer.Option(min=0, help="Preemption overhead (s), jobs of > 8 GPUs.")] = 60.0,
    quantum: Annotated[float, typer.Option(min=1, help="tiresias: seconds between scheduling decisions.")] = 60.0,
    queues: Annotated[int | None, typer.Option(min=1, help="tiresias: number of priority queues K "
                                                  "(default thresholds 18000·2^i GPU-s).")] = None,
    thresholds: Annotated[str | None, typer.Option(help="tiresias: attained-service thresholds in GPU-seconds, "
                                                      "comma-separated (K-1 of them). Default: 18000.")] = None,
    promote_knob: Annotated[float, typer.Option(min=0, help="tiresias: promote a job that waited longer than "
                                                "knob × its last run to the top queue (0: off).")] = 0.0,
    estimator: Annotated[str, typer.Option(help="qssf: duration estimator — oracle, history, file or ebm.")] = "oracle",
    estimates: Annotated[Path | None, typer.Option(help="qssf --estimator file: CSV of job_id,priority "
                                                      "(estimated duration in seconds).")] = None,
    retrain_interval: Annotated[float, typer.Option(min=1, help="qssf --estimator ebm: simulated seconds "
                                                    "between re-trainings.")] = 7 * 86400.0,
    colocation: Annotated[str, typer.Option(help="Sharing policies: colocation tables — 'default' (ours), 'lucid' "
                                            "(public RTX 3090 table) or a folder with single.csv and pair.csv.")] = "default",
    gpu_memory: Annotated[float, typer.Option(min=1, help="Sharing policies: MiB of memory per GPU.")] = 24576.0,
    max_jobs_per_gpu: Annotated[int, typer.Option(min=1, help="Sharing policies: most jobs on one GPU.")] = 2,
    skip_invalid: Annotated[bool, typer.Option(help="Drop invalid trace rows (and report how many and why) "
                                               "instead of stopping at the first.")] = False,
    epoch: Annotated[str, typer.Option(help="Time zero for wall-clock submit times.")] = DEFAULT_EPOCH,
    fmt: Annotated[str, typer.Option("--format", help=f"Table format: {', '.join(FORMATS)}.")] = "csv",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no table.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON (implies --quiet).")] = False,
) -> None:
    """Simulate a trace and write jobs, timeline and summary to a results folder."""
    if fmt not in FORMATS:
        _fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    try:
        config = SimConfig(policy=policy, placement=placement, gpus_per_node=gpus_per_node, seed=seed,
                           node_mtbf=node_mtbf, node_repair=node_repair, checkpoint_interval=checkpoint_interval,
                           preempt_overhead_small=preempt_overhead_small,
                           preempt_overhead_large=preempt_overhead_large, quantum=quantum,
                           thresholds=_queue_thresholds(queues, thresholds), promote_knob=promote_knob,
                           estimator=estimator, estimates=str(estimates) if estimates else None,
                           retrain_interval=retrain_interval, colocation=colocation, gpu_memory=gpu_memory,
                           max_jobs_per_gpu=max_jobs_per_gpu)
        POLICIES.get(policy), PLACEMENTS.get(placement), ESTIMATORS.get(estimator)
        loaded = load_trace(trace or DEFAULT_TRACE, vc_config, gpus_per_node=gpus_per_node,
                            skip_invalid=skip_invalid, epoch=epoch)
    except (TraceError, UnknownPlugin, ValueError) as exc:
        _fail(str(exc))
    quiet = quiet or as_json
    if loaded.skipped and not quiet:
        err.print(f"[yellow]skipped {sum(loaded.skipped.values())} invalid row(s):[/] "
                  + "; ".join(f"{n} × {why}" for why, n in loaded.skipped.most_common()))

    name = (trace or DEFAULT_TRACE).resolve().name.removesuffix(".csv")
    target = out_dir or Path("results") / f"{name}-{policy}-{placement}"
    with Progress(TextColumn("[bold]{task.fields[label]}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=err, disable=quiet, transient=True) as progress:
        task = progress.add_task("", total=len(loaded), label=f"{policy}/{placement}")
        try:
            result = simulate(loaded, config, [_ProgressObserver(progress, task, len(loaded))])
        except (TraceError, ValueError) as exc:  # e.g. an estimates file that lacks a job
            _fail(str(exc))
    write_run(target, result.tables(), result.summary, fmt)

    if as_json:
        print(json.dumps(result.summary, default=float))
    elif not quiet:
        _print_summary(result.summary, target)


def _queue_thresholds(queues: int | None, thresholds: str | None) -> tuple[float, ...]:
    """--queues K and/or --thresholds a,b,... → K-1 ascending thresholds."""
    if thresholds:
        try:
            values = tuple(float(v) for v in thresholds.split(","))
        except ValueError:
            raise ValueError(f"--thresholds must be numbers separated by commas, got {thresholds!r}") from None
        if list(values) != sorted(set(values)) or values[0] <= 0:
            raise ValueError(f"--thresholds must be positive and increasing, got {thresholds!r}")
        if queues is not None and len(values) != queues - 1:
            raise ValueError(f"--queues {queues} needs {queues - 1} thresholds, got {len(values)}")
        return values
    if queues is not None:
        return tuple(18000.0 * 2**i for i in range(queues - 1))
    return (18000.0,)


def _print_summary(summary: dict[str, Any], target: Path) -> None:
    table = Table(title=f"{summary['policy']} / {summary['placement']} — {summary['jobs']:,} jobs", title_justify="left")
    for col in ("VC", "jobs", "avg JCT (s)", "p50 JCT", "p99 JCT", "avg queue (s)", "p99 queue", "GPU util"):
        table.add_column(col, justify="left" if col == "VC" else "right")

    def row(name: str, f: dict[str, Any], **style: Any) -> None:
        table.add_row(name, f"{f['jobs']:,}", f"{f['avg_jct']:,.0f}", f"{f['p50_jct']:,.0f}", f"{f['p99_jct']:,.0f}",
                      f"{f['avg_queue']:,.0f}", f"{f['p99_queue']:,.0f}", f"{f['gpu_utilization']:.1%}", **style)

    for vc, figures in summary["per_vc"].items():
        row(vc, figures)
    row("all", summary, style="bold")
    out.print(table)
    if "colocation" in summary:
        out.print(f"GPU sharing: {summary['shared_gpu_fraction']:.1%} of busy GPU-time shared, average slowdown "
                  f"{summary['avg_slowdown']:.3f}; colocation: {summary['colocation']}", highlight=False)
    quality = summary.get("estimate_quality")
    if quality and quality.get("jobs"):
        out.print(f"{summary['estimator']} estimates: MAE {quality['mae']:,.0f} s, median relative error "
                  f"{quality['median_relative_error']:.1%} over {quality['jobs']:,} jobs", highlight=False)
    out.print(f"makespan {summary['makespan']:,.0f} s · preemptions {summary['preemptions']:,} · "
              f"restarts {summary['restarts']:,} · simulation {summary['sim_cpu_seconds']:.2f} CPU-s · "
              f"loading {summary['load_cpu_seconds']:.2f} CPU-s\nresults in [bold]{target}[/]", highlight=False)


def _plugin_table(title: str, described: dict[str, str], as_json: bool) -> None:
    if as_json:
        print(json.dumps(described, indent=2))
        return
    table = Table(title=title, title_justify="left")
    table.add_column("name", style="bold cyan")
    table.add_column("what it does")
    for name, line in described.items():
        table.add_row(name, line)
    out.print(table)


@app.command()
def policies(as_json: Annotated[bool, typer.Option("--json", help="Print name → description as JSON.")] = False) -> None:
    """List the scheduling policies, one line each."""
    _plugin_table("Scheduling policies", POLICIES.describe(), as_json)


@app.command()
def placements(as_json: Annotated[bool, typer.Option("--json", help="Print name → description as JSON.")] = False) -> None:
    """List the placements, one line each."""
    _plugin_table("Placements", PLACEMENTS.describe(), as_json)


@trace_app.command("synth")
def trace_synth(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write cluster_full_log.csv and vc_config.csv to.")],
    jobs: Annotated[int, typer.Option(min=1, help="Number of jobs.")] = 2000,
    nodes: Annotated[int, typer.Option(min=1, help="Nodes in the cluster, split among the VCs.")] = 32,
    vcs: Annotated[int, typer.Option(min=1, help="Number of virtual clusters.")] = 4,
    gpus_per_node: Annotated[int, typer.Option(min=1, help="GPUs per node.")] = 8,
    load: Annotated[float, typer.Option(min=0.01, help="Offered load (GPU-seconds asked / available).")] = 0.8,
    users: Annotated[int, typer.Option(min=1, help="Number of users.")] = 50,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Generate a synthetic trace shaped like Venus (GPU counts, durations, diurnal arrivals, workloads)."""
    try:
        spec = SynthSpec(jobs=jobs, nodes=nodes, vcs=vcs, gpus_per_node=gpus_per_node, load=load, users=users, seed=seed)
    except ValueError as exc:
        _fail(str(exc))
    folder = save_trace(synthesize(spec), out_dir)
    out.print(f"wrote {jobs:,} jobs on {nodes} nodes × {gpus_per_node} GPUs in {vcs} VCs to [bold]{folder}[/]")


@trace_app.command("check")
def trace_check(
    trace: Annotated[Path, typer.Argument(help="Trace folder or CSV file.")],
    vc_config: Annotated[Path | None, typer.Option(help="VC config CSV.")] = None,
    gpus_per_node: Annotated[int, typer.Option(min=1, help="GPUs per node.")] = 8,
    skip_invalid: Annotated[bool, typer.Option(help="Count invalid rows instead of stopping at the first.")] = False,
) -> None:
    """Validate a trace and print what it holds."""
    try:
        loaded = load_trace(trace, vc_config, gpus_per_node=gpus_per_node, skip_invalid=skip_invalid)
    except TraceError as exc:
        _fail(str(exc))
    f = loaded.frame
    out.print(f"{loaded.source}: {len(f):,} valid jobs in {len(loaded.vc_nodes)} VCs "
              f"({sum(loaded.vc_nodes.values())} nodes); submit span {f['submit_time'].max() - f['submit_time'].min():,} s; "
              f"{int((f['gpu_num'] * f['duration']).sum()):,} GPU-seconds asked", highlight=False)
    for why, n in loaded.skipped.most_common():
        out.print(f"  skipped {n} × {why}", highlight=False)


_ROOT_FLAGS = {"--help", "-h"}


def main(argv: list[str] | None = None) -> None:
    """Entry point: a leading option (``lucid-sim --policy srtf``) means the ``run`` command."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0].startswith("-") and args[0] not in _ROOT_FLAGS:
        args.insert(0, "run")
    app(args=args, prog_name="lucid-sim")


if __name__ == "__main__":
    main()
