from __future__ import annotations

from pathlib import Path


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
        return f"{where}: {self.message}"
