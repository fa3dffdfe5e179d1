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
import itertools
import math
import operator
from collections.abc import Mapping


class Timeline:
    """Free GPUs from each breakpoint on (see the module's docstring).  Two parallel lists, breakpoints and
    free counts: planners copy, slice and walk them far more often than they look a single time up."""

    def __init__(self, points: Mapping[float, int]) -> None:
        if not points:
            raise ValueError("a timeline needs at least one breakpoint")
        self._times = sorted(points)
        self._free = [int(points[t]) for t in self._times]

    def copy(self) -> Timeline:
        twin = Timeline.__new__(Timeline)  # (already sorted and whole: no need to check again)
        twin._times, twin._free = self._times[:], self._free[:]
        return twin

    def points(self) -> list[tuple[float, int]]:
        return list(zip(self._times, self._free, strict=True))

    def times(self) -> list[float]:
        return list(self._times)

    def free_at(self, time: float) -> int:
        """Free GPUs at ``time`` (before the first breakpoint: the first breakpoint's)."""
        i = bisect.bisect_right(self._times, time) - 1
        return self._free[max(i, 0)]

    def _index(self, time: float) -> int:
        i = bisect.bisect_left(self._times, time)
        if i == len(self._times) or self._times[i] != time:
            raise KeyError(time)
        return i

    def __getitem__(self, time: float) -> int:
        """Free GPUs from breakpoint ``time`` on (KeyError if it is none)."""
        return self._free[self._index(time)]

    def __contains__(self, time: float) -> bool:
        i = bisect.bisect_left(self._times, time)
        return i < len(self._times) and self._times[i] == time

    def set(self, time: float, free: int) -> None:
        i = self._split(time)
        self._free[i] = int(free)

    def split(self, time: float) -> None:
        """A breakpoint at ``time`` (with the free count there), so that a change can start there."""
        self._split(time)

    def _split(self, time: float) -> int:
        """:meth:`split`, and the breakpoint's index."""
        times = self._times
        i = bisect.bisect_left(times, time)
        if i == len(times) or times[i] != time:
            times.insert(i, time)
            self._free.insert(i, self._free[i - 1 if i else 0])
        return i

    def reserve(self, start: float, end: float, gpus: int, merge: bool = True) -> None:
        """Take ``gpus`` out of the free count over [start, end); merge equal neighbours unless ``merge`` is
        False (a planner walking the breakpoints keeps them until its plan is done)."""
        if end <= start or gpus == 0:
            return
        i = self._split(start)
        j = self._split(end)
        left = [free - gpus for free in self._free[i:j]]
        if min(left) < 0:
            k = i + next(n for n, free in enumerate(left) if free < 0)
            raise ValueError(f"over-reserved at {self._times[k]}: {self._free[k]} free, {gpus} asked")
        self._free[i:j] = left
        if merge:
            self.merge()

    def take_each(self, times: list[float], gpus: list[int]) -> None:
        """Take ``gpus[i]`` out of the free count from breakpoint ``times[i]`` to the next one (``times``: one
        run of consecutive breakpoints)."""
        if not times:
            return
        i = self._index(times[0])
        j = i + len(times)
        if self._times[i:j] != times:
            raise ValueError("take_each needs consecutive breakpoints")
        left = list(map(operator.sub, self._free[i:j], gpus))
        if len(gpus) != len(times) or min(left) < 0:
            k = next((n for n, free in enumerate(left) if free < 0), None)
            if k is None:
                raise ValueError(f"{len(times)} breakpoints, {len(gpus)} counts")
            raise ValueError(f"over-reserved at {times[k]}: {self._free[i + k]} free, {gpus[k]} asked")
        self._free[i:j] = left

    def next_after(self, time: float) -> float | None:
        """The first breakpoint after ``time`` (None if there is none)."""
        i = bisect.bisect_right(self._times, time)
        return self._times[i] if i < len(self._times) else None

    def drop_before(self, time: float) -> None:
        """Forget the past: the breakpoint at ``time`` takes the value in force there."""
        i = self._split(time)
        del self._times[:i]
        del self._free[:i]

    def merge(self, until: float = math.inf) -> None:
        """Drop breakpoints that do not change the count (as the artifact's ``merge_dict``).  ``until``: the
        breakpoints after it were merged and have not changed since, so only the first of them is looked at."""
        times, free = self._times, self._free
        stop = len(times) if until == math.inf else min(bisect.bisect_right(times, until) + 1, len(times))
        changes = list(map(operator.ne, free[1:stop], free[:stop - 1]))  # [k]: breakpoint k + 1 changes the count
        if all(changes):
            return
        times[1:stop] = itertools.compress(times[1:stop], changes)
        free[1:stop] = itertools.compress(free[1:stop], changes)

    def between(self, start: float, end: float) -> list[float]:
        """Breakpoints in [start, end) (a new list)."""
        return self._times[bisect.bisect_left(self._times, start):bisect.bisect_left(self._times, end)]

    def window(self, start: float, end: float) -> tuple[list[float], list[int]]:
        """Breakpoints in [start, end) and the free count from each (new lists)."""
        i, j = bisect.bisect_left(self._times, start), bisect.bisect_left(self._times, end)
        return self._times[i:j], self._free[i:j]


def gpu_time(steps: list[tuple[float, int]], end: float) -> float:
    """GPU-seconds of a plan: GPUs from each step's time to the next (the last until ``end``).

    >>> gpu_time([(0, 2), (10, 4)], 30)
    100.0
    """
    total = 0.0
    for (t, g), (t_next, _) in zip(steps, [*steps[1:], (end, 0)], strict=True):
        total += g * (t_next - t)
    return total
