from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simcluster.paths import shared_data_dir
from simcluster.traces import JobLog


@pytest.fixture(scope="session")
def venus_sept() -> Path:
    path = shared_data_dir() / "venus_sept"
    if not (path / "cluster_full_log.csv").is_file():
        pytest.skip(f"reference data not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    return path


def make_trace(rows: list[tuple], vc_nodes: dict[str, int]) -> JobLog:
    """rows: (vc, gpu_num, submit_time, duration) in trace order."""
    frame = pd.DataFrame(rows, columns=["vc", "gpu_num", "submit_time", "duration"])
    frame.insert(0, "job_id", [f"j{i}" for i in range(len(rows))])
    frame["user"] = "u"
    return JobLog("test", frame, vc_nodes)
