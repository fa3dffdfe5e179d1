"""Small hand-computed schedules for each policy."""

from __future__ import annotations

from conftest import make_trace

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.run import resolve_run


def schedule(rows, vc_nodes, policy, **cfg):
    result = simulate(make_trace(rows, vc_nodes), SimConfig(policy=policy, **cfg))
    jobs = result.jobs.set_index("job_id")
    return [(jobs.at[f"j{i}", "start_time"], jobs.at[f"j{i}", "end_time"]) for i in range(len(rows))], result


def test_fifo_blocks_behind_a_head_that_does_not_fit():
    # one 8-GPU node; j1 (8 GPUs) must wait for j0, and j2 (1 GPU) must wait behind j1
    rows = [("a", 4, 0, 100), ("a", 8, 1, 50), ("a", 1, 2, 10)]
    times, _ = schedule(rows, {"a": 1}, "fifo")
    assert times == [(0, 100), (100, 150), (150, 160)]


def test_sjf_starts_the_shortest_waiting_job_first():
    rows = [("a", 8, 0, 100), ("a", 8, 1, 50), ("a", 8, 2, 10)]
    times, _ = schedule(rows, {"a": 1}, "sjf")
    assert times == [(0, 100), (110, 160), (100, 110)]


def test_a_completion_frees_gpus_before_an_arrival_of_the_same_second_is_scheduled():
    rows = [("a", 8, 0, 100), ("a", 8, 100, 5)]
    times, result = schedule(rows, {"a": 1}, "fifo")
    assert times == [(0, 100), (100, 105)]
    assert result.jobs["queue"].tolist() == [0, 0]


def test_srtf_preempts_a_longer_job_and_charges_the_checkpoint_overhead():
    rows = [("a", 8, 0, 1000), ("a", 8, 100, 50)]
    times, result = schedule(rows, {"a": 1}, "srtf")
    # j0 runs 100 s, is preempted for j1 (100..150), resumes with 900 + 40 s left
    assert times == [(0, 1090), (100, 150)]
    jobs = result.jobs.set_index("job_id")
    assert jobs.at["j0", "preemptions"] == 1
    assert jobs.at["j0", "queue"] == 50
    assert jobs.at["j0", "busy_time"] == 1000 + 40


def test_srtf_walks_the_quota_past_a_job_that_does_not_fit():
    # 2 nodes; j2 (16 GPUs, shortest) takes the whole quota so j0 is preempted; j1 waits
    rows = [("a", 8, 0, 500), ("a", 4, 0, 400), ("a", 16, 10, 100)]
    times, result = schedule(rows, {"a": 2}, "srtf")
    assert times[2] == (10, 110)
    assert result.jobs.set_index("job_id").at["j0", "preemptions"] == 1
    assert result.jobs.set_index("job_id").at["j1", "preemptions"] == 1


def test_larger_jobs_pay_the_larger_overhead():
    rows = [("a", 16, 0, 1000), ("a", 16, 100, 50)]
    times, _ = schedule(rows, {"a": 2}, "srtf", preempt_overhead_large=60)
    assert times[0] == (0, 1110)


def test_policies_command_lists_every_registered_policy():
    from typer.testing import CliRunner

    from simcluster.cli import app

    result = CliRunner().invoke(app, ["policies", "--json"])
    assert result.exit_code == 0
    assert {"fifo", "sjf", "srtf"} <= set(__import__("json").loads(result.stdout))



def test_jobs_submitted_at_one_instant_arrive_in_trace_order_however_they_are_listed():
    from simcluster.engine import Simulation
    from simcluster.job import Job
    from simcluster.metrics import Observer

    class Arrivals(Observer):
        def __init__(self):
            self.seen = []

        def on_submit(self, job, now):
            self.seen.append((now, job.index))

    def arrivals(order):
        jobs = [Job(index=i, job_id=str(i), vc="ab"[i % 2], gpu_num=8, submit_time=0 if i < 3 else 5, duration=10)
                for i in range(5)]
        watch = Arrivals()
        resolved = resolve_run(config=SimConfig(policy="fifo"), cluster={"a": 1, "b": 1})
        Simulation([jobs[i] for i in order], resolved, [watch]).run()
        return watch.seen

    assert arrivals(range(5)) == arrivals([4, 2, 0, 3, 1]) == [(0, 0), (0, 1), (0, 2), (5, 3), (5, 4)]


def test_an_observer_hook_set_on_the_instance_is_called():
    # A plain Observer with a hook assigned to it (no subclass) must not be skipped as a no-op.
    from simcluster.engine import Simulation
    from simcluster.job import Job
    from simcluster.metrics import Observer

    finished = []
    watch = Observer()
    watch.on_finish = lambda job, now: finished.append((job.job_id, now))  # type: ignore[method-assign]
    jobs = [Job(index=i, job_id=str(i), vc="a", gpu_num=8, submit_time=0, duration=10 * (i + 1)) for i in range(2)]
    Simulation(jobs, resolve_run(config=SimConfig(policy="fifo"), cluster={"a": 2}), [watch]).run()
    assert finished == [("0", 10), ("1", 20)]
