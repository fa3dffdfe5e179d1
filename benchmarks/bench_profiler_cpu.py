"""Every profiler workload on its CPU tiny-size path: build time, first step, steady step.

    python benchmarks/bench_profiler_cpu.py [--batch-size 2] [--steps 5] [--amp] [--threads N] [--pairs N]

"total" per workload is build + first step + the further steps, i.e. what the
workload tests pay (they build and take one step).  Target (issue): all 14
workloads built and stepped once in <= 60 s on a 2-core machine.

``--pairs N`` also times N pairs of tiny CPU jobs (NeuMF, TD3, PPO in turn, about
two seconds of measurement each) run as ``lucid-profile pair`` runs them (fresh
worker processes per run) and as ``lucid-profile campaign`` does (resident workers,
one job kept from pair to pair): wall seconds per pair, the process start and
build a campaign saves.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from rich.console import Console
from rich.table import Table

from workloads import WorkloadConfig, all_workloads


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument(
        "--steps", type=int, default=5, help="steps after the first, for the steady step time"
    )
    parser.add_argument("--amp", action="store_true", help="bfloat16 autocast (the CPU's AMP)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--pairs", type=int, default=0, help="also time this many pairs: fresh vs resident workers")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    config = WorkloadConfig(batch_size=args.batch_size, amp=args.amp, device="cpu", size="tiny", seed=0)
    table = Table(
        title=f"workloads, CPU tiny path, batch {args.batch_size}, AMP {'on' if args.amp else 'off'}, "
        f"{torch.get_num_threads()} threads",
        title_justify="left",
    )
    for column in ("workload", "build s", "first step s", "steady step s", "total s"):
        table.add_column(column, justify="right" if column != "workload" else "left")

    began = time.perf_counter()
    first_steps = 0.0
    for spec in all_workloads():
        t0 = time.perf_counter()
        job = spec.build(config)
        t1 = time.perf_counter()
        job.step()
        t2 = time.perf_counter()
        durations = []
        for _ in range(args.steps):
            s0 = time.perf_counter()
            job.step()
            durations.append(time.perf_counter() - s0)
        t3 = time.perf_counter()
        first_steps += t2 - t0
        steady = statistics.median(durations) if durations else float("nan")
        table.add_row(spec.model, f"{t1 - t0:.3f}", f"{t2 - t1:.3f}", f"{steady:.4f}", f"{t3 - t0:.3f}")
    total = time.perf_counter() - began
    table.add_section()
    table.add_row("all 14", "", "", "", f"{total:.2f}")
    console = Console()
    console.print(table)
    console.print(f"build + first step of all 14: {first_steps:.2f} s (target <= 60 s)")
    if args.pairs:
        time_pairs(console, args.pairs)


def time_pairs(console: Console, count: int) -> None:
    """Seconds per pair in fresh worker processes and on resident workers, the same pairs in the same order."""
    from profiler.measure import MeasureSettings
    from profiler.pool import WorkerPool
    from profiler.runner import JobRequest, RunSettings, run_jobs
    from workloads import get_workload

    settings = RunSettings(device="cpu", size="tiny", cpu_threads=1, measure=MeasureSettings(
        warmup_steps=2, window_s=0.25, cv_windows=3, cv_target=0.5, time_limit_s=2.0))
    models = ["NeuMF", "TD3", "PPO"]
    pairs = [[JobRequest(get_workload(models[0]), 8, False, 1), JobRequest(get_workload(models[1 + i % 2]), 8, False, 1)]
             for i in range(count)]  # NeuMF kept, its partner changing: a campaign's walk through a stage
    began = time.perf_counter()
    for requests in pairs:
        run_jobs(requests, settings)
    fresh = (time.perf_counter() - began) / count
    began = time.perf_counter()
    with WorkerPool(settings) as pool:
        for requests in pairs:
            pool.run(requests)
        started, builds = pool.started, pool.builds
    resident = (time.perf_counter() - began) / count
    console.print(f"{count} pairs of tiny CPU jobs: {fresh:.2f} s a pair in fresh processes, {resident:.2f} s on "
                  f"resident workers ({started} worker(s) started, {builds} job(s) built, first start included)")


if __name__ == "__main__":
    main()
