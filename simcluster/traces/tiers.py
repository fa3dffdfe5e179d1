"""A job log's tier columns (docs/tiers.md): ``priority`` (a whole number, higher first), ``priority_class`` (a
name whose value a Kueue WorkloadPriorityClass gives, ``--kueue``), ``preemptible`` (true/false: spot work) and
``local_queue`` (the Kueue LocalQueue it is submitted to, ``namespace/name`` or a name one namespace holds).

Read by :mod:`~simcluster.traces.joblog` where a log has any of these columns; names are checked against the
run's Kueue objects when the run is resolved (the log does not know them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from simcluster.traces.csvfile import blank_cells, name_cells, numbers

TIER_COLUMNS = ("priority", "priority_class", "preemptible", "local_queue")
MAX_PRIORITY = 2**31 - 1  # Kubernetes' priorities are int32
MAX_NAME = 253  # a Kubernetes object name's limit (namespace/name: twice that and a slash)
TRUE, FALSE = ("true", "1", "yes", "y", "t"), ("false", "0", "no", "n", "f", "")

Flag = Callable[[Any, str, str, Callable[[int], str]], None]  # RowProblems.flag(mask, field, reason, describe)


def tier_columns(raw: pd.DataFrame, flag: Flag) -> dict[str, pd.Series]:
    """The tier columns ``raw`` holds, typed (``priority``: 0 where blank; ``preemptible``: False where blank;
    names: "" where blank); each bad value flagged.

    >>> raw = pd.DataFrame({"priority": ["100", "", "high"], "preemptible": ["true", "", "maybe"]})
    >>> seen = []
    >>> out = tier_columns(raw, lambda mask, field, why, text: seen.extend(
    ...     (field, text(int(r))) for r in np.flatnonzero(mask)))
    >>> out["priority"].tolist(), out["preemptible"].tolist(), seen  # doctest: +NORMALIZE_WHITESPACE
    ([100, 0, 0], [True, False, False], [('priority', "must be a whole number, got 'high'"),
     ('preemptible', "must be true or false, got 'maybe'")])
    """
    out: dict[str, pd.Series] = {}
    if "priority" in raw:
        text = raw["priority"].astype(str).str.strip()
        blank = blank_cells(text)
        value = numbers(text.where(~blank, "0"), exact_ints=True).to_numpy(dtype=float, na_value=np.nan)
        whole = np.isfinite(value) & (value == np.floor(value)) & (np.abs(value) <= MAX_PRIORITY)
        flag(~blank & ~whole, "priority", "not a whole number",
             lambda r: f"must be a whole number, got {text.iloc[r]!r}" if not np.isfinite(value[r])
             or value[r] != np.floor(value[r]) else f"must lie within ±{MAX_PRIORITY:,} (an int32), got {text.iloc[r]}")
        out["priority"] = pd.Series(np.where(~blank & whole, value, 0).astype(np.int64), index=raw.index)
    if "preemptible" in raw:
        text = raw["preemptible"].astype(str).str.strip().str.lower().replace({"nan": "", "none": ""})
        known = text.isin(TRUE + FALSE)
        flag(~known.to_numpy(), "preemptible", "not true or false",
             lambda r: f"must be true or false, got {raw['preemptible'].iloc[r]!r}")
        out["preemptible"] = text.isin(TRUE)
    for column in ("priority_class", "local_queue"):
        if column in raw:
            names = name_cells(raw[column])
            longest = 2 * MAX_NAME + 1 if column == "local_queue" else MAX_NAME
            flag((names.str.len() > longest).to_numpy(), column, "too long",
                 lambda r, names=names: f"a name of {len(names.iloc[r]):,} characters")
            out[column] = names
    if "priority" in out and "priority_class" in out:
        both = (name_cells(raw["priority"]) != "") & (out["priority_class"] != "")
        flag(both.to_numpy(), "priority_class", "priority and its class",
             lambda r: "a job gives a priority or a priority class, not both")
    return out
