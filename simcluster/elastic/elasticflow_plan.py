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
import itertools
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
        try:
            return [table[f] for f in frees]
        except IndexError:  # (first asked about this many free GPUs)
            table = self._fits = [0] * (max(frees) + 1)
            for level in self.levels:  # (ascending: each level from its count on, until the next one)
                table[level:] = [level] * (len(table) - level)
            return [table[f] for f in frees]


@dataclass
class Changes:
    """GPUs a plan takes from a timeline: ``gpus[i]`` from breakpoint ``times[i]`` to the next, and each
    reservation's GPUs over its [start, end)."""

    times: list[float] = field(default_factory=list)
    gpus: list[int] = field(default_factory=list)
    reservations: list[tuple[float, float, int]] = field(default_factory=list)
    own_line: bool = True  # the timeline is the plan's own to change (else a copy is changed)

    def applied_to(self, line: Timeline) -> Timeline:
        changed = line if self.own_line else line.copy()
        changed.take_each(self.times, self.gpus)
        for start, end, gpus in self.reservations:
            changed.reserve(start, end, gpus, merge=False)
        return changed


@dataclass
class Plan:
    """GPUs from each step's time on, until ``end`` (rounded up to the slot grid when planning on one);
    ``real_end`` is the exact finish the plan predicts."""

    steps: list[tuple[float, int]]
    end: float
    real_end: float
    meets_deadline: bool
    line: Timeline = field(repr=False)  # the free GPUs once this plan is taken, or before (see ``changes``)
    # ``line`` not merged yet (None: merged): up to this time; past it, it was merged and has not changed since
    merge_until: float | None = field(default=None, repr=False)
    changes: Changes | None = field(default=None, repr=False)  # what taking the plan does to ``line``, if not done
    # the artifact's allocation table also holds a 0 at the first breakpoint after the period the plan ends in (if
    # that comes before the deadline's grid point): its GPU-seconds then count the last count until there
    tail: float | None = field(default=None, repr=False)
    _gpu_seconds: float | None = field(default=None, repr=False)

    @property
    def timeline(self) -> Timeline:
        """The free GPUs once this plan is taken, made and merged on first use (most probes' plans are only
        ranked)."""
        if self.changes is not None:
            self.line = self.changes.applied_to(self.line)
            self.changes = None
        if self.merge_until is not None:
            self.line.merge(self.merge_until)
            self.merge_until = None
        return self.line

    def gpus_at(self, time: float) -> int:
        return next((g for t, g in reversed(self.steps) if t <= time), 0)

    @property
    def gpu_seconds(self) -> float:
        if self._gpu_seconds is None:  # (kept: every probe's is compared with its job's)
            self._gpu_seconds = gpu_time(self.steps, self.end)
        return self._gpu_seconds

    @property
    def artifact_gpu_seconds(self) -> float:
        """The GPU-seconds as the artifact counts them (``utils.get_allocation_time`` over its allocation table,
        whose trailing 0 at ``tail`` makes the last count run on to there)."""
        if self.tail is None or self.tail <= self.end or not self.steps:
            return self.gpu_seconds
        return self.gpu_seconds + self.steps[-1][1] * (self.tail - self.end)


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
    last = None
    for step in steps:
        if step[1] != last:
            out.append(step)
            last = step[1]
    return out


def plan_min_share(job: DeadlineJob, timeline: Timeline, now: float, slot: float | None = 60.0,
                   first: int | None = None) -> Plan:
    """The job's minimum-satisfactory-share plan on ``timeline`` (not changed; the plan carries the new one).
    ``first``: GPUs the job must have from now until the timeline's next breakpoint (a marginal-return
    probe), the rest planned as usual."""
    plan = _plan_on(job, timeline.copy(), now, slot, first)
    plan.merge_until = math.inf  # (the caller's timeline may hold breakpoints that change nothing anywhere)
    return plan


