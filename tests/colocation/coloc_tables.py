"""Small hand-written colocation tables for the tests (schema format)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from simcluster.colocation.schema import PAIR_COLUMNS, SINGLE_COLUMNS
from simcluster.paths import shared_data_dir

Job = tuple[str, str, int, int, int]  # model, dataset, batchsize, amp, gpus


def single_row(job: Job, gmem: float = math.nan, util: float = math.nan, status: str = "ok") -> dict:
    model, dataset, batch, amp, gpus = job
    ok = status == "ok"
    return {
        "model": model, "dataset": dataset, "batchsize": batch, "amp": amp, "gpu_num": gpus,
        "iters_per_s": 10.0 if ok else math.nan, "samples_per_s": 10.0 * batch * gpus if ok else math.nan,
        "gpu_util": util, "gmem_util": math.nan, "gmem": gmem, "torch_peak_mem": math.nan,
        "status": status, "error": "" if ok else "out of memory",
    }  # fmt: skip


def pair_row(a: Job, b: Job, s1: float, s2: float, status: str = "ok") -> dict:
    row: dict = {}
    for i, job in ((1, a), (2, b)):
        for field, value in zip(("model", "dataset", "batchsize", "amp", "gpu_num"), job, strict=True):
            row[f"{field}{i}"] = value
    ok = status == "ok"
    row.update(
        iters_per_s1=s1 * 10 if ok else math.nan, iters_per_s2=s2 * 10 if ok else math.nan,
        speed1=s1 if ok else math.nan, speed2=s2 if ok else math.nan,
        gpu_util=math.nan, gmem_util=math.nan, gmem=math.nan,
        status=status, error="" if ok else "out of memory",
    )  # fmt: skip
    return row


def singles(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=SINGLE_COLUMNS)


def pairs(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def lucid_folder() -> Path:
    """The shared Lucid RTX 3090 folder, or skip the test with the reason."""
    folder = shared_data_dir() / "profiles" / "lucid_rtx3090"
    if not (folder / "colocate_info.csv").is_file():
        pytest.skip(f"reference data not found at {folder} (set SIMCLUSTER_DATA to the shared data folder)")
    return folder


def gavel_file() -> Path:
    """The shared Gavel throughput file, or skip the test with the reason."""
    path = shared_data_dir() / "profiles" / "gavel" / "simulation_throughputs.json"
    if not path.is_file():
        pytest.skip(f"reference data not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    return path
