"""The realised offered load of a trace: how busy its cluster would be while jobs are still being submitted,
if every job started the moment it was submitted.

The offered load that ``trace check`` has always shown (GPU-seconds asked ÷ (GPUs × span)) counts the whole
of every job, also the part that runs after the last submission; with heavy-tailed durations on a large
cluster much of that work lies outside the window, and a trace "at load 0.7" can leave most GPUs idle.
The realised load counts only what runs inside the window::

    realised = ∫ demand(t) dt over [first submit, last submit] ÷ (GPUs × (last submit − first submit))

where demand(t) is the GPUs of the jobs with ``submit ≤ t < submit + duration``.  A job submitted at ``s``
adds ``gpus × min(duration, last − s)`` to the integral, so the whole figure is one pass over the jobs.

>>> submit, duration, gpus = np.array([0, 50, 100]), np.array([100, 20, 10]), np.array([1, 2, 8])
>>> realised_load(submit, duration, gpus, capacity=4)  # (1·100 + 2·20 + 8·0) / (4 · 100)
0.35
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd


def realised_load(submit: Any, duration: Any, gpus: Any, capacity: float,
                  window: tuple[float, float] | None = None) -> float:
    """Demand integrated over the submission window ÷ (``capacity`` GPUs × the window's length).

    ``window`` is (first, last) submission; by default the jobs' own.  NaN when the window is empty (every
    job submitted at one instant) or there is no capacity.
    """
    submit = np.asarray(submit, dtype=float)
    if len(submit) == 0 or capacity <= 0:
        return float("nan")
    first, last = (float(submit.min()), float(submit.max())) if window is None else window
    if last <= first:
        return float("nan")
    inside = np.minimum(np.asarray(duration, dtype=float), last - submit)
    return float(np.dot(np.asarray(gpus, dtype=float), inside) / (capacity * (last - first)))


def realised_by_vc(frame: pd.DataFrame, vc_nodes: dict[str, int], gpus_per_node: int) -> dict[str, Any]:
    """The realised load of each VC and of the whole cluster, over the one window of the whole trace (as the
    offered load of ``trace check`` uses one span for all VCs).  A VC without a size gets None.

    >>> frame = pd.DataFrame({"vc": ["a", "a", "b"], "gpu_num": [1, 2, 8], "duration": [100, 20, 10],
    ...                       "submit_time": [0, 50, 100]})
    >>> realised_by_vc(frame, {"a": 1, "b": 1}, gpus_per_node=2)
    {'window_seconds': 100.0, 'vcs': {'a': 0.7, 'b': 0.0}, 'cluster': 0.35}
    """
    submit = frame["submit_time"].to_numpy(dtype=float)
    window = (float(submit.min()), float(submit.max())) if len(submit) else (0.0, 0.0)
    vcs: dict[str, float | None] = {}
    for name, jobs in frame.groupby("vc", sort=False):
        nodes = vc_nodes.get(str(name))
        vcs[str(name)] = None if not nodes else _finite(realised_load(
            jobs["submit_time"], jobs["duration"], jobs["gpu_num"], nodes * gpus_per_node, window))
    for name in vc_nodes:  # a VC that got no job realises nothing
        vcs.setdefault(name, 0.0 if window[1] > window[0] else None)
    total = sum(vc_nodes.values()) * gpus_per_node
    whole = realised_load(submit, frame["duration"], frame["gpu_num"], total, window) if total else math.nan
    cluster = _finite(whole)
    return {"window_seconds": window[1] - window[0], "vcs": vcs, "cluster": cluster}


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None
