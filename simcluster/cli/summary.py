"""The Rich summary a run prints: a table per VC and overall, then a line per policy feature it used."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from simcluster.cli.common import out


def print_summary(summary: dict[str, Any], target: Path, shown: Collection[str] = ()) -> None:
    """The summary table and lines, then its ``warnings`` (but those already ``shown`` before the run)."""
    preset = (summary.get("config") or {}).get("preset")
    title = f"{summary['policy']} / {summary['placement']} — {summary['jobs']:,} jobs" + (
        f" — preset {preset}" if preset else "")
    table = Table(title=title, title_justify="left")
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
                  f"{summary['avg_slowdown']:.3f}", highlight=False)
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
    out.print(f"makespan {summary['makespan']:,.0f} s · preemptions {summary['preemptions']:,} · "
              f"restarts {summary['restarts']:,} · simulation {summary['sim_cpu_seconds']:.2f} CPU-s · "
              f"loading {summary['load_cpu_seconds']:.2f} CPU-s\nresults in [bold]{target}[/]", highlight=False)
    if "rounds" in summary:
        from simcluster.cli.gavel import rounds_line

        out.print(rounds_line(summary), highlight=False)
    print_warnings([w for w in summary.get("warnings", []) if w not in shown], out)


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
