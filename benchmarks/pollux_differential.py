"""Pollux's policies here against Pollux's own simulator, job by job, on the shared workloads (issue 31).

    python benchmarks/pollux_differential.py --results /work/peers/adaptdl/simulator \\
        --policies tiresias-pollux,optimus,pollux --loads 1.0,0.5,1.5,2.0 --traces 1-8

Each run is ``lucid-sim run --preset pollux-artifact --policy P`` on ``pollux/workloads/<load>/workload-N.csv``;
its per-job JCTs are compared with the artifact's in ``<results>/results-jobload/<policy>-<load>/summary.json``
(the authors' published runs; ``--results`` may also name a folder of our runs of the artifact in the same
layout, e.g. benchmarks/peers_pollux.py's ``--out``).  Printed per (policy, load): jobs with equal JCTs, each
trace's average JCT here and there, and the mean of the average JCTs with its difference; then the CPU
seconds of each simulation.  ``--first-divergence`` names, for a trace that differs, the first job whose
JCT differs (in submission order).  ``--json FILE`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from peers_pollux import trace_numbers  # (this folder: run as python benchmarks/pollux_differential.py)

from simcluster.api import load_trace, simulate
from simcluster.paths import shared_data_dir
from simcluster.presets import resolve_config

ARTIFACT_NAMES = {"tiresias-pollux": "tiresias", "optimus": "optimus", "pollux": "pollux"}


def published(results: Path, policy: str, load: str) -> dict[str, dict[str, float]] | None:
    """workload name → job → JCT, from the artifact's summary.json (None when there is none)."""
    for folder in (results / "results-jobload" / f"{ARTIFACT_NAMES[policy]}-{load}",
                   results / f"{ARTIFACT_NAMES[policy]}-{load}"):
        path = folder / "summary.json"
        if path.is_file():
            return json.loads(path.read_text())["jcts"]
    return None


def run(policy: str, load: str, number: int, workloads: Path) -> tuple[dict[str, float], float, dict[str, Any]]:
    trace = load_trace(workloads / load / f"workload-{number}.csv")
    config = resolve_config("pollux-artifact", overrides={"policy": policy})
    t0 = time.process_time()
    result = simulate(trace, config)
    cpu = time.process_time() - t0
    jobs = result.jobs
    return dict(zip(jobs["job_id"].astype(str), jobs["jct"].astype(float), strict=True)), cpu, result.summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, required=True, help="the artifact's simulator/ folder, or runs of it")
    parser.add_argument("--workloads", type=Path, default=shared_data_dir() / "pollux" / "workloads")
    parser.add_argument("--policies", default="tiresias-pollux,optimus,pollux")
    parser.add_argument("--loads", default="1.0")
    parser.add_argument("--traces", default="1-8")
    parser.add_argument("--first-divergence", action="store_true")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    for policy in args.policies.split(","):
        for load in args.loads.split(","):
            theirs_all = published(args.results, policy, load)
            if theirs_all is None:
                print(f"{policy:16s} load {load}: no results of the artifact under {args.results}")
                continue
            ours_avgs, theirs_avgs, equal, total, cpus = [], [], 0, 0, []
            for number in trace_numbers(args.traces):
                name = f"workload-{number}"
                if name not in theirs_all:
                    continue
                ours, cpu, _ = run(policy, load, number, args.workloads)
                theirs = theirs_all[name]
                same = sum(1 for job, jct in theirs.items() if abs(ours.get(job, float("nan")) - jct) < 1e-6)
                equal, total = equal + same, total + len(theirs)
                ours_avg, theirs_avg = sum(ours.values()) / len(ours), sum(theirs.values()) / len(theirs)
                ours_avgs.append(ours_avg)
                theirs_avgs.append(theirs_avg)
                cpus.append(cpu)
                line = (f"{policy:16s} load {load} {name}: avg JCT {ours_avg:9.1f} s here, {theirs_avg:9.1f} s there "
                        f"({100 * (ours_avg / theirs_avg - 1):+.2f} %), {same}/{len(theirs)} jobs equal, {cpu:.1f} CPU-s")
                if args.first_divergence and same < len(theirs):
                    first = next(job for job in theirs if abs(ours.get(job, float("nan")) - theirs[job]) >= 1e-6)
                    line += f"; first differing job {first} ({ours.get(first)} here, {theirs[first]} there)"
                print(line, flush=True)
                figures[f"{policy}/{load}/{name}"] = {"ours": ours_avg, "theirs": theirs_avg, "equal_jobs": same,
                                                      "jobs": len(theirs), "cpu_seconds": cpu}
            if ours_avgs:
                mean_ours, mean_theirs = sum(ours_avgs) / len(ours_avgs), sum(theirs_avgs) / len(theirs_avgs)
                print(f"{policy:16s} load {load}: mean of average JCTs {mean_ours:9.1f} s here, {mean_theirs:9.1f} s "
                      f"there ({100 * (mean_ours / mean_theirs - 1):+.2f} %); {equal}/{total} jobs equal; CPU-s per "
                      f"trace {min(cpus):.1f}–{max(cpus):.1f}", flush=True)
                figures[f"{policy}/{load}"] = {"ours": mean_ours, "theirs": mean_theirs, "equal_jobs": equal,
                                               "jobs": total, "cpu_seconds": cpus}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
