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
import heapq
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
    _fits: list[int] = field(default_factory=list, repr=False)  # [f]: its largest level that fits in f GPUs

    def fits(self, frees: list[int]) -> list[int]:
        """Its largest level that fits in each of ``frees`` (0 where none does)."""
        table = self._fits
        need = max(frees, default=0) + 1
        if len(table) < need:
            table.extend(_fit(self.levels, f, f) for f in range(len(table), need))
        return [table[f] for f in frees]


@dataclass
class Plan:
    """GPUs from each step's time on, until ``end`` (rounded up to the slot grid when planning on one);
    ``real_end`` is the exact finish the plan predicts."""

    steps: list[tuple[float, int]]
    end: float
    real_end: float
    meets_deadline: bool
    line: Timeline = field(repr=False)  # the free GPUs once this plan is taken (see ``timeline``)
    merged: bool = field(default=True, repr=False)  # whether ``line`` has its equal neighbours merged yet

    @property
    def timeline(self) -> Timeline:
        """The free GPUs once this plan is taken (merged on first use: most probes' plans are only ranked)."""
        if not self.merged:
            self.line.merge()
            self.merged = True
        return self.line

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
    return _plan_on(job, timeline.copy(), now, slot, first)


def _plan_on(job: DeadlineJob, line: Timeline, now: float, slot: float | None, first: int | None) -> Plan:
    """:func:`plan_min_share` on ``line``, which becomes the plan's timeline (the caller's own copy)."""
    line.drop_before(now)
    after_now = line.next_after(now) if first is not None else None  # (before the deadline's split)
    deadline = job.deadline
    aligned = align(now, deadline, slot)
    if aligned >= now:
        line.split(aligned)
    left = float(job.work)
    steps: list[tuple[float, int]] = []
    start: float = now
    rate, levels = job.rate, job.levels
    if first is not None:
        until = aligned if after_now is None else after_now
        real_end: float = math.ceil(now + left / rate(first))
        end: float = align(now, real_end, slot)
        if until >= end and deadline >= real_end:
            line.reserve(now, end, first, merge=False)
            return _done([(now, first)], end, real_end, deadline, line)
        left -= ((deadline if until == aligned else until) - now) * rate(first)
        line.reserve(now, until, first, merge=False)
        steps.append((now, first))
        start = until

    points = line.between(start, aligned)
    ends = [*points[1:], aligned] if points else []  # (none: the deadline is behind where planning starts)
    spans = [(deadline if t_next == aligned else t_next) - t for t, t_next in zip(points, ends, strict=True)]
    # the largest level that fits in each period's free GPUs (a level's share there is the smaller of the two),
    # and what that many GPUs make over the period
    fits = job.fits(line.free_list(points))
    made_at_fit = [spans[i] * rate(f) if f else 0.0 for i, f in enumerate(fits)]
    top = max(levels) if levels else 0
    below, share, point = 0, None, None
    for level in levels:
        done, level_rate = 0.0, rate(level)
        for i in range(len(points) - 1, -1, -1):
            fit = fits[i]
            if fit >= level:
                done += spans[i] * level_rate
            elif fit:
                done += made_at_fit[i]
            else:
                continue
            if done >= left:
                share, point = level, points[i]
                break
        if share is not None:
            break
        below = level
    if share is not None:
        assert point is not None
        for i, t in enumerate(points):
            cap = share if t >= point else below
            give = min(cap, fits[i])
            steps.append((t, give))
            if not give:
                continue
            made = spans[i] * rate(give)
            if t >= point and made >= left:
                real_left = math.ceil(left / rate(give))
                end, real_end = t + align(0, real_left, slot), float(t + real_left)
                line.reserve(t, end, give, merge=False)
                return _done(steps, end, real_end, deadline, line)
            left -= made
            line.take(t, give)
        give = _fit(levels, line.free_at(aligned), share) or share  # (rounding left a sliver past the grid)
        real_left = math.ceil(left / rate(give))
        end, real_end = aligned + align(0, real_left, slot), float(aligned + real_left)
        steps.append((aligned, give))
        line.reserve(aligned, end, give, merge=False)
        return _done(steps, end, real_end, deadline, line)
    # no level meets the deadline: the top level (what fits) until the deadline, then whatever fits after it
    for i, t in enumerate(points):
        give = min(top, fits[i])
        steps.append((t, give))
        left -= spans[i] * rate(give) if give else 0.0
        line.take(t, give)
    t = max(aligned, start)
    for t_next in line.between(math.nextafter(t, math.inf), math.inf):
        give = _fit(levels, line.free_at(t), top)
        steps.append((t, give))
        if give:
            made = (t_next - t) * rate(give)
            if made >= left:
                real_end = math.ceil(t + left / rate(give))
                end = align(now, real_end, slot)
                line.reserve(t, end, give, merge=False)
                return _done(steps, end, real_end, deadline, line)
            left -= made
            line.reserve(t, t_next, give, merge=False)
        t = t_next
    give = first if first is not None else top  # (the artifact: past every breakpoint, the probe's count)
    real_end = math.ceil(t + left / rate(give))
    end = align(now, real_end, slot)
    steps.append((t, give))
    line.reserve(t, end, give, merge=False)
    return _done(steps, end, real_end, deadline, line)


