"""Submit times: how a job log's time column becomes whole seconds from the simulation's time zero.

The rule (``lucid-sim trace check`` says which case a log fell in):

* **Numbers are seconds.**  When most values of the column are numbers, they are relative seconds,
  taken as given — unless every one is at least 10⁹ (2001-09-09 in Unix time), which no relative
  time can be (see the bound below): then they are **Unix epoch seconds** (UTC), counted from the epoch.
* **Anything else is a timestamp**: ``2020-09-01 00:01:43`` or ISO 8601 (``2020-09-01T00:01:43.5``),
  optionally with a timezone (``+08:00``, ``Z``), counted in seconds from the epoch.
* **The epoch** (time zero, ``--epoch``) is by default 2020-04-01 00:00:00 for Helios/Venus logs
  (the origin the Helios and Lucid simulators count from, so results compare with theirs) and
  midnight of the first submission's day for any other log.
* **Timezones.**  A timestamp with an offset is an instant; an epoch without one is read in the
  offset of the log's first timestamp (so "midnight" is the cluster's midnight).  A column may not
  mix timestamps with and without an offset; an epoch with an offset needs timestamps with one.
* **Milliseconds.**  A column of numbers every one of which is at least 10¹¹ cannot be seconds of any
  kind (10¹¹ s is the year 5138); it is read as **Unix epoch milliseconds**, with a warning
  (:mod:`simcluster.traces.doubts`) until ``--time-format epoch-ms`` says so.
* ``--time-format`` replaces the guess: ``epoch-s`` and ``epoch-ms`` read numbers as Unix time
  (seconds, milliseconds), a strftime pattern reads timestamps of that form.
* Fractions of a second are dropped (times are floored to whole seconds).  A time before the epoch
  is an invalid row; so is a time ``MAX_SECONDS`` (10⁹ s, 31.7 years) or more after it — far beyond
  any trace, and small enough that every time stays exact in a float.

>>> seconds, rule = submit_seconds(pd.Series(["2020-09-01 00:00:10", "2020-09-01 00:01:00"]), None, None, None)
>>> seconds.tolist(), rule.describe()
([10.0, 60.0], 'timestamps, seconds from 2020-09-01 00:00:00 (midnight of the first day)')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simcluster.errors import TraceError
from simcluster.traces.columns import VENUS_EPOCH
from simcluster.traces.units import UNIX_FORMATS

MAX_SECONDS = 10**9  # bound on submit times (from the epoch) and durations
UNIX_FROM = 10**9  # a column of numbers all at least this is Unix time
MILLIS_FROM = 10**11  # ... and one of numbers all at least this, Unix time in milliseconds
FIELD = "submit_time"
_OFFSET = r"\d:\d\d(?::\d\d(?:\.\d*)?)?\s*(?:Z|[+-]\d\d(?::?\d\d)?)$"  # a time of day, then a timezone
Flag = Callable[..., None]  # RowProblems.flag(mask, field, reason, describe)


@dataclass(frozen=True)
class TimeRule:
    """Which case of the rule a log's submit times fell in, and the epoch used."""

    kind: str  # "seconds", "unix", "unix-ms" or "timestamps"
    epoch: str | None  # time zero as text; None for relative seconds with no --epoch
    epoch_given: bool = False
    time_format: str | None = None  # --time-format, when given

    def describe(self) -> str:
        origin = "--epoch" if self.epoch_given else "midnight of the first day"
        if self.kind == "seconds":
            return "relative seconds, as given" + (f" (second 0 = {self.epoch}, --epoch)" if self.epoch else "")
        told = f", --time-format {self.time_format}" if self.time_format else ""
        if self.kind == "unix":
            return f"Unix epoch seconds (UTC{told}), counted from {self.epoch} ({origin})"
        if self.kind == "unix-ms":
            return f"Unix epoch milliseconds (UTC{told}), counted from {self.epoch} ({origin})"
        if not self.epoch_given and self.epoch == VENUS_EPOCH:
            origin = "the Helios/Lucid simulators' origin; --epoch to change"
        return f"timestamps{told}, seconds from {self.epoch} ({origin})"


