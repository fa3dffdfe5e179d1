"""What an input may be: numbers finite and within a documented range, files within line and column limits.

Every command checks its options and files here before any work starts, so that a careless value is an
error naming the option (or the file, line and field) and the value, never a run that allocates without
bound, never stops, or turns NaN into a figure.  Where the cost of a run grows with a value (replicas,
seeds, bins, inflation, jobs), the value has an upper bound; the bounds are far above any real use and are
listed in docs/running.md ("Limits").  Values quoted in messages are shortened (:func:`shown`), so an error
about a 30 MB field stays one readable paragraph.

>>> number("nan", "--inflate", above=0, high=MAX_INFLATE)
Traceback (most recent call last):
...
simcluster.limits.LimitError: --inflate must be a finite number, got 'nan'
>>> number(0.5, "--bin", low=1)
Traceback (most recent call last):
...
simcluster.limits.LimitError: --bin must be at least 1, got 0.5
>>> shown("x" * 1000)
"'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…' (1,000 characters)"
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

from simcluster.errors import TraceError

# cost grows with these: each is checked before anything is built
MAX_REPLICAS = 10_000  # replicas of a trace (sweep/run --replicas, report --replicas)
MAX_RUNS = 1_000_000  # runs in one sweep's grid (traces × policies × seeds × settings × replicas)
MAX_SEEDS = 10_000  # seeds of one fragmentation study
MAX_INFLATE = 10.0  # fragmentation: GPU demand that arrives, × the cluster's GPUs
MAX_BINS = 1_000_000  # bins of one validate window
MAX_JOBS = 100_000_000  # jobs of one synthetic trace
MAX_USERS = 10_000_000  # users of one synthetic trace
MAX_BLOCKS = 1_000_000  # blocks a bootstrap replica draws (the trace's span ÷ the block)
# files are read only after their shape is checked against these (with bounded memory)
MAX_HEADER_BYTES = 65_536  # a CSV header line
MAX_COLUMNS = 1_000  # columns of a CSV file
MAX_LINE_BYTES = 1 << 20  # any line of a CSV file (1 MiB)
SHOWN = 60  # characters of a value quoted in a message


class LimitError(ValueError):
    """A value outside what its option or field admits; the message names it and the value."""


def shown(value: Any, limit: int = SHOWN) -> str:
    """``repr(value)``, cut to about ``limit`` characters with the whole length said.

    >>> shown("1e30"), shown(3.5)
    ("'1e30'", '3.5')
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, (str, bytes)) else len(text)
    quote = text[-1] if text[-1] in "'\"" else ""
    return f"{text[:limit - 1]}…{quote} ({size:,} characters)"


def number(value: Any, option: str, *, low: float | None = None, high: float | None = None,
           above: float | None = None, whole: bool = False) -> float:
    """``value`` (a number, or text as a command line gives it) as a float that is finite, at least ``low``,
    greater than ``above``, at most ``high`` and, with ``whole``, an integer; else :class:`LimitError` naming
    ``option`` and the value.

    >>> number("2.5", "--inflate", above=0, high=10), number(1e30, "--replicas", high=MAX_REPLICAS, whole=True)
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --replicas must be at most 10,000, got 1e+30
    """
    given = value
    if isinstance(value, bool):
        raise LimitError(f"{option} must be a number, got {shown(given)}")
    try:
        value = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError, OverflowError):
        raise LimitError(f"{option} must be a number, got {shown(given)}") from None
    if not math.isfinite(value):
        raise LimitError(f"{option} must be a finite number, got {shown(given)}")
    if whole and not value.is_integer():
        raise LimitError(f"{option} must be a whole number, got {shown(given)}")
    if low is not None and value < low:
        raise LimitError(f"{option} must be at least {_figure(low)}, got {shown(given)}")
    if above is not None and value <= above:
        raise LimitError(f"{option} must be greater than {_figure(above)}, got {shown(given)}")
    if high is not None and value > high:
        raise LimitError(f"{option} must be at most {_figure(high)}, got {shown(given)}")
    return value


