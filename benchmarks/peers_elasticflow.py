"""Run ElasticFlow's own simulator (pkusys/ElasticFlow, folder ElasticFlow/scheduler/) on the shared ITP
traces with deadlines and keep each job's result, for the differential comparison of issue 31.

    python benchmarks/peers_elasticflow.py --scheduler /work/peers/ElasticFlow/ElasticFlow/scheduler \\
        --python /work/peers/venv-elasticflow/bin/python --out /work/peers/out/elasticflow \\
        --schedules edf,dlas-gpu,ef-accessctrl --clusters 01,03,05 --timeout 3600

One run is the artifact's own command line (its ``run_fig8b.sh``): ``scheduler.py --cluster_spec=
cluster_specs/n64g8.csv --scheme=elastic --trace_file=TRACE --schedule=S --simulation=True
--scheduling_slot=60 --gpu_type=A100`` (``n128g8`` for cluster04, as in the paper), one at a time.  Its
``job.csv`` (one row per job: end time, deadline, JCT) and ``final_result.csv`` (the deadline
satisfaction ratio it reports) are copied to ``OUT/S_clusterNN/``, with ``seconds`` (CPU-s of the run).
A run that is already there is not run again; one that passes ``--timeout`` is recorded as such.  The
script needs none of the peer's code to import: it only runs it.  docs/elastic.md says how the
interpreter was built.
"""

from __future__ import annotations

import argparse
import csv
import resource
import shutil
import subprocess
import tempfile
from pathlib import Path

DEFAULT_TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "elasticflow" / "traces"
NODES = {"04": 128}  # the paper's cluster sizes: 128 nodes of 8 GPUs for cluster04, 64 for the others


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def satisfaction(job_csv: Path) -> tuple[int, int]:
    """(jobs that ended by their deadline, jobs) from the simulator's job.csv."""
    with job_csv.open() as handle:
        rows = list(csv.DictReader(handle))
    met = sum(1 for row in rows if float(row["end_time"]) <= float(row["ddl"]))
    return met, len(rows)


def run_one(args: argparse.Namespace, schedule: str, cluster: str) -> str:
    out = args.out / f"{schedule}_cluster{cluster}"
    if (out / "final_result.csv").is_file():
        return (out / "final_result.csv").read_text().splitlines()[-1].split(",")[1]
    if (out / "timed_out").is_file():
        return "timed out"
    out.mkdir(parents=True, exist_ok=True)
    spec = f"cluster_specs/n{NODES.get(cluster, 64)}g8.csv"
    scheme = "gandiva" if schedule == "gandiva" else "elastic"
    with tempfile.TemporaryDirectory() as logs:
        command = [args.python, "scheduler.py", f"--cluster_spec={spec}", "--print", f"--scheme={scheme}",
                   f"--trace_file={args.traces / f'cluster{cluster}.csv'}", f"--schedule={schedule}",
                   f"--log_path={logs}", "--simulation=True", f"--scheduling_slot={args.slot}", "--gpu_type=A100"]
        before = children_cpu()
        with (out / "stdout.txt").open("w") as stdout:
            try:
                subprocess.run(command, cwd=args.scheduler, stdout=stdout, stderr=subprocess.STDOUT, check=True,
                               timeout=args.timeout)
            except subprocess.TimeoutExpired:
                (out / "timed_out").write_text(f"{args.timeout} s\n")
                return "timed out"
        (out / "seconds").write_text(f"{children_cpu() - before:.1f}\n")
        for name in ("job.csv", "final_result.csv"):
            shutil.copy(Path(logs) / name, out / name)
    return (out / "final_result.csv").read_text().splitlines()[-1].split(",")[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scheduler", type=Path, required=True, help="the checkout's ElasticFlow/scheduler/ folder")
    parser.add_argument("--python", required=True, help="the interpreter its requirements are installed in")
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="elasticflow/traces of the shared data")
    parser.add_argument("--out", type=Path, required=True, help="where results go (outside the repo)")
    parser.add_argument("--schedules", default="edf,dlas-gpu,ef-accessctrl")
    parser.add_argument("--clusters", default="01,02,03,04,05")
    parser.add_argument("--slot", type=int, default=60, help="--scheduling_slot (the paper's 60 s)")
    parser.add_argument("--timeout", type=float, default=None, help="give up on a run after this many seconds")
    args = parser.parse_args()
    args.traces = args.traces.resolve()
    for cluster in args.clusters.split(","):
        for schedule in args.schedules.split(","):
            ratio = run_one(args, schedule, cluster)
            line = f"{schedule:14} cluster{cluster}: reported deadline satisfaction {ratio}"
            job_csv = args.out / f"{schedule}_cluster{cluster}" / "job.csv"
            if job_csv.is_file():
                met, jobs = satisfaction(job_csv)
                cpu = (job_csv.parent / "seconds").read_text().strip()
                line += f"; ended by deadline {met}/{jobs} = {met / jobs:.4f}; {cpu} CPU-s"
            print(line, flush=True)


if __name__ == "__main__":
    main()
