"""A queue of pending jobs kept in a policy's order.

Policies order their queue by a key that does not change while a job waits
(submit time, duration, remaining time, ...).  Keeping the list sorted as
jobs arrive (usually an append) makes each scheduling pass cost what it
starts, not what waits; removing the head only advances an offset, so a
FIFO queue of a million jobs drains in linear time.  The same order is also
kept per GPU count, so a policy can ask for "the next waiting job that fits
in g GPUs" without stepping over every bigger one; that index is built the
first time a policy asks for it, so policies that never do (fifo, sjf) do not
pay for it on every push and removal.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from simcluster.job import Job

QueueKey = Callable[[Job], Any]
Entry = tuple[Any, int]  # (policy key, trace index): unique and totally ordered
SizedRun = tuple[list[Entry], list["Job | None"], int]  # (entries, jobs, first): see JobQueue.runs_by_size


def submit_order(job: Job) -> tuple[float, int]:
    return (job.submit_time, job.index)


def ranked(rank: QueueKey, key: QueueKey) -> QueueKey:
    """``key`` with ``rank`` before it: waiting jobs in ``rank``'s order first, in ``key``'s among equals.

    >>> from simcluster.job import Job
    >>> jobs = [Job(index=i, job_id=str(i), vc="v", gpu_num=1, submit_time=i, duration=1, priority=p)
    ...         for i, p in enumerate([0, 5, 0])]
    >>> key = ranked(lambda job: -job.priority, submit_order)
    >>> [job.job_id for job in sorted(jobs, key=key)]
    ['1', '0', '2']
    """
    return lambda job: (rank(job), key(job))


class _SortedJobs:
    """Parallel sorted lists of entries and jobs; the head is removed by advancing an offset."""

    __slots__ = ("head", "jobs", "keys")

    def __init__(self) -> None:
        self.keys: list[Entry] = []
        self.jobs: list[Job | None] = []
        self.head = 0

    def push(self, entry: Entry, job: Job) -> None:
        keys = self.keys
        if len(keys) == self.head or keys[-1] <= entry:
            keys.append(entry)
            self.jobs.append(job)
            return
        pos = bisect_right(keys, entry, self.head)
        keys.insert(pos, entry)
        self.jobs.insert(pos, job)

    def remove(self, entry: Entry, job: Job) -> None:
        head = self.head
        pos = head if self.jobs[head] is job else bisect_left(self.keys, entry, head)  # (usually the head)
        assert self.jobs[pos] is job
        if pos == head:
            self.jobs[pos] = None
            self.head += 1
            if self.head > 1024 and self.head * 2 > len(self.keys):
                del self.keys[: self.head], self.jobs[: self.head]
                self.head = 0
        else:
            del self.keys[pos], self.jobs[pos]

    def __len__(self) -> int:
        return len(self.keys) - self.head

    def entries(self) -> Iterator[tuple[Entry, Job]]:
        return zip(islice(self.keys, self.head, None), islice(self.jobs, self.head, None))  # type: ignore[arg-type]


def _push_sized(by_size: dict[int, _SortedJobs], entry: Entry, job: Job) -> None:
    """Queue ``job`` among the jobs of its GPU count."""
    sized = by_size.get(job.gpu_num)
    if sized is None:
        sized = by_size[job.gpu_num] = _SortedJobs()
    sized.push(entry, job)


class JobQueue:
    """Jobs sorted by ``key`` (ties: trace order).

    >>> from simcluster.job import Job
    >>> q = JobQueue(key=lambda j: j.duration)
    >>> for i, (d, g) in enumerate([(30, 1), (10, 8), (20, 1)]):
    ...     q.push(Job(index=i, job_id=str(i), vc="v", gpu_num=g, submit_time=0, duration=d))
    >>> entries, jobs, first = q.runs_by_size(4)[1]  # (the 1-GPU jobs; no count above 4)
    >>> [j.duration for j in q], [j.duration for j in jobs[first:]], sorted(q.runs_by_size(8))
    ([10, 20, 30], [20, 30], [1, 8])
    """

    def __init__(self, key: QueueKey = submit_order) -> None:
        self._key = key
        self._all = _SortedJobs()
        self._by_size: dict[int, _SortedJobs] | None = None  # built on first use (:meth:`_sized`)
        self._entry_of: dict[Job, Entry] = {}

    def push(self, job: Job) -> None:
        entry = (self._key(job), job.index)
        self._entry_of[job] = entry
        self._all.push(entry, job)
        if self._by_size is not None:
            _push_sized(self._by_size, entry, job)

    def remove(self, job: Job) -> None:
        entry = self._entry_of.pop(job)
        self._all.remove(entry, job)
        if self._by_size is not None:
            sized = self._by_size[job.gpu_num]
            sized.remove(entry, job)
            if not sized:
                del self._by_size[job.gpu_num]

    def _sized(self) -> dict[int, _SortedJobs]:
        """The queue per GPU count, built from the queue the first time it is asked for, kept from then on."""
        if self._by_size is None:
            self._by_size = {}
            for entry, job in self._all.entries():
                _push_sized(self._by_size, entry, job)  # (in order: an append)
        return self._by_size

    def rekey(self) -> None:
        """Recompute every waiting job's key (for a policy whose order changed as a whole)."""
        jobs = list(self)
        self._all, self._by_size, self._entry_of = _SortedJobs(), None, {}
        for job in sorted(jobs, key=lambda j: (self._key(j), j.index)):
            self.push(job)

    def first(self) -> Job | None:
        return self._all.jobs[self._all.head] if self._entry_of else None

    def first_entry(self) -> Entry:
        """The head's (key, trace index), as the queue holds it (the smallest); the queue must not be empty."""
        return self._all.keys[self._all.head]

    def none_fits(self, gpus: float) -> bool:
        """Whether no waiting job asks for at most ``gpus`` GPUs (a pass then has nothing to start there)."""
        return not self._entry_of or min(self._sized()) > gpus

    def runs_by_size(self, max_gpus: float) -> dict[int, SizedRun]:
        """Per GPU count up to ``max_gpus``, its jobs in queue order as ``(entries, jobs, first)``: the queue's
        own parallel lists, to read in place from position ``first`` on (no iterator to make per count;
        do not push or remove meanwhile).  See the class example."""
        return {size: (run.keys, run.jobs, run.head) for size, run in self._sized().items() if size <= max_gpus}

    def __contains__(self, job: Job) -> bool:
        return job in self._entry_of

    def __len__(self) -> int:
        return len(self._entry_of)

    def __bool__(self) -> bool:
        return bool(self._entry_of)

    def __iter__(self) -> Iterator[Job]:
        """In order, over the jobs waiting when the iteration began: starting or requeueing jobs meanwhile is safe."""
        sorted_jobs = self._all
        return iter(sorted_jobs.jobs[sorted_jobs.head:])  # type: ignore[arg-type]  # (no None from the head on)
