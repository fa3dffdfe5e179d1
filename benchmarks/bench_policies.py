"""Each policy on the Venus September trace: load and simulation CPU seconds, peak memory, avg JCT.

    python benchmarks/bench_policies.py [--trace PATH] [--policy fifo,sjf,...] [--repeat N]

Each run is a fresh process (peak memory is its own); with --repeat the best CPU times are kept.
Targets (issue 19, sim CPU-s): fifo, sjf ≤ 0.35; srtf ≤ 0.6; tiresias ≤ 1.0; each sharing policy ≤ 2;
tiresias-gittins ≤ 4; qssf with ebm ≤ 8 and lucid ≤ 10, all model training included (lucid's variants
switch one part off each: the ablation).  Gavel's round policies are measured by bench_gavel.py.
Sharing policies use the Lucid RTX 3090 colocation table (the trace's workloads key into it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _measure import measure_in_subprocess
from rich.console import Console
from rich.table import Table

from simcluster.paths import shared_data_dir
from simcluster.policies import GAVEL_POLICIES, POLICIES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", default=str(shared_data_dir() / "venus_sept"))
    classic = [p for p in POLICIES.names() if p not in GAVEL_POLICIES and p != "qssf"]  # Gavel's: bench_gavel.py
    parser.add_argument("--policy", default=",".join(classic) + ",qssf")
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
