"""Steady-state throughput: windows of wall-clock time, stopped when they agree.

A job's throughput wobbles while caches, allocators and clocks settle.  So steps
are counted in fixed windows on a grid of wall-clock time, and measuring stops
once the latest ``cv_windows`` windows agree to within ``cv_target`` (coefficient
of variation), or at the time limit.  The throughput reported is the mean over
those latest windows.

Steps do not end on window boundaries, so progress is interpolated linearly
between step completions: a window from 1.0 s to 2.0 s that saw steps end at
0.9 s and 2.1 s got (2.0-1.0)/(2.1-0.9) of a step.  This makes windows exact for
a steady job however long its steps are, and lets two jobs that share a GPU be
measured over the very same windows (same origin, same grid).

Everything here takes a ``clock`` so that tests can drive it with a fake one.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

Clock = Callable[[], float]
"""Seconds on a clock shared by all processes of a host (``time.monotonic`` is, on Linux)."""

DEFAULT_CLOCK: Clock = time.monotonic


MAX_TIME_LIMIT_S = 3600  # a row's measurement: an hour at most (the plans take 8 s, the sweeps 60)
MAX_WARMUP_STEPS = 100_000
MAX_CV_WINDOWS = 1_000


@dataclass(frozen=True, slots=True)
class MeasureSettings:
    """When a throughput measurement starts and stops."""

    warmup_steps: int = field(
        default=10, metadata={"help": "steps run before measuring (allocator, cuDNN autotuning, clocks)"}
    )
    window_s: float = field(default=1.0, metadata={"help": "length of one measurement window in seconds"})
    cv_windows: int = field(default=5, metadata={"help": "how many of the latest windows must agree"})
    cv_target: float = field(
        default=0.02, metadata={"help": "stop once those windows' coefficient of variation is below this"}
    )
    time_limit_s: float = field(
        default=60.0, metadata={"help": "stop measuring after this many seconds (warm-up not counted)"}
    )

    def __post_init__(self) -> None:
        for name in ("window_s", "cv_target", "time_limit_s"):  # NaN passes every comparison below: not this one
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        for name, most in (("warmup_steps", MAX_WARMUP_STEPS), ("cv_windows", MAX_CV_WINDOWS),
                           ("time_limit_s", MAX_TIME_LIMIT_S)):  # a run's cost grows with each
            if getattr(self, name) > most:
                raise ValueError(f"{name} must be at most {most:,}, got {getattr(self, name)!r}")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        if self.window_s <= 0:
            raise ValueError(f"window_s must be > 0, got {self.window_s}")
        if self.cv_windows < 2:
            raise ValueError(
                f"cv_windows must be >= 2 (a variation needs two windows), got {self.cv_windows}"
            )
        if self.cv_target <= 0:
            raise ValueError(f"cv_target must be > 0, got {self.cv_target}")
        if self.time_limit_s < self.window_s:
            raise ValueError(
                f"time_limit_s ({self.time_limit_s:g}) must be at least one window ({self.window_s:g})"
            )


@dataclass(frozen=True, slots=True)
class Window:
    """Throughput in window ``index`` of the grid: ``[origin + index*w, origin + (index+1)*w)``."""

    index: int
    start: float
    end: float
    iters_per_s: float
    completions: int
    """Steps that ended inside the window; a window inside one long step has none."""


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Population standard deviation over mean; infinite where undefined (under 2 values, mean <= 0)."""
    if len(values) < 2:
        return math.inf
    mean = statistics.fmean(values)
    if mean <= 0:
        return math.inf
    return statistics.pstdev(values) / mean


class WindowRecorder:
    """Turns step completion times into window throughputs on a fixed grid.

    The first window is the first grid window that begins after the first step
    started, so a job that starts late never reports a window it was only partly in.
    """

    def __init__(self, origin: float, window_s: float) -> None:
        self._origin = origin
        self._window_s = window_s
        self._last_time: float | None = None
        self._steps = 0
        self._next_index = 0
        self._start_progress: float | None = None
        self._completions = 0

    @property
    def steps(self) -> int:
        return self._steps

    def start(self, now: float) -> None:
        """The first step starts now."""
        self._last_time = now
        self._next_index = max(0, math.ceil((now - self._origin) / self._window_s - 1e-9))
        if self._grid(self._next_index) <= now:
            self._start_progress = 0.0

    def record(self, now: float) -> list[Window]:
        """A step ended at ``now``; the windows this closed, oldest first."""
        if self._last_time is None:
            raise RuntimeError("WindowRecorder.start() must be called before the first step")
        previous, self._last_time = self._last_time, now
        self._steps += 1

        def progress(t: float) -> float:  # steps done at time t, for previous <= t <= now
            if now <= previous:
                return float(self._steps)
            return self._steps - 1 + (t - previous) / (now - previous)

        closed: list[Window] = []
        while True:
            start = self._grid(self._next_index)
            end = start + self._window_s
            if self._start_progress is None:
                if start > now:
                    return closed
                self._start_progress = progress(start)
            if end > now:
                if start <= now:
                    self._completions += 1
                return closed
            end_progress = progress(end)
            rate = (end_progress - self._start_progress) / self._window_s
            closed.append(Window(self._next_index, start, end, rate, self._completions))
            self._start_progress = end_progress
            self._completions = 0
            self._next_index += 1

    def _grid(self, index: int) -> float:
        return self._origin + index * self._window_s


