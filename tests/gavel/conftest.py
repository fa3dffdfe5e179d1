from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simcluster.paths import shared_data_dir
from simcluster.throughputs import ThroughputTable
from simcluster.traces.hetero import FRAME_COLUMNS, HeteroTrace


@pytest.fixture(scope="session")
def gavel_traces() -> Path:
    path = shared_data_dir() / "gavel_traces"
    if not (path / "t100.trace").is_file():
        pytest.skip(f"Gavel traces not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    if not (shared_data_dir() / "profiles" / "gavel" / "simulation_throughputs.json").is_file():
        pytest.skip("Gavel's simulation_throughputs.json not found in the shared data")
    return path


@pytest.fixture(scope="session")
def openb() -> Path:
    path = shared_data_dir() / "alibaba_openb"
    if not (path / "openb_node_list_gpu_node.csv").is_file():
        pytest.skip(f"openb trace not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    return path


def small_table() -> ThroughputTable:
    """Three job types on two GPU types ('fast', 'slow'), scale factors 1 and 2; some pairs share."""
    solo = {
        ("A", 1, 1): np.array([4.0, 1.0]), ("B", 1, 1): np.array([2.0, 1.5]), ("C", 1, 1): np.array([1.0, 1.0]),
        ("A", 1, 2): np.array([7.0, 1.8]), ("B", 1, 2): np.array([3.5, 2.8]), ("C", 1, 2): np.array([1.9, 1.9]),
    }
    pairs = {
        (("A", 1, 1), ("B", 1, 1)): np.array([[3.0, 1.6], [0.8, 1.2]]),
        (("A", 1, 1), ("C", 1, 1)): np.array([[3.5, 0.8], [0.9, 0.9]]),
        (("B", 1, 1), ("C", 1, 1)): np.array([[1.5, 0.9], [1.0, 0.8]]),
        (("C", 1, 1), ("C", 1, 1)): np.array([[0.8, 0.8], [0.0, 0.0]]),
        (("A", 1, 2), ("B", 1, 2)): np.array([[5.0, 3.0], [1.5, 2.0]]),
    }
    return ThroughputTable(("fast", "slow"), solo, pairs, "test table")


def make_trace(rows: list[tuple[str, int, int, float]], weights: list[float] | None = None) -> HeteroTrace:
    """rows: (job type, scale factor, total steps, arrival time)."""
    frame = pd.DataFrame(
        [(f"j{i}", jt, s, 1000, steps, (weights or [1.0] * len(rows))[i], -1.0, float(t), "", i + 1)
         for i, (jt, s, steps, t) in enumerate(rows)], columns=FRAME_COLUMNS)
    return HeteroTrace("test", frame.sort_values("submit_time", kind="stable").reset_index(drop=True), "gavel")