class _Walk:
    """What every probe of one job on one timeline shares: the breakpoint after now (before the deadline got
    one), the periods planned over (breakpoints, spans, the job's largest level fitting in each, what that
    makes there) and, per level walked in full, what it makes over all of them (−inf where none has GPUs): none
    of it depends on the probe's GPUs, and a level that cannot make what is left needs no walk."""

    __slots__ = ("after_now", "most", "periods", "prepared")

    def __init__(self) -> None:
        self.prepared = False
        self.after_now: float | None = None
        self.periods: tuple[list[float], list[float], list[int], list[float]] | None = None
        self.most: dict[int, float] = {}


def _plan_on(job: DeadlineJob, line: Timeline, now: float, slot: float | None, first: int | None,
             walk: _Walk | None = None) -> Plan:
    """:func:`plan_min_share` on ``line`` (the caller's own): it gets the breakpoints at now and at the
    deadline, and the plan's timeline is it with the plan's GPUs taken.  With ``walk`` (a probe's), ``line`` is
    shared by the job's probes on it, not changed past its first probe, and each plan's timeline is a copy."""
    deadline = job.deadline
    aligned = align(now, deadline, slot)
    if walk is not None and walk.prepared:
        after_now = walk.after_now
    else:
        line.drop_before(now)
        after_now = line.next_after(now) if first is not None else None  # (before the deadline's split)
        if aligned >= now:
            line.split(aligned)
        if walk is not None:
            walk.after_now, walk.prepared = after_now, True
    changes = Changes(own_line=walk is None)  # (what follows only reads ``line``: the plan changes a copy, later)
    taken, reserved = changes.times, changes.reservations
    reach = aligned  # the plan changes the timeline up to here or its end, whichever is later
    left = float(job.work)
    steps: list[tuple[float, int]] = []
    start: float = now
    rate, levels = job.rate, job.levels
    if first is not None:
        until = aligned if after_now is None else after_now
        reach = max(reach, until)
        real_end: float = math.ceil(now + left / rate(first))
        end: float = align(now, real_end, slot)
        if until >= end and deadline >= real_end:
            reserved.append((now, end, first))
            return _done([(now, first)], end, real_end, deadline, line, reach, changes)
        left -= ((deadline if until == aligned else until) - now) * rate(first)
        reserved.append((now, until, first))
        steps.append((now, first))
        start = until

    if walk is not None and walk.periods is not None:
        points, spans, fits, made_at_fit = walk.periods
    else:
        points, frees = line.window(start, aligned)  # (none: the deadline is behind where planning starts)
        spans = [t_next - t for t, t_next in itertools.pairwise(points)]
        if points:
            spans.append(deadline - points[-1])  # (the last period ends at the deadline, not at its grid point)
        # the largest level that fits in each period's free GPUs (a level's share there is the smaller of the
        # two), and what that many GPUs make over the period
        fits = job.fits(frees)
        made_at_fit = [span * rate(f) if f else 0.0 for span, f in zip(spans, fits)]
        if walk is not None:
            walk.periods = (points, spans, fits, made_at_fit)
    top = max(levels) if levels else 0
    # each level in turn, walking back from the deadline: the first that makes the iterations left is the share,
    # from the period where they add up (one with GPUs) on
    below, share, at = 0, None, -1
    most = walk.most if walk is not None else None
    for level in levels:
        if most is not None and most.get(level, math.inf) < left:
            below = level
            continue
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
                share, at = level, i
                break
        if share is not None:
            break
        if most is not None:
            most[level] = done if any(fits) else -math.inf  # (the walk only grows: it never reached what is left)
        below = level
    if share is not None:
        # (below the lowest level nothing runs before the share's period: the walk starts there)
        gives = [below if below < f else f for f in fits[:at]] if below else [0] * at  # noqa: FURB136 (min() is slower)
        gives += [share if share < f else f for f in fits[at:]]  # noqa: FURB136
        for i in range(at if not below else 0, len(gives)):
            give = gives[i]
            if not give:
                continue
            made = spans[i] * rate(give)
            if made >= left and i >= at:
                t = points[i]
                real_left = math.ceil(left / rate(give))
                end, real_end = t + align(0, real_left, slot), float(t + real_left)
                taken += points[:i]
                changes.gpus = gives[:i]
                reserved.append((t, end, give))
                steps += zip(points[:i + 1], gives[:i + 1])
                tail = points[i + 1] if i + 1 < len(points) else None
                return _done(steps, end, real_end, deadline, line, reach, changes, tail)
            left -= made
        taken += points
        changes.gpus = gives
        steps += zip(points, gives)
        give = _fit(levels, line.free_at(aligned), share) or share  # (rounding left a sliver past the grid)
        real_left = math.ceil(left / rate(give))
        end, real_end = aligned + align(0, real_left, slot), float(aligned + real_left)
        steps.append((aligned, give))
        reserved.append((aligned, end, give))
        return _done(steps, end, real_end, deadline, line, reach, changes)
    # no level meets the deadline: the top level (what fits) until the deadline, then whatever fits after it
    gives = [min(top, f) for f in fits]
    for span, give in zip(spans, gives, strict=True):
        left -= span * rate(give) if give else 0.0
    taken += points
    changes.gpus = gives
    steps += zip(points, gives, strict=True)
    t = max(aligned, start)
    for t_next in line.between(math.nextafter(t, math.inf), math.inf):
        give = _fit(levels, line.free_at(t), top)
        steps.append((t, give))
        if give:
            made = (t_next - t) * rate(give)
            if made >= left:
                real_end = math.ceil(t + left / rate(give))
                end = align(now, real_end, slot)
                reserved.append((t, end, give))
                return _done(steps, end, real_end, deadline, line, reach, changes)
            left -= made
            reserved.append((t, t_next, give))
        t = t_next
    give = first if first is not None else top  # (the artifact: past every breakpoint, the probe's count)
    real_end = math.ceil(t + left / rate(give))
    end = align(now, real_end, slot)
    steps.append((t, give))
    reserved.append((t, end, give))
    return _done(steps, end, real_end, deadline, line, reach, changes)


