"""The Helios/Venus job log (SenseTime, SC'21, as the Lucid artifact ships it): what it holds beyond the
fields every job log has.

Its header is ``job_id,user,vc,jobname,gpu_num,cpu_num,state,submit_time,duration`` and, in the Lucid
artifact, each job's workload (``model,dataset,batchsize,amp``) and that workload's profile on one GPU
(``speed,gpu_util,gmem_util,gmem``); ``cluster_throughput.csv`` beside it is the whole cluster's
submissions in 10-minute bins (Lucid's throughput forecast learns from it).  Submit times count from
2020-04-01, the origin of the Helios and Lucid simulators.  The generic CSV reader
(:mod:`simcluster.traces.joblog`) reads the common fields of every format; this module the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.traces.columns import VENUS_EPOCH
from simcluster.traces.csvfile import numbers

REQUIRED = ("job_id", "vc", "gpu_num", "submit_time", "duration")  # the Venus format's own columns
WORKLOAD = ("model", "dataset", "batchsize", "amp")
PROFILE = ("gpu_util", "gmem_util", "gmem", "speed")
DEFAULT_EPOCH = VENUS_EPOCH
THROUGHPUT_LOG = "cluster_throughput.csv"  # Helios/Venus' whole-cluster submissions in 10-minute bins

Flag = Callable[[Any, str, str, Callable[[int], str]], None]  # RowProblems.flag(mask, field, reason, describe)


def workload_columns(raw: pd.DataFrame, flag: Flag) -> dict[str, pd.Series]:
    """The workload and profile columns a log holds, typed; a workload's non-numeric batch size or AMP flag
    is flagged (a job without a model needs neither)."""
    out: dict[str, pd.Series] = {}
    if all(c in raw for c in WORKLOAD):
        out["model"], out["dataset"] = raw["model"], raw["dataset"]
        for col in ("batchsize", "amp"):
            num = numbers(raw[col], exact_ints=True)
            ok = num.notna() & np.isfinite(num.to_numpy(dtype=float, na_value=np.nan))
            flag(~ok & (raw["model"] != ""), col, "not a number", _not_a_number(raw[col]))
            out[col] = num.where(ok, 0).astype(np.int64)
    for col in PROFILE:
        if col in raw:
            out[col] = pd.to_numeric(raw[col], errors="coerce")
    return out


def _not_a_number(text: pd.Series) -> Callable[[int], str]:
    return lambda r: f"not a number: {text.iloc[r]!r}"


def throughput_log_beside(log: Path) -> str | None:
    """The cluster's submission log beside a job log, if there is one (Lucid's forecast reads it)."""
    path = log.parent / THROUGHPUT_LOG
    return str(path) if path.is_file() else None
