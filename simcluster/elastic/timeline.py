"""The cluster's free GPUs over the future, as deadline planners see it: a step function of time.

ElasticFlow and its EDF baseline plan every job's GPUs from now until it ends, one job after another on
a shared picture of the future: each plan takes its GPUs out of the free count over its time, so the next
job sees what is left.  :class:`Timeline` is that picture — breakpoints, each with the free GPUs from it
until the next one (the last holds on forever).

>>> line = Timeline({0: 8})
>>> line.reserve(0, 100, 4); line.reserve(50, 150, 2)
>>> line.points()
[(0, 4), (50, 2), (100, 6), (150, 8)]
>>> line.free_at(120), line.free_at(10_000)
(6, 8)
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence


class Timeline:
    """Free GPUs from each breakpoint on (see the module's docstring)."""

    def __init__(self, points: Mapping[float, int]) -> None:
        if not points:
            raise ValueError("a timeline needs at least one breakpoint")
        self._times = sorted(points)
        self._free = {t: int(points[t]) for t in self._times}

    def copy(self) -> Timeline:
        twin = Timeline.__new__(Timeline)  # (already sorted and whole: no need to check again)
        twin._times, twin._free = list(self._times), dict(self._free)
        return twin

    def points(self) -> list[tuple[float, int]]:
        return [(t, self._free[t]) for t in self._times]

    def times(self) -> list[float]:
        return list(self._times)

    def free_at(self, time: float) -> int:
        """Free GPUs at ``time`` (before the first breakpoint: the first breakpoint's)."""
        i = bisect.bisect_right(self._times, time) - 1
        return self._free[self._times[max(i, 0)]]

    def __getitem__(self, time: float) -> int:
        return self._free[time]

    def free_list(self, times: list[float], through: Sequence[int] | None = None) -> list[int]:
        """The free count at each of ``times``, all breakpoints (``through[count]`` instead, if given)."""
        free = self._free
        if through is None:
            return [free[t] for t in times]
        return [through[free[t]] for t in times]

    def __contains__(self, time: float) -> bool:
        return time in self._free

    def set(self, time: float, free: int) -> None:
        if time not in self._free:
            bisect.insort(self._times, time)
        self._free[time] = int(free)

    def split(self, time: float) -> None:
        """A breakpoint at ``time`` (with the free count there), so that a change can start there."""
        if time not in self._free:
            self.set(time, self.free_at(time))

    def reserve(self, start: float, end: float, gpus: int, merge: bool = True) -> None:
        """Take ``gpus`` out of the free count over [start, end); merge equal neighbours unless ``merge`` is
        False (a planner walking the breakpoints keeps them until its plan is done)."""
        if end <= start or gpus == 0:
            return
        self.split(start)
        self.split(end)
        for t in self._times[bisect.bisect_left(self._times, start):bisect.bisect_left(self._times, end)]:
            self._free[t] -= gpus
            if self._free[t] < 0:
                raise ValueError(f"over-reserved at {t}: {self._free[t] + gpus} free, {gpus} asked")
        if merge:
            self.merge()

    def take_each(self, times: list[float], gpus: list[int]) -> None:
        """Take ``gpus[i]`` out of the free count from breakpoint ``times[i]`` to the next one."""
        free = self._free
        for time, g in zip(times, gpus, strict=True):
            left = free[time] - g
            if left < 0:
                raise ValueError(f"over-reserved at {time}: {free[time]} free, {g} asked")
            free[time] = left

    def next_after(self, time: float) -> float | None:
        """The first breakpoint after ``time`` (None if there is none)."""
        i = bisect.bisect_right(self._times, time)
        return self._times[i] if i < len(self._times) else None

    def drop_before(self, time: float) -> None:
        """Forget the past: the breakpoint at ``time`` takes the value in force there."""
        self.split(time)
        i = bisect.bisect_left(self._times, time)
        for t in self._times[:i]:
            del self._free[t]
        del self._times[:i]

    def merge(self, until: float = math.inf) -> None:
        """Drop breakpoints that do not change the count (as the artifact's ``merge_dict``).  ``until``: the
        breakpoints after it were merged and have not changed since, so only the first of them is looked at."""
        times = self._times
        stop = len(times) if until == math.inf else bisect.bisect_right(times, until) + 1
        free, kept, last = self._free, [], None
        for t in times[:stop]:
            count = free[t]
            if count == last:
                del free[t]
            else:
                kept.append(t)
                last = count
        if len(kept) < stop:
            kept += times[stop:]
            self._times = kept

    def between(self, start: float, end: float) -> list[float]:
        """Breakpoints in [start, end) (a new list)."""
        return self._times[bisect.bisect_left(self._times, start):bisect.bisect_left(self._times, end)]


def gpu_time(steps: list[tuple[float, int]], end: float) -> float:
    """GPU-seconds of a plan: GPUs from each step's time to the next (the last until ``end``).

    >>> gpu_time([(0, 2), (10, 4)], 30)
    100.0
    """
    total = 0.0
    for (t, g), (t_next, _) in zip(steps, [*steps[1:], (end, 0)], strict=True):
        total += g * (t_next - t)
    return total
