"""Warnings where a job log looks misread: numbers in another unit than the loader took them in.

Nothing here changes what is loaded; each check says what it saw and which option reads the data
otherwise.  The checks, on the jobs that loaded:

* durations, unless ``--duration-unit`` was given: a median under 1 s or over 30 days, or a
  duration column whose name says another unit (``duration_min``, ``runtime_ms``, ``hours``);
* submit times: numbers read as Unix milliseconds without ``--time-format epoch-ms`` (every one
  at least 10¹¹), and wall-clock times before 2000 or more than a year in the future.

>>> frame = pd.DataFrame({"duration": [0, 0, 1], "submit_time": [0, 5, 9]})
>>> unit_doubts(frame, TimeRule("seconds", None), "duration", None)
['durations: the median is 0 s; if they are not seconds, give --duration-unit min or h']
>>> unit_doubts(frame.assign(duration=[60, 120, 90]), TimeRule("seconds", None), "duration_min", None)
["durations: column 'duration_min' sounds like minutes but is read as seconds; give --duration-unit min (or s to keep seconds)"]
"""

from __future__ import annotations

import re

import pandas as pd

from simcluster.traces.times import TimeRule

SHORTEST_MEDIAN, LONGEST_MEDIAN = 1.0, 30 * 86400.0  # seconds
EARLIEST = pd.Timestamp("2000-01-01")
_UNIT_IN_NAME = (("ms", r"(ms|msec|millis(econds?)?|milliseconds?)"), ("min", r"(min|mins|minutes?)"),
                 ("h", r"(h|hr|hrs|hours?)"))
_UNIT_WORDS = {"ms": "milliseconds", "min": "minutes", "h": "hours"}


def unit_doubts(frame: pd.DataFrame, rule: TimeRule, duration_column: str, duration_unit: str | None,
                now: pd.Timestamp | None = None) -> list[str]:
    """The warnings for a loaded log (``frame``: canonical columns, seconds); ``duration_unit`` as given (None:
    not given)."""
    found: list[str] = []
    if duration_unit is None and len(frame):
        named = unit_in_name(duration_column)
        median = float(frame["duration"].median())
        if named is not None:
            found.append(f"durations: column {duration_column!r} sounds like {_UNIT_WORDS[named]} but is read as "
                         f"seconds; give --duration-unit {named} (or s to keep seconds)")
        elif median < SHORTEST_MEDIAN:
            found.append(f"durations: the median is {median:g} s; if they are not seconds, give --duration-unit min "
                         "or h")
        elif median > LONGEST_MEDIAN:
            found.append(f"durations: the median is {median / 86400:,.0f} days; if they are milliseconds, give "
                         "--duration-unit ms")
    if rule.kind == "unix-ms" and rule.time_format is None:
        found.append("submit times: every one is 10¹¹ or more, which no count of seconds can be, so they are read "
                     "as Unix epoch milliseconds; --time-format epoch-ms says so (and silences this)")
    if rule.epoch is not None and len(frame):
        zero = pd.Timestamp(rule.epoch).tz_localize(None)
        first = zero + pd.Timedelta(seconds=float(frame["submit_time"].min()))
        last = zero + pd.Timedelta(seconds=float(frame["submit_time"].max()))
        future = (now or pd.Timestamp.now()) + pd.Timedelta(days=365)
        if first < EARLIEST:
            found.append(f"submit times: the first is {first}, before 2000; relative times read as Unix time, or the "
                         "wrong --epoch? (--time-format and --epoch say how to read them)")
        if last > future:
            found.append(f"submit times: the last is {last}, more than a year from now; milliseconds read as "
                         "seconds? (--time-format epoch-ms)")
    return found


def unit_in_name(column: str) -> str | None:
    """The unit a column's name ends in, other than seconds (``duration_min`` → ``min``), else None.

    >>> unit_in_name("duration_min"), unit_in_name("RunTimeHours"), unit_in_name("duration")
    ('min', 'h', None)
    """
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", column).lower()
    for unit, pattern in _UNIT_IN_NAME:
        if re.search(rf"(^|[_\W]){pattern}$", name):
            return unit
    return None
