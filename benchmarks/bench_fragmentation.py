"""FGD's evaluation on openb (issue 32): the whole study's CPU time, and its agreement with FGD's simulator.

    python benchmarks/bench_fragmentation.py [--variants default,gpushare40] [--seeds 42-51]
                                             [--reference analysis_allo_discrete.csv]

Runs the six placements × the seeds on each openb variant (inflated to 130 %) and prints, per placement,
the median unallocated GPU % at 100 % arrived and the rank.  ``--reference``: FGD's published per-seed
results (``experiments/analysis/expected_results/analysis_allo_discrete.csv`` of
hkust-adsl/kubernetes-scheduler-simulator, kept out of this repository); the table then adds FGD's
median, the difference, and how many of the seeds agree with FGD's at every level.  Targets: within
0.5 points on the default trace, 1 point on gpushare40, same ranking; the study ≤ 10 CPU-minutes.
CPU seconds are ``time.process_time``; on a shared machine read them as upper bounds.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from simcluster.fragmentation import RULE_NAMES, fragmentation_study, parse_seeds
from simcluster.paths import shared_data_dir

FGD_NAMES = {"random-fit": "01-Random", "dotprod": "02-DotProd", "gpu-clustering": "03-GpuClustering",
             "gpu-packing": "04-GpuPacking", "bestfit": "05-BestFit", "fgd": "06-FGD"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default="default,gpushare40")
    parser.add_argument("--seeds", default="42-51")
    parser.add_argument("--reference", type=Path, help="FGD's analysis_allo_discrete.csv")
    args = parser.parse_args()
    console = Console()
    reference = pd.read_csv(args.reference) if args.reference else None
    seeds = parse_seeds(args.seeds)
    for variant in args.variants.split(","):
        trace = shared_data_dir() / "alibaba_openb" / f"openb_pod_list_{variant}.csv"
        result = fragmentation_study(trace, RULE_NAMES, seeds)
        at = result.at(100)
        table = Table(title=f"openb {variant}: unallocated GPU % at 100 % arrived, median of {len(seeds)} seeds "
                      f"({result.cpu_seconds:.1f} CPU-s for {len(RULE_NAMES) * len(seeds)} runs)", title_justify="left")
        for column in ("placement", "ours", "rank", *(("FGD's", "rank", "diff", "seeds equal") if reference is not None
                                                       else ())):
            table.add_column(column, justify="left" if column == "placement" else "right")
        if reference is not None:
            ref = reference[(reference["workload"] == f"openb_pod_list_{variant}") & reference["seed"].isin(seeds)]
            theirs = {p: 100 - ref[ref["sc_policy"] == FGD_NAMES[p]]["100"].median() for p in RULE_NAMES}
            ranks = pd.Series(theirs).rank(method="min").astype(int)
        for placement, row in at.iterrows():
            cells = [str(placement), f"{row.unallocated_median:.3f}", str(int(row['rank']))]
            if reference is not None:
                mine = result.table[result.table["placement"] == placement]
                equal = 0
                for seed in seeds:
                    fgd = ref[(ref["sc_policy"] == FGD_NAMES[str(placement)]) & (ref["seed"] == seed)]
                    curve = mine[mine["seed"] == seed].set_index("arrived_pct")["unallocated_gpu_pct"]
                    levels = [c for c in fgd.columns if c.isdigit() and not fgd[c].isna().all()]
                    equal += all(abs(curve.get(int(c), -1) - (100 - float(fgd[c].iloc[0]))) < 1e-6 for c in levels)
                cells += [f"{theirs[str(placement)]:.3f}", str(ranks[str(placement)]),
                          f"{row.unallocated_median - theirs[str(placement)]:+.3f}", f"{equal}/{len(seeds)}"]
            table.add_row(*cells)
        console.print(table)


if __name__ == "__main__":
    main()
