"""The Rich summary a run prints: a table per VC and overall, then a line per policy feature it used."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from simcluster.cli.common import out
from simcluster.metrics.tail import bound_name, bound_of


def print_summary(summary: dict[str, Any], target: Path, shown: Collection[str] = ()) -> None:
    """The summary table and lines, then its ``warnings`` (but those already ``shown`` before the run)."""
    preset = (summary.get("config") or {}).get("preset")
    title = f"{summary['policy']} / {summary['placement']} — {summary['jobs']:,} jobs" + (
        f" — preset {preset}" if preset else "")
    table = Table(title=title, title_justify="left")
    for col in ("VC", "jobs", "avg JCT (s)", "p50 JCT", "p99 JCT", "avg queue (s)", "p99 queue", "GPU util"):
        table.add_column(col, justify="left" if col == "VC" else "right")
    overs = over_keys(summary)
    tail = Table(title="waits and slowdown (tail, starvation)", title_justify="left")
    for col in ("VC", "max queue (s)", "p99.9 queue", *(f"waited > {bound_name(bound_of(k) or 0)}" for k in overs),
                "bounded slowdown"):
        tail.add_column(col, justify="left" if col == "VC" else "right")

    def row(name: str, f: dict[str, Any], **style: Any) -> None:
        table.add_row(name, f"{f['jobs']:,}", f"{f['avg_jct']:,.0f}", f"{f['p50_jct']:,.0f}", f"{f['p99_jct']:,.0f}",
                      f"{f['avg_queue']:,.0f}", f"{f['p99_queue']:,.0f}", f"{f['gpu_utilization']:.1%}", **style)
        tail.add_row(name, _number(f.get("max_queue"), ",.0f"), _number(f.get("p999_queue"), ",.0f"),
                     *(_number(f.get(k), ".1%") for k in overs), _number(f.get("avg_bounded_slowdown"), ",.2f"),
                     **style)

    for vc, figures in summary["per_vc"].items():
        row(vc, figures)
    row("all", summary, style="bold")
    out.print(table)
    if "max_queue" in summary:
        out.print(tail)
    if len(summary.get("per_size") or {}) > 1:
        out.print(size_table(summary["per_size"], overs))
    if "colocation" in summary:
        slowdown = summary.get("avg_run_slowdown", summary.get("avg_slowdown"))  # (its name in older summaries)
        out.print(f"GPU sharing: {summary['shared_gpu_fraction']:.1%} of busy GPU-time shared, average run slowdown "
                  f"(1 ÷ mean speed) {_number(slowdown, '.3f')}", highlight=False)
        out.print(colocation_line(summary), highlight=False)
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
    if "jobs_with_deadline" in summary:
        met = summary["deadline_satisfaction"]
        out.print(f"deadlines: {summary['deadlines_met']:,} of {summary['jobs_with_deadline']:,} jobs with one met "
                  f"them ({met:.1%}); {summary['declined']:,} declined", highlight=False)
    if "cluster_efficiency" in summary:
        out.print(f"elastic jobs: cluster efficiency {summary['cluster_efficiency']:.1%} (speedup delivered per GPU "
                  "of the cluster)", highlight=False)
    if "stranded_gpus" in (summary.get("topology") or {}):
        out.print(topology_line(summary["topology"]), highlight=False)
    for by, title in (("by_cluster_queue", "by ClusterQueue"), ("by_priority", "by priority")):
        if len((summary.get("tiers") or {}).get(by) or {}) > 1:
            out.print(tier_table(summary["tiers"][by], title, (summary.get("kueue") or {}).get("cluster_queues")))
    out.print(f"makespan {summary['makespan']:,.0f} s · preemptions {summary['preemptions']:,} · "
              f"restarts {summary['restarts']:,} · simulation {summary['sim_cpu_seconds']:.2f} CPU-s · "
              f"loading {summary['load_cpu_seconds']:.2f} CPU-s\nresults in [bold]{target}[/]", highlight=False)
    if "rounds" in summary:
        from simcluster.cli.gavel import rounds_line

        out.print(rounds_line(summary), highlight=False)
    print_warnings([w for w in summary.get("warnings", []) if w not in shown], out)


def tier_table(groups: dict[str, dict[str, Any]], title: str, queues: dict[str, Any] | None = None) -> Table:
    """The run's figures per tier (a ClusterQueue, a priority): JCT and queueing in hours, preemptions, and, for a
    ClusterQueue, the GPU-hours it borrowed and the preemptions it caused."""
    table = Table(title=title, title_justify="left")
    kueue = queues is not None and title == "by ClusterQueue"
    for col in ("tier", "jobs", "finished", "avg JCT (h)", "p95 JCT (h)", "avg queue (h)", "p95 queue (h)",
                "preempted", *(("borrowed GPU-h", "preemptions caused") if kueue else ())):
        table.add_column(col, justify="left" if col == "tier" else "right")
    for name, f in groups.items():
        own = (queues or {}).get(name, {}) if kueue else {}
        table.add_row(name, f"{f['jobs']:,}", f"{f['finished']:,}", _number(f.get("jct_mean_h"), ",.2f"),
                      _number(f.get("jct_p95_h"), ",.2f"), _number(f.get("queue_mean_h"), ",.2f"),
                      _number(f.get("queue_p95_h"), ",.2f"), f"{f['preemptions']:,}",
                      *((_number(own.get("borrowed_gpu_hours"), ",.1f"), _number(own.get("preemptions_caused"), ","))
                        if kueue else ()))
    return table


def over_keys(figures: dict[str, Any]) -> list[str]:
    """The ``queue_over_<bound>`` figures of a summary, shortest bound first."""
    return sorted((k for k in figures if bound_of(k) is not None), key=lambda k: bound_of(k) or 0.0)


def size_table(per_size: dict[str, dict[str, Any]], overs: Sequence[str]) -> Table:
    """The run's figures by job size (GPUs per job): whether large jobs wait disproportionately."""
    table = Table(title="by job size (GPUs per job)", title_justify="left")
    for col in ("GPUs", "jobs", "avg JCT (s)", "avg queue (s)", "max queue",
                *(f"waited > {bound_name(bound_of(k) or 0)}" for k in overs), "bounded slowdown"):
        table.add_column(col, justify="left" if col == "GPUs" else "right")
    for size, f in per_size.items():
        table.add_row(size, f"{f['jobs']:,}", _number(f.get("avg_jct"), ",.0f"), _number(f.get("avg_queue"), ",.0f"),
                      _number(f.get("max_queue"), ",.0f"),
                      *(_number(f.get(k), ".1%") for k in overs), _number(f.get("avg_bounded_slowdown"), ",.2f"))
    return table