def _done(steps: list[tuple[float, int]], end: float, real_end: float, deadline: float, line: Timeline,
          reach: float, changes: Changes, tail: float | None = None) -> Plan:
    return Plan(merged_steps(steps), end, real_end, real_end <= deadline, line, merge_until=max(end, reach),
                changes=changes, tail=tail)


def plan_in_order(jobs: Sequence[DeadlineJob], total_gpus: int, now: float, slot: float | None = 60.0
                  ) -> tuple[list[Plan], Timeline, bool]:
    """Every job planned in deadline order (ties: the order given) on an empty cluster of ``total_gpus``:
    their plans (in the order given), the timeline left, and whether all meet their deadlines."""
    line = Timeline({now: total_gpus})
    plans: dict[int, Plan] = {}
    for i in sorted(range(len(jobs)), key=lambda i: jobs[i].deadline):
        plan = _plan_on(jobs[i], line.copy(), now, slot, None)  # (each line merged: see Timeline.merge)
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
                   largest_first: bool = True, rerank: str = "lazy", gpu_time_rule: str = "exact",
                   order_out: list[DeadlineJob] | None = None) -> Timeline:
    """Hand the GPUs free now on ``timeline`` to ``jobs`` (each with its ``plan`` and ``gpus`` set) by
    marginal return (see the module's docstring); updates the jobs' ``gpus`` and ``plan`` and returns the
    timeline left.

    Each step-up changes the timeline and so, a little, every other job's marginal return.  ``rerank``:
    ``"all"`` re-plans every job that may grow after each step-up, as the artifact does (a step-up costs a
    plan per job); ``"lazy"`` re-plans only the job about to be chosen and takes it if its fresh rank still
    leads, else puts it back in the queue (a step-up costs a plan or two).  They choose alike while ranks
    only fall as the cluster fills; where a rank rises they may differ.  ``gpu_time_rule``: ``"exact"`` ranks by
    the plans' GPU-seconds to their ends, ``"artifact"`` as the artifact counts them
    (:attr:`Plan.artifact_gpu_seconds`).  ``order_out`` (``rerank="all"``) receives the jobs in the order the
    hand-out ranked them last (ties in the order given), as the artifact's job list is left.
    """
    if gpu_time_rule not in ("exact", "artifact"):
        raise ValueError(f"gpu_time_rule must be 'exact' or 'artifact', not {gpu_time_rule!r}")
    handout = _Handout(timeline, now, slot, largest_first, gpu_time_rule == "artifact")
    if rerank == "all":
        order = list(jobs)
        handout.rerank_all(order)
        if order_out is not None:
            order_out[:] = order
    elif rerank == "lazy":
        handout.rerank_lazily(list(jobs))
    else:
        raise ValueError(f"rerank must be 'all' or 'lazy', not {rerank!r}")
    return handout.line


