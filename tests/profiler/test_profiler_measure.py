"""The measurement loop, driven by a fake clock: exact throughputs and both stop rules."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from profiler_fakes import FakeClock

from profiler.measure import (
    MeasureSettings,
    StopReason,
    StopRule,
    Window,
    WindowRecorder,
    coefficient_of_variation,
    measure_steady_state,
    window_length,
)


def steps_taking(clock: FakeClock, durations: itertools.cycle[float]):  # type: ignore[type-arg]
    def step() -> float:
        clock.advance(next(durations))
        return 0.5

    return step


def test_a_steady_job_is_measured_exactly_and_stops_once_its_windows_agree() -> None:
    clock = FakeClock()
    settings = MeasureSettings(warmup_steps=3, window_s=1.0, cv_windows=4, cv_target=0.02, time_limit_s=60)
    result = measure_steady_state(steps_taking(clock, itertools.cycle([0.1])), settings, clock)

    assert result.reason is StopReason.STEADY
    assert result.iters_per_s == pytest.approx(10.0, rel=1e-9)
    assert len(result.windows) == 4  # it stops at the first moment the rule can be satisfied
    assert result.cv == pytest.approx(0.0, abs=1e-9)


def test_steps_longer_than_a_window_are_counted_in_fractions() -> None:
    clock = FakeClock()
    recorder = WindowRecorder(origin=clock(), window_s=1.0)
    recorder.start(clock())
    windows: list[Window] = []
    for _ in range(11):  # 4.4 s
        clock.advance(0.4)
        windows += recorder.record(clock())
    assert [w.index for w in windows] == [0, 1, 2, 3]
    assert all(w.iters_per_s == pytest.approx(2.5) for w in windows)
    assert all(w.completions in (2, 3) for w in windows)


def test_a_job_that_starts_late_skips_the_window_it_missed_the_start_of() -> None:
    clock = FakeClock()
    recorder = WindowRecorder(origin=clock(), window_s=1.0)
    clock.advance(0.3)
    recorder.start(clock())
    windows: list[Window] = []
    for _ in range(30):
        clock.advance(0.1)
        windows += recorder.record(clock())
    assert windows[0].index == 1
    assert all(w.iters_per_s == pytest.approx(10.0) for w in windows)


def test_a_job_that_never_steadies_stops_at_the_time_limit_with_its_mean_throughput() -> None:
    clock = FakeClock()
    settings = MeasureSettings(warmup_steps=0, window_s=0.5, cv_windows=3, cv_target=0.02, time_limit_s=20)
    began = clock()
    # Bursts: four quick steps then one slow one, so 0.5 s windows never agree.
    result = measure_steady_state(
        steps_taking(clock, itertools.cycle([0.05, 0.05, 0.05, 0.05, 0.8])), settings, clock
    )

    assert result.reason is StopReason.TIME_LIMIT
    assert clock() - began == pytest.approx(20.0, abs=0.8)
    assert result.cv > 0.02
    assert 0 < result.iters_per_s < 1 / 0.05


def test_windows_inside_one_long_step_never_count_as_steady() -> None:
    clock = FakeClock()
    # 0.3 s windows against steps of up to 0.9 s: many windows see a single step's
    # interpolated rate.  They must not end the measurement early.
    settings = MeasureSettings(warmup_steps=0, window_s=0.3, cv_windows=3, cv_target=0.02, time_limit_s=10)
    result = measure_steady_state(
        steps_taking(clock, itertools.cycle([0.05, 0.5, 0.05, 0.9])), settings, clock
    )
    assert result.reason is StopReason.TIME_LIMIT
    # Judged over windows holding several steps: near the true 4 steps per 1.5 s cycle,
    # far from the 1/0.9 s a window inside the long step alone would claim.
    assert result.iters_per_s == pytest.approx(4 / 1.5, rel=0.2)


def test_jobs_measured_together_are_judged_on_the_same_windows() -> None:
    settings = MeasureSettings(window_s=1.0, cv_windows=2, cv_target=0.05, time_limit_s=100)
    rule = StopRule(settings, origin=0.0, jobs=2)
    for index, rate in enumerate([10.0, 10.0, 10.0]):
        rule.add(0, Window(index, index, index + 1, rate, completions=10))
    rule.add(1, Window(1, 1, 2, 5.0, completions=5))
    assert rule.verdict(now=3.0) is None  # job 2 has a single window yet

    rule.add(1, Window(2, 2, 3, 5.0, completions=5))
    verdict = rule.verdict(now=3.0)
    assert verdict is not None and verdict.reason is StopReason.STEADY
    assert verdict.indices == (1, 2)
    assert verdict.iters_per_s == (10.0, 5.0)


def test_at_the_time_limit_without_any_window_the_verdict_says_nothing_was_measured() -> None:
    rule = StopRule(MeasureSettings(window_s=1.0, time_limit_s=5.0), origin=0.0)
    assert rule.verdict(now=4.9) is None
    verdict = rule.verdict(now=5.0)
    assert verdict is not None and verdict.reason is StopReason.TIME_LIMIT
    assert not verdict.measured and math.isnan(verdict.iters_per_s[0])


def test_windows_grow_to_hold_a_few_slow_steps_but_fit_the_time_limit() -> None:
    settings = MeasureSettings(window_s=1.0, cv_windows=5, time_limit_s=60)
    assert window_length(settings, 0.01) == 1.0
    assert window_length(settings, 0.5) == 2.0
    assert window_length(settings, 10.0) == 12.0  # 60 s / 5 windows
    assert window_length(settings, math.nan) == 1.0


def test_the_coefficient_of_variation_is_undefined_for_fewer_than_two_values() -> None:
    assert coefficient_of_variation([4.0, 4.0]) == 0.0
    assert coefficient_of_variation([1.0, 3.0]) == pytest.approx(0.5)
    assert coefficient_of_variation([2.0]) == math.inf
    assert coefficient_of_variation([0.0, 0.0]) == math.inf


@pytest.mark.parametrize(
    ("field", "value"),
    [("window_s", 0.0), ("cv_windows", 1), ("cv_target", 0.0), ("warmup_steps", -1), ("time_limit_s", 0.5)],
)
def test_settings_that_cannot_work_are_refused(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        MeasureSettings(**{field: value})  # type: ignore[arg-type]


@given(
    step_s=st.floats(min_value=0.003, max_value=3.0),
    window_s=st.floats(min_value=0.05, max_value=2.0),
    offset=st.floats(min_value=0.0, max_value=5.0),
)
def test_a_constant_step_time_gives_every_window_the_same_exact_rate(
    step_s: float, window_s: float, offset: float
) -> None:
    recorder = WindowRecorder(origin=100.0, window_s=window_s)
    now = 100.0 + offset
    recorder.start(now)
    windows: list[Window] = []
    while len(windows) < 3:
        now += step_s
        windows += recorder.record(now)
    assert all(w.iters_per_s == pytest.approx(1 / step_s, rel=1e-6) for w in windows)
    assert [w.index for w in windows] == list(range(windows[0].index, windows[0].index + len(windows)))
