"""``lucid-sim``: replay a job trace on a GPU cluster under a scheduling policy.

Examples::

    lucid-sim run                                   # embedded default trace, fifo
    lucid-sim --policy srtf --trace ../shared/data/venus_sept --out results/venus-srtf
    lucid-sim policies
    lucid-sim trace synth --jobs 100000 --nodes 200 --out traces/big
    lucid-sim explain --trace ../shared/data/venus_sept --colocation lucid --out results/explain
    lucid-sim sweep --policy fifo,sjf --seed 1,2 --out results/sweep; lucid-sim report results/sweep --out reports/x
    lucid-sim run --trace t100.trace --cluster v100:4,p100:4,k80:4 --policy max_min_fairness_perf
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
from simcluster.hetero.cli import check_lines, check_policy, describe_policies, rounds_line, synth_gavel
from simcluster.job import Job
from simcluster.live import live_run
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
    estimator: Annotated[str, typer.Option(help="qssf, lucid: duration estimator — oracle, history, file or ebm; "
                                           "auto: the policy's own (qssf oracle, lucid ebm).")] = "auto",
    estimates: Annotated[Path | None, typer.Option(help="qssf --estimator file: CSV of job_id,priority "
                                                      "(estimated duration in seconds).")] = None,
    retrain_interval: Annotated[float, typer.Option(min=1, help="qssf --estimator ebm: simulated seconds "
                                                    "between re-trainings.")] = 7 * 86400.0,
    colocation: Annotated[str, typer.Option(help="Sharing policies: colocation tables — 'default' (ours), 'lucid' "
                                            "(public RTX 3090 table) or a folder with single.csv and pair.csv.")] = "default",
    gpu_memory: Annotated[float, typer.Option(min=1, help="Sharing policies: MiB of memory per GPU.")] = 24576.0,
    max_jobs_per_gpu: Annotated[int, typer.Option(min=1, help="Sharing policies: most jobs on one GPU.")] = 2,
    cluster: Annotated[str | None, typer.Option(help="Heterogeneous cluster (Gavel traces, Gavel policies): GPUs per "
                                                "type, e.g. v100:4,p100:4,k80:4, or a node-list CSV.")] = None,
    round_seconds: Annotated[float, typer.Option("--round", min=1, help="Heterogeneous clusters: round length "
                                                 "(s) of the round-based mechanism.")] = 360.0,
    throughputs: Annotated[str | None, typer.Option(help="Heterogeneous clusters: Gavel's throughputs JSON or a "
                                                    "folder of single.csv/pair.csv with gpu_type. Default: the "
                                                    "shared Gavel table.")] = None,
    realloc_interval: Annotated[float, typer.Option(min=0, help="Heterogeneous clusters: least seconds between "
                                                    "allocation recomputations (0: at every job-set change; "
                                                    "Gavel uses 1920).")] = 0.0,
    midround_release: Annotated[bool, typer.Option(help="Heterogeneous clusters: GPUs freed mid-round go to "
                                                   "waiting jobs at once (--no-midround-release: as Gavel, "
                                                   "they idle until the round ends).")] = True,
    profiler_nodes: Annotated[int, typer.Option(min=0, help="lucid: nodes of the profiling partition "
                                                "(beside the VCs); 0 turns profiling off.")] = 2,
    profile_seconds: Annotated[float, typer.Option(min=1, help="lucid: seconds a new job is profiled at most.")] = 300.0,
    profiler_factor: Annotated[float, typer.Option(min=0.01, help="lucid: jobs of more than factor × the "
                                                   "partition's GPUs skip profiling.")] = 0.5,
    lucid_sharing: Annotated[str, typer.Option(help="lucid: pair jobs on GPUs — adaptive (while the forecast "
                                               "load is high), always or never.")] = "adaptive",
    share_load_quantile: Annotated[float, typer.Option(min=0, max=1, help="lucid adaptive: load is high when next "
                                                       "hour's forecast reaches this quantile of past hours.")] = 0.5,
    throughput_history: Annotated[Path | None, typer.Option(help="lucid: 10-minute submission log (time,"
                                                            "submit_gpu_job) to train the forecaster on. Default: "
                                                            "cluster_throughput.csv beside the trace, else the "
                                                            "trace's own past.")] = None,
    pair_priority_ratio: Annotated[float, typer.Option(min=0, help="lucid: pair only if the waiting job's "
                                                       "priority ≤ ratio × the partner's.")] = 2.0,
    max_score_sum: Annotated[int, typer.Option(min=0, help="lucid: most the pair's sharing scores may sum to.")] = 2,
    skip_invalid: Annotated[bool, typer.Option(help="Drop invalid trace rows (and report how many and why) "
                                               "instead of stopping at the first.")] = False,
    epoch: Annotated[str, typer.Option(help="Time zero for wall-clock submit times.")] = DEFAULT_EPOCH,
    fmt: Annotated[str, typer.Option("--format", help=f"Table format: {', '.join(FORMATS)}.")] = "csv",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no table.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON (implies --quiet).")] = False,
    live: Annotated[bool, typer.Option("--live", help="A live view: simulated time, progress per VC, running/"
                                       "pending jobs, busy GPUs, utilization sparkline, avg JCT.")] = False,
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
                           max_jobs_per_gpu=max_jobs_per_gpu, profiler_nodes=profiler_nodes,
                           profile_seconds=profile_seconds, profiler_factor=profiler_factor,
                           lucid_sharing=lucid_sharing, share_load_quantile=share_load_quantile,
                           throughput_history=str(throughput_history) if throughput_history else None,
                           pair_priority_ratio=pair_priority_ratio, max_score_sum=max_score_sum,
                           cluster=cluster, round_seconds=round_seconds, throughputs=throughputs,
                           realloc_interval=realloc_interval, midround_release=midround_release)
        check_policy(policy)
        PLACEMENTS.get(placement)
        if estimator != "auto":
            ESTIMATORS.get(estimator)
        loaded = load_trace(trace or DEFAULT_TRACE, vc_config, gpus_per_node=gpus_per_node,
                            skip_invalid=skip_invalid, epoch=epoch)
    except (TraceError, UnknownPlugin, ValueError) as exc:
        _fail(str(exc))
    quiet = quiet or as_json
    if loaded.skipped and not quiet:
        err.print(f"[yellow]skipped {sum(loaded.skipped.values())} invalid row(s):[/] "
                  + "; ".join(f"{n} × {why}" for why, n in loaded.skipped.most_common()))

    name = (trace or DEFAULT_TRACE).resolve().name.removesuffix(".csv").removesuffix(".trace")
    target = out_dir or Path("results") / f"{name}-{policy}-{placement}"
    with Progress(TextColumn("[bold]{task.fields[label]}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=err, disable=quiet or live, transient=True) as progress:
        task = progress.add_task("", total=len(loaded), label=f"{policy}/{placement}")
        try:
            with live_run(loaded, config, err, enabled=live and not quiet) as watchers:
                result = simulate(loaded, config, [_ProgressObserver(progress, task, len(loaded)), *watchers])
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
    if lucid := summary.get("lucid"):
        packing, load = lucid.get("packing", {}), lucid.get("throughput", {})
        out.print(f"lucid: {lucid.get('profiled', 0):,} jobs profiled, {lucid.get('finished_while_profiling', 0):,} "
                  f"finished while profiling, {lucid.get('paired', 0):,} paired (sharing {lucid['sharing']}"
                  + (f", load high {load['high_fraction']:.0%} of the time, forecast MAE {load['mae']:.1f} jobs/h"
                     if "mae" in load else "") + ")"
                  + (f"; packing model accuracy {packing['accuracy']:.0%} on held-out configurations"
                     if "accuracy" in packing else ""), highlight=False)
    out.print(f"makespan {summary['makespan']:,.0f} s · preemptions {summary['preemptions']:,} · "
              f"restarts {summary['restarts']:,} · simulation {summary['sim_cpu_seconds']:.2f} CPU-s · "
              f"loading {summary['load_cpu_seconds']:.2f} CPU-s\nresults in [bold]{target}[/]", highlight=False)
    if summary.get("engine") == "rounds":
        out.print(rounds_line(summary), highlight=False)


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
    if as_json:
        merged = POLICIES.describe()
        merged |= {(n if n not in merged else f"{n} (heterogeneous)"): d for n, d in describe_policies().items()}
        print(json.dumps(merged, indent=2))
        return
    _plugin_table("Scheduling policies", POLICIES.describe(), as_json)
    _plugin_table("Heterogeneous-cluster policies (round-based, Gavel OSDI'20; --cluster)", describe_policies(), as_json)


@app.command()
def placements(as_json: Annotated[bool, typer.Option("--json", help="Print name → description as JSON.")] = False) -> None:
    """List the placements, one line each."""
    _plugin_table("Placements", PLACEMENTS.describe(), as_json)


@app.command()
def explain(
    trace: Annotated[Path | None, typer.Option(help="Trace folder or CSV (default: the embedded trace).")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Folder for explain.json, <model>_importances.csv "
                                                    "and <model>_<term>.png. Default: results/explain-<trace>.")] = None,
    colocation: Annotated[str, typer.Option(help="Colocation tables the packing model learns from: 'default', "
                                            "'lucid' (adds accuracy against the authors' labels) or a folder.")] = "default",
    throughput_history: Annotated[Path | None, typer.Option(help="10-minute submission log for the throughput "
                                                            "model (default: cluster_throughput.csv beside the "
                                                            "trace, else the trace's own submissions).")] = None,
    vc_config: Annotated[Path | None, typer.Option(help="VC config CSV, for a trace given as one CSV.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the models' training.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print explain.json's content instead of tables.")] = False,
) -> None:
    """Train Lucid's three interpretable models as the `lucid` policy would and show what they learned.

    Packing (colocation tables → sharing score), workload (submission → duration) and throughput
    (past 10-minute bins → next hour's submissions): term importances, shape plots of the top terms,
    and held-out accuracy next to simple baselines.
    """
    from simcluster.models.explain import explain as explain_models

    try:
        loaded = load_trace(trace or DEFAULT_TRACE, vc_config)
        config = SimConfig(policy="lucid", colocation=colocation, seed=seed,
                           throughput_history=str(throughput_history) if throughput_history else None)
        target = out_dir or Path("results") / f"explain-{(trace or DEFAULT_TRACE).resolve().name.removesuffix('.csv')}"
        with err.status("training the packing, workload and throughput models…"):
            report = explain_models(loaded, config, target)
    except (TraceError, ValueError) as exc:
        _fail(str(exc))
    if as_json:
        print(json.dumps(report, default=float))
        return
    _print_explanation(report, target)


def _print_explanation(report: dict[str, Any], target: Path) -> None:
    lines = {
        "packing": lambda r: (f"held-out accuracy {r['accuracy']:.1%} over {r['configurations']} configurations"
                              + (f"; against the authors' labels {r['accuracy_vs_authors']:.1%} (our labels agree "
                                 f"with theirs on {r['our_labels_vs_authors']:.1%})" if "accuracy_vs_authors" in r
                                 else "")) if "accuracy" in r else r.get("note", ""),
        "workload": lambda r: (f"MAE {r['ebm']['mae']:,.0f} s, median relative error "
                               f"{r['ebm']['median_relative_error']:.1%} on the last {r['test_jobs']:,} jobs; history "
                               f"estimator {r['history']['mae']:,.0f} s / {r['history']['median_relative_error']:.1%}"
                               + (f"; Lucid artifact {r['lucid_artifact']['mae']:,.0f} s / "
                                  f"{r['lucid_artifact']['median_relative_error']:.1%}" if "lucid_artifact" in r
                                  else "")) if "ebm" in r else r.get("note", ""),
        "throughput": lambda r: (f"MAE {r['mae']:.1f} submissions/hour (persistence {r['persistence_mae']:.1f}; mean "
                                 f"{r['mean_submissions_per_hour']:.1f}) over {r['test_bins']:,} forecasts"
                                 if "mae" in r else r.get("note", "")),
    }
    for name, line in lines.items():
        part = report[name]
        table = Table(title=f"{name} model — {line(part)}", title_justify="left")
        table.add_column("term", style="bold cyan")
        table.add_column("importance", justify="right")
        for row in part.get("importances", [])[:8]:
            table.add_row(str(row["term"]), f"{row['importance']:.3f}")
        out.print(table)
    out.print(f"plots and tables in [bold]{target}[/]", highlight=False)


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
    if style == "gavel":
        try:
            out.print(synth_gavel(out_dir, jobs, jobs_per_hour, seed), highlight=False)
        except (ValueError, OSError) as exc:
            _fail(str(exc))
        return
    if style != "venus":
        _fail(f"--style must be venus or gavel, got {style!r}")
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


@app.command()
def sweep(
    out_dir: Annotated[Path, typer.Option("--out", help="Sweep folder: runs/<run-id>/ (standard run folders) "
                                          "and runs.csv; re-running with the same folder skips finished runs.")],
    trace: Annotated[list[str] | None, typer.Option(help="Trace folder or CSV, or a synthetic trace "
                                                    "'synth:jobs=200,nodes=8,vcs=2,seed=1'; repeat for several. "
                                                    "Default: the embedded trace.")] = None,
    policy: Annotated[str, typer.Option(help="Policies, comma-separated (fifo,sjf,srtf).")] = "fifo",
    seed: Annotated[str, typer.Option(help="Seeds, comma-separated (1,2,3).")] = "0",
    settings: Annotated[list[str] | None, typer.Option("--set", help="SETTING=v1,v2: a `lucid-sim run` setting "
                                                       "(SimConfig field, e.g. quantum, placement, node_mtbf) and "
                                                       "its values; repeat for several. Tuples: thresholds=a/b.")] = None,
    backend: Annotated[str, typer.Option(help="local (a process pool) or ray (Ray tasks; needs the ray extra).")] = "local",
    workers: Annotated[int | None, typer.Option(min=1, help="Processes (local) or CPUs of a started Ray instance. "
                                                "Default: every CPU.")] = None,
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster to connect to (auto, ray://host:10001); "
                                                    "default: start a local instance.")] = None,
    split_vcs: Annotated[str, typer.Option(help="Simulate a run's VCs in parallel processes where the policy "
                                           "keeps per-VC state: auto (when runs < workers), always, never.")] = "auto",
    fmt: Annotated[str, typer.Option("--format", help=f"Table format: {', '.join(FORMATS)}.")] = "csv",
    live: Annotated[bool, typer.Option("--live", help="A live table of runs with status and ETA.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display and no summary.")] = False,
) -> None:
    """Run the cross product traces × policies × seeds × --set values; one run folder each, plus runs.csv."""
    from simcluster.experiments.sweep import (
        SweepError,
        build_grid,
        parse_seeds,
        parse_sets,
        run_sweep,
        split_list,
    )
    from simcluster.live import print_sweep_outcome, sweep_display

    try:
        specs = build_grid(trace or [str(DEFAULT_TRACE)], split_list(policy, "--policy"), parse_seeds(seed),
                           parse_sets(settings or []), fmt)
        with sweep_display(err, live=live, quiet=quiet) as listener:
            outcome = run_sweep(specs, out_dir, backend=backend, workers=workers, ray_address=ray_address,
                                split_vcs=split_vcs, listener=listener)
    except SweepError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail(f"interrupted: finished runs are kept in {out_dir} (runs.csv lists them); "
              "run the same command again to resume", 130)
    if not quiet:
        print_sweep_outcome(out, outcome, out_dir)
    if outcome.failed:
        raise typer.Exit(1)


@app.command()
def report(
    folders: Annotated[list[Path], typer.Argument(help="Run folders (summary.json) and/or sweep folders (runs.csv).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Report folder (replaced atomically): comparison.csv, "
                                          "comparison.md, PNG plots, report.html.")],
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the table.")] = False,
) -> None:
    """Compare runs: a table per VC and overall (CSV, Markdown, HTML) and PNG plots."""
    from simcluster.experiments.report import ReportError, rich_table, write_report

    try:
        made = write_report(folders, out_dir)
    except ReportError as exc:
        _fail(str(exc))
    if not quiet:
        out.print(rich_table(made.table))
        out.print(f"wrote {', '.join(made.files)} to [bold]{out_dir}[/]", highlight=False)


_ROOT_FLAGS = {"--help", "-h"}


def main(argv: list[str] | None = None) -> None:
    """Entry point: a leading option (``lucid-sim --policy srtf``) means the ``run`` command."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0].startswith("-") and args[0] not in _ROOT_FLAGS:
        args.insert(0, "run")
    app(args=args, prog_name="lucid-sim")


if __name__ == "__main__":
    main()
