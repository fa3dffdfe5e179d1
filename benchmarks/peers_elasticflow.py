"""Run ElasticFlow's own simulator (pkusys/ElasticFlow, folder ElasticFlow/scheduler/) on traces with deadlines and
keep each job's result, for the differential comparisons of issues 31 and 45.

    python benchmarks/peers_elasticflow.py --scheduler /tmp/ef/ElasticFlow/scheduler \\
        --python /tmp/venv-ef/bin/python --out /tmp/efout \\
        --schedules edf,dlas-gpu,ef-accessctrl --clusters 01,03,05 --timeout 3600
    python benchmarks/peers_elasticflow.py ... --trace /tmp/ef/ElasticFlow/traces_for_ElasticFlow/philly_103959.csv \\
        --spec n32g8 --schedules ef-accessctrl

One run is the artifact's own command line (its ``run_fig8b.sh``): ``scheduler.py --cluster_spec=
cluster_specs/n64g8.csv --scheme=elastic --trace_file=TRACE --schedule=S --simulation=True
--scheduling_slot=60 --gpu_type=A100`` (``n128g8`` for cluster04, as in the paper; ``--trace`` runs any other
trace, named by its file's stem, on ``--spec`` and ``--gpu-type``), one at a time.  Its ``job.csv`` (one row per
completed job: end time, deadline, JCT) and ``final_result.csv`` (the deadline satisfaction ratio it reports)
are copied to ``OUT/S_NAME/`` (``NAME`` = ``clusterNN`` or the trace's stem), with ``seconds`` (CPU-s of the run)
and ``decisions.csv``: the simulator is started through a small runner (written to a temporary folder, run by
the peer's interpreter) that records, without changing what the simulator does, every job it declines (at
admission, or at its end when late, with the status it had), every job it completes (start, exact and logged
end, deadline) and, at each round of its elastic policies, each runnable job's GPUs and iterations left.  A run that is already there is not run again; one that passes ``--timeout`` is recorded as
such.  This script imports none of the peer's code; docs/elastic.md says how the interpreter was built.
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

# Run in the peer's interpreter, from its scheduler/ folder: wraps two of its methods to record each job's fate
RUNNER = '''
import atexit, csv, runpy, sys
sys.path.insert(0, ".")
out_path, sys.argv = sys.argv[1], ["scheduler.py", *sys.argv[2:]]
import utils  # (first, as scheduler.py imports it: its modules import each other)
import jobs, log
rows = []
declined, completed = jobs._TFJobs.move_to_declined, log._Log.job_complete
def move_to_declined(self, job, *args, **kwargs):
    rows.append(["declined", job["job_idx"], job["job_id"], job.get("status"), "", job.get("real_end_time", ""),
                 job.get("end_time", ""), job.get("ddl")])
    return declined(self, job, *args, **kwargs)
def job_complete(self, job, event_time):
    rows.append(["completed", job["job_idx"], job["job_id"], event_time, job.get("start_time"),
                 job.get("real_end_time", job.get("end_time")), job.get("end_time"), job.get("ddl")])
    return completed(self, job, event_time)
jobs._TFJobs.move_to_declined, log._Log.job_complete = move_to_declined, job_complete
if hasattr(log._Log, "scheduling_result"):
    placed = log._Log.scheduling_result
    def scheduling_result(self, event_time):
        for job in jobs.JOBS.runnable_jobs:
            rows.append(["round", job["job_idx"], job["job_id"], event_time, job.get("num_gpu"), job.get("iter_left"),
                         job.get("end_time"), job.get("ddl")])
        return placed(self, event_time)
    log._Log.scheduling_result = scheduling_result
def dump():
    with open(out_path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["event", "job_idx", "job_id", "info", "start_time", "real_end_time", "end_time", "ddl"])
        out.writerows(rows)
atexit.register(dump)
runpy.run_path("scheduler.py", run_name="__main__")
'''


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def satisfaction(job_csv: Path) -> tuple[int, int]:
    """(jobs that ended by their deadline, jobs) from the simulator's job.csv."""
    with job_csv.open() as handle:
        rows = list(csv.DictReader(handle))
    met = sum(1 for row in rows if float(row["end_time"]) <= float(row["ddl"]))
    return met, len(rows)


