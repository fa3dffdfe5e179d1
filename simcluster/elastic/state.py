"""An elastic job's state in a run: its scaling model, its batch, its epoch, the configurations it ran on.

A job of a trace with scaling models (Pollux's workloads, ElasticFlow's traces) run by an elastic policy
(``Policy.elastic``) carries an :class:`ElasticState` as ``job.elastic``; every other job has None
there and runs exactly as before.

*Work*, as for every job, is counted in seconds at speed 1 (``job.duration``, ``job.work_left``), so
the engine's accounting, the metrics and the oracles stay as they are; an elastic job's *progress* is
in its own unit (Pollux: statistical progress, ElasticFlow: iterations), ``per_work`` of it per second
of work (its total progress ÷ its duration).  Its speed is its scaling model's rate on its current
GPUs, batch and epoch ÷ ``per_work``.  The model may change its rate at known progress points — the
ends of *stages* (Pollux's epochs, whose gradient statistics differ); the engine re-times the job
there, with no policy timer.

A policy reads ``job.elastic`` (never writes it): ``model`` (the application or throughput table it
was built from), ``batch``, ``stage``, ``layout`` (GPUs on each node of its allocation, in the plan's
order; empty while it waits), ``segments`` (each configuration it ran on, in order: what a learned
model observes), ``resizes``, ``requested`` (the GPUs its user asked for), and :meth:`ElasticState.progress_at`, :meth:`ElasticState.gpu_seconds_at`.

>>> model = StagedWork(total=100.0, stage_ends=(40.0, 100.0), rates=(2.0, 1.0))
>>> state = ElasticState(model, per_work=1.0, batch=None)
>>> state.work_after_stage(1000.0), state.speed((4,)) , model.speedup((4,), None, 1)
(960.0, 8.0, 4.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.job import Job

Layout = tuple[int, ...]  # GPUs on each node of an allocation, in the plan's order


class ScalingModel(Protocol):
    """How fast an elastic job makes progress, in its own unit, on a layout of GPUs at a batch configuration.

    ``unit`` names the progress (for messages and tables); ``total`` is the progress that completes the job;
    its life is cut into stages (``stage_end(s)``: the progress at which stage ``s`` ends, ``total`` for the
    last), within each of which :meth:`rate` is constant for a given layout and batch."""

    unit: str
    total: float

    def stage_end(self, stage: int) -> float: ...

    def last_stage(self) -> int: ...

    def rate(self, layout: Layout, batch: Any, stage: int) -> float:
        """Progress per second on ``layout`` at ``batch`` during ``stage``."""
        ...

    def default_batch(self, layout: Layout) -> Any:
        """The batch configuration the job runs at on ``layout`` when its policy gives none (the user's)."""
        ...

    def speedup(self, layout: Layout, batch: Any, stage: int) -> float:
        """Its rate on ``layout`` over its rate on one GPU at its default batch (for cluster efficiency)."""
        ...


class Segment(NamedTuple):
    """One stretch of a run on one configuration: from ``start`` to ``end`` (None: it goes on), first ``delay``
    seconds of restart."""

    start: float
    layout: Layout
    batch: Any
    stage: int
    delay: float
    end: float | None = None

    def measured(self, now: float) -> bool:
        """Whether the job ran on it past its restart by ``now`` (a learned model has seen it)."""
        return (now if self.end is None else self.end) - self.start > self.delay


class ElasticState:
    """An elastic job's state (see the module's docstring); the engine changes it, a policy reads it."""

    __slots__ = ("batch", "delay_at_start", "gpu_seconds", "layout", "model", "per_work", "requested", "resizes",
                 "segments", "speedup_seconds", "stage", "started")

    def __init__(self, model: ScalingModel, per_work: float, batch: Any, requested: int = 1) -> None:
        self.model = model
        self.requested = requested  # the GPUs its user asked for (what fixed-size baselines give it)
        self.per_work = per_work  # progress per second of work: model.total / job.duration
        self.batch = batch
        self.stage = 0
        self.layout: Layout = ()
        self.segments: list[Segment] = []
        self.resizes = 0  # allocation changes while running (a start is none)
        self.gpu_seconds = 0.0  # GPU-seconds held, closed segments
        self.speedup_seconds = 0.0  # seconds of progress weighted by the speedup they ran at, closed segments
        self.started = 0.0  # when the open segment began
        self.delay_at_start = 0.0  # the delay the open segment began with

    # --- what a policy reads ------------------------------------------------------------------------
    @property
    def gpus(self) -> int:
        return sum(self.layout)

    def progress_at(self, job: Job, now: float) -> float:
        """Progress in the job's own unit at ``now``."""
        return (job.duration - job.work_left_at(now)) * self.per_work

    def gpu_seconds_at(self, now: float) -> float:
        """GPU-seconds held so far (its attained service), the open segment's included."""
        return self.gpu_seconds + (now - self.started) * sum(self.layout)

    # --- what the engine does -------------------------------------------------------------------------
    def speed(self, layout: Layout) -> float:
        """Seconds of work per second on ``layout`` at the current batch and stage."""
        return self.model.rate(layout, self.batch, self.stage) / self.per_work

    def work_after_stage(self, duration: float) -> float:
        """Work left once the current stage ends (0 after the last)."""
        if self.stage >= self.model.last_stage():
            return 0.0
        return max(0.0, duration - self.model.stage_end(self.stage) / self.per_work)

    def begin(self, now: float, layout: Layout, delay: float) -> None:
        """A segment begins at ``now`` on ``layout``; one that began at this same instant is replaced (a resize
        in two steps at one instant ran on no configuration between them)."""
        self.layout, self.started, self.delay_at_start = layout, now, delay
        segment = Segment(now, layout, self.batch, self.stage, delay)
        if self.segments and self.segments[-1].start == now:
            self.segments[-1] = segment
        else:
            self.segments.append(segment)

    def close(self, now: float) -> None:
        """The open segment ends at ``now``: count its GPU-seconds and its speedup-weighted progress time."""
        ran = now - self.started
        if self.segments and self.segments[-1].end is None:
            self.segments[-1] = self.segments[-1]._replace(end=now)
        if ran > 0 and self.layout:
            self.gpu_seconds += ran * sum(self.layout)
            working = ran - min(ran, self.delay_at_start)
            if working > 0:
                self.speedup_seconds += working * self.model.speedup(self.layout, self.batch, self.stage)
        self.started = now
        self.delay_at_start = max(0.0, self.delay_at_start - ran)

    def stop(self, now: float) -> None:
        """The job leaves its GPUs (preempted, finished, evicted)."""
        self.close(now)
        self.layout = ()


@dataclass(frozen=True)
class StagedWork:
    """A scaling model for tests and examples: linear in GPUs, one rate per stage, any batch.

    >>> StagedWork(10.0, (5.0, 10.0), (1.0, 2.0)).rate((2, 1), None, 1)
    6.0
    """

    total: float
    stage_ends: Sequence[float]
    rates: Sequence[float]  # per stage, per GPU
    unit: str = "steps"

    def stage_end(self, stage: int) -> float:
        return float(self.stage_ends[stage])

    def last_stage(self) -> int:
        return len(self.stage_ends) - 1

    def rate(self, layout: Layout, batch: Any, stage: int) -> float:
        return float(self.rates[stage]) * sum(layout)

    def default_batch(self, layout: Layout) -> Any:
        return None

    def speedup(self, layout: Layout, batch: Any, stage: int) -> float:
        return float(sum(layout))
