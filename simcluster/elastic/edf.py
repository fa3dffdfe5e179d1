"""Earliest-deadline-first for elastic jobs, as ElasticFlow's artifact defines its EDF baseline.

Jobs in deadline order each take as many GPUs as they can use (their cap, at most the cluster) where
that many are free, else the largest measured level that fits, period after period of the free-GPU
timeline (:class:`~simcluster.elastic.timeline.Timeline`), until their iterations are done: greedy and
elastic.  Without admission control every job runs (one that misses its deadline still finishes);
with it (``edf --admission``, the artifact's ``edf-accessctrl``) an arrival batch is declined when
planning it with the admitted jobs would make any of them late.  A job's GPUs *now* are the first step
of its plan, so :func:`edf_allocate` gives them without planning the future.

>>> rate = {1: 1.0, 2: 1.8, 4: 3.0}.__getitem__
>>> jobs = [DeadlineJob("a", 600.0, 500.0, [1, 2, 4], rate), DeadlineJob("b", 100.0, 200.0, [1, 2], rate)]
>>> edf_allocate(jobs, 5)
{'b': 2, 'a': 2}
>>> plan = plan_edf(jobs[0], Timeline({0: 5}), now=0, total_gpus=5, slot=None)
>>> plan.steps, plan.real_end, plan.meets_deadline
([(0, 4)], 200, True)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from simcluster.elastic.elasticflow_plan import DeadlineJob, Plan, align, merged_steps
from simcluster.elastic.timeline import Timeline


def _largest_fitting(levels: Sequence[int], free: int) -> int:
    return max((g for g in levels if g <= free), default=0)


def edf_allocate(jobs: Sequence[DeadlineJob], free_gpus: int) -> dict[str, int]:
    """GPUs now for each job, earliest deadline first (ties: the order given): its top level if that many
    are free, else the largest level that fits (0 when none does)."""
    out: dict[str, int] = {}
    for job in sorted(jobs, key=lambda j: j.deadline):
        top = max(job.levels) if job.levels else 0
        give = top if top <= free_gpus else _largest_fitting(job.levels, free_gpus)
        out[job.key] = give
        free_gpus -= give
    return out


def plan_edf(job: DeadlineJob, timeline: Timeline, now: float, total_gpus: int, slot: float | None = 60.0) -> Plan:
    """The job's greedy plan on ``timeline`` (not changed; the plan carries the new one).  Past the
    timeline's last breakpoint the whole cluster is taken as free.  Its end is rounded up to the slot grid
    where its GPUs go back; ``meets_deadline`` compares the exact end."""
    line = timeline.copy()
    line.drop_before(now)
    top = min(max(job.levels) if job.levels else 0, total_gpus)
    left = job.work
    steps: list[tuple[float, int]] = []
    times = line.times()
    for t, t_next in itertools.pairwise(times):
        free = line[t]
        give = top if free >= top else _largest_fitting(job.levels, free)
        steps.append((t, give))
        if not give:
            continue
        real_end = math.ceil(t + left / job.rate(give))
        if t_next >= real_end:
            line.reserve(t, align(now, real_end, slot), give, merge=False)
            line.merge()
            return Plan(merged_steps(steps), align(now, real_end, slot), real_end, real_end <= job.deadline, line)
        left -= (t_next - t) * job.rate(give)
        line.reserve(t, t_next, give, merge=False)
    t = times[-1]
    real_end = math.ceil(t + left / job.rate(top))
    end = align(now, real_end, slot)
    steps.append((t, top))
    line.set(t, total_gpus - top)
    line.set(end, total_gpus)
    line.merge()
    return Plan(merged_steps(steps), end, real_end, real_end <= job.deadline, line)


def edf_admit(admitted: Sequence[DeadlineJob], arriving: Sequence[DeadlineJob], total_gpus: int, now: float,
              slot: float | None = 60.0) -> bool:
    """Whether an arrival batch is admitted under ``edf --admission``: every job, planned greedily in
    deadline order on an empty cluster, still meets its deadline."""
    line = Timeline({now: total_gpus})
    ok = True
    for job in sorted([*admitted, *arriving], key=lambda j: j.deadline):
        plan = plan_edf(job, line, now, total_gpus, slot)
        ok &= plan.meets_deadline
        line = plan.timeline
    return ok
