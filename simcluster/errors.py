"""Errors about input files: :class:`TraceError` names the file, line and field; :class:`RowProblems`
gathers the bad rows of a table; :class:`OutputError` and :class:`WriteError` are about what is written.
The bottom floor: traces, colocation tables, cluster specs, side files and every writer raise them, so this
module imports nothing of simcluster."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np


class TraceError(ValueError):
    """Bad trace input, with where it is: file, line (1 = header) and field.

    ``args`` are the constructor's own arguments, so that whoever rebuilds the error as
    ``type(e)(*e.args)`` (SimPy, when a process fails; pickling, across worker processes) gets it whole.

    >>> str(TraceError("jobs.csv", "must be non-negative, got -4", line=3, field="duration"))
    "jobs.csv, line 3, field 'duration': must be non-negative, got -4"
    """

    def __init__(self, path: str | Path, message: str, line: int | None = None, field: str | None = None) -> None:
        super().__init__(str(path), message, line, field)
        self.path, self.message, self.line, self.field = str(path), message, line, field

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f", line {self.line}"
        if self.field is not None:
            where += f", field '{self.field}'"
        return readable(f"{where}: {self.message}")


LONGEST_WORD = 200


def readable(message: str) -> str:
    """``message`` with every run of more than :data:`LONGEST_WORD` non-blank characters (a value quoted from a
    file) cut to its start and end and its length, so that an error stays one readable paragraph.

    >>> readable("bad value " + "7" * 1000 + " here")
    'bad value 777777777777777777777777777777777777777777777777777777777777…777777777777777777777777777777 (1,000 characters) here'
    """
    if len(message) <= LONGEST_WORD:
        return message

    def cut(found: re.Match[str]) -> str:
        word = found.group(0)
        return f"{word[:60]}…{word[-30:]} ({len(word):,} characters)"

    return re.sub(rf"\S{{{LONGEST_WORD + 1},}}", cut, message)


class OutputError(ValueError):
    """A folder that may not be written or replaced; the message says why and what to do instead."""


class WriteError(OutputError, OSError):
    """Writing failed part-way (a read-only folder, a full disk): nothing was left behind.  An
    :class:`OutputError` for the commands, which say it in one paragraph, and an ``OSError`` for code that
    catches those.

    >>> str(cannot_write("results", PermissionError(13, "Permission denied")))
    'cannot write into results: Permission denied; nothing was written'
    """


def cannot_write(place: str | Path, exc: OSError) -> WriteError:
    """The :class:`WriteError` of a failed write into the folder ``place``."""
    return WriteError(f"cannot write into {place}: {exc.strerror or exc}; nothing was written")


class RowProblems:
    """The first problem of each bad row of a table read from ``path``, then one error or a count.

    ``lines[i]`` is the file line of row ``i``.  A problem has a field, a short reason (what
    ``--skip-invalid`` counts by) and a message (what the error says, computed only when shown).

    >>> problems = RowProblems("jobs.csv", [2, 3, 4])
    >>> problems.flag([False, True, True], "duration", "negative", lambda r: f"row {r} is negative")
    >>> problems.settle(skip_invalid=True)
    ([1, 2], Counter({'duration: negative': 2}))
    >>> problems.settle(skip_invalid=False)
    Traceback (most recent call last):
    ...
    simcluster.errors.TraceError: jobs.csv, line 3, field 'duration': row 1 is negative (1 more invalid row(s); --skip-invalid drops them)
    """

    def __init__(self, path: str | Path, lines: Sequence[Any] | np.ndarray, unit: str = "line") -> None:
        self.path, self.unit = path, unit  # unit "row": ``lines`` are a DataFrame's index labels
        self.lines = np.asarray(lines)
        self.found: dict[int, tuple[str, str, Callable[[int], str]]] = {}

    def flag(self, mask: Any, field: str, reason: str, describe: Callable[[int], str]) -> None:
        for row in np.flatnonzero(np.asarray(mask, dtype=bool)):
            self.found.setdefault(int(row), (field, reason, describe))

    def __bool__(self) -> bool:
        return bool(self.found)

    def settle(self, skip_invalid: bool) -> tuple[list[int], Counter[str]]:
        """The bad rows and their count by reason; without ``skip_invalid``, a TraceError at the first."""
        rows = sorted(self.found)
        if rows and not skip_invalid:
            field, _, describe = self.found[rows[0]]
            more = f" ({len(rows) - 1} more invalid row(s); --skip-invalid drops them)" if len(rows) > 1 else ""
            if self.unit != "line":
                label = self.lines[rows[0]]
                label = label.item() if isinstance(label, np.generic) else label
                raise TraceError(f"{self.path} {self.unit} {label!r}", describe(rows[0]) + more, field=field)
            raise TraceError(self.path, describe(rows[0]) + more, line=int(self.lines[rows[0]]), field=field)
        return rows, Counter(f"{self.found[r][0]}: {self.found[r][1]}" for r in rows)
