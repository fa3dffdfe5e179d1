"""ElasticFlow's scheduling core (ASPLOS'23 §4): minimum satisfactory shares, admission, spare GPUs.

**Minimum satisfactory share** (:func:`plan_min_share`): the least GPUs with which a job still meets its
deadline, given what earlier-deadline jobs have taken of the future (:class:`~simcluster.elastic.timeline.
Timeline`).  For each GPU level the job may use (its measured power-of-two counts, ascending) the planner
walks back from the deadline, giving the job that level (or the largest level that fits in what is free)
in every period, until the iterations add up; the first level that gets there before *now* is the share.
The job then runs from now at the level below until the point from which the share is needed, then at the
share, and its plan ends when its iterations are done (its GPUs are back in the timeline from then).  A
job that no level can finish in time keeps running at its top level past the deadline (its plan says
``meets_deadline=False``).

**Admission** (:func:`admit`): at an arrival, every admitted job and the newcomers are planned from
scratch in deadline order on an empty cluster; if any plan misses its deadline the newcomers are all
declined (all or nothing per arrival batch) and the admitted jobs keep the plans of before.

**Spare GPUs** (:func:`allocate_spare`): GPUs no plan uses now go one level-step at a time to jobs by
*marginal return* — each candidate is re-planned with one more level now, and the change in its plan's
GPU-seconds per GPU added ranks it; jobs waiting with no GPUs come first.  ElasticFlow's artifact ranks
the largest change first (``largest_first=True``, the default here, to agree with its results).

``slot``: the artifact plans on a grid of scheduling slots (60 s): deadlines and end times are rounded up
to it (``slot=None`` plans in exact time).  Every other rule follows the artifact (``ef_sim_allocation``,
``estimate_all_jobs``, ``allocate_free_gpus``); docs/elastic.md lists where it departs from the paper.

>>> rate = {1: 1.0, 2: 1.8, 4: 3.0}.__getitem__
>>> job = DeadlineJob("a", work=580.0, deadline=300.0, levels=[1, 2, 4], rate=rate)
>>> plan = plan_min_share(job, Timeline({0: 4, 100: 4}), now=0, slot=None)
>>> plan.steps, plan.end, plan.meets_deadline      # 2 GPUs fall short; 4 from t=100 suffice
([(0, 2), (100, 4)], 234, True)
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from simcluster.elastic.timeline import Timeline, gpu_time


@dataclass
class DeadlineJob:
    """A job as the deadline planners see it: iterations left, deadline, GPU levels and speed at each."""

    key: str
    work: float  # iterations left
    deadline: float
    levels: Sequence[int]  # GPU counts it may run on, ascending (measured, at most its cap)
    rate: Callable[[int], float]  # iterations per second on that many GPUs
    gpus: int = 0  # GPUs now
    plan: Plan | None = None  # its plan now


@dataclass
class Plan:
    """GPUs from each step's time on, until ``end`` (rounded up to the slot grid when planning on one);
    ``real_end`` is the exact finish the plan predicts."""

    steps: list[tuple[float, int]]
    end: float
    real_end: float
    meets_deadline: bool
    timeline: Timeline = field(repr=False)  # the free GPUs once this plan is taken

    def gpus_at(self, time: float) -> int:
        return next((g for t, g in reversed(self.steps) if t <= time), 0)

    @property
    def gpu_seconds(self) -> float:
        return gpu_time(self.steps, self.end)


def align(start: float, time: float, slot: float | None) -> float:
    """``time`` rounded up to the slot grid that starts at ``start`` (itself when ``slot`` is None).

    >>> align(100, 161, 60), align(100, 160, 60), align(100, 161, None)
    (220, 160, 161)
    """
    if slot is None:
        return time
    return start + math.ceil((time - start) / slot) * slot


def _fit(levels: Sequence[int], free: int, cap: int) -> int:
    """The largest level at most ``cap`` that fits in ``free`` GPUs (0 if none; ``levels`` ascending)."""
    i = bisect.bisect_right(levels, min(cap, free))
    return levels[i - 1] if i else 0


def merged_steps(steps: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """Consecutive equal counts merged (the first kept)."""
    out: list[tuple[float, int]] = []
    for t, g in steps:
        if not out or out[-1][1] != g:
            out.append((t, g))
    return out


def plan_min_share(job: DeadlineJob, timeline: Timeline, now: float, slot: float | None = 60.0,
                   first: int | None = None) -> Plan:
    """The job's minimum-satisfactory-share plan on ``timeline`` (not changed; the plan carries the new one).
    ``first``: GPUs the job must have from now until the timeline's next breakpoint (a marginal-return
    probe), the rest planned as usual."""
    line = timeline.copy()
    line.drop_before(now)
    later = [t for t in line.times() if t > now] if first is not None else []  # (before the deadline's split)
    deadline = job.deadline
    aligned = align(now, deadline, slot)
    if aligned >= now:
        line.split(aligned)
    left = float(job.work)
    steps: list[tuple[float, int]] = []
    start: float = now
    if first is not None:
        until = later[0] if later else aligned
        real_end: float = math.ceil(now + left / job.rate(first))
        end: float = align(now, real_end, slot)
        if until >= end and deadline >= real_end:
            line.reserve(now, end, first, merge=False)
            return _done([(now, first)], end, real_end, deadline, line)
        left -= ((deadline if until == aligned else until) - now) * job.rate(first)
        line.reserve(now, until, first, merge=False)
        steps.append((now, first))
        start = until

    def span(t: float, t_next: float) -> float:
        return (deadline if t_next == aligned else t_next) - t

    points = [t for t in line.times() if start <= t < aligned]
    top = max(job.levels) if job.levels else 0
    below, share, point = 0, None, None
    for level in job.levels:
        done, period_end = 0.0, float(aligned)
        for t in reversed(points):
            give = _fit(job.levels, line[t], level)
            if give:
                done += span(t, period_end) * job.rate(give)
                if done >= left:
                    share, point = level, t
                    break
            period_end = t
        if share is not None:
            break
        below = level
    if share is not None:
        assert point is not None
        for i, t in enumerate(points):
            t_next = points[i + 1] if i + 1 < len(points) else aligned
            give = _fit(job.levels, line[t], share if t >= point else below)
            steps.append((t, give))
            if not give:
                continue
            made = span(t, t_next) * job.rate(give)
            if t >= point and made >= left:
                real_left = math.ceil(left / job.rate(give))
                end, real_end = t + align(0, real_left, slot), float(t + real_left)
                line.reserve(t, end, give, merge=False)
                return _done(steps, end, real_end, deadline, line)
            left -= made
            line.reserve(t, t_next, give, merge=False)
        give = _fit(job.levels, line.free_at(aligned), share) or share  # (rounding left a sliver past the grid)
        real_left = math.ceil(left / job.rate(give))
        end, real_end = aligned + align(0, real_left, slot), float(aligned + real_left)
        steps.append((aligned, give))
        line.reserve(aligned, end, give, merge=False)
        return _done(steps, end, real_end, deadline, line)
    # no level meets the deadline: the top level (what fits) until the deadline, then whatever fits after it
    for i, t in enumerate(points):
        t_next = points[i + 1] if i + 1 < len(points) else aligned
        give = _fit(job.levels, line[t], top)
        steps.append((t, give))
        left -= span(t, t_next) * job.rate(give) if give else 0.0
        line.reserve(t, t_next, give, merge=False)
    t = max(aligned, start)
    for t_next in [u for u in line.times() if u > t]:
        give = _fit(job.levels, line.free_at(t), top)
        steps.append((t, give))
        if give:
            made = (t_next - t) * job.rate(give)
            if made >= left:
                real_end = math.ceil(t + left / job.rate(give))
                end = align(now, real_end, slot)
                line.reserve(t, end, give, merge=False)
                return _done(steps, end, real_end, deadline, line)
            left -= made
            line.reserve(t, t_next, give, merge=False)
        t = t_next
    give = first if first is not None else top  # (the artifact: past every breakpoint, the probe's count)
    real_end = math.ceil(t + left / job.rate(give))
    end = align(now, real_end, slot)
    steps.append((t, give))
    line.reserve(t, end, give, merge=False)
    return _done(steps, end, real_end, deadline, line)


def _done(steps: list[tuple[float, int]], end: float, real_end: float, deadline: float, line: Timeline) -> Plan:
    line.merge()
    return Plan(merged_steps(steps), end, real_end, real_end <= deadline, line)


def plan_in_order(jobs: Sequence[DeadlineJob], total_gpus: int, now: float, slot: float | None = 60.0
                  ) -> tuple[list[Plan], Timeline, bool]:
    """Every job planned in deadline order (ties: the order given) on an empty cluster of ``total_gpus``:
    their plans (in the order given), the timeline left, and whether all meet their deadlines."""
    line = Timeline({now: total_gpus})
    plans: dict[int, Plan] = {}
    for i in sorted(range(len(jobs)), key=lambda i: jobs[i].deadline):
        plan = plan_min_share(jobs[i], line, now, slot)
        plans[i] = plan
        line = plan.timeline
    ordered = [plans[i] for i in range(len(jobs))]
    return ordered, line, all(p.meets_deadline for p in ordered)


def admit(admitted: Sequence[DeadlineJob], arriving: Sequence[DeadlineJob], total_gpus: int, now: float,
          slot: float | None = 60.0) -> bool:
    """Whether the arriving batch is admitted: all admitted jobs and all arrivals still meet their deadlines
    when planned together (see the module's docstring).  All or nothing."""
    return plan_in_order([*admitted, *arriving], total_gpus, now, slot)[2]


def allocate_spare(jobs: Sequence[DeadlineJob], timeline: Timeline, now: float, slot: float | None = 60.0,
                   largest_first: bool = True) -> Timeline:
    """Hand the GPUs free now on ``timeline`` to ``jobs`` (each with its ``plan`` and ``gpus`` set) by
    marginal return (see the module's docstring); updates the jobs' ``gpus`` and ``plan`` and returns the
    timeline left."""
    spare = timeline.free_at(now)
    line = timeline
    waiting = math.inf if largest_first else -math.inf  # the rank of a job with no GPUs yet: first
    # per job: its rank, whether it may grow, and its probe's plan (None: not planned yet)
    probes: dict[str, tuple[float, bool, Plan | None]] = {}

    def rank(job: DeadlineJob) -> tuple[float, bool, Plan | None]:
        step = _next_level(job)
        if step == job.gpus or step - job.gpus > spare or job.plan is None:
            return -math.inf, False, None
        if job.gpus == 0:  # (its rank needs no plan: planned only if it is chosen)
            return waiting, True, None
        plan = probe(job, step)
        return (plan.gpu_seconds - job.plan.gpu_seconds) / (step - job.gpus), True, plan

    def probe(job: DeadlineJob, step: int) -> Plan:
        assert job.plan is not None
        released = line.copy()
        for (t, g), (t_next, _) in zip(job.plan.steps, [*job.plan.steps[1:], (job.plan.end, 0)], strict=True):
            if t_next > now and g:
                released.reserve(max(t, now), t_next, -g)
        return plan_min_share(job, released, now, slot, first=step)

    order = list(jobs)
    for job in order:
        probes[job.key] = rank(job)
    order.sort(key=lambda j: probes[j.key][0], reverse=largest_first)
    grew = True
    while spare > 0 and grew:
        grew = False
        for job in order:
            step = _next_level(job)
            _, may_grow, plan = probes[job.key]
            if step == job.gpus or step - job.gpus > spare or not may_grow:
                continue
            plan = plan or probe(job, step)
            spare -= step - job.gpus
            job.gpus, job.plan, line = step, plan, plan.timeline
            grew = True
            break
        for job in order:
            if _next_level(job) > job.gpus:
                probes[job.key] = rank(job)
        order.sort(key=lambda j: probes[j.key][0], reverse=largest_first)
    return line


def _next_level(job: DeadlineJob) -> int:
    return next((g for g in job.levels if g > job.gpus), job.gpus)
