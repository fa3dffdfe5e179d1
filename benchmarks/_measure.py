"""Shared by the benchmarks: run one measured simulation in a fresh process, report its figures."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def measure_in_subprocess(trace: str, policy: str, placement: str = "consolidate", **config: Any) -> dict[str, Any]:
    """Load + simulate in a new interpreter, so peak memory is this run's alone."""
    code = f"""
import json, resource, time
from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.traces import load_trace
w0 = time.perf_counter()
trace = load_trace({trace!r})
result = simulate(trace, SimConfig(policy={policy!r}, placement={placement!r}, **{config!r}))
s = result.summary
print(json.dumps(dict(jobs=s["jobs"], load_cpu=s["load_cpu_seconds"], sim_cpu=s["sim_cpu_seconds"],
    wall=time.perf_counter() - w0, peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    avg_jct=s["avg_jct"], avg_queue=s["avg_queue"], utilization=s["gpu_utilization"],
    shared=s["shared_gpu_fraction"], preemptions=s["preemptions"])))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{policy} on {trace} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


