"""How simulation cost grows with the trace: fifo on synthetic traces on 1,000 nodes × 8 GPUs.

    python benchmarks/bench_scale.py [--sizes 10000,100000,1000000] [--policy fifo]

Target (issue 2): 1,000,000 jobs finish in ≤ 60 s (load + simulate) with ≤ 2 GiB peak memory,
and time grows close to linearly with the number of jobs.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _measure import measure_in_subprocess
from rich.console import Console
from rich.table import Table

from simcluster.traces.synth import SynthSpec, save_trace, synthesize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--vcs", type=int, default=10)
    parser.add_argument("--load", type=float, default=0.7)
    parser.add_argument("--policy", default="fifo")
    args = parser.parse_args()

    table = Table(title=f"{args.policy} on synthetic traces, {args.nodes} nodes × 8 GPUs, {args.vcs} VCs",
                  title_justify="left")
    for col in ("jobs", "load CPU-s", "sim CPU-s", "wall s (load+sim)", "peak MiB", "µs CPU / job", "avg JCT (s)"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            folder = Path(tmp) / f"synth-{n}"
            save_trace(synthesize(SynthSpec(jobs=n, nodes=args.nodes, vcs=args.vcs, load=args.load, seed=1)), folder)
            r = measure_in_subprocess(str(folder), args.policy)
            table.add_row(f"{n:,}", f"{r['load_cpu']:.2f}", f"{r['sim_cpu']:.2f}", f"{r['wall']:.2f}",
                          f"{r['peak_mib']:.0f}", f"{1e6 * r['sim_cpu'] / n:.1f}", f"{r['avg_jct']:,.0f}")
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
