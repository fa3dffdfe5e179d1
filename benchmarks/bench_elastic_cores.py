"""CPU time of the elastic policies' cores on realistic inputs, before any engine drives them.

    python benchmarks/bench_elastic_cores.py

* Pollux: one scheduling pass over the jobs of ``pollux/workloads/1.0/workload-6.csv`` active at once
  (``--active``, default 40, each with a learned model fitted to three observed configurations), on the
  paper's 16 × 4 cluster: the jobs' speedup functions, then :func:`optimize_allocation`.  The issue's
  target is a whole 160-job run in 30 CPU-s: about 50 ms per 60-s interval over its ~600 intervals.
* ElasticFlow: planning the jobs of ``elasticflow/traces/cluster04.csv`` submitted last before its middle
  (``--ef-active``: 300 and 20) in deadline order on 1,024 GPUs (admission), then handing out the spare
  GPUs (with 300 jobs there are none left to hand out).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from simcluster.elastic.elasticflow_model import load_elasticflow_throughputs
from simcluster.elastic.elasticflow_plan import DeadlineJob, allocate_spare, plan_in_order
from simcluster.elastic.pollux_alloc import AllocJob, optimize_allocation, restart_factor
from simcluster.elastic.pollux_apps import load_pollux_apps
from simcluster.elastic.pollux_job import PolluxJobModel
from simcluster.paths import shared_data_dir
from simcluster.traces import load_trace


def pollux_pass(active: int, repeats: int) -> None:
    data = shared_data_dir() / "pollux"
    apps = load_pollux_apps(data / "apps")
    trace = load_trace(data / "workloads" / "1.0" / "workload-6.csv")
    rows = trace.frame.head(active)
    models = []
    for app_name in rows["application"]:
        app = apps[app_name]
        model = PolluxJobModel(app, fixed_batch=32768 if app_name == "ncf" else None,
                               replica_cap=1 if app_name == "ncf" else None)
        for layout in ((1,), (2,), (4,)):
            if sum(layout) > model.max_replicas():
                break
            atomic, _ = model.choose_batch(layout)
            step, sync = app.step_times(layout, atomic)
            model.observe(layout, atomic, step, sync, *app.grad_stats(app.init_batch_size, 0))
        models.append(model)
    nodes = [4] * 16
    fair = (1, int(np.ceil(64 / active)))
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        jobs = [AllocJob(str(i), m.speedup_fn(fair, gpus_per_node=4), m.max_replicas(), 0, restart_factor(600, 1))
                for i, m in enumerate(models)]
        rows_out = optimize_allocation(jobs, nodes)
        times.append(time.process_time() - t0)
    print(f"pollux: {active} active jobs on 16 × 4 GPUs: {np.median(times) * 1000:.1f} ms CPU per scheduling pass "
          f"(median of {repeats}); {sum(map(sum, rows_out))} GPUs given")


def elasticflow_pass(active: int, repeats: int) -> None:
    data = shared_data_dir() / "elasticflow"
    curves = load_elasticflow_throughputs(data / "throughputs_A100")
    frame = load_trace(data / "traces" / "cluster04.csv").frame
    now = float(frame["submit_time"].iloc[len(frame) // 2])
    window = frame[frame["submit_time"] <= now].tail(active)
    def rate_of(model: str, batch: int) -> Callable[[int], float]:
        return lambda gpus: curves.rate(model, batch, gpus)

    jobs = []
    for r in window.itertuples():
        model, batch = str(r.model_name), int(r.batch_size)
        levels = curves.levels(model, batch, curves.max_gpus(model, batch, "elasticflow"))
        jobs.append(DeadlineJob(str(r.job_id), float(r.num_iteration), max(float(r.deadline), now + 60), levels,
                                rate_of(model, batch)))
    times, spare = [], []
    for _ in range(repeats):
        t0 = time.process_time()
        plans, line, ok = plan_in_order(jobs, 1024, now, 60)
        times.append(time.process_time() - t0)
        for job, plan in zip(jobs, plans, strict=True):
            job.plan, job.gpus = plan, plan.gpus_at(now)
        t1 = time.process_time()
        allocate_spare(jobs, line, now, 60)
        spare.append(time.process_time() - t1)
    print(f"elasticflow: {active} active jobs on 1,024 GPUs: planning {np.median(times) * 1000:.0f} ms CPU, spare "
          f"GPUs {np.median(spare) * 1000:.0f} ms CPU (median of {repeats}); all deadlines met: {ok}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--active", type=int, default=40)
    parser.add_argument("--ef-active", default="300,20")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    pollux_pass(args.active, args.repeats)
    for active in args.ef_active.split(","):
        elasticflow_pass(int(active), args.repeats)


if __name__ == "__main__":
    main()