def topology_line(topology: dict[str, Any]) -> str:
    """What the topology cost in queueing: the GPUs stranded per level (mean, share of the free GPU-time) and the
    jobs that fit the free GPUs but waited.

    >>> print(topology_line({"stranded_gpus": {"rack": 13.09, "node": 2.0}, "stranded_share": {"rack": 0.9,
    ...                      "node": 0.14}, "fit_but_waited": {"job_seconds": 900.0, "share_of_queueing": 0.9,
    ...                      "jobs": 1}}))
    topology: GPUs stranded (mean, share of free GPU-time) rack 13.1 (90.0%), node 2.0 (14.0%); 1 job fit the free
    GPUs but waited, 900 job-s (90.0% of the queueing)
    """
    stranded = ", ".join(f"{level} {gpus:,.1f} ({topology['stranded_share'][level]:.1%})"
                         for level, gpus in topology["stranded_gpus"].items())
    fit = topology["fit_but_waited"]
    return (f"topology: GPUs stranded (mean, share of free GPU-time) {stranded}; {fit['jobs']:,} job"
            f"{'s' * (fit['jobs'] != 1)} fit the free GPUs but waited, {fit['job_seconds']:,.0f} job-s "
            f"({fit['share_of_queueing']:.1%} of the queueing)")


def _number(value: Any, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def print_warnings(warnings: Iterable[str], console: Console) -> None:
    for warning in warnings:
        console.print(Text.assemble(("warning: ", "bold yellow"), warning))


def colocation_line(summary: dict[str, Any]) -> str:
    """Which colocation model the run used and what evidence it rests on; how to choose another."""
    provenance = summary.get("colocation_provenance") or {}
    text = f"colocation model: {provenance.get('description') or summary['colocation']}"
    if provenance.get("kind") in ("calibrated", "analytic"):
        text += " (--colocation lucid|FOLDER to use measured tables; lucid-profile measures your GPU)"
    return text
