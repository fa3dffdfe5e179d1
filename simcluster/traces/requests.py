"""A job log's topology requests (Kueue's model, docs/topology.md): ``pod_gpus`` (GPUs per pod), the level its
pods must (``topology_required``) or should (``topology_preferred``) share, and its slices: groups of
``slice_size`` pods, each inside one domain of the level ``slice_topology`` (Kueue's podset slices); and what
it asks of the links above its nodes: ``comm_share``, the part of its time alone spent communicating across
uplinks (docs/topology.md, "Link contention"; blank: ``--link-contention``'s).

Read by :mod:`~simcluster.traces.joblog` where a log has any of these columns; the level names are checked
against the run's topology when the run is resolved (the log does not know it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from simcluster.traces.csvfile import blank_cells, name_cells, numbers

REQUEST_COLUMNS = ("pod_gpus", "topology_required", "topology_preferred", "slice_topology", "slice_size")
COMM_SHARE = "comm_share"  # a job's own communication share (simcluster.features.links)
MAX_LEVEL_NAME = 200  # characters: a level name longer than this is a misread column, not a level

Flag = Callable[[Any, str, str, Callable[[int], str]], None]  # RowProblems.flag(mask, field, reason, describe)


def request_columns(raw: pd.DataFrame, gpus: pd.Series, flag: Flag) -> dict[str, pd.Series]:
    """The request columns ``raw`` holds, typed (``pod_gpus``: 0 where blank, the default pod; levels: "" where
    blank; ``comm_share``: NaN where blank, :func:`comm_shares`); each bad value flagged: a pod size that is
    not a whole number dividing the job's GPUs, a row that both requires and prefers a level, a share outside
    [0, 1].

    >>> raw = pd.DataFrame({"pod_gpus": ["8", "", "3"], "topology_required": ["rack", "", ""]})
    >>> seen = []
    >>> out = request_columns(raw, pd.Series([16, 4, 8]), lambda mask, field, why, text: seen.extend(
    ...     (field, text(int(r))) for r in np.flatnonzero(mask)))
    >>> out["pod_gpus"].tolist(), out["topology_required"].tolist(), seen
    ([8, 0, 0], ['rack', '', ''], [('pod_gpus', "must divide the job's 8 GPUs, got 3")])
    """
    out: dict[str, pd.Series] = {}
    if "pod_gpus" in raw:
        text = raw["pod_gpus"].astype(str).str.strip()
        blank = blank_cells(text)
        pods = numbers(text.where(~blank, "0"), exact_ints=True)
        value = pods.to_numpy(dtype=float, na_value=np.nan)
        whole = np.isfinite(value) & (value == np.floor(value)) & (value >= 0)
        flag(~blank & ~whole, "pod_gpus", "not a whole number", lambda r: f"must be a whole number of GPUs, got "
             f"{text.iloc[r]!r}")
        job = gpus.to_numpy(dtype=np.int64)
        size = np.where(whole, value, 0).astype(np.int64)
        bad = ~blank & whole & ((size <= 0) | (job % np.maximum(size, 1) != 0))
        flag(bad, "pod_gpus", "does not divide the job's GPUs",
             lambda r: f"must divide the job's {job[r]} GPUs, got {text.iloc[r]}")
        out["pod_gpus"] = pd.Series(np.where(blank | bad, 0, size), index=raw.index)
    if "slice_size" in raw:
        text = raw["slice_size"].astype(str).str.strip()
        blank = blank_cells(text)
        value = numbers(text.where(~blank, "0"), exact_ints=True).to_numpy(dtype=float, na_value=np.nan)
        whole = np.isfinite(value) & (value == np.floor(value)) & (value >= 1) & (value <= 1 << 20)
        flag(~blank & ~whole, "slice_size", "not a whole number of pods",
             lambda r: f"must be a whole number of pods from 1 to 1,048,576, got {text.iloc[r]!r}")
        out["slice_size"] = pd.Series(np.where(~blank & whole, value, 0).astype(np.int64), index=raw.index)
    if COMM_SHARE in raw:
        out[COMM_SHARE] = comm_shares(raw[COMM_SHARE], flag)
    for column in ("topology_required", "topology_preferred", "slice_topology"):
        if column in raw:
            levels = name_cells(raw[column])
            flag(levels.str.len() > MAX_LEVEL_NAME, column, "too long",
                 lambda r, levels=levels: f"a level name of {len(levels.iloc[r]):,} characters")
            out[column] = levels
    if "topology_required" in out and "topology_preferred" in out:
        both = (out["topology_required"] != "") & (out["topology_preferred"] != "")
        flag(both, "topology_preferred", "required and preferred",
             lambda r: "a job requires or prefers a level, not both")
    if "slice_size" in out or "slice_topology" in out:  # a slice is both: its level and its size
        sized = out["slice_size"] > 0 if "slice_size" in out else pd.Series(False, index=raw.index)
        placed = out["slice_topology"] != "" if "slice_topology" in out else pd.Series(False, index=raw.index)
        flag((sized != placed).to_numpy(), "slice_size" if placed.any() else "slice_topology", "half a slice",
             lambda r: "a slice needs both slice_topology (its level) and slice_size (its pods)")
    return out


def comm_shares(column: pd.Series, flag: Flag) -> pd.Series:
    """Each job's communication share, a number from 0 to 1, NaN where the cell is empty (the job takes
    ``--link-contention``'s); anything else flagged.  Only an empty cell is blank: a DataFrame's missing
    values arrive empty, so a written ``nan`` (or ``inf``) is a bad value, not a gap.

    >>> seen = []
    >>> def note(mask, field, why, text):
    ...     seen.extend((why, text(int(r))) for r in np.flatnonzero(mask))
    >>> out = comm_shares(pd.Series(["0.25", "", "1", "nan", "-inf", "x", "1.5"]), note)
    >>> out.tolist()[:3], out.isna().tolist()[3:]
    ([0.25, nan, 1.0], [True, True, True, True])
    >>> seen  # doctest: +NORMALIZE_WHITESPACE
    [('not a number', "must be a number from 0 to 1, got 'nan'"),
     ('not a number', "must be a number from 0 to 1, got 'x'"),
     ('not a finite number', "must be a finite number from 0 to 1, got '-inf'"),
     ('not a share from 0 to 1',
      'must be from 0 to 1 (the part of its time alone spent communicating), got 1.5')]
    """
    text = column.astype(str).str.strip()
    blank = (text == "").to_numpy()
    value = numbers(text.where(~blank, "0")).to_numpy(dtype=float, na_value=np.nan)
    finite = np.isfinite(value)
    flag(~blank & np.isnan(value), COMM_SHARE, "not a number",
         lambda r: f"must be a number from 0 to 1, got {text.iloc[r]!r}")
    flag(np.isinf(value), COMM_SHARE, "not a finite number",
         lambda r: f"must be a finite number from 0 to 1, got {text.iloc[r]!r}")
    outside = ~blank & finite & ((value < 0) | (value > 1))
    flag(outside, COMM_SHARE, "not a share from 0 to 1",
         lambda r: f"must be from 0 to 1 (the part of its time alone spent communicating), got "
         f"{text.iloc[r]}")
    return pd.Series(np.where(blank | ~finite | outside, np.nan, value), index=column.index)
