"""CSV files beside the job log (estimates, submission logs, node and pod lists): read them, or say where they are wrong."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from simcluster.errors import TraceError
from simcluster.limits import check_csv, shown


def read_side_csv(path: str | Path, what: str, required: Sequence[str]) -> pd.DataFrame:
    """The file as text columns; TraceError if it is missing or lacks a ``required`` column."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(path, f"{what} not found")
    check_csv(path)  # its header and lines within bounds, before it is parsed
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TraceError(path, f"not a readable CSV file ({exc})") from exc
    for column in required:
        if column not in frame.columns:
            raise TraceError(path, f"missing column {column!r}; found: {', '.join(frame.columns)}", line=1,
                             field=column)
    return frame


def reject_first(path: str | Path, frame: pd.DataFrame, column: str, bad: pd.Series, problem: str) -> None:
    """TraceError at the first row where ``bad`` holds, naming its line and value."""
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise TraceError(path, f"{problem}: {shown(frame[column].iloc[row])}", line=row + 2, field=column)