def run_one(args: argparse.Namespace, schedule: str, name: str, trace: Path, spec: str) -> str:
    out = args.out / f"{schedule}_{name}"
    if (out / "final_result.csv").is_file():
        return (out / "final_result.csv").read_text().splitlines()[-1].split(",")[1]
    if (out / "timed_out").is_file():
        return "timed out"
    out.mkdir(parents=True, exist_ok=True)
    scheme = "gandiva" if schedule == "gandiva" else "elastic"
    with tempfile.TemporaryDirectory() as logs:
        runner = Path(logs) / "record_run.py"
        runner.write_text(RUNNER)
        command = [args.python, str(runner), str(out / "decisions.csv"), f"--cluster_spec=cluster_specs/{spec}.csv",
                   "--print", f"--scheme={scheme}", f"--trace_file={trace}", f"--schedule={schedule}",
                   f"--log_path={logs}", "--simulation=True", f"--scheduling_slot={args.slot}",
                   f"--gpu_type={args.gpu_type}"]
        before = children_cpu()
        with (out / "stdout.txt").open("w") as stdout:
            try:
                subprocess.run(command, cwd=args.scheduler, stdout=stdout, stderr=subprocess.STDOUT, check=True,
                               timeout=args.timeout)
            except subprocess.TimeoutExpired:
                (out / "timed_out").write_text(f"{args.timeout} s\n")
                return "timed out"
        (out / "seconds").write_text(f"{children_cpu() - before:.1f}\n")
        for file in ("job.csv", "final_result.csv"):
            shutil.copy(Path(logs) / file, out / file)
    return (out / "final_result.csv").read_text().splitlines()[-1].split(",")[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scheduler", type=Path, required=True, help="the checkout's ElasticFlow/scheduler/ folder")
    parser.add_argument("--python", required=True, help="the interpreter its requirements are installed in")
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="elasticflow/traces of the shared data")
    parser.add_argument("--trace", type=Path, action="append", default=[],
                        help="another trace to run (instead of --clusters), named by its file's stem; repeatable")
    parser.add_argument("--spec", default="n64g8", help="the cluster spec for --trace (cluster_specs/SPEC.csv)")
    parser.add_argument("--gpu-type", default="A100", help="--gpu_type (A100, or T4 for elasticVpollux_e)")
    parser.add_argument("--out", type=Path, required=True, help="where results go (outside the repo)")
    parser.add_argument("--schedules", default="edf,dlas-gpu,ef-accessctrl")
    parser.add_argument("--clusters", default="01,02,03,04,05")
    parser.add_argument("--slot", type=int, default=60, help="--scheduling_slot (the paper's 60 s)")
    parser.add_argument("--timeout", type=float, default=None, help="give up on a run after this many seconds")
    args = parser.parse_args()
    args.traces = args.traces.resolve()
    runs = [(p.stem, p.resolve(), args.spec) for p in args.trace] or [
        (f"cluster{c}", args.traces / f"cluster{c}.csv", f"n{NODES.get(c, 64)}g8") for c in args.clusters.split(",")]
    for name, trace, spec in runs:
        for schedule in args.schedules.split(","):
            ratio = run_one(args, schedule, name, trace, spec)
            line = f"{schedule:14} {name}: reported deadline satisfaction {ratio}"
            job_csv = args.out / f"{schedule}_{name}" / "job.csv"
            if job_csv.is_file():
                met, jobs = satisfaction(job_csv)
                cpu = (job_csv.parent / "seconds").read_text().strip()
                line += f"; ended by deadline {met}/{jobs} = {met / jobs:.4f}; {cpu} CPU-s"
            print(line, flush=True)


if __name__ == "__main__":
    main()
