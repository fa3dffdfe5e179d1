"""Why a job's run is cut short, as typed records.

A running job's run ends in one of two ways: its work is done (the run's end event fires), or
something from outside cuts it short.  Each outside cause is a record here, and
:meth:`simcluster.engine.life.JobLife.interrupt` is the one door it comes through (SimPy's
``process.interrupt(cause)``, taken synchronously: see :mod:`simcluster.engine.life` for why).

>>> Preempted("srtf", overhead=30.0)
Preempted(policy='srtf', overhead=30.0, moving=False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Preempted:
    """The policy took the GPUs back; the job owes ``overhead`` seconds of restore when it runs again.
    ``moving``: it is restarted elsewhere at once (a round policy changing its GPU type), a migration."""

    policy: str
    overhead: float
    moving: bool = False


@dataclass(frozen=True, slots=True)
class RateChanged:
    """A GPU partner arrived or left (or the job's GPUs changed): it goes on at ``speed``."""

    speed: float
    sharing: bool


@dataclass(frozen=True, slots=True)
class Evicted:
    """Work of a higher tier took the preemptible job's GPUs (job ``by``) without a checkpoint: it loses what it did
    since its last checkpoint, as on a failure, and owes its restart (docs/tiers.md, evictions)."""

    by: str


@dataclass(frozen=True, slots=True)
class Moved:
    """The policy sent the running job to another partition's queue (lucid's profiler → its VC)."""

    partition: str


@dataclass(frozen=True, slots=True)
class NodeFailed:
    """A node the job ran on went down: it loses what it did since its last checkpoint."""

    node: str


@dataclass(frozen=True, slots=True)
class Swapped:
    """A node the job runs on failed and a hot spare took its place: the job keeps its GPUs, loses what it did
    since its last checkpoint and makes no progress for ``pause`` seconds (the swap) and its restart."""

    node: str
    pause: float


@dataclass(frozen=True, slots=True)
class Replaced:
    """A node the job runs on failed and free nodes took its place at once (Kueue's failed-node replacement, in
    the job's domain at its required level: :class:`~simcluster.engine.failures.DomainReplacement`): its GPUs on
    ``node`` move to ``plan``'s nodes, ``(node, GPUs)``, the rest stay; it loses what it did since its last
    checkpoint and makes no progress for its restart."""

    node: str
    plan: Any = ()


@dataclass(frozen=True, slots=True)
class Resized:
    """The policy changed an elastic job's allocation (``plan``, ``from_gpus`` → ``to_gpus`` GPUs) or its batch
    while it runs: it goes on from the progress it made, after ``delay`` seconds without progress (None: the
    run's restart delay if its GPUs changed, none if only its batch did)."""

    from_gpus: int
    to_gpus: int
    plan: Any = ()
    batch: Any = None
    delay: float | None = None


@dataclass(frozen=True, slots=True)
class Declined:
    """The policy turned the (waiting) job away for good, e.g. an admission control that cannot meet its
    deadline: it is reported unfinished and declined."""

    policy: str


@dataclass(frozen=True, slots=True)
class Abandoned:
    """The no-progress guard gave up on the (queued) job (``--on-no-progress abandon``)."""


@dataclass(frozen=True, slots=True)
class Stalled:
    """The policy charged the running (fixed-size) job ``seconds`` without progress where it is: it keeps its
    GPUs and its progress, and its run ends that much later (a simulator's start or restart cost, modelled
    as a pause)."""

    policy: str
    seconds: float


Cause = (Preempted | RateChanged | Moved | NodeFailed | Evicted | Swapped | Replaced | Resized | Declined | Abandoned
         | Stalled)