def _done(steps: list[tuple[float, int]], end: float, real_end: float, deadline: float, line: Timeline) -> Plan:
    return Plan(merged_steps(steps), end, real_end, real_end <= deadline, line, merged=False)


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
                   largest_first: bool = True, rerank: str = "lazy") -> Timeline:
    """Hand the GPUs free now on ``timeline`` to ``jobs`` (each with its ``plan`` and ``gpus`` set) by
    marginal return (see the module's docstring); updates the jobs' ``gpus`` and ``plan`` and returns the
    timeline left.

    Each step-up changes the timeline and so, a little, every other job's marginal return.  ``rerank``:
    ``"all"`` re-plans every job that may grow after each step-up, as the artifact does (a step-up costs a
    plan per job); ``"lazy"`` re-plans only the job about to be chosen and takes it if its fresh rank still
    leads, else puts it back in the queue (a step-up costs a plan or two).  They choose alike while ranks
    only fall as the cluster fills; where a rank rises they may differ.
    """
    handout = _Handout(timeline, now, slot, largest_first)
    if rerank == "all":
        handout.rerank_all(list(jobs))
    elif rerank == "lazy":
        handout.rerank_lazily(list(jobs))
    else:
        raise ValueError(f"rerank must be 'all' or 'lazy', not {rerank!r}")
    return handout.line


class _Handout:
    """One hand-out of spare GPUs: the timeline as it fills, the GPUs still free now, and how jobs rank."""

    def __init__(self, timeline: Timeline, now: float, slot: float | None, largest_first: bool) -> None:
        self.line, self.now, self.slot, self.largest_first = timeline, now, slot, largest_first
        self.spare = timeline.free_at(now)
        self.waiting = math.inf if largest_first else -math.inf  # the rank of a job with no GPUs yet: first

    def may_grow(self, job: DeadlineJob) -> bool:
        step = _next_level(job)
        return step != job.gpus and step - job.gpus <= self.spare and job.plan is not None

    def rank(self, job: DeadlineJob) -> tuple[float, Plan | None]:
        """The job's marginal return on the timeline now, and its probe's plan (None: not planned, as a job
        with no GPUs ranks first without one); call only where it may grow."""
        assert job.plan is not None
        if job.gpus == 0:
            return self.waiting, None
        step = _next_level(job)
        plan = self.probe(job, step)
        return (plan.gpu_seconds - job.plan.gpu_seconds) / (step - job.gpus), plan

    def probe(self, job: DeadlineJob, step: int) -> Plan:
        """The job re-planned with ``step`` GPUs from now, on the timeline without its own plan."""
        assert job.plan is not None
        released = self.line.copy()
        for (t, g), (t_next, _) in zip(job.plan.steps, [*job.plan.steps[1:], (job.plan.end, 0)], strict=True):
            if t_next > self.now and g:
                released.reserve(max(t, self.now), t_next, -g, merge=False)
        released.merge()
        return _plan_on(job, released, self.now, self.slot, first=step)

    def grow(self, job: DeadlineJob, plan: Plan | None) -> None:
        step = _next_level(job)
        plan = plan or self.probe(job, step)
        self.spare -= step - job.gpus
        job.gpus, job.plan, self.line = step, plan, plan.timeline

    def rerank_all(self, order: list[DeadlineJob]) -> None:
        """The artifact's loop: after each step-up every job that may grow is ranked again."""
        probes = {job.key: self.rank(job) if self.may_grow(job) else (-math.inf, None) for job in order}
        order.sort(key=lambda j: probes[j.key][0], reverse=self.largest_first)
        grew = True
        while self.spare > 0 and grew:
            grew = False
            for job in order:
                if self.may_grow(job):
                    self.grow(job, probes[job.key][1])
                    grew = True
                    break
            for job in order:
                if _next_level(job) > job.gpus:
                    probes[job.key] = self.rank(job) if self.may_grow(job) else (-math.inf, None)
            order.sort(key=lambda j: probes[j.key][0], reverse=self.largest_first)

    def rerank_lazily(self, jobs: list[DeadlineJob]) -> None:
        """A queue by rank, each rank as of the timeline it was computed on: the head is ranked again on the
        timeline now (where that changed) and grows if it still leads, else goes back with its fresh rank."""
        sign = -1.0 if self.largest_first else 1.0
        version = 0  # step-ups so far: a rank computed at an older version may be stale
        heap: list[tuple[float, int, int, Plan | None]] = []
        for i, job in enumerate(jobs):
            if self.may_grow(job):
                value, plan = self.rank(job)
                heapq.heappush(heap, (sign * value, i, version, plan))
        while self.spare > 0 and heap:
            _, i, seen, plan = heapq.heappop(heap)
            job = jobs[i]
            if not self.may_grow(job):
                continue  # (spare GPUs only shrink: it will not fit later either)
            if seen != version and job.gpus:
                value, plan = self.rank(job)
                if heap and (sign * value, i) > heap[0][:2]:
                    heapq.heappush(heap, (sign * value, i, version, plan))
                    continue
            self.grow(job, plan)
            version += 1
            if self.may_grow(job):
                value, plan = self.rank(job)
                heapq.heappush(heap, (sign * value, i, version, plan))


def _next_level(job: DeadlineJob) -> int:
    return next((g for g in job.levels if g > job.gpus), job.gpus)
