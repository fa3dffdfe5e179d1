"""Every policy on every cluster shape, in the one engine: avg JCT and simulation CPU seconds (issue 16).

    python benchmarks/bench_shapes.py [--traces t500,openb,venus] [--policy fifo,srtf,...] [--repeat N]
                                      [--placements] [--json OUT]

Traces and clusters: ``t500`` is Gavel's t500 on 12 V100 + 12 P100 + 12 K80 (one VC; jobs run at their
Gavel throughput on each type), ``openb`` Alibaba's openb default pod list on its own node list (seven GPU
models, one VC, GPU fractions), ``venus`` the Venus September trace on its VCs (untyped GPUs; Gavel's
policies allocate inside each VC).  The policies are the issue's: fifo, srtf, tiresias, lucid, srtf-wrs,
max_min_fairness_perf and finish_time_fairness_perf, our defaults otherwise.

``--placements``: srtf and tiresias on t500 with the heterogeneity-agnostic placement (``consolidate``,
which fills nodes in the cluster's order whatever their type) and with the type-aware ``fastest-free``
(a job takes the fastest GPU type with room for it, so the jobs the policy ranks first get the fastest
free GPUs).

CPU seconds are ``time.process_time`` of the simulation alone (the summary's ``sim_cpu_seconds``), best of
``--repeat``; on a shared machine read them as upper bounds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.paths import shared_data_dir

POLICIES = ("fifo", "srtf", "tiresias", "lucid", "srtf-wrs", "max_min_fairness_perf", "finish_time_fairness_perf")
TRACES = {  # name → (path under the shared data, --cluster, description)
    "t500": ("gavel_traces/t500.trace", "v100:12,p100:12,k80:12", "t500, 12 V100 + 12 P100 + 12 K80"),
    "openb": ("alibaba_openb/openb_pod_list_default.csv", None, "openb default, its node list"),
    "venus": ("venus_sept", None, "venus_sept, its VCs"),
}


def measure(trace, policy: str, cluster: str | None, repeat: int, placement: str = "consolidate") -> dict:
    best: dict | None = None
    for _ in range(repeat):
        s = simulate(trace, SimConfig(policy=policy, cluster=cluster, placement=placement)).summary
        if best is None or s["sim_cpu_seconds"] < best["cpu"]:
            best = {"avg_jct": s["avg_jct"], "cpu": s["sim_cpu_seconds"], "makespan": s["makespan"],
                    "utilization": s["gpu_utilization"]}
    assert best is not None
    return best


def main() -> None:
    from simcluster.traces import load_trace

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", default=",".join(TRACES))
    parser.add_argument("--policy", default=",".join(POLICIES))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--placements", action="store_true", help="srtf and tiresias on t500: aware vs agnostic")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    console = Console()
    results: dict[str, dict] = {}
    if args.placements:
        path, cluster, title = TRACES["t500"]
        trace = load_trace(shared_data_dir() / path)
        table = Table(title=f"type-aware vs agnostic placement — {title}", title_justify="left")
        for col in ("policy", "consolidate JCT (s)", "fastest-free JCT (s)", "gain", "CPU-s (agnostic, aware)"):
            table.add_column(col, justify="right")
        for policy in ("srtf", "tiresias"):
            agnostic = measure(trace, policy, cluster, args.repeat, "consolidate")
            aware = measure(trace, policy, cluster, args.repeat, "fastest-free")
            results[f"placement/{policy}"] = {"consolidate": agnostic, "fastest-free": aware}
            table.add_row(policy, f"{agnostic['avg_jct']:,.0f}", f"{aware['avg_jct']:,.0f}",
                          f"{1 - aware['avg_jct'] / agnostic['avg_jct']:+.1%}",
                          f"{agnostic['cpu']:.2f}, {aware['cpu']:.2f}")
        console.print(table)
    else:
        table = Table(title="avg JCT (s) / sim CPU-s", title_justify="left")
        table.add_column("policy")
        names = args.traces.split(",")
        for name in names:
            table.add_column(TRACES[name][2], justify="right")
        loaded = {name: load_trace(shared_data_dir() / TRACES[name][0]) for name in names}
        for policy in args.policy.split(","):
            row = [policy]
            for name in names:
                figures = measure(loaded[name], policy, TRACES[name][1], args.repeat)
                results[f"{name}/{policy}"] = figures
                row.append(f"{figures['avg_jct']:,.1f} / {figures['cpu']:.2f}")
                console.print(f"{name} {policy}: {figures}", highlight=False)
            table.add_row(*row)
        console.print(table)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
