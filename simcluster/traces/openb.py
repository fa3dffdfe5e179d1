"""The Alibaba GPU cluster trace v2023 ("openb") pod list, as a heterogeneous trace.

``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,
scheduled_time`` — one pod per row; ``gpu_milli`` < 1000 asks for that fraction of one GPU (GPU
sharing), ``gpu_spec`` (``|``-separated GPU models, usually empty) restricts where it may run.

What the trace lacks, and how we fill it:

* **No durations.**  A pod's duration is ``deletion_time − creation_time`` (the only lifetime the
  trace gives; it includes the pod's own queueing in the real cluster).  Pods still running when the
  trace was cut have the cut as their deletion time, so their durations are lower bounds.
* **No workload types and no per-GPU-type speeds.**  Every pod runs at 1 iteration/s on every GPU
  type it may use (``total_steps`` = its duration in seconds), so GPU heterogeneity matters only
  through ``gpu_spec``; heterogeneity-aware policies behave like their agnostic forms.
* **No colocation interference.**  A fractional pod gets its fraction of one GPU at full speed;
  pods share a GPU while their ``gpu_milli`` sum to at most 1000.
* CPU-only pods (``num_gpu`` = 0) and pods deleted the second they were created are dropped and counted.

The cluster is the node list beside the pod file (``openb_node_list_gpu_node.csv``) unless
``--cluster`` gives another.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path

import pandas as pd

from simcluster.cluster_spec import load_node_list
from simcluster.errors import TraceError
from simcluster.side_files import read_side_csv
from simcluster.traces.hetero import FRAME_COLUMNS, HeteroTrace
from simcluster.traces.sizing import MAX_GPUS
from simcluster.traces.times import MAX_SECONDS

REQUIRED = ("name", "num_gpu", "gpu_milli", "creation_time", "deletion_time")
NODE_LIST = "openb_node_list_gpu_node.csv"
_INT = re.compile(r"^\s*\d+\s*$")


def looks_like_openb(path: Path) -> bool:
    try:
        with path.open() as handle:
            header = handle.readline()
    except (OSError, UnicodeDecodeError):
        return False
    return "gpu_milli" in header and "creation_time" in header


def load_openb_trace(path: str | Path, nodes: str | Path | None = None, *, skip_invalid: bool = False) -> HeteroTrace:
    t0 = time.process_time()
    path = Path(path)
    raw = read_side_csv(path, "pod list", REQUIRED)
    specs = raw["gpu_spec"] if "gpu_spec" in raw.columns else pd.Series([""] * len(raw))
    rows, problems = [], []
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    for i, (name, num_gpu, milli, created, deleted, spec) in enumerate(
            zip(raw["name"], raw["num_gpu"], raw["gpu_milli"], raw["creation_time"], raw["deletion_time"], specs)):
        line = i + 2
        fields = {"num_gpu": num_gpu, "gpu_milli": milli, "creation_time": created, "deletion_time": deleted}
        bad = next((f for f, v in fields.items() if not _INT.match(v)), None)
        if not name.strip() or name in seen:
            problems.append((line, "name", f"empty or duplicate pod name {name!r}"))
            continue
        if bad:
            problems.append((line, bad, f"must be a non-negative integer, got {fields[bad]!r}"))
            continue
        seen.add(name)
        gpus, m, start, end = int(num_gpu), int(milli), int(created), int(deleted)
        beyond = next((f for f, v in (("creation_time", start), ("deletion_time", end)) if v >= MAX_SECONDS), None)
        if beyond:
            problems.append((line, beyond, f"{fields[beyond]} is beyond the bound of {MAX_SECONDS:.0e} s (31.7 years)"))
            continue
        if gpus > MAX_GPUS:
            problems.append((line, "num_gpu", f"{num_gpu} is beyond the bound of {MAX_GPUS:,} GPUs"))
            continue
        if gpus == 0:
            skipped["num_gpu: CPU-only pod (no GPU)"] += 1
            continue
        if not 0 < m <= 1000:
            problems.append((line, "gpu_milli", f"must be in 1..1000 for a GPU pod, got {milli!r}"))
            continue
        if end < start:
            problems.append((line, "deletion_time", f"must not be before creation_time ({created}), got {deleted!r}"))
            continue
        if end == start:
            skipped["deletion_time: zero lifetime (deleted when created)"] += 1
            continue
        allowed = "|".join(s.strip().lower() for s in spec.split("|") if s.strip())
        rows.append((name, "unknown", gpus, m, end - start, 1.0, -1.0, float(start), allowed, line))
    if problems:
        if not skip_invalid:
            line, fld, msg = problems[0]
            more = f" ({len(problems) - 1} more invalid row(s); --skip-invalid drops them)" if len(problems) > 1 else ""
            raise TraceError(path, msg + more, line=line, field=fld)
        skipped.update(f"{fld}: {msg.split(',')[0]}" for _, fld, msg in problems)
    if not rows:
        raise TraceError(path, "no GPU pods in the trace")
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS).sort_values("submit_time", kind="stable")
    frame = frame.reset_index(drop=True)
    node_file = Path(nodes) if nodes else path.with_name(NODE_LIST)
    cluster = load_node_list(node_file) if node_file.is_file() else None
    notes = ["durations = deletion_time − creation_time (pods running at the cut: lower bounds)",
             "no workload types: 1 iteration/s on every allowed GPU type",
             f"gpu_milli < 1000: {int((frame['gpu_milli'] < 1000).sum()):,} pods share GPUs by fraction"]
    if cluster is None:
        notes.append(f"no {NODE_LIST} beside the pods: give --cluster")
    return HeteroTrace(str(path), frame, "openb", cluster, True, skipped, time.process_time() - t0, notes)
