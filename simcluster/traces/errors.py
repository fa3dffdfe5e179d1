from __future__ import annotations

from pathlib import Path


class TraceError(ValueError):
    """Bad trace input, with where it is: file, line (1 = header) and field."""

    def __init__(self, path: str | Path, message: str, line: int | None = None, field: str | None = None) -> None:
        self.path, self.line, self.field = str(path), line, field
        where = self.path
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {message}")
