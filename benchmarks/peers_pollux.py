"""Run Pollux's own cluster simulator (petuum/adaptdl, branch osdi21-artifact, folder simulator/) on the
shared workloads and keep each job's completion time, for the differential comparison of issue 31.

    python benchmarks/peers_pollux.py --simulator /work/peers/adaptdl/simulator \\
        --python /work/peers/venv-pollux/bin/python --out /work/peers/out/pollux \\
        --policies tiresias,optimus --loads 1.0 --traces 1-8

One run is ``simulator.py --policy P --output LOG WORKLOAD.csv`` in the simulator's folder (it reads its
measurements from its own ``traces/``), one at a time: on a machine of two cores its ``--output DIR``
mode (eight processes) only slows every run down.  Each run's per-job JCTs are read from the last record
of its log and gathered per (policy, load) into ``summary.json`` in the authors' own layout (``jcts``,
``avgs``, ``mean``, as in the branch's ``results-jobload/``).  A run whose log is complete is not run
again, so the script resumes; ``--published`` adds the authors' results beside ours.  This script needs
none of the peer's code to import: it only runs it.  docs/elastic.md says how the interpreter was built.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
from pathlib import Path

DEFAULT_WORKLOADS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pollux" / "workloads"


def trace_numbers(text: str) -> list[int]:
    """``1-8`` or ``1,6``: the workload numbers."""
    numbers: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, _, high = part.partition("-")
        numbers.extend(range(int(low), int(high or low) + 1))
    return numbers


def jcts_of_log(log: Path) -> dict[str, float] | None:
    """Per-job JCT from the simulator's log (JSON lines, one per interval), or None while any job is
    unfinished (an interrupted run)."""
    last = None
    with log.open() as handle:
        for line in handle:
            if line.strip():
                last = line
    if last is None:
        return None
    jobs = json.loads(last)["submitted_jobs"]
    if any(job["completion_time"] is None for job in jobs):
        return None
    return {job["name"]: job["completion_time"] - job["submission_time"] for job in jobs}


def children_cpu() -> float:
    """CPU seconds of the finished child processes (the simulator's, not this script's)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_one(args: argparse.Namespace, policy: str, load: str, number: int) -> tuple[dict[str, float], float]:
    folder = args.out / f"{policy}-{load}"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"workload-{number}.log"
    timing = folder / f"workload-{number}.seconds"
    if log.is_file() and timing.is_file():
        done = jcts_of_log(log)
        if done is not None:
            return done, float(timing.read_text())
    workload = args.workloads / load / f"workload-{number}.csv"
    command = [args.python, "simulator.py", "--policy", policy, "--interval", str(args.interval),
               "--output", str(log), str(workload)]
    before = children_cpu()
    with (folder / f"workload-{number}.stdout").open("w") as out:
        subprocess.run(command, cwd=args.simulator, stdout=out, stderr=subprocess.STDOUT, check=True)
    seconds = children_cpu() - before
    timing.write_text(f"{seconds:.1f}\n")
    done = jcts_of_log(log)
    if done is None:
        raise RuntimeError(f"{log}: the run ended with unfinished jobs")
    return done, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulator", type=Path, required=True, help="the checkout's simulator/ folder")
    parser.add_argument("--python", required=True, help="the interpreter its requirements are installed in")
    parser.add_argument("--workloads", type=Path, default=DEFAULT_WORKLOADS, help="pollux/workloads of the shared data")
    parser.add_argument("--out", type=Path, required=True, help="where logs and summaries go (outside the repo)")
    parser.add_argument("--policies", default="tiresias,optimus,pollux")
    parser.add_argument("--loads", default="1.0")
    parser.add_argument("--traces", default="1-8")
    parser.add_argument("--interval", type=int, default=60)
    parser.add_argument("--published", action="store_true",
                        help="also print the authors' means from the simulator's results-jobload/")
    args = parser.parse_args()
    for load in args.loads.split(","):
        for policy in args.policies.split(","):
            summary: dict = {"jcts": {}, "avgs": {}, "seconds": {}}
            for number in trace_numbers(args.traces):
                jcts, seconds = run_one(args, policy, load, number)
                name = f"workload-{number}"
                summary["jcts"][name] = jcts
                summary["avgs"][name] = sum(jcts.values()) / len(jcts)
                summary["seconds"][name] = seconds
                print(f"{policy:9} load {load} {name}: avg JCT {summary['avgs'][name]:9.1f} s "
                      f"({len(jcts)} jobs, {seconds:,.0f} CPU-s)", flush=True)
            summary["mean"] = sum(summary["avgs"].values()) / len(summary["avgs"])
            out = args.out / f"{policy}-{load}" / "summary.json"
            out.write_text(json.dumps(summary, indent=2) + "\n")
            line = f"{policy:9} load {load}: mean of average JCTs {summary['mean']:9.1f} s"
            published = args.simulator / "results-jobload" / f"{policy}-{load}" / "summary.json"
            if args.published and published.is_file():
                theirs = json.loads(published.read_text())
                same = [n for n in summary["avgs"] if n in theirs["avgs"]]
                mean = sum(theirs["avgs"][n] for n in same) / len(same)
                line += f"; published {mean:9.1f} s on the same traces ({mean and summary['mean'] / mean - 1:+.2%})"
                pairs = [(jct, theirs["jcts"][n].get(job)) for n in same for job, jct in summary["jcts"][n].items()]
                equal = sum(1 for ours, published_jct in pairs if published_jct is not None and abs(ours - published_jct) < 0.5)
                line += f"; {equal}/{len(pairs)} jobs with the published JCT"
            print(line, flush=True)


if __name__ == "__main__":
    main()