def submit_seconds(col: pd.Series, epoch: str | None, default_epoch: str | None,
                   flag: Flag | None, time_format: str | None = None) -> tuple[np.ndarray, TimeRule]:
    """Seconds from the epoch for each row (NaN where the row is bad, flagged via ``flag``).

    ``time_format``: None for the rule, else ``epoch-s``, ``epoch-ms`` or a strftime pattern
    (:func:`simcluster.traces.units.parse_time_format`)."""
    flag = flag or (lambda *a: None)
    text = col.astype(str).str.strip()
    filled = text != ""
    flag(~filled, FIELD, "empty", lambda r: "empty submit time")
    if time_format in UNIX_FORMATS:
        return _from_numbers(text, pd.to_numeric(text, errors="coerce"), filled, epoch, flag, time_format)
    if time_format is None and _mostly_numbers(text[filled]):
        return _from_numbers(text, pd.to_numeric(text, errors="coerce"), filled, epoch, flag, None)
    return _from_stamps(text, filled, epoch, default_epoch, flag, time_format)


def _mostly_numbers(values: pd.Series, sample: int = 1000) -> bool:
    """Whether most values are numbers: told from an even sample unless that is close to a tie."""
    if values.empty:
        return False
    if len(values) > sample:
        share = pd.to_numeric(values.iloc[:: len(values) // sample], errors="coerce").notna().mean()
        if abs(share - 0.5) > 0.1:
            return bool(share > 0.5)
    return bool(pd.to_numeric(values, errors="coerce").notna().sum() * 2 > len(values))


def _from_numbers(text: pd.Series, nums: pd.Series, filled: pd.Series, epoch: str | None,
                  flag: Flag, time_format: str | None) -> tuple[np.ndarray, TimeRule]:
    values = nums.to_numpy(dtype=float, na_value=np.nan)
    finite = np.isfinite(values)
    flag(filled & ~finite, FIELD, "not a finite number", lambda r: f"not a finite number of seconds: {text.iloc[r]!r}")
    good = finite & (values >= 0)
    flag(finite & (values < 0), FIELD, "negative", lambda r: f"must be non-negative, got {text.iloc[r]}")
    if time_format is None and good.any() and values[good].min() >= MILLIS_FROM and values[good].max() < 1e14:
        kind = "unix-ms"  # no reading as seconds is valid: 10¹¹ s is beyond the bound either way
    elif time_format is not None:
        kind = "unix" if time_format == "epoch-s" else "unix-ms"
    else:
        plausible = good & (values < 2**33)  # before the year 2242: the larger are beyond the bound either way
        kind = "unix" if plausible.any() and values[plausible].min() >= UNIX_FROM else "seconds"
    if kind != "seconds":
        if kind == "unix-ms":
            values = values / 1000.0
        if epoch:
            zero = _timestamp(epoch, "--epoch")
            if zero.tzinfo is not None:
                zero = zero.tz_convert("UTC").tz_localize(None)
            rule = TimeRule(kind, str(zero), True, time_format)
        else:
            plausible = good & (values < 2**33)  # (the rest are beyond the bound: flagged below)
            start = int(values[plausible].min()) if plausible.any() else 0
            zero = pd.Timestamp(start // 86400 * 86400, unit="s")
            rule = TimeRule(kind, str(zero), False, time_format)
        values = values - (zero - pd.Timestamp(0)).total_seconds()
        flag(good & (values < 0), FIELD, "before the epoch",
             lambda r: f"{text.iloc[r]} (Unix time) is before the epoch {rule.epoch}")
    else:
        rule = TimeRule("seconds", str(_timestamp(epoch, "--epoch")) if epoch else None, bool(epoch))
    _flag_beyond(values, text, flag)
    return np.where(np.isfinite(values) & (values >= 0), np.floor(values), np.nan), rule


def _parse_stamps(text: pd.Series, filled: pd.Series, pattern: str | None) -> tuple[pd.Series, np.ndarray]:
    """The timestamps (NaT where unreadable) and which of them carry a timezone."""
    n = len(text)
    if pattern is not None:
        zoned = "%z" in pattern or "%Z" in pattern
        return pd.to_datetime(text, format=pattern, errors="coerce", utc=zoned), np.full(n, zoned)
    stamps = pd.to_datetime(text, format="%Y-%m-%d %H:%M:%S", errors="coerce")  # the common case, fast
    aware = np.zeros(n, bool)
    slow = (stamps.isna() & filled).to_numpy()
    if slow.any():  # only times the fast format did not read can have a timezone
        aware[slow] = text[slow].str.contains(_OFFSET, regex=True).to_numpy()
    if aware.any():
        stamps = stamps.dt.tz_localize("UTC")  # all-NaT where aware; filled in below
        stamps[aware] = pd.to_datetime(text[aware], format="ISO8601", utc=True, errors="coerce")
        retry = stamps.isna().to_numpy() & filled.to_numpy() & ~aware
        if retry.any():
            stamps[retry] = pd.to_datetime(text[retry], format="ISO8601", errors="coerce").dt.tz_localize("UTC")
    else:
        retry = stamps.isna() & filled
        if retry.any():
            stamps[retry] = pd.to_datetime(text[retry], format="ISO8601", errors="coerce")
    return stamps, aware


def _from_stamps(text: pd.Series, filled: pd.Series, epoch: str | None, default_epoch: str | None,
                 flag: Flag, pattern: str | None) -> tuple[np.ndarray, TimeRule]:
    n = len(text)
    stamps, aware = _parse_stamps(text, filled, pattern)
    parsed = stamps.notna().to_numpy()
    form = f" (--time-format {pattern!r})" if pattern else ""
    flag(filled.to_numpy() & ~parsed, FIELD, "unparsable time",
         lambda r: f"unparsable time {text.iloc[r]!r}{form}")
    first = int(np.flatnonzero(parsed)[0]) if parsed.any() else None
    with_zone = bool(aware[first]) if first is not None else False
    flag(parsed & (aware != with_zone), FIELD, "mixed timezones",
         lambda r: f"{text.iloc[r]!r} {'lacks' if with_zone else 'has'} a timezone and the first timestamp "
         f"({text.iloc[first]!r}) {'has' if with_zone else 'lacks'} one; a log may not mix them")
    if first is None:
        return np.full(n, np.nan), TimeRule("timestamps", epoch or default_epoch, bool(epoch), pattern)
    usable = parsed & (aware == with_zone)
    earliest = stamps[usable].min()
    if with_zone:
        offset = pd.Timestamp(text.iloc[int(np.flatnonzero(usable & (stamps == earliest).to_numpy())[0])]).tz
    if epoch:
        zero = _timestamp(epoch, "--epoch")
    elif default_epoch:
        zero = pd.Timestamp(default_epoch)
    else:
        zero = (earliest.tz_convert(offset) if with_zone else earliest).normalize()
    if zero.tzinfo is not None and not with_zone:
        raise TraceError("--epoch", f"{epoch!r} has a timezone but the log's timestamps have none; "
                         "give the epoch without one")
    if with_zone and zero.tzinfo is None:
        zero = zero.tz_localize(offset)
    rule = TimeRule("timestamps", str(zero), bool(epoch), pattern)
    values = ((stamps - zero) / pd.Timedelta(seconds=1)).to_numpy(dtype=float, na_value=np.nan).copy()
    values[~usable] = np.nan
    flag(usable & (values < 0), FIELD, "before the epoch",
         lambda r: f"{text.iloc[r]} is before the epoch {rule.epoch} (--epoch)")
    _flag_beyond(values, text, flag)
    return np.where(np.isfinite(values) & (values >= 0), np.floor(values), np.nan), rule


def _flag_beyond(values: np.ndarray, text: pd.Series, flag: Flag) -> None:
    flag(np.isfinite(values) & (values >= MAX_SECONDS), FIELD, "beyond the time bound",
         lambda r: f"{text.iloc[r]} is {values[r]:.3g} s after the epoch, beyond the bound of {MAX_SECONDS:.0e} s "
         "(31.7 years)")


def _timestamp(text: str | pd.Timestamp, what: str) -> pd.Timestamp:
    try:
        stamp = pd.Timestamp(text)
    except (ValueError, TypeError) as exc:
        raise TraceError(what, f"not a timestamp: {text!r} ({exc})") from exc
    if stamp is pd.NaT:
        raise TraceError(what, f"not a timestamp: {text!r}")
    return stamp
