"""Spot capacity on an LLM-era trace (issue 53): what preemptible jobs add to GPU allocation, and what the victim
rule does to their completion time, beside Alibaba's production figures (OSDI'26: allocation 68 % → 93 % with spot
jobs filling idle GPUs; victims by GPUs × time since their last checkpoint cut spot JCT 24 % against random ones).

    python benchmarks/bench_tiers.py [--jobs 20000] [--nodes 128] [--load 0.68] [--spot 0.3] [--seeds 3]

A synthetic LLM-era trace (1 to 256 GPUs, each power of 2 1.6× rarer than the one before; log-normal durations,
mu 7, sigma 1.8, at most 3 days; Poisson arrivals) on ``--nodes`` nodes of 8 GPUs.  The guaranteed jobs offer
``--load`` of the GPUs; a share ``--spot`` of all jobs is preemptible, drawn from the same sizes and durations (so
they offer load × spot / (1 − spot) more).  Policy ``fifo-backfill`` (every waiting job that fits starts, tiers
first); checkpoints every ``--checkpoint`` seconds of progress (1,800), an eviction costs the evicting job
``--eviction-cost`` seconds (13, Alibaba's mean).  Runs, per seed: the guaranteed jobs alone, then every job under
each victim rule.  Allocation is the time-averaged share of GPUs held, from the first submission to the last (the
arrivals' window, before the queue drains).  Prints the mean over seeds and the range.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig

RULES = ("least-work-lost", "random", "newest")
ALIBABA = {"allocation_without_spot": 0.68, "allocation_with_spot": 0.93, "spot_jct_change_vs_random": -0.24}


def llm_trace(jobs: int, gpus: int, load: float, spot: float, seed: int) -> pd.DataFrame:
    """``jobs`` jobs whose guaranteed share offers ``load`` of ``gpus``; a share ``spot`` of them preemptible."""
    rng = np.random.default_rng(seed)
    sizes = 2 ** np.minimum(rng.geometric(1 / 1.6, jobs) - 1, 8)
    duration = np.clip(np.round(rng.lognormal(7, 1.8, jobs)), 1, 259_200).astype(int)
    preemptible = rng.random(jobs) < spot
    guaranteed_work = float(np.mean(np.where(preemptible, 0, sizes * duration)))
    rate = load * gpus / guaranteed_work  # jobs per second: the guaranteed ones offer `load` of the GPUs
    submit = np.floor(np.cumsum(rng.exponential(1 / rate, jobs))).astype(int)
    return pd.DataFrame({"job_id": [f"j{i}" for i in range(jobs)], "gpu_num": sizes, "duration": duration,
                         "submit_time": submit, "preemptible": preemptible})


def allocation(timeline: pd.DataFrame, gpus: int, start: float, end: float) -> float:
    """The time-averaged share of ``gpus`` held over [start, end], the timeline a step function of busy GPUs.

    >>> t = pd.DataFrame({"time": [0.0, 10.0, 30.0], "busy_gpus": [4, 8, 0]})
    >>> allocation(t, 8, 0.0, 40.0)  # (4·10 + 8·20 + 0·10) / (8·40)
    0.625
    """
    times = timeline["time"].to_numpy(float)
    busy = timeline["busy_gpus"].to_numpy(float)
    edges = np.clip(np.append(times, end), start, end)
    return float(np.sum(busy * np.diff(edges)) / (gpus * (end - start)))


def one_seed(args: argparse.Namespace, seed: int) -> dict[str, float]:
    gpus = args.nodes * 8
    frame = llm_trace(args.jobs, gpus, args.load, args.spot, seed)
    window = float(frame["submit_time"].min()), float(frame["submit_time"].max())
    config = {"policy": "fifo-backfill", "checkpoint_interval": args.checkpoint,
              "eviction_cost": args.eviction_cost, "seed": seed}
    alone = simulate(load_trace(frame[~frame["preemptible"]].reset_index(drop=True), nodes=args.nodes),
                     SimConfig(**config))
    out = {"allocation_without_spot": allocation(alone.timeline, gpus, *window),
           "guaranteed_jct_h_without_spot": float(alone.jobs["jct"].mean()) / 3600}
    trace = load_trace(frame, nodes=args.nodes)
    for rule in RULES:
        result = simulate(trace, SimConfig(**config, victims=rule))
        jobs = result.jobs
        spot = jobs["preemptible"].astype(bool)
        out[f"allocation ({rule})"] = allocation(result.timeline, gpus, *window)
        out[f"spot_jct_h ({rule})"] = float(jobs.loc[spot, "jct"].mean()) / 3600
        out[f"guaranteed_jct_h ({rule})"] = float(jobs.loc[~spot, "jct"].mean()) / 3600
        out[f"evictions ({rule})"] = result.summary["tiers"]["evictions"]["evictions"]
        out[f"gpu_hours_lost ({rule})"] = result.summary["tiers"]["evictions"]["gpu_hours_lost"]
    out["spot_jct_change_vs_random"] = out["spot_jct_h (least-work-lost)"] / out["spot_jct_h (random)"] - 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--load", type=float, default=0.68, help="offered load of the guaranteed jobs")
    parser.add_argument("--spot", type=float, default=0.3, help="share of jobs that are preemptible")
    parser.add_argument("--checkpoint", type=float, default=1800.0)
    parser.add_argument("--eviction-cost", type=float, default=13.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = parser.parse_args(argv)
    runs = [one_seed(args, seed) for seed in range(1, args.seeds + 1)]
    figures = {name: {"mean": float(np.mean([r[name] for r in runs])), "min": min(r[name] for r in runs),
                      "max": max(r[name] for r in runs)} for name in runs[0]}
    if args.json:
        json.dump({"settings": vars(args), "figures": figures, "alibaba": ALIBABA}, sys.stdout, indent=1)
        print()
        return 0
    table = Table(title=f"Spot jobs: {args.jobs:,} jobs, {args.nodes * 8:,} GPUs, guaranteed load {args.load}, "
                        f"{args.spot:.0%} preemptible, {args.seeds} seeds")
    for column in ("figure", "mean", "range", "Alibaba"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for name, value in figures.items():
        table.add_row(name, f"{value['mean']:.3f}", f"{value['min']:.3f} – {value['max']:.3f}",
                      f"{ALIBABA[name]:.2f}" if name in ALIBABA else "")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
