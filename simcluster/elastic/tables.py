"""Numeric CSV tables of the scaling models: read, check, or say which file, line and field is wrong."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from simcluster.errors import TraceError
from simcluster.side_files import read_side_csv


def read_numbers(path: Path, what: str, columns: Sequence[str], *, allow_blank: bool = False) -> pd.DataFrame:
    """The ``columns`` of a CSV file as floats.  A value that is not a finite number is a TraceError naming
    its line and column (``allow_blank``: an empty field is NaN, "no measurement", as ElasticFlow's tables
    leave the GPU counts a batch was never run at)."""
    frame = read_side_csv(path, what, columns)
    if frame.empty:
        raise TraceError(path, f"the {what} has no rows")
    out = {}
    for column in columns:
        text = frame[column].str.strip()
        values = pd.to_numeric(text, errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=float))
        if allow_blank:
            bad &= (text != "").to_numpy() & (text.str.lower() != "nan").to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise TraceError(path, f"not a finite number: {frame[column].iloc[row]!r}", line=row + 2, field=column)
        out[column] = values.astype(float)
    return pd.DataFrame(out)