def window_length(settings: MeasureSettings, seconds_per_step: float, min_steps: int = 4) -> float:
    """The window to measure with: ``window_s``, longer if needed to hold ``min_steps`` steps.

    Windows much shorter than a step would all see the same interpolated rate and
    look steady when nothing was learned.  The window never grows past what lets
    ``cv_windows`` of them fit in the time limit.
    """
    if math.isnan(seconds_per_step):
        return settings.window_s
    longest = max(settings.window_s, settings.time_limit_s / settings.cv_windows)
    return min(max(settings.window_s, min_steps * seconds_per_step), longest)


class StopReason(Enum):
    STEADY = "steady"
    TIME_LIMIT = "time limit"


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why measuring stopped and each job's throughput over the windows it was judged on."""

    reason: StopReason
    indices: tuple[int, ...]
    iters_per_s: tuple[float, ...]
    cv: tuple[float, ...]

    @property
    def measured(self) -> bool:
        """False when not a single window closed before the time limit."""
        return bool(self.indices)

    @property
    def start_index(self) -> int:
        return self.indices[0]

    @property
    def end_index(self) -> int:
        return self.indices[-1] + 1


class StopRule:
    """Decides, for one job or several measured together, when to stop.

    Jobs measured together are judged on the same windows (the latest window
    indices every job has closed), so their throughputs cover the same time.
    """

    def __init__(self, settings: MeasureSettings, origin: float, jobs: int = 1) -> None:
        self._settings = settings
        self._origin = origin
        self._windows: list[dict[int, Window]] = [{} for _ in range(jobs)]

    def add(self, job: int, window: Window) -> None:
        self._windows[job][window.index] = window

    def latest(self, job: int) -> Window | None:
        windows = self._windows[job]
        return windows[max(windows)] if windows else None

    def verdict(self, now: float) -> Verdict | None:
        """A verdict once the jobs are steady or time is up; None to keep measuring."""
        common = sorted(set.intersection(*(set(w) for w in self._windows)))
        latest = common[-self._settings.cv_windows :]
        if len(latest) == self._settings.cv_windows and self._steady(latest):
            return self._verdict(StopReason.STEADY, latest)
        if now - self._origin >= self._settings.time_limit_s:
            return self._verdict(StopReason.TIME_LIMIT, self._informative_suffix(common))
        return None

    def _steady(self, indices: Sequence[int]) -> bool:
        for windows in self._windows:
            judged = [windows[i] for i in indices]
            if any(w.completions == 0 for w in judged):
                return False
            if coefficient_of_variation([w.iters_per_s for w in judged]) >= self._settings.cv_target:
                return False
        return True

    def _informative_suffix(self, common: Sequence[int]) -> list[int]:
        """The latest windows, widened until every job finished ``cv_windows`` steps in them."""
        for size in range(self._settings.cv_windows, len(common) + 1):
            suffix = common[-size:]
            if all(sum(w[i].completions for i in suffix) >= self._settings.cv_windows for w in self._windows):
                return list(suffix)
        return list(common)

    def _verdict(self, reason: StopReason, indices: Sequence[int]) -> Verdict:
        series = [[windows[i].iters_per_s for i in indices] for windows in self._windows]
        means = tuple(statistics.fmean(values) if values else math.nan for values in series)
        cvs = tuple(coefficient_of_variation(values) for values in series)
        return Verdict(reason, tuple(indices), means, cvs)


def warm_up(step: Callable[[], float], steps: int, clock: Clock = DEFAULT_CLOCK) -> float:
    """Run ``steps`` steps; the seconds the last one took (NaN for none), to size windows.

    The last step, not the mean: first steps pay for allocation and autotuning.
    """
    last = math.nan
    for _ in range(steps):
        began = clock()
        step()
        last = clock() - began
    return last


def run_windows(
    step: Callable[[], float],
    origin: float,
    window_s: float,
    on_window: Callable[[Window], None],
    should_stop: Callable[[], bool],
    check_every: int = 1,
    clock: Clock = DEFAULT_CLOCK,
) -> int:
    """Step until told to stop, reporting each closed window; returns the steps run.

    ``should_stop`` is asked every ``check_every`` steps: a distributed job asks all
    its ranks at once, and not on every step, so the question costs little.
    """
    recorder = WindowRecorder(origin, window_s)
    recorder.start(clock())
    while True:
        step()
        for window in recorder.record(clock()):
            on_window(window)
        if recorder.steps % check_every == 0 and should_stop():
            return recorder.steps


@dataclass(frozen=True, slots=True)
class Measurement:
    iters_per_s: float
    cv: float
    reason: StopReason
    windows: tuple[Window, ...]
    steps: int


def measure_steady_state(
    step: Callable[[], float], settings: MeasureSettings, clock: Clock = DEFAULT_CLOCK
) -> Measurement:
    """Warm up, then measure one job in this process until it is steady or time is up."""
    seconds_per_step = warm_up(step, settings.warmup_steps, clock)
    window_s = window_length(settings, seconds_per_step)
    origin = clock()
    rule = StopRule(settings, origin)
    windows: list[Window] = []
    verdict: list[Verdict] = []

    def on_window(window: Window) -> None:
        windows.append(window)
        rule.add(0, window)

    def should_stop() -> bool:
        found = rule.verdict(clock())
        if found is not None:
            verdict.append(found)
        return found is not None

    steps = run_windows(step, origin, window_s, on_window, should_stop, clock=clock)
    final = verdict[0]
    return Measurement(final.iters_per_s[0], final.cv[0], final.reason, tuple(windows), steps)
