"""Sweeps at scale, and the live view's cost.

    python benchmarks/bench_sweep.py [--only venus,ray10k,live] [--policy fifo,sjf,...] [--runs 10000]

venus   every registered policy (or --policy) × seeds 1,2,3 on venus_sept: the sum of the runs' CPU time
        when each runs alone in this process (load once + simulate + write), then the wall time of
        `lucid-sim sweep` on the local pool and on Ray (fresh processes, as a user runs them), each next
        to its start-up (the same command on two one-job runs).  Target: wall ≤ 1.2 × (CPU sum / CPUs)
        + start-up.  Also checks that both backends wrote the same runs.csv (timing columns aside).
ray10k  --runs (10,000) runs of small synthetic traces (50 jobs, 4 nodes, 2 VCs; 2,500 traces × fifo, sjf,
        srtf, tiresias) on a local Ray instance: runs/second, peak memory of this process and of its
        whole process tree (Ray's workers included).
live    fifo on venus_sept with and without `LiveRun` (drawing to /dev/null as a terminal would): the
        overhead in CPU time, best of 5 each, interleaved.  Target ≤ 10 %.

The machine is shared: the load average is printed before each section.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Self

import psutil

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.experiments.sweep import (
    TIMING_COLUMNS,
    build_grid,
    cpu_count,
    execute_run,
    load_trace_arg,
    read_runs,
    run_sweep,
)
from simcluster.paths import shared_data_dir
from simcluster.policies import POLICIES
from simcluster.traces import load_trace

LUCID_SIM = str(Path(sys.executable).with_name("lucid-sim"))


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def cli_sweep(args: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([LUCID_SIM, "sweep", "--quiet", *args], capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"lucid-sim sweep {' '.join(args)} failed:\n{done.stderr}")
    return time.perf_counter() - t0


def bench_venus(policies: list[str], work: Path) -> None:
    trace = str(shared_data_dir() / "venus_sept")
    seeds = [1, 2, 3]
    specs = build_grid([trace], policies, seeds)
    print(f"\n== venus_sept: {len(policies)} policies × {len(seeds)} seeds = {len(specs)} runs; {load()}")

    cpu0 = time.process_time()
    load_trace_arg(trace)
    load_cpu = time.process_time() - cpu0
    per_policy: dict[str, float] = {}
    failed = []
    for spec in specs:
        cpu0 = time.process_time()
        row = execute_run(spec, str(work / "serial"))
        per_policy[spec.config.policy] = per_policy.get(spec.config.policy, 0.0) + time.process_time() - cpu0
        if row["status"] != "ok":
            failed.append(f"{spec.run_id}: {row['error']}")
    total = load_cpu + sum(per_policy.values())
    print(f"single-run CPU time: {total:,.1f} s in all (trace load {load_cpu:.2f} s once; per policy, 3 seeds: "
          + ", ".join(f"{p} {s:.1f}" for p, s in per_policy.items()) + ")")
    for line in failed:
        print(f"  failed: {line}")

    cpus = cpu_count()
    tiny = ["--trace", "synth:jobs=1,nodes=1,vcs=1,seed=0", "--seed", "1,2"]
    common = ["--trace", trace, "--policy", ",".join(policies), "--seed", ",".join(map(str, seeds))]
    for backend in ("local", "ray"):
        startup = cli_sweep([*tiny, "--backend", backend, "--out", str(work / f"tiny-{backend}")])
        wall = cli_sweep([*common, "--backend", backend, "--out", str(work / backend)])
        target = 1.2 * total / cpus + startup
        print(f"{backend:>5}: sweep wall {wall:,.1f} s; start-up {startup:.1f} s; CPU sum / {cpus} = "
              f"{total / cpus:,.1f} s; target 1.2 × that + start-up = {target:,.1f} s → "
              f"{'met' if wall <= target else 'MISSED'} (wall / (CPU sum / {cpus}) = {wall / (total / cpus):.2f})")
    same = [read_runs(work / b / "runs.csv").drop(columns=list(TIMING_COLUMNS)) for b in ("local", "ray")]
    print(f"runs.csv local vs ray, timing columns aside: {'identical' if same[0].equals(same[1]) else 'DIFFERENT'}")


class PeakMemory:
    """Peak resident memory of this process and of its whole process tree, sampled every 0.2 s."""

    def __init__(self) -> None:
        self.tree_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.2):
            total = me.memory_info().rss
            for child in me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    pass
            self.tree_mib = max(self.tree_mib, total / 2**20)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def bench_ray10k(runs: int, work: Path) -> None:
    import ray

    policies = ["fifo", "sjf", "srtf", "tiresias"]
    traces = [f"synth:jobs=50,nodes=4,vcs=2,seed={i}" for i in range(max(1, runs // len(policies)))]
    specs = build_grid(traces, policies, [0])
    print(f"\n== {len(specs):,} runs of 50-job synthetic traces on a local Ray instance; {load()}")
    t0 = time.perf_counter()
    ray.init(num_cpus=cpu_count(), include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - t0
    try:
        with PeakMemory() as memory:
            outcome = run_sweep(specs, work / "ray10k", backend="ray")
    finally:
        ray.shutdown()
    rows = read_runs(work / "ray10k" / "runs.csv")
    print(f"{outcome.ran:,} runs ({outcome.failed} failed, {len(rows):,} rows in runs.csv) in "
          f"{outcome.wall_seconds:,.1f} s after a {startup:.1f} s Ray start: {outcome.ran / outcome.wall_seconds:,.1f} "
          f"runs/s; peak memory: this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB, "
          f"process tree with Ray {memory.tree_mib:,.0f} MiB")


def bench_live() -> None:
    from rich.console import Console

    from simcluster.live import LiveRun

    trace = load_trace(shared_data_dir() / "venus_sept")
    config = SimConfig(policy="fifo")
    print(f"\n== live view overhead, fifo on venus_sept; {load()}")
    plain, live, draws = [], [], 0
    with open(os.devnull, "w") as sink:
        for _ in range(5):
            t0 = time.process_time()
            simulate(trace, config)
            plain.append(time.process_time() - t0)
            console = Console(file=sink, force_terminal=True, width=120)
            t0 = time.process_time()
            with LiveRun(trace, console, title="fifo") as view:
                simulate(trace, config, [view])
            live.append(time.process_time() - t0)
            draws = view.draws
    overhead = min(live) / min(plain) - 1
    print(f"plain {min(plain):.3f} CPU-s, live {min(live):.3f} CPU-s (best of 5; {draws} draws): overhead "
          f"{overhead:+.1%} → {'met' if overhead <= 0.10 else 'MISSED'} (target ≤ 10 %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="venus,ray10k,live")
    parser.add_argument("--policy", default=",".join(POLICIES.names()))
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--keep", help="Keep the sweep folders here instead of a temporary folder.")
    args = parser.parse_args()
    sections = args.only.split(",")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        if "live" in sections:
            bench_live()
        if "venus" in sections:
            bench_venus(args.policy.split(","), work)
        if "ray10k" in sections:
            bench_ray10k(args.runs, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