def is_number(text: str) -> bool:
    """Whether ``text`` reads as a number (``float`` takes it: ``nan`` and ``inf`` too)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


TIME_UNITS = {"d": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0}  # largest first, as a time is written
_TIME_PART = re.compile(r"\s*(\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)\s*([dhms])\s*", re.IGNORECASE)


def duration(value: Any, option: str, *, high: float | None = None) -> float:
    """A time as seconds: a number of seconds, or a number with a unit or several, largest first (``90m``,
    ``4h``, ``1h30m``, ``54d``, ``1.5d``, ``2d12h``) as every time option of every command takes it; at least
    0, finite, at most ``high``; else :class:`LimitError` naming ``option`` and the text as given.

    >>> duration("1h30m", "--until"), duration("54d", "--until"), duration("90", "--until"), duration(60, "--x")
    (5400.0, 4665600.0, 90.0, 60.0)
    >>> duration("30m1h", "--checkpoint-interval")
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --checkpoint-interval must be a time: seconds, or with units largest first (30m, 1h30m, 54d), got '30m1h'
    >>> duration("1e308d", "--faults repair")
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --faults repair must be a finite time, got '1e308d'
    """
    if not isinstance(value, str):
        return number(value, option, low=0, high=high)
    text = value.strip()
    if is_number(text):
        return number(text, option, low=0, high=high)
    if text.startswith("-") and text[1:].strip():
        duration(text[1:], option)  # (a time, but negative)
        raise LimitError(f"{option} must be at least 0, got {shown(value)}")
    parts = list(_TIME_PART.finditer(text))
    units = [part[2].lower() for part in parts]
    order = [list(TIME_UNITS).index(unit) for unit in units]
    if not parts or "".join(part[0] for part in parts) != text or order != sorted(set(order)):
        raise LimitError(f"{option} must be a time: seconds, or with units largest first (30m, 1h30m, 54d), got "
                         f"{shown(value)}")
    try:
        seconds = sum(float(part[1]) * TIME_UNITS[unit] for part, unit in zip(parts, units, strict=True))
    except OverflowError:
        seconds = math.inf
    if math.isfinite(seconds) and (high is None or seconds <= high):
        return seconds
    bound = "a finite time" if high is None else f"at most {_figure(high)} s"
    raise LimitError(f"{option} must be {bound}, got {shown(value)}")


def _figure(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def check_csv(path: str | os.PathLike[str], what: str | None = None) -> None:
    """Refuse a CSV file whose shape no real table has, before it is parsed: a header line longer than
    :data:`MAX_HEADER_BYTES` or of more than :data:`MAX_COLUMNS` columns, or any line longer than
    :data:`MAX_LINE_BYTES`.  Reads the file in blocks (memory stays bounded whatever its lines), in C-level
    scans of each block.  ``what`` names the file in the error (default: its path).
    """
    path = Path(path)
    where = what or str(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise TraceError(where, f"cannot be read: {exc.strerror or exc}") from None
    with handle:
        head = handle.read(MAX_HEADER_BYTES + 1)
        check_header(head, where)
        _check_lines(handle, head, where)


def check_header(head: bytes, where: str) -> None:
    """The header checks of :func:`check_csv` on a file's first bytes ``head`` (at least
    :data:`MAX_HEADER_BYTES` + 1 of them, or the whole file)."""
    end = head.find(b"\n")
    if end < 0 and len(head) > MAX_HEADER_BYTES:
        raise TraceError(where, f"the header line is longer than {MAX_HEADER_BYTES:,} bytes: not a table's header "
                         "(a file of one long line?)", line=1)
    header = head[:end if end >= 0 else len(head)]
    columns = max(header.count(sep) for sep in (b",", b";", b"\t", b"|")) + 1
    if columns > MAX_COLUMNS:
        raise TraceError(where, f"the header has {columns:,} columns, more than the limit of {MAX_COLUMNS:,}: not a "
                         "table's header (a file of one long line of values?)", line=1)


def _check_lines(handle: Any, first: bytes, where: str) -> None:
    """:class:`TraceError` at the first line longer than :data:`MAX_LINE_BYTES` (``first``: the bytes read so
    far).  A line is that long only where two newlines lie further apart, and the lines inside one block of
    that size are shorter: so each block costs a find, an rfind and a count, whatever its lines."""
    line, position, last = 1, 0, -1  # line number at ``position``; where the last newline was
    block = first
    while block:
        found = block.find(b"\n")
        if (position + (found if found >= 0 else len(block))) - last - 1 > MAX_LINE_BYTES:
            raise TraceError(where, f"the line is longer than {MAX_LINE_BYTES:,} bytes (the limit of a line): "
                             "not a table's row", line=line)
        if found >= 0:
            line += block.count(b"\n")
            last = position + block.rfind(b"\n")
        position += len(block)
        block = handle.read(MAX_LINE_BYTES)