class _Handout:
    """One hand-out of spare GPUs: the timeline as it fills, the GPUs still free now, and how jobs rank."""

    def __init__(self, timeline: Timeline, now: float, slot: float | None, largest_first: bool,
                 artifact_gpu_time: bool = False) -> None:
        self.line, self.now, self.slot, self.largest_first = timeline.copy(), now, slot, largest_first
        self.artifact_gpu_time = artifact_gpu_time
        self.line.merge()  # (so that a plan made on it needs merging only where it changed it)
        self.spare = timeline.free_at(now)
        self.waiting = math.inf if largest_first else -math.inf  # the rank of a job with no GPUs yet: first
        self.version = 0  # step-ups so far: a rank computed at an older version may be stale
        # per job: the timeline without its plan and the periods its probes plan over, as of a version.  Its own
        # step-up leaves both as they were (the timeline gains the new plan that a probe takes out again), so the
        # probe that re-ranks a job just grown reuses them
        self._without: dict[str, tuple[int, Timeline, _Walk]] = {}

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
        if self.artifact_gpu_time:
            return (plan.artifact_gpu_seconds - job.plan.artifact_gpu_seconds) / (step - job.gpus), plan
        return (plan.gpu_seconds - job.plan.gpu_seconds) / (step - job.gpus), plan

    def probe(self, job: DeadlineJob, step: int) -> Plan:
        """The job re-planned with ``step`` GPUs from now, on the timeline without its own plan."""
        assert job.plan is not None
        kept = self._without.get(job.key)
        if kept is None or kept[0] != self.version:
            released = self.line.copy()
            for (t, g), (t_next, _) in zip(job.plan.steps, [*job.plan.steps[1:], (job.plan.end, 0)], strict=True):
                if t_next > self.now and g:
                    released.reserve(max(t, self.now), t_next, -g, merge=False)
            released.merge(max(job.plan.end, self.now))
            kept = self._without[job.key] = (self.version, released, _Walk())
        return _plan_on(job, kept[1], self.now, self.slot, step, kept[2])

    def grow(self, job: DeadlineJob, plan: Plan | None) -> None:
        step = _next_level(job)
        plan = plan or self.probe(job, step)
        self.spare -= step - job.gpus
        job.gpus, job.plan, self.line = step, plan, plan.timeline
        kept = self._without.get(job.key)
        if kept is not None and kept[0] == self.version:
            self._without[job.key] = (self.version + 1, *kept[1:])
        self.version += 1

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
        heap: list[tuple[float, int, int, Plan | None]] = []
        for i, job in enumerate(jobs):
            if self.may_grow(job):
                value, plan = self.rank(job)
                heapq.heappush(heap, (sign * value, i, self.version, plan))
        while self.spare > 0 and heap:
            _, i, seen, plan = heapq.heappop(heap)
            job = jobs[i]
            if not self.may_grow(job):
                continue  # (spare GPUs only shrink: it will not fit later either)
            if seen != self.version and job.gpus:
                value, plan = self.rank(job)
                if heap and (sign * value, i) > heap[0][:2]:
                    heapq.heappush(heap, (sign * value, i, self.version, plan))
                    continue
            self.grow(job, plan)
            if self.may_grow(job):
                value, plan = self.rank(job)
                heapq.heappush(heap, (sign * value, i, self.version, plan))


def _next_level(job: DeadlineJob) -> int:
    levels = job.levels
    i = bisect.bisect_right(levels, job.gpus)
    return levels[i] if i < len(levels) else job.gpus
