"""Each Kueue ClusterQueue's GPUs in use over time, and the whole cluster's allocation rate (docs/tiers.md).

A queue's GPUs change only when one of its jobs starts, stops, moves or is resized, so :class:`TierTimeline` keeps
them as change points — memory in proportion to those changes, never to the run's length (no per-second
sampling).  Every figure is an exact integral of those step functions: a time average over an interval is the
area under the step over it divided by its width, so a table resampled to a few hundred intervals for a picture
keeps every GPU-second (a sampled point would keep only the level at that instant).

The quota a queue's usage is compared with is its nominal quota (Kueue's Cluster Queue concept page:
``nominalQuota``, the GPUs it is guaranteed; it borrows above it and lends below it): :func:`nominal_gpus`.

>>> from simcluster.job import Job
>>> from types import SimpleNamespace
>>> timeline, job = TierTimeline(["a", "b"]), Job(0, "j", "vc0", 4, 0, 100, cluster_queue="a")
>>> job.allocation = ((SimpleNamespace(name="n0"), [0, 1, 2, 3]),)
>>> timeline.on_start(job, 10.0)
>>> job.allocation = ()
>>> timeline.on_finish(job, 30.0)
>>> timeline.mean_gpus(0.0, 40.0), timeline.allocation_rate(0.0, 40.0, gpus=8)
({'a': 2.0, 'b': 0.0}, 0.25)
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from simcluster.metrics.observer import Observer

if TYPE_CHECKING:
    import pandas as pd

    from simcluster.job import Job
    from simcluster.tiers.model import KueueConfig

POINTS = 500  # intervals of a resampled table (per queue), enough for a picture 960 pixels wide
SHARE_COLUMNS = ["time", "end", "tier", "gpus"]  # tier: a ClusterQueue under --kueue, else a priority tier


class Steps:
    """A step function kept as its change points: ``value[i]`` holds from ``time[i]`` until ``time[i + 1]`` (the
    last one on and on), 0 before the first; the times never go back (the simulation's clock).

    >>> steps = Steps()
    >>> steps.add(0.0, 2); steps.add(10.0, 3); steps.add(10.0, -1)  # two changes at 10 s: the level after both
    >>> list(steps.time), list(steps.value), steps.means(np.array([0.0, 10.0, 20.0])).tolist()
    ([0.0, 10.0], [2.0, 4.0], [2.0, 4.0])
    """

    __slots__ = ("time", "value")

    def __init__(self) -> None:
        self.time = array("d")
        self.value = array("d")

    @property
    def level(self) -> float:
        """The value now (after the last change)."""
        return self.value[-1] if self.value else 0.0

    def add(self, now: float, delta: float) -> None:
        """The value changes by ``delta`` at ``now``."""
        level = self.level + delta
        if self.time and self.time[-1] == now:  # another change at the same instant: only the level after counts
            self.value[-1] = level
        else:
            self.time.append(now)
            self.value.append(level)

    def integral(self, at: np.ndarray) -> np.ndarray:
        """The area under the steps from the first change up to each time of ``at`` (0 before it)."""
        at = np.asarray(at, dtype=float)
        time, value = np.array(self.time, dtype=float), np.array(self.value, dtype=float)  # (copies: see ``add``)
        out = np.zeros(len(at))
        if not len(time):
            return out
        area = np.concatenate([[0.0], np.cumsum(value[:-1] * np.diff(time))])  # up to each change point
        k = np.searchsorted(time, at, side="right") - 1
        inside = k >= 0
        out[inside] = area[k[inside]] + value[k[inside]] * (at[inside] - time[k[inside]])
        return out

    def means(self, edges: np.ndarray) -> np.ndarray:
        """The time average over each interval between consecutive ``edges`` (increasing, none of width 0)."""
        return np.diff(self.integral(edges)) / np.diff(edges)


class TierTimeline(Observer):
    """GPUs in use per ClusterQueue and in the whole cluster, as step functions of the simulated time.

    A job's GPUs are read from its allocation after each hook (what it holds once the start, preemption,
    eviction, restart, move, resize or finish is done), so a failure that a spare absorbs (a restart that keeps
    the GPUs) changes nothing, and an elastic job's resize counts its new size.  A GPU shared by two jobs counts
    for each (as each job's GPU-time does).  ``queues``: the ClusterQueues to report even if none of their jobs
    ran; a job without one (``cluster_queue`` "") counts in the cluster's allocated GPUs only.
    """

    def __init__(self, queues: Iterable[str] = (),
                 tier_of: Callable[[Job], str] = attrgetter("cluster_queue")) -> None:
        self.queues: dict[str, Steps] = {name: Steps() for name in queues}
        self.tier_of = tier_of  # a job's tier: its ClusterQueue, or (without Kueue) its priority and kind
        self.allocated = Steps()
        self._held: dict[Job, int] = {}  # running jobs' GPUs as last counted

    def _update(self, job: Job, now: float) -> None:
        held = sum(len(ids) for _, ids in job.allocation)
        change = held - self._held.get(job, 0)
        if not change:
            return
        if held:
            self._held[job] = held
        else:
            del self._held[job]
        self.allocated.add(now, change)
        tier = self.tier_of(job)
        if tier:
            steps = self.queues.get(tier)
            if steps is None:
                steps = self.queues[tier] = Steps()
            steps.add(now, change)

    on_start = on_preempt = on_restart = on_finish = on_move = on_resize = _update

    def edges(self, start: float, end: float, points: int = POINTS) -> np.ndarray:
        """The intervals a resampled table averages over: between every change inside (``start``, ``end``) where
        there are fewer than ``points`` intervals (exact steps), else ``points`` equal ones.

        >>> timeline = TierTimeline(); timeline.allocated.add(5.0, 1)
        >>> timeline.edges(0.0, 10.0).tolist(), timeline.edges(0.0, 10.0, points=1).tolist()
        ([0.0, 5.0, 10.0], [0.0, 10.0])
        """
        if end <= start:
            return np.array([start])
        times = [np.array(steps.time, dtype=float) for steps in (*self.queues.values(), self.allocated)]
        changes = np.unique(np.concatenate(times))
        inside = changes[(changes > start) & (changes < end)]
        if len(inside) < points:
            return np.concatenate([[start], inside, [end]])
        return np.linspace(start, end, points + 1)

    def share_over_time(self, start: float, end: float, points: int = POINTS) -> pd.DataFrame:
        """``tiers_timeline.csv``: per interval of :meth:`edges` (``time`` to ``end``) and queue (in name order),
        the queue's mean GPUs in use over it (``gpus``); the queues share the intervals, so their GPUs add up to
        the cluster's over each one."""
        import pandas as pd  # (not at import: observers are made before any table)

        edges = self.edges(start, end, points)
        names = sorted(self.queues)
        if len(edges) < 2 or not names:
            return pd.DataFrame({c: [] for c in SHARE_COLUMNS}).astype({"tier": str})
        width = len(edges) - 1
        return pd.DataFrame({"time": np.tile(edges[:-1], len(names)), "end": np.tile(edges[1:], len(names)),
                             "tier": np.repeat(names, width),
                             "gpus": np.concatenate([self.queues[n].means(edges) for n in names])})

    def mean_gpus(self, start: float, end: float) -> dict[str, float]:
        """Each queue's GPUs in use, averaged over the time from ``start`` to ``end``."""
        span = np.array([start, end], dtype=float)
        return {name: _mean(self.queues[name], span) for name in sorted(self.queues)}

    def allocation_over_time(self, start: float, end: float, gpus: int, points: int = POINTS) -> pd.DataFrame:
        """Per interval of :meth:`edges` (``time`` to ``end``): the cluster's mean allocated GPUs and their share
        of its ``gpus`` (``allocation_rate``)."""
        import pandas as pd

        edges = self.edges(start, end, points)
        allocated = self.allocated.means(edges) if len(edges) > 1 else np.empty(0)
        return pd.DataFrame({"time": edges[:-1], "end": edges[1:], "allocated_gpus": allocated,
                             "allocation_rate": allocated / gpus if gpus else np.zeros(len(allocated))})

    def allocation_rate(self, start: float, end: float, gpus: int) -> float:
        """The cluster's allocated GPUs over its ``gpus``, averaged over the time from ``start`` to ``end``."""
        return _mean(self.allocated, np.array([start, end], dtype=float)) / gpus if gpus else 0.0

    def figures(self, start: float, end: float, gpus: int, nominal: Mapping[str, float] | None = None
                ) -> dict[str, Any]:
        """``summary.json``'s ``tiers.timeline``: each queue's mean GPUs in use, the mean allocation rate and,
        where given, each queue's nominal quota (which the report's picture draws as a dashed line)."""
        out: dict[str, Any] = {"mean_gpus": {q: round(v, 4) for q, v in self.mean_gpus(start, end).items()},
                               "allocation_rate_mean": round(self.allocation_rate(start, end, gpus), 6)}
        if nominal is not None:
            out["nominal_gpus"] = {q: float(v) for q, v in sorted(nominal.items())}
        return out


def _mean(steps: Steps, span: np.ndarray) -> float:
    """The time average of ``steps`` over ``span`` (start, end); 0 over no time."""
    return float(steps.means(span)[0]) if span[1] > span[0] else 0.0


def nominal_gpus(kueue: KueueConfig) -> dict[str, float]:
    """Each ClusterQueue's nominal GPU quota, over its flavors (the quota it is guaranteed, whatever it borrows).

    >>> from simcluster.tiers.model import ClusterQueueSpec, FlavorQuota, KueueConfig
    >>> nominal_gpus(KueueConfig({"a": ClusterQueueSpec("a", quotas=(FlavorQuota("h100", 8), FlavorQuota("a100", 4))),
    ...                           "b": ClusterQueueSpec("b")}))
    {'a': 12.0, 'b': 0.0}
    """
    return {name: float(sum(q.nominal for q in spec.quotas)) for name, spec in kueue.cluster_queues.items()}
