"""Observers: how anything outside the model learns what happened.

The engine calls these hooks; policies never record metrics themselves.
Default hooks do nothing, so an observer implements only what it needs.
"""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING

import numpy as np

from simcluster.job import Job, JobState
from simcluster.registry import implements

if TYPE_CHECKING:
    import pandas as pd


class Observer:
    """What a run tells its watchers; subclass it and define the hooks you need (the others do nothing).

    >>> from simcluster import SimConfig, load_trace, simulate
    >>> import pandas as pd
    >>> class Starts(Observer):
    ...     def __init__(self):
    ...         self.seen = []
    ...     def on_start(self, job, now):
    ...         self.seen.append((job.job_id, now))
    >>> jobs = pd.DataFrame({"submit_time": [0, 5], "gpu_num": [8, 8], "duration": [60, 30]})
    >>> starts = Starts()
    >>> _ = simulate(load_trace(jobs, nodes=1), SimConfig(), observers=[starts])
    >>> starts.seen
    [('0', 0.0), ('1', 60.0)]
    """

    def on_submit(self, job: Job, now: float) -> None: ...
    def on_start(self, job: Job, now: float) -> None: ...
    def on_preempt(self, job: Job, now: float) -> None: ...
    def on_restart(self, job: Job, now: float) -> None: ...  # a node failure: requeued, or going on in place
    def on_finish(self, job: Job, now: float) -> None: ...
    def on_move(self, job: Job, now: float) -> None: ...  # sent to another partition's queue (lucid's profiler)
    def on_speed(self, job: Job, now: float) -> None: ...  # a running job's speed changed (sharing, an epoch's end)
    def on_resize(self, job: Job, now: float) -> None: ...  # an elastic job's GPUs or batch changed while it ran
    def on_node_down(self, node_name: str, now: float) -> None: ...  # a fault (a spot reclaim is not told)
    def on_node_up(self, node_name: str, now: float) -> None: ...  # its repair (the node may stay reclaimed)
    def on_swap(self, node_name: str, now: float) -> None: ...  # a hot spare took a failed node's place
    def on_sample(self, now: float, used_gpus: int, shared_gpus: int, running: int, pending: int) -> None: ...


class RunObserver(Observer):
    """An observer of runs: a run begins where a job gets GPUs and ends where it gives them up or they change.

    Why a class: a job can keep running through a failure (a spare swapped in for a failed node, the node
    replaced from free ones) or have its GPUs change while it runs (an elastic resize).  Each of those ends
    one run and begins the next at that instant, and an observer that took a restart for a stop would lose
    the rest of the job's time.  Subclasses say only how a run begins (:meth:`begin`) and ends (:meth:`end`).

    >>> from simcluster import SimConfig, load_trace, simulate
    >>> import pandas as pd
    >>> class Held(RunObserver):
    ...     def __init__(self):
    ...         self.since, self.seconds = {}, 0.0
    ...     def begin(self, job, now):
    ...         self.since[job] = now
    ...     def end(self, job, now):
    ...         self.seconds += now - self.since.pop(job, now)
    >>> held = Held()
    >>> jobs = pd.DataFrame({"submit_time": [0, 5], "gpu_num": [8, 8], "duration": [60, 30]})
    >>> _ = simulate(load_trace(jobs, nodes=1), SimConfig(), observers=[held])
    >>> held.seconds
    90.0
    """

    def begin(self, job: Job, now: float) -> None:
        raise NotImplementedError

    def end(self, job: Job, now: float) -> None:
        raise NotImplementedError

    def on_start(self, job: Job, now: float) -> None:
        self.begin(job, now)

    def _ended(self, job: Job, now: float) -> None:
        self.end(job, now)

    on_preempt = on_finish = on_move = _ended

    def on_restart(self, job: Job, now: float) -> None:
        self.end(job, now)
        if job.state is JobState.RUNNING:  # it kept its GPUs (a spare, a replacement): its next run begins now
            self.begin(job, now)

    def on_resize(self, job: Job, now: float) -> None:
        self.end(job, now)
        self.begin(job, now)


def overridden_hooks(observers: list[Observer], hook: str) -> list:
    """Bound ``hook`` methods of the observers that implement it (no-op defaults are skipped)."""
    return [getattr(o, hook) for o in observers if implements(o, Observer, hook)]


class ClusterTimeline(Observer):
    """Busy (and shared) GPUs, running and pending jobs after every scheduling instant.

    One row per distinct time (the last state at that time), stored in typed
    arrays so a million-job run costs megabytes, not gigabytes.
    """

    def __init__(self) -> None:
        self.time = array("d")
        self.used_gpus = array("q")
        self.shared_gpus = array("q")
        self.running = array("q")
        self.pending = array("q")
        self._last = math.nan  # the last sample's time (NaN equals nothing)

    def on_sample(self, now: float, used_gpus: int, shared_gpus: int, running: int, pending: int) -> None:
        if now == self._last:  # (a float attribute: cheaper than reading the array's last item)
            self.used_gpus[-1], self.shared_gpus[-1] = used_gpus, shared_gpus
            self.running[-1], self.pending[-1] = running, pending
            return
        self.time.append(now)
        self.used_gpus.append(used_gpus)
        self.shared_gpus.append(shared_gpus)
        self.running.append(running)
        self.pending.append(pending)
        self._last = now

    def frame(self) -> pd.DataFrame:
        """The samples as ``timeline.csv``'s table."""
        import pandas as pd  # (not at import: observers are made before any table)

        return pd.DataFrame(  # (copy=False: not copied again into one block, while the jobs are still held)
            {"time": numbers(self.time), "busy_gpus": numbers(self.used_gpus),
             "shared_gpus": numbers(self.shared_gpus), "running_jobs": numbers(self.running),
             "pending_jobs": numbers(self.pending)}, copy=False)


def numbers(values: array) -> np.ndarray | array:
    """A typed array as a NumPy array over its memory, not copied (pandas would read an ``array.array`` value
    by value: seconds for a long timeline; and a copy would be held beside it at the run's peak); an empty
    one as it is, which pandas makes a float column whatever its type.

    >>> numbers(array("q", [1, 2])).dtype, numbers(array("q")).typecode
    (dtype('int64'), 'q')
    """
    return np.frombuffer(values, values.typecode) if len(values) else values


class NodeFailures(Observer):
    """Counts node failures (what a run needs from its observers besides the timeline: its finished
    jobs it takes from the jobs themselves afterwards, so no hook is called as each job finishes): ``summary.json``'s
    ``node_failures``.  Faults only, each as it strikes (a reclaimed node's too): the engine tells observers of no
    spot reclaim (``spot.reclaims`` counts them; :meth:`~simcluster.engine.simulation.Simulation.node_down`).

    >>> failures = NodeFailures()
    >>> failures.on_node_down("a/n0", 5.0); failures.count
    1
    """

    def __init__(self) -> None:
        self.count = 0

    def on_node_down(self, node_name: str, now: float) -> None:
        self.count += 1


class FinishedJobs(Observer):
    """Keeps finished jobs in finishing order, for the results table."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.node_failures = 0

    def on_finish(self, job: Job, now: float) -> None:
        self.jobs.append(job)

    def on_node_down(self, node_name: str, now: float) -> None:  # (faults only, as NodeFailures)
        self.node_failures += 1
