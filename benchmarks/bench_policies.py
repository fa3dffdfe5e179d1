"""Each policy on the Venus September trace: load and simulation CPU seconds, peak memory, avg JCT.

    python benchmarks/bench_policies.py [--trace PATH] [--policy fifo,sjf,...] [--repeat N]

Each run is a fresh process (peak memory is its own); with --repeat the best CPU times are kept.
Targets: simulation ≤ 1 CPU-s and loading ≤ 1 s for fifo, sjf, srtf; tiresias ≤ 3 CPU-s; qssf with the
file or history estimator ≤ 1 CPU-s, with ebm ≤ 60 CPU-s including training; srtf-wrs ≤ 3 CPU-s; lucid
≤ 60 CPU-s including all model training (its variants switch one part off each: the ablation).
Sharing policies use the Lucid RTX 3090 colocation table (the trace's workloads key into it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _measure import measure_in_subprocess
from rich.console import Console
from rich.table import Table

from simcluster.paths import shared_data_dir
from simcluster.policies import POLICIES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", default=str(shared_data_dir() / "venus_sept"))
    parser.add_argument("--policy", default=",".join(p for p in POLICIES.names() if p != "qssf") + ",qssf")
    parser.add_argument("--placement", default="consolidate")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    table = Table(title=f"policies on {args.trace} ({args.placement})", title_justify="left")
    for col in ("policy", "jobs", "load CPU-s", "sim CPU-s", "peak MiB", "avg JCT (s)", "avg queue (s)", "GPU util",
                "shared"):
        table.add_column(col, justify="right")
    estimates = str(Path(args.trace) / "reference_estimates" / "qssf_lgb_priority.csv")
    variants = []
    for policy in args.policy.split(","):
        if policy == "qssf":
            variants += [("qssf/oracle", policy, {"estimator": "oracle"}), ("qssf/history", policy, {"estimator": "history"}),
                         ("qssf/file", policy, {"estimator": "file", "estimates": estimates}),
                         ("qssf/ebm", policy, {"estimator": "ebm"})]
        elif policy == "lucid":  # the full policy, then each part switched off (or made perfect)
            lucid = {"colocation": "lucid"}
            variants += [("lucid", policy, lucid),
                         ("lucid no profiling", policy, {**lucid, "profiler_nodes": 0}),
                         ("lucid history estimates", policy, {**lucid, "estimator": "history"}),
                         ("lucid oracle estimates", policy, {**lucid, "estimator": "oracle"}),
                         ("lucid never shares", policy, {**lucid, "lucid_sharing": "never"}),
                         ("lucid always shares", policy, {**lucid, "lucid_sharing": "always"})]
        elif POLICIES.get(policy).shares_gpus:
            variants.append((f"{policy}/lucid", policy, {"colocation": "lucid"}))
        else:
            variants.append((policy, policy, {}))
    for label, policy, options in variants:
        repeat = 1 if options.get("estimator") == "ebm" or policy in ("tiresias-gittins", "lucid") else args.repeat
        runs = [measure_in_subprocess(args.trace, policy, args.placement, **options) for _ in range(repeat)]
        best = min(runs, key=lambda r: r["sim_cpu"])
        table.add_row(label, f"{best['jobs']:,}", f"{min(r['load_cpu'] for r in runs):.3f}", f"{best['sim_cpu']:.3f}",
                      f"{max(r['peak_mib'] for r in runs):.0f}", f"{best['avg_jct']:,.1f}", f"{best['avg_queue']:,.1f}",
                      f"{best['utilization']:.1%}", f"{best['shared']:.1%}")
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
