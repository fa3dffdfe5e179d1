"""The figures of docs/failures.md ("Figures from the InfiniteHBD log"), computed from the log.

    python benchmarks/faults_figures.py [--log PATH] [--servers 400] [--seeds 20]

Prints: the fit per class (share, rate per 1,000 server-days of up time, median repair, with 95 % intervals);
the interruptions a 2,048-server (16,384-GPU) job sees in 54 days, by the fitted rate, by the fitted model
drawn over many seeds, and by the log itself replayed in 54-day windows, beside Llama 3's 419; and the
analytic ETTR of that job for a few checkpoint intervals with the Young/Daly optimum.
"""

from __future__ import annotations

import argparse
import math
import statistics

from simcluster.faults import (
    LogReplay,
    daly_interval,
    ettr,
    fit_faults,
    optimal_interval,
    read_fault_log,
    young_interval,
)
from simcluster.faults.log import DAY
from simcluster.paths import shared_data_dir

LLAMA3_INTERRUPTIONS, LLAMA3_DAYS, LLAMA3_GPUS = 419, 54, 16_384


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", default=str(shared_data_dir() / "faults" / "infinitehbd" / "fault_trace.json"))
    parser.add_argument("--servers", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    log = read_fault_log(args.log, servers=args.servers)
    fit = fit_faults(log)

    print(f"{fit.faults} faults of {fit.servers} servers over {fit.span_days:.1f} days; calendar rate "
          f"{1000 * fit.faults / (fit.servers * fit.span_days):.2f} per 1,000 server-days; up-time rate "
          f"{1000 * fit.rate:.2f} [{1000 * fit.rate_low:.2f}, {1000 * fit.rate_high:.2f}]")
    print("\n| class | faults | share % [95 %] | per 1,000 server-days [95 %] | median repair h [95 %] |")
    print("|---|---:|---:|---:|---:|")
    for c in fit.classes:
        if c.faults < 10:
            continue
        print(f"| {c.cls} ({c.level.split()[0].lower()}) | {c.faults} | {100 * c.share:.1f} [{100 * c.share_low:.1f}, "
              f"{100 * c.share_high:.1f}] | {1000 * c.rate:.3f} [{1000 * c.rate_low:.3f}, {1000 * c.rate_high:.3f}] | "
              f"{c.median_s / 3600:.1f} [{c.median_low_s / 3600:.1f}, {c.median_high_s / 3600:.1f}] |")
    hardware = sum(c.faults for c in fit.classes if c.level == "Hardware Failure") / fit.faults
    print(f"\nhardware share of faults: {100 * hardware:.0f} %")

    servers, days = LLAMA3_GPUS // 8, LLAMA3_DAYS
    rate = fit.rate * servers  # faults per day the job sees while it runs on `servers` up servers
    low, high = fit.rate_low * servers, fit.rate_high * servers
    print(f"\nA job on {servers:,} servers ({LLAMA3_GPUS:,} GPUs) for {days} days:")
    print(f"  fitted rate: a fault every {24 / rate:.2f} h [{24 / high:.2f}, {24 / low:.2f}]; "
          f"{rate * days:.0f} [{low * days:.0f}, {high * days:.0f}] faults in {days} days")
    model = fit.model()
    counts = [len(list(model.outages(servers, 8, days * DAY, seed))) for seed in range(args.seeds)]
    print(f"  fitted model, {args.seeds} seeds: {statistics.mean(counts):.0f} faults on average "
          f"(range {min(counts)}-{max(counts)})")
    windows = [len(list(LogReplay(log, offset_s=offset * DAY, repeat=False).outages(servers, 8, days * DAY, seed)))
               for seed, offset in enumerate(range(0, int(log.span_days) - days, 30))]
    print(f"  the log replayed (with replacement) in {len(windows)} windows of {days} days: "
          f"{statistics.mean(windows):.0f} on average (range {min(windows)}-{max(windows)})")
    print(f"  Llama 3: {LLAMA3_INTERRUPTIONS} unexpected interruptions in {days} days, one every "
          f"{24 * days / LLAMA3_INTERRUPTIONS:.2f} h")

    per_s = rate / DAY
    cost, restart = 60.0, 300.0
    print(f"\nAnalytic ETTR of that job (checkpoint cost {cost:.0f} s, restart {restart:.0f} s, a spare swapped in "
          "at once):")
    for minutes in (5, 15, 30, 60, 120, 240):
        print(f"  every {minutes:>3} min: ETTR {ettr(minutes * 60, cost, per_s, restart):.3f}")
    best = optimal_interval(cost, per_s)
    print(f"  Young {young_interval(cost, per_s) / 60:.1f} min, Daly {daly_interval(cost, per_s) / 60:.1f} min, "
          f"exact optimum {best / 60:.1f} min: ETTR {ettr(best, cost, per_s, restart):.3f}")
    llama_rate = LLAMA3_INTERRUPTIONS / days / DAY
    print(f"  at Llama 3's rate: optimum {optimal_interval(cost, llama_rate) / 60:.1f} min, ETTR "
          f"{ettr(optimal_interval(cost, llama_rate), cost, llama_rate, restart):.3f}; every 30 min "
          f"{ettr(1800, cost, llama_rate, restart):.3f}")
    if not math.isfinite(best):
        raise SystemExit("no optimum")


if __name__ == "__main__":
    main()
