"""Every baseline against what the Venus cluster recorded in September 2020, and what `validate` costs.

    python benchmarks/bench_validate.py [--trace PATH] [--repeat N] [--gap]

For fifo, fifo-backfill, easy-backfill and slurm, with node-aware (consolidate) and pooled
(consolidate-first) placement: each run's average queueing delay and the record's (Little's law on
cluster_throughput.csv over the trace's span), their ratio, and the correlation of the 10-minute
waiting-jobs and running-GPUs series; then the wall seconds of `validate` on a run folder (best of
--repeat, reading, computing and writing its folder) and of the whole `lucid-sim validate` command.
Targets (issue 29): the closest baseline within 1.5x of the record, waiting series r >= 0.85; validate
in seconds.  ``--gap`` adds the runs of docs/validate.md's gap analysis: VCs lending idle GPUs, one
pooled VC, estimated durations, the VC sizes of other days, the first week left out of the window, and
where the waiting goes by job size and by the jobs' recorded state.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.paths import shared_data_dir
from simcluster.policies import POLICIES
from simcluster.results import write_run
from simcluster.validate import validate

BASELINES = ("fifo", "fifo-backfill", "easy-backfill", "slurm")
PLACEMENTS = ("consolidate", "consolidate-first")
WEEK_ONE_END = "2020-09-08 00:00:00"  # the simulation starts empty; the cluster did not (see docs/validate.md)
# Venus' GPUs per VC changed during September (Helios' data repository, data/Venus/cluster_gpu_number.csv);
# vc_config.csv is the 2020-09-10 snapshot.  Nodes (of 8 GPUs) where another day differs:
VC_SIZES = {"VC sizes of 2020-09-01": {"vcWoR": 8, "vcJsw": 25},
            "VC sizes of 2020-09-23": {"vcKeu": 11}}


def with_settings(policy: str, **changes: Any) -> str:
    """A policy registered as ``policy+name=value`` whose settings differ (until `--set` reaches policies)."""
    name = policy + "+" + ",".join(f"{k}={v}" for k, v in changes.items())
    if name not in POLICIES:
        base = POLICIES.get(policy)

        def init(self: Any, config: Any = None) -> None:
            base.__init__(self, config)
            self.settings = replace(self.settings, **changes)

        POLICIES.register(name)(type(base.__name__, (base,), {"__init__": init, "__doc__": base.__doc__}))
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", default=str(shared_data_dir() / "venus_sept"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gap", action="store_true", help="also the gap analysis' runs")
    args = parser.parse_args()
    trace_dir = Path(args.trace)
    record = trace_dir / "cluster_throughput.csv"
    trace = load_trace(trace_dir)
    console = Console(width=130)
    table = figures_table("baselines against the record (venus_sept, Sept 1–26)")
    work = Path(tempfile.mkdtemp(prefix="bench-validate-"))
    timed = None
    for placement in PLACEMENTS:
        for policy in BASELINES:
            folder = run_folder(trace, SimConfig(policy=policy, placement=placement), work / f"{policy}-{placement}")
            add_row(table, f"{policy} / {placement}", folder, record)
            timed = timed or folder
    console.print(table)
    assert timed is not None
    walls = []
    for _ in range(args.repeat):
        w0 = time.perf_counter()
        validate(timed, record).write(work / "validation", overwrite=True)
        walls.append(time.perf_counter() - w0)
    w0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "simcluster.cli", "validate", str(timed), "--recorded", str(record),
                    "--out", str(work / "validation-cli"), "--json"], check=True, capture_output=True)
    console.print(f"validate on {timed.name}: {min(walls):.2f} s wall (best of {args.repeat}: read, compute, write "
                  f"the folder); `lucid-sim validate --json` {time.perf_counter() - w0:.2f} s wall, start-up "
                  "included", highlight=False)
    if args.gap:
        gap_analysis(trace, trace_dir, record, work, console)


def gap_analysis(trace: Any, trace_dir: Path, record: Path, work: Path, console: Console) -> None:
    table = figures_table("what moves the gap (docs/validate.md)")
    pooled = "consolidate-first"
    runs: list[tuple[str, Any, SimConfig, dict[str, Any]]] = [
        ("fifo-backfill, VCs lend idle GPUs", trace, SimConfig(policy=with_settings("fifo-backfill", borrow_idle=True)), {}),
        ("easy-backfill, VCs lend idle GPUs", trace, SimConfig(policy=with_settings("easy-backfill", borrow_idle=True)), {}),
        ("fifo-backfill, one pooled VC", trace, SimConfig(policy="fifo-backfill", cluster="gpu:1080"), {}),
        ("easy-backfill / pooled, history estimates", trace,
         SimConfig(policy="easy-backfill", placement=pooled, estimator="history"), {}),
        ("slurm / pooled, history estimates", trace, SimConfig(policy="slurm", placement=pooled, estimator="history"), {}),
    ]
    nodes = pd.read_csv(trace_dir / "vc_config.csv", index_col=0)
    for i, (label, changed) in enumerate(VC_SIZES.items()):
        sizes = work / f"vc_config-{i}.csv"
        nodes.assign(num=[changed.get(vc, n) for vc, n in nodes["num"].items()]).to_csv(sizes)
        sized = load_trace(trace_dir / "cluster_full_log.csv", sizes)
        runs.append((f"fifo-backfill / pooled, {label}", sized, SimConfig(policy="fifo-backfill", placement=pooled), {}))
    for policy in BASELINES[1:]:
        runs.append((f"{policy} / pooled, from {WEEK_ONE_END[:10]}", trace,
                     SimConfig(policy=policy, placement=pooled), {"start": WEEK_ONE_END}))
    runs.append((f"fifo-backfill / consolidate, from {WEEK_ONE_END[:10]}", trace,
                 SimConfig(policy="fifo-backfill"), {"start": WEEK_ONE_END}))
    for i, (label, source, config, window) in enumerate(runs):
        add_row(table, label, run_folder(source, config, work / f"gap-{i}"), record, **window)
    console.print(table)
    log = pd.read_csv(trace_dir / "cluster_full_log.csv", usecols=["job_id", "state"], dtype={"job_id": str})
    shares = Table(title="where the waiting goes: share of all job-seconds waited (avg wait, s)", title_justify="left")
    for col in ("run", "1 GPU", "2–8 GPUs", "> 8 GPUs", "COMPLETED", "CANCELLED", "FAILED"):
        shares.add_column(col, justify="left" if col == "run" else "right")
    for policy in BASELINES[1:]:
        for placement in PLACEMENTS:
            jobs = pd.read_csv(work / f"{policy}-{placement}" / "jobs.csv", dtype={"job_id": str}).merge(log, on="job_id")
            size = pd.cut(jobs["gpu_num"], [0, 1, 8, 10**6], labels=["1 GPU", "2–8 GPUs", "> 8 GPUs"])
            cells = [_share(jobs, jobs.groupby(size, observed=True)["queue"], key) for key in ("1 GPU", "2–8 GPUs", "> 8 GPUs")]
            cells += [_share(jobs, jobs.groupby("state")["queue"], key) for key in ("COMPLETED", "CANCELLED", "FAILED")]
            shares.add_row(f"{policy} / {placement}", *cells)
    console.print(shares)


def _share(jobs: pd.DataFrame, groups: Any, key: str) -> str:
    total = jobs["queue"].sum()
    group = groups.get_group(key)
    return f"{group.sum() / total:.0%} ({group.mean():,.0f})"


def run_folder(trace: Any, config: SimConfig, folder: Path) -> Path:
    result = simulate(trace, config)
    return write_run(folder, result.tables(), result.summary, overwrite=True)


def figures_table(title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("run", "avg queue (s)", "record (s)", "ratio", "r waiting", "r GPUs running", "sim CPU-s"):
        table.add_column(col, justify="left" if col == "run" else "right")
    return table


def add_row(table: Table, label: str, folder: Path, record: Path, **window: Any) -> None:
    figures = validate(folder, record, **window).figures()
    cpu = pd.read_json(folder / "summary.json", typ="series")["sim_cpu_seconds"]
    table.add_row(label, f"{figures['simulated_avg_queue']:,.0f}", f"{figures['recorded_avg_queue']:,.0f}",
                  f"{figures['queue_ratio']:.2f}", f"{figures['correlation_waiting']:.3f}",
                  f"{figures['correlation_running_gpus']:.3f}", f"{cpu:.2f}")


if __name__ == "__main__":
    main()
