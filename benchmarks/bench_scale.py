"""Start-up and scale: what `lucid-sim` costs before it simulates, and how a run grows with the trace.

    python benchmarks/bench_scale.py                   # start-up, then fifo on 10k, 100k and 1M jobs
    python benchmarks/bench_scale.py --ten-million     # ... and 10M jobs (5-10 minutes, ~11 GiB)
    python benchmarks/bench_scale.py --no-startup --sizes 10000,100000
    python benchmarks/bench_scale.py --no-startup --sizes "" --series --series-sizes 1024,2048 --json out.json

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

Policies by cluster size (``--series``): every built-in policy (the policy registry's; those that cannot run
on a synthetic trace, the elastic ones, are left out with the reason printed) on one synthetic trace per shape
and size (:mod:`simcluster.traces.synth`, one VC of 8-GPU nodes, Poisson arrivals, realised offered load held,
seed 1), each run in a fresh interpreter that draws the trace (not timed) and simulates it.  The shapes
(``--series-shapes``, all three by default; :data:`SHAPES` spells them):

- ``series``: GPU counts powers of two up to 256 (multi-node jobs hold most of the GPU time), log-normal
  durations up to 3 days, load 0.9; 8,192/16,384/32,768/65,536 GPUs with 12.2 jobs per GPU (100k … 800k jobs);
- ``congested``: 1 to 1,024 GPUs, 40 % single-GPU, a quarter multi-node, log-normal durations of minutes to a
  day (median 50 minutes), load 1.0; 4,096/8,192/16,384 GPUs with 50k/100k/200k jobs;
- ``sharing``: the llm-era preset's durations and sizes to 64 GPUs, its tail moved down to 128–512 GPUs (its
  1,024–16,384 fit no 4k-GPU VC), load 0.9; 4,096/8,192/16,384 GPUs with 6k/12k/24k jobs.

One table per shape: each policy's sim CPU-s and its ratio to fifo's at the same size, the growth exponent
(the slope of log CPU over log GPUs, least squares over the sizes it ran at), and at the largest size its
peak memory per job, preemptions and avg JCT.  A run that passes ``--series-timeout`` is reported as such and
its policy is not run at the larger sizes of that shape.  ``--series-policies`` and ``--series-sizes``
(GPUS/JOBS, or GPUS alone: jobs at each shape's own density) pick others; ``--json OUT`` writes every figure.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    parser.add_argument("--series-shapes", default=",".join(SHAPES),
                        help=f"Trace shapes, comma-separated, from {', '.join(SHAPES)}.")
    parser.add_argument("--series-policies", default="all",
                        help="Policies, comma-separated; all: every built-in that can run on a synthetic trace.")
    parser.add_argument("--series-sizes", default="",
                        help="GPUS/JOBS or GPUS (jobs at each shape's own density), comma-separated, for every "
                             "shape; default: each shape's own.")
    parser.add_argument("--series-timeout", type=float, default=3600.0,
                        help="Wall seconds a run may take (on a shared machine, more than its CPU-s).")
    parser.add_argument("--json", metavar="OUT", help="Also write every figure of the series to this file.")
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
        run_series(args, console)


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


@dataclass(frozen=True)
class Shape:
    """A trace shape of the series: a synthetic spec less its jobs and nodes, and its own GPUS/JOBS sizes."""

    name: str
    trace: str  # simcluster.traces.synth's spec text, without jobs= and nodes=
    sizes: tuple[tuple[int, int], ...]

    def spec(self, gpus: int, jobs: int) -> str:
        """The full synthetic spec at one size (8-GPU nodes).

        >>> SHAPES["series"].spec(1024, 12500)[:31]
        'jobs=12500,nodes=128,sizes=pow2'
        """
        return f"jobs={jobs},nodes={gpus // 8},{self.trace}"

    def jobs_at(self, gpus: int) -> int:
        """Jobs on ``gpus`` GPUs at the jobs per GPU of the shape's own first size, so a smaller run keeps the
        shape's density.

        >>> SHAPES["sharing"].jobs_at(1024), SHAPES["congested"].jobs_at(2048)
        (1500, 25000)
        """
        own_gpus, own_jobs = self.sizes[0]
        return round(gpus * own_jobs / own_gpus)


# The three shapes of issue 55: the series' own (multi-node jobs hold most GPU time), congested multi-node jobs
# at full load, and the GPU-sharing family's few short jobs per GPU.
SHAPES = {shape.name: shape for shape in (
    Shape("series", "sizes=pow2:256,decay=1.6,durations=lognormal:mu=7,sigma=1.8,max=259200,arrivals=poisson,"
                    "load=0.9,vcs=1,seed=1",
          ((8_192, 100_000), (16_384, 200_000), (32_768, 400_000), (65_536, 800_000))),
    # 1-1,024 GPUs, 40 % single-GPU, a quarter of the jobs multi-node; median 50 minutes, 2 minutes to a day
    Shape("congested", "sizes=1:0.4,2:0.1,4:0.1,8:0.15,16:0.08,32:0.06,64:0.05,128:0.03,256:0.02,512:0.007,"
                       "1024:0.003,durations=lognormal:mu=8,sigma=1.5,max=86400,arrivals=poisson,load=1.0,vcs=1,seed=1",
          ((4_096, 50_000), (8_192, 100_000), (16_384, 200_000))),
    # the llm-era preset's durations and arrivals; its sizes to 64 GPUs as given, its tail (1,024-4,096 GPUs,
    # which no 4k-GPU VC holds) moved down to 128-512 with the same weights
    Shape("sharing", "preset=llm-era,sizes=1:0.55,2:0.07,4:0.07,8:0.17,16:0.06,32:0.04,64:0.03,128:0.0003,"
                     "256:0.00015,512:0.00008,load=0.9,vcs=1,seed=1",
          ((4_096, 6_000), (8_192, 12_000), (16_384, 24_000))),
)}

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

Run = dict[str, Any] | str  # a run's figures, or what became of it (timed out, failed, not run)


def series_shapes(text: str) -> list[Shape]:
    """The shapes ``--series-shapes`` names, or an error listing the known ones.

    >>> [s.name for s in series_shapes("sharing,series")]
    ['sharing', 'series']
    >>> series_shapes("venus")
    Traceback (most recent call last):
    ...
    SystemExit: --series-shapes: unknown shape 'venus'; choose from series, congested, sharing
    """
    names = [n for n in text.split(",") if n]
    for name in names:
        if name not in SHAPES:
            raise SystemExit(f"--series-shapes: unknown shape {name!r}; choose from {', '.join(SHAPES)}")
    return [SHAPES[n] for n in names]


def series_sizes(text: str, shape: Shape) -> list[tuple[int, int]]:
    """``--series-sizes`` for one shape, smallest first: GPUS/JOBS or GPUS alone (jobs at the shape's own
    density, :meth:`Shape.jobs_at`); empty text: the shape's own sizes.

    >>> series_sizes("2048,1024/9999", SHAPES["sharing"])
    [(1024, 9999), (2048, 3000)]
    >>> series_sizes("256/100", SHAPES["congested"])
    Traceback (most recent call last):
    ...
    SystemExit: --series-sizes: 256/100 for the congested shape: sizes '1:0.4,...': a job of 1,024 GPUs does not fit ...
    >>> series_sizes("1020", SHAPES["series"])
    Traceback (most recent call last):
    ...
    SystemExit: --series-sizes: '1020' must be GPUS (a positive multiple of 8: nodes of 8 GPUs) or GPUS/JOBS
    """
    from simcluster.traces.synth import spec_from_text

    sizes = []
    for item in filter(None, text.split(",")):
        gpus_text, _, jobs_text = item.partition("/")
        try:
            gpus = int(gpus_text)
            jobs = int(jobs_text) if jobs_text else shape.jobs_at(gpus)
        except ValueError:
            gpus = jobs = 0
        if gpus <= 0 or gpus % 8 or jobs <= 0:
            raise SystemExit(f"--series-sizes: {item!r} must be GPUS (a positive multiple of 8: nodes of 8 GPUs) "
                             "or GPUS/JOBS")
        sizes.append((gpus, jobs))
    sizes = sorted(sizes) if sizes else list(shape.sizes)
    for gpus, jobs in sizes:  # a size the shape cannot have fails here, not in every policy's run
        try:
            spec_from_text(shape.spec(gpus, jobs))
        except ValueError as error:
            raise SystemExit(f"--series-sizes: {gpus}/{jobs} for the {shape.name} shape: {error}") from None
    return sizes


def series_policies(text: str) -> tuple[list[str], dict[str, str]]:
    """The policies to run (fifo first: the others' ratios are to it) and those left out, with why.

    ``all`` is every built-in the registry holds, so a new one is measured without editing this script.
    """
    from simcluster.policies import POLICIES

    names = POLICIES.names() if text == "all" else [p for p in text.split(",") if p]
    unknown = [p for p in names if p not in POLICIES]
    if unknown:
        raise SystemExit(f"--series-policies: unknown policy {unknown[0]!r}; choose from all, "
                         f"{', '.join(POLICIES.names())}")
    left_out = {p: why for p in names if (why := cannot_run(POLICIES.get(p)))}
    kept = [p for p in names if p not in left_out]
    return ["fifo", *[p for p in kept if p != "fifo"]], left_out


def cannot_run(policy: type) -> str | None:
    """Why a policy cannot run on a synthetic trace, or None.

    >>> from simcluster.policies import POLICIES
    >>> cannot_run(POLICIES.get("srtf")), cannot_run(POLICIES.get("pollux"))[:30]
    (None, 'resizes jobs while they run, s')
    """
    if policy.elastic:  # the engine refuses them: simcluster.elastic.work.attach_models
        return ("resizes jobs while they run, so it needs jobs with scaling models (a Pollux or ElasticFlow "
                "trace); a synthetic trace has none")
    return None


def series_run(spec: str, policy: str, timeout: float) -> Run:
    """One policy on one synthetic trace, in a fresh interpreter (its peak memory its own)."""
    try:
        done = subprocess.run([sys.executable, "-c", SERIES_RUN, spec, policy], cwd=ROOT, check=False,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"> {timeout:,.0f} s"
    if done.returncode:
        return f"failed: {' '.join(done.stderr.strip().splitlines()[-1:])}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def shape_runs(shape: Shape, sizes: list[tuple[int, int]], policies: list[str], timeout: float,
               console: Console) -> dict[tuple[str, int], Run]:
    """Every policy at every size of one shape; a policy that ran out of time is not run at larger sizes."""
    runs: dict[tuple[str, int], Run] = {}
    too_slow: dict[str, int] = {}  # policy → the GPUs at which it ran out of time
    for gpus, jobs in sizes:
        for policy in policies:
            if policy in too_slow:
                runs[policy, gpus] = f"not run (> {timeout:,.0f} s at {too_slow[policy]:,} GPUs)"
                continue
            with console.status(f"{shape.name}: {policy} on {gpus:,} GPUs, {jobs:,} jobs"):
                run = runs[policy, gpus] = series_run(shape.spec(gpus, jobs), policy, timeout)
            if isinstance(run, str) and run.startswith(">"):
                too_slow[policy] = gpus
            console.print(f"[dim]{shape.name}: {policy} on {gpus:,} GPUs: " + (
                f"{run['sim_cpu']:.2f} sim CPU-s, avg JCT {run['avg_jct']:,.0f} s" if isinstance(run, dict) else run)
                + "[/]")
    return runs


def shape_figures(sizes: list[tuple[int, int]], policies: list[str],
                  runs: dict[tuple[str, int], Run]) -> dict[str, dict[str, Any]]:
    """Per policy: each size's run with its ratio to fifo's sim CPU, and the growth exponent over the sizes
    it ran at (None with fewer than two).

    >>> run = lambda cpu: dict(sim_cpu=cpu, avg_jct=1.0, preemptions=0, jobs=10, peak_mib=2.0, base_mib=1.0)
    >>> runs = {("fifo", 8): run(1.0), ("fifo", 16): run(2.0), ("srtf", 8): run(3.0), ("srtf", 16): "> 9 s"}
    >>> figures = shape_figures([(8, 10), (16, 20)], ["fifo", "srtf"], runs)
    >>> round(figures["fifo"]["exponent"], 6), figures["srtf"]["exponent"], figures["srtf"]["sizes"][0]["ratio"]
    (1.0, None, 3.0)
    >>> figures["srtf"]["sizes"][1]
    {'gpus': 16, 'jobs': 20, 'outcome': '> 9 s'}
    """
    import math

    figures = {}
    for policy in policies:
        rows, points = [], []
        for gpus, jobs in sizes:
            run, fifo = runs[policy, gpus], runs["fifo", gpus]
            if not isinstance(run, dict):
                rows.append({"gpus": gpus, "jobs": jobs, "outcome": run})
                continue
            ratio = run["sim_cpu"] / fifo["sim_cpu"] if isinstance(fifo, dict) and fifo["sim_cpu"] > 0 else None
            bytes_per_job = (run["peak_mib"] - run["base_mib"]) * 2**20 / max(run["jobs"], 1)
            rows.append({"gpus": gpus, "jobs": jobs, **run, "ratio": ratio, "bytes_per_job": bytes_per_job})
            points.append((math.log(gpus), math.log(max(run["sim_cpu"], 1e-9))))
        figures[policy] = {"sizes": rows, "exponent": growth_exponent(points) if len(points) > 1 else None}
    return figures


def shape_table(shape: Shape, figures: dict[str, dict[str, Any]], timeout: float) -> Table:
    """One shape's figures: sim CPU-s (× fifo) at each size, the exponent, and the largest size's others."""
    sizes = [(row["gpus"], row["jobs"]) for row in next(iter(figures.values()))["sizes"]]
    table = Table(title=f"{shape.name}: {shape.trace}; sim CPU-s (× fifo), runs cut at {timeout:,.0f} s",
                  title_justify="left")
    table.add_column("policy")
    for gpus, jobs in sizes:
        table.add_column(f"{count(gpus, 1024)} GPUs / {count(jobs, 1000)} jobs", justify="right")
    for col in ("exponent", "bytes / job (largest)", "preemptions (largest)", "avg JCT s (largest)"):
        table.add_column(col, justify="right")
    for policy, figure in figures.items():
        cells = [shorten(row["outcome"]) if "outcome" in row else
                 f"{row['sim_cpu']:,.2f}" + (f" ({row['ratio']:.1f}×)" if row["ratio"] is not None else "")
                 for row in figure["sizes"]]
        last = figure["sizes"][-1]
        extra = (["", "", ""] if "outcome" in last else
                 [f"{last['bytes_per_job']:,.0f}", f"{last['preemptions']:,}", f"{last['avg_jct']:,.0f}"])
        exponent = "" if figure["exponent"] is None else f"{figure['exponent']:.2f}"
        table.add_row(policy, *cells, exponent, *extra)
    return table


def shorten(outcome: str, most: int = 40) -> str:
    """What became of a run, cut to fit a cell (the console's line above and ``--json`` keep all of it).

    >>> shorten("failed: ValueError: " + "x" * 50)
    'failed: ValueError: xxxxxxxxxxxxxxxxxxx…'
    """
    return outcome if len(outcome) <= most else outcome[:most - 1] + "…"


def count(n: int, unit: int) -> str:
    """A size as a column names it: thousands (of 1,024 GPUs, of 1,000 jobs) where there are some.

    >>> count(16384, 1024), count(1500, 1000), count(512, 1024)
    ('16k', '1.5k', '512')
    """
    return f"{n / unit:g}k" if n >= unit else str(n)


def run_series(args: argparse.Namespace, console: Console) -> None:
    """Every chosen policy on every chosen shape: one table per shape, and with ``--json`` every figure."""
    policies, left_out = series_policies(args.series_policies)
    for policy, why in left_out.items():
        console.print(f"[yellow]left out {policy}: {why}[/]")
    report: dict[str, Any] = {"command": sys.argv, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
                              "timeout_s": args.series_timeout, "left_out": left_out, "shapes": {}}
    plan = [(shape, series_sizes(args.series_sizes, shape)) for shape in series_shapes(args.series_shapes)]
    if "lucid" in policies:  # its packing model is trained once per tables and kept (simcluster.models.cache)
        warm_up = series_run(SHAPES["sharing"].spec(512, 750), "lucid", args.series_timeout)  # (its jobs fit 512)
        if not isinstance(warm_up, dict):
            raise SystemExit(f"lucid's warm-up run {warm_up}")
        console.print("[dim]lucid's packing model trained once before the series, as a user's second run finds it "
                      "(simcluster.models.cache)[/]")
    for shape, sizes in plan:  # every shape's sizes checked before the first run
        runs = shape_runs(shape, sizes, policies, args.series_timeout, console)
        figures = shape_figures(sizes, policies, runs)
        console.print(shape_table(shape, figures, args.series_timeout))
        report["shapes"][shape.name] = {"trace": shape.trace, "sizes": sizes, "policies": figures}
        if args.json:  # after each shape, so a long series keeps what it measured
            Path(args.json).write_text(json.dumps(report, indent=1))


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
