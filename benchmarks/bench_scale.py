"""Start-up and scale: what `lucid-sim` costs before it simulates, and how a run grows with the trace.

    python benchmarks/bench_scale.py                   # start-up, then fifo on 10k, 100k and 1M jobs
    python benchmarks/bench_scale.py --ten-million     # ... and 10M jobs (5-10 minutes, ~11 GiB)
    python benchmarks/bench_scale.py --no-startup --sizes 10000,100000

Start-up: `lucid-sim --help` and `lucid-sim run` on the embedded default trace (what `make run` does),
wall seconds from the shell, best of 3, and whether each imported pandas or scipy.

Scale: each size is a synthetic trace (:mod:`simcluster.traces.synth`: 1,000 nodes × 8 GPUs, 10 VCs,
offered load 0.7, seed 1) written as a Venus CSV folder, then loaded, simulated under fifo and its run
folder written (CSV, as ``lucid-sim run --out`` writes it) in a fresh interpreter, so that its peak memory
is its own: CPU seconds (``time.process_time``, less sensitive than wall time to a shared machine) to load
the trace, to simulate (the engine's run), to build the results tables (what ``simulate`` does after the
engine's run: the jobs table, ρ, the summary, freeing the run's jobs; then ``RunResult.tables()``: the
users table) and to write the folder; wall seconds of load + simulation, peak RSS (``VmHWM`` of
``/proc/self/status``: ``resource.getrusage``'s ``ru_maxrss`` survives ``exec``, so a child would report
its parent's peak) and that peak less the interpreter's own after imports, per job, the write included.
Writing the trace is not timed.

Policies by cluster size (``--series``): fifo and every event-driven built-in policy on one synthetic trace
per size — by default 8,192/16,384/32,768/65,536 GPUs (one VC of 8-GPU nodes) with 12.2 jobs per GPU (100k …
800k jobs), GPU counts powers of two up to 256 (multi-node jobs hold most of the GPU time), log-normal
durations up to 3 days, Poisson arrivals, realised offered load held at 0.9 (:mod:`simcluster.traces.synth`),
seed 1 — each run in a fresh interpreter that draws the trace (not timed) and simulates it: sim CPU-s, its
ratio to fifo's at the same size, and the growth exponent (the slope of log CPU over log GPUs, least
squares over the series), with each run's peak memory per job, preemptions and avg JCT.  A run that passes
``--series-timeout`` is reported as such.  ``--series-policies`` and ``--series-sizes`` (GPUS/JOBS,…) pick
others.

A 10M-job run may also be split by VC across processes (``lucid-sim sweep --split-vcs always``, see the
manual's Performance page, docs/performance.md); ``--split-recipe`` measures that command: wall time and the peak of the
summed RSS of the sweep's processes, sampled every 0.2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "simcluster.cli"]

MEASURE = r"""
import json, re, sys, time
from pathlib import Path
def rss_mib():  # VmHWM: this process's peak RSS (getrusage's ru_maxrss would keep the parent's across exec)
    return int(re.search(r"VmHWM:\s*(\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024
from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.results import write_run
from simcluster.traces import load_trace
base = rss_mib()
w0, c0 = time.perf_counter(), time.process_time()
trace = load_trace(sys.argv[1])
load_cpu, w1, c1 = time.process_time() - c0, time.perf_counter(), time.process_time()
result = simulate(trace, SimConfig(policy=sys.argv[2]))
s = result.summary
simulate_cpu, sim_wall, wall = time.process_time() - c1, time.perf_counter() - w1, time.perf_counter() - w0
c2 = time.process_time()
tables = result.tables()
c3 = time.process_time()
write_run(Path(sys.argv[3]), tables, s)
write_cpu = time.process_time() - c3
print(json.dumps(dict(jobs=s["jobs"], load_cpu=load_cpu, sim_cpu=s["sim_cpu_seconds"],
    tables_cpu=simulate_cpu - s["sim_cpu_seconds"] + c3 - c2, write_cpu=write_cpu,
    sim_wall=sim_wall, wall=wall, peak_mib=rss_mib(), base_mib=base, avg_jct=s["avg_jct"])))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="Job counts, comma-separated.")
    parser.add_argument("--ten-million", action="store_true", help="Add a 10,000,000-job run (long).")
    parser.add_argument("--split-recipe", action="store_true",
                        help="Also measure the manual's 10M recipe (lucid-sim sweep --split-vcs always).")
    parser.add_argument("--workers", type=int, default=2, help="Processes for --split-recipe.")
    parser.add_argument("--recipe-jobs", type=int, default=10_000_000, help="Jobs for --split-recipe.")
    parser.add_argument("--no-startup", action="store_true", help="Skip the start-up figures.")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--vcs", type=int, default=10)
    parser.add_argument("--load", type=float, default=0.7)
    parser.add_argument("--policy", default="fifo")
    parser.add_argument("--series", action="store_true", help="Every policy by cluster size (see above).")
    parser.add_argument("--series-policies", default=",".join(SERIES_POLICIES))
    parser.add_argument("--series-sizes", default=",".join(f"{g}/{j}" for g, j in SERIES_SIZES),
                        help="GPUS/JOBS, comma-separated.")
    parser.add_argument("--series-trace", default=SERIES_TRACE, help="The synthetic trace's shape and load.")
    parser.add_argument("--series-timeout", type=float, default=3600.0, help="Seconds a run may take.")
    args = parser.parse_args()
    console = Console(width=150)
    console.print("[dim]CPU seconds from time.process_time; wall seconds and memory on a shared machine "
                  "vary from run to run.[/]")
    if not args.no_startup:
        console.print(startup_table())
    sizes = [int(s) for s in args.sizes.split(",") if s] + ([10_000_000] if args.ten_million else [])
    if sizes:
        console.print(scale_table(sizes, args, console))
    if args.split_recipe:
        console.print(recipe_table(args))
    if args.series:
        console.print(series_table(args, console))


def startup_table() -> Table:
    """`--help` and a run of the default trace: best-of-3 wall seconds, and what they imported."""
    table = Table(title="Start-up (wall s from the shell, best of 3)", title_justify="left")
    for col in ("command", "best wall s", "all wall s", "imports pandas", "imports scipy"):
        table.add_column(col, justify="right" if "wall" in col else "left")
    with tempfile.TemporaryDirectory() as tmp:
        commands = {"lucid-sim --help": ["--help"],
                    "lucid-sim run (default trace)": ["run", "--out", f"{tmp}/default", "--overwrite"]}
        for name, argv in commands.items():
            walls = []
            for _ in range(3):
                t0 = time.perf_counter()
                subprocess.run([*CLI, *argv], cwd=ROOT, capture_output=True, check=True)
                walls.append(time.perf_counter() - t0)
            imported = imported_modules(argv)
            table.add_row(name, f"{min(walls):.2f}", " ".join(f"{w:.2f}" for w in walls),
                          yes_no("pandas" in imported), yes_no("scipy" in imported))
    return table


def imported_modules(argv: list[str]) -> set[str]:
    """Top-level modules ``lucid-sim ARGV`` imports (``python -X importtime`` lists them on stderr)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "simcluster.cli", *argv], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return {m.group(1).split(".")[0] for m in re.finditer(r"^import time:.*\|\s*([\w.]+)$", done.stderr,
                                                         re.MULTILINE)}


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def scale_table(sizes: list[int], args: argparse.Namespace, console: Console) -> Table:
    from simcluster.traces.synth import SynthSpec, save_trace, synthesize

    table = Table(title=f"{args.policy} on synthetic traces, {args.nodes} nodes × 8 GPUs, {args.vcs} VCs, "
                        f"load {args.load}", title_justify="left")
    for col in ("jobs", "load CPU-s", "sim CPU-s", "tables CPU-s", "write CPU-s", "sim wall s",
                "wall s (load+sim)", "peak RSS MiB", "bytes / job", "µs CPU / job", "avg JCT (s)"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            folder = Path(tmp) / f"synth-{n}"
            with console.status(f"writing a {n:,}-job trace"):
                save_trace(synthesize(SynthSpec(jobs=n, nodes=args.nodes, vcs=args.vcs, load=args.load, seed=1)),
                           folder)
            with console.status(f"simulating {n:,} jobs"):
                done = subprocess.run([sys.executable, "-c", MEASURE, str(folder), args.policy,
                                       str(Path(tmp) / f"run-{n}")], cwd=ROOT, capture_output=True, text=True,
                                      check=False)
            if done.returncode:
                raise SystemExit(f"{n:,} jobs failed:\n{done.stderr}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
            table.add_row(f"{n:,}", f"{r['load_cpu']:.2f}", f"{r['sim_cpu']:.2f}", f"{r['tables_cpu']:.2f}",
                          f"{r['write_cpu']:.2f}", f"{r['sim_wall']:.2f}", f"{r['wall']:.2f}",
                          f"{r['peak_mib']:,.0f}",
                          f"{(r['peak_mib'] - r['base_mib']) * 2**20 / n:,.0f}", f"{1e6 * r['sim_cpu'] / n:.1f}",
                          f"{r['avg_jct']:,.0f}")
            console.print(f"[dim]{n:,} jobs: {r['wall']:.1f} s, {r['peak_mib']:,.0f} MiB[/]")
    return table


SERIES_POLICIES = ("fifo", "sjf", "qssf", "srtf", "tiresias", "tiresias-gittins", "fifo-backfill", "easy-backfill",
                   "slurm", "sjf-ffs", "sjf-bsbf", "srtf-ars", "srtf-wrs", "lucid")
SERIES_SIZES = ((8_192, 100_000), (16_384, 200_000), (32_768, 400_000), (65_536, 800_000))
SERIES_TRACE = ("sizes=pow2:256,decay=1.6,durations=lognormal:mu=7,sigma=1.8,max=259200,arrivals=poisson,"
                "load=0.9,vcs=1,seed=1")

SERIES_RUN = r"""
import json, re, sys, time
from pathlib import Path
def rss_mib():
    return int(re.search(r"VmHWM:\s*(\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024
from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.traces.synth import spec_from_text, synthesize
trace = synthesize(spec_from_text(sys.argv[1]))
base = rss_mib()
s = simulate(trace, SimConfig(policy=sys.argv[2])).summary
print(json.dumps(dict(sim_cpu=s["sim_cpu_seconds"], avg_jct=s["avg_jct"], avg_queue=s["avg_queue"],
    preemptions=s["preemptions"], jobs=s["jobs"], peak_mib=rss_mib(), base_mib=base)))
"""


def series_table(args: argparse.Namespace, console: Console) -> Table:
    """Each policy's sim CPU at each size, its ratio to fifo's and its growth exponent."""
    import math

    policies = [p for p in args.series_policies.split(",") if p]
    sizes = [tuple(int(v) for v in size.split("/")) for size in args.series_sizes.split(",") if size]
    runs: dict[tuple[str, int], dict | str] = {}
    for gpus, jobs in sizes:
        spec = f"jobs={jobs},nodes={gpus // 8},{args.series_trace}"
        for policy in ["fifo", *[p for p in policies if p != "fifo"]]:
            with console.status(f"{policy} on {gpus:,} GPUs, {jobs:,} jobs"):
                try:
                    done = subprocess.run([sys.executable, "-c", SERIES_RUN, spec, policy], cwd=ROOT, check=False,
                                          capture_output=True, text=True, timeout=args.series_timeout)
                    runs[policy, gpus] = (json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0
                                          else f"failed: {done.stderr.strip().splitlines()[-1:]}")
                except subprocess.TimeoutExpired:
                    runs[policy, gpus] = f"> {args.series_timeout:,.0f} s"
            shown = runs[policy, gpus]
            console.print(f"[dim]{policy} on {gpus:,} GPUs: " + (f"{shown['sim_cpu']:.1f} sim CPU-s, avg JCT "
                          f"{shown['avg_jct']:,.0f} s" if isinstance(shown, dict) else shown) + "[/]")
    table = Table(title=f"Policies by cluster size ({args.series_trace}); sim CPU-s (× fifo)", title_justify="left")
    table.add_column("policy")
    for gpus, jobs in sizes:
        table.add_column(f"{gpus // 1024}k GPUs / {jobs // 1000}k jobs", justify="right")
    for col in ("exponent", "bytes / job (largest)", "preemptions (largest)", "avg JCT s (largest)"):
        table.add_column(col, justify="right")
    for policy in ["fifo", *[p for p in policies if p != "fifo"]]:
        cells, points = [], []
        for gpus, _ in sizes:
            run, fifo = runs[policy, gpus], runs["fifo", gpus]
            if not isinstance(run, dict):
                cells.append(str(run))
                continue
            points.append((math.log(gpus), math.log(max(run["sim_cpu"], 1e-9))))
            ratio = f" ({run['sim_cpu'] / fifo['sim_cpu']:.1f}×)" if isinstance(fifo, dict) else ""
            cells.append(f"{run['sim_cpu']:,.1f}{ratio}")
        last = runs[policy, sizes[-1][0]]
        extra = [f"{(last['peak_mib'] - last['base_mib']) * 2**20 / last['jobs']:,.0f}", f"{last['preemptions']:,}",
                 f"{last['avg_jct']:,.0f}"] if isinstance(last, dict) else ["", "", ""]
        table.add_row(policy, *cells, f"{growth_exponent(points):.2f}" if len(points) > 1 else "", *extra)
    return table


def growth_exponent(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of (log size, log CPU) points: CPU ∝ size^slope.

    >>> import math
    >>> round(growth_exponent([(math.log(s), math.log(3 * s ** 1.5)) for s in (1, 2, 4, 8)]), 3)
    1.5
    """
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def recipe_command(args: argparse.Namespace, out: Path) -> list[str]:
    """The manual's 10M recipe (docs/performance.md): one run, its VCs simulated in ``--workers`` processes and merged."""
    trace = f"synth:jobs={args.recipe_jobs},nodes={args.nodes},vcs={args.vcs},load={args.load},seed=1"
    return [*CLI, "sweep", "--trace", trace,
            "--policy", args.policy, "--split-vcs", "always", "--workers", str(args.workers), "--quiet",
            "--out", str(out)]


def recipe_table(args: argparse.Namespace) -> Table:
    table = Table(title=f"{args.recipe_jobs:,} jobs split by VC over {args.workers} processes "
                        "(lucid-sim sweep --split-vcs always)",
                  title_justify="left")
    for col in ("wall s", "peak RSS MiB (all processes)", "sim CPU-s (sum of VCs)", "avg JCT (s)"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = subprocess.Popen(recipe_command(args, Path(tmp) / "sweep"), cwd=ROOT, stderr=subprocess.PIPE,
                                text=True)
        peak = 0.0
        while proc.poll() is None:
            peak = max(peak, tree_rss_mib(proc.pid))
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        if proc.returncode:
            raise SystemExit(f"the 10M recipe failed:\n{proc.stderr.read() if proc.stderr else ''}")
        summary = json.loads(next((Path(tmp) / "sweep" / "runs").glob("*/summary.json")).read_text())
    table.add_row(f"{wall:.1f}", f"{peak:,.0f}", f"{summary['sim_cpu_seconds']:.1f}", f"{summary['avg_jct']:,.0f}")
    return table


def tree_rss_mib(root: int) -> float:
    """Resident memory of a process and all its descendants (Linux /proc), MiB."""
    children: dict[int, list[int]] = {}
    rss: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            children.setdefault(int(fields[1]), []).append(int(entry.name))
            rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        except (OSError, ValueError, IndexError):
            continue  # the process ended while we looked
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0.0)
        todo.extend(children.get(pid, []))
    return total


if __name__ == "__main__":
    main()
