"""Speed terms: what slows a running job through the other jobs running, beyond the GPUs it shares.

A job's speed is its GPUs', its partners' on shared GPUs and its spread's (:mod:`~simcluster.engine.speed`); a
feature whose jobs slow each other without sharing a GPU (jobs crossing the same uplink share its bandwidth:
:mod:`simcluster.features.links`) gives the run a :class:`SpeedTerm`.  The speed model multiplies a job's
speed by every term's :meth:`~SpeedTerm.factor`; the engine tells each term of every start and stop
(:meth:`~SpeedTerm.on_start`, :meth:`~SpeedTerm.on_stop`, so that it keeps its own state up to date instead of
walking the running jobs) and re-times the jobs the term says the change may have slowed or sped up
(:meth:`~SpeedTerm.affected`).  A run without terms, every run without such a feature, pays one boolean check
per start and stop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.job import Job


class SpeedTerm(Protocol):
    """A multiplier on running jobs' speeds that depends on which other jobs run.

    >>> class Halved:  # every job at half speed while another runs
    ...     def __init__(self): self.running = set()
    ...     def factor(self, job): return 0.5 if len(self.running) > 1 else 1.0
    ...     def affected(self, job): return self.running - {job}
    ...     def on_start(self, job, now): self.running.add(job)
    ...     def on_stop(self, job, now): self.running.discard(job)
    >>> from simcluster.engine.speed import SpeedModel
    >>> SpeedModel(terms=(Halved(),)).terms[0].factor(None)
    1.0
    """

    def factor(self, job: Job) -> float:
        """Running ``job``'s speed under this term ÷ its speed without it (1: no effect)."""

    def affected(self, job: Job) -> Iterable[Job]:
        """The other running jobs whose factor may change as ``job`` starts or stops (asked after its start is
        counted, and before its stop is)."""

    def on_start(self, job: Job, now: float) -> None:
        """``job`` started at ``now`` on its allocation: count it (before its speed is read)."""

    def on_stop(self, job: Job, now: float) -> None:
        """``job`` stopped at ``now`` (finished, preempted, failed, moved): forget it."""
