"""ElasticFlow's ITP traces with deadlines (ASPLOS'23 artifact): ``elasticflow/traces/clusterNN.csv``.

``job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration`` — the ITP
job logs (``itp_2021/``) with the authors' additions: a (model, global batch) drawn per job, the job's
length in iterations (= its recorded duration at its recorded GPU count on A100s) and an absolute
deadline on the trace's clock.  Told apart from a plain ITP log by the ``num_iteration``,
``model_name`` and ``deadline`` columns.  Every (model, batch) must have a scaling curve in
``elasticflow/throughputs_A100`` (beside the traces in the shared data), and every job's GPU count
must be measured there.  The cluster is the paper's: 8 GPUs per node, 128 nodes for cluster04 and 64
for the other traces, unless ``nodes`` says otherwise.

>>> from simcluster.paths import shared_data_dir
>>> trace = load_elasticflow_trace(shared_data_dir() / "elasticflow/traces/cluster01.csv")  # doctest: +SKIP
>>> len(trace), trace.cluster.describe()                                                  # doctest: +SKIP
(1595, 'gpu:512')
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from simcluster.cluster_spec import ONE_VC, ClusterSpec
from simcluster.elastic.elasticflow_model import ElasticFlowThroughputs, load_elasticflow_throughputs
from simcluster.elastic.pollux_apps import OutOfMeasuredRange
from simcluster.errors import TraceError
from simcluster.paths import shared_data_dir
from simcluster.side_files import read_side_csv
from simcluster.traces.elastic_formats import ELASTICFLOW_COLUMNS as COLUMNS
from simcluster.traces.joblog import JobLog

GPUS_PER_NODE = 8
NODES = {"cluster04": 128}  # the paper's sizes; 64 nodes for the other clusters
DEFAULT_NODES = 64


def throughputs_beside(path: Path) -> Path:
    """``elasticflow/throughputs_A100`` beside ``elasticflow/traces/``, else the shared data's."""
    beside = path.resolve().parent.parent / "throughputs_A100"
    return beside if beside.is_dir() else shared_data_dir() / "elasticflow" / "throughputs_A100"


def load_elasticflow_trace(path: str | Path, throughputs: str | Path | ElasticFlowThroughputs | None = None, *,
                           nodes: int | None = None, gpus_per_node: int = GPUS_PER_NODE) -> JobLog:
    """Read and check an ElasticFlow trace (see the module's docstring)."""
    t0 = time.process_time()
    path = Path(path)
    raw = read_side_csv(path, "ElasticFlow trace", COLUMNS)
    table = throughputs if isinstance(throughputs, ElasticFlowThroughputs) else \
        load_elasticflow_throughputs(Path(throughputs) if throughputs else throughputs_beside(path))
    numbers = {}
    for field in ("submission_time", "num_iteration", "deadline", "batch_size", "num_gpu", "duration"):
        values = pd.to_numeric(raw[field].str.strip(), errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=float)) | (values.to_numpy(dtype=float) < 0)
        if field in ("num_iteration", "batch_size", "num_gpu"):
            bad |= values.to_numpy(dtype=float) < 1
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise TraceError(path, f"must be a {'positive' if field != 'submission_time' else 'non-negative'} "
                             f"number, got {raw[field].iloc[row]!r}", line=row + 2, field=field)
        numbers[field] = values.to_numpy(dtype=float)
    early = np.flatnonzero(numbers["deadline"] < numbers["submission_time"])
    if len(early):
        row = int(early[0])
        raise TraceError(path, f"deadline {raw['deadline'].iloc[row]} is before the submission time "
                         f"{raw['submission_time'].iloc[row]}", line=row + 2, field="deadline")
    ids = raw["job_id"].str.strip()
    repeated = ids.duplicated().to_numpy() | (ids == "").to_numpy()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise TraceError(path, f"empty or duplicate job id {ids.iloc[row]!r}", line=row + 2, field="job_id")
    models = raw["model_name"].str.strip()
    for (model, batch, gpus), rows in pd.DataFrame({"m": models, "b": numbers["batch_size"].astype(int),
                                                    "g": numbers["num_gpu"].astype(int)}).groupby(
                                                        ["m", "b", "g"], sort=False).groups.items():
        try:
            table.rate(model, batch, gpus)
        except OutOfMeasuredRange as exc:
            field = "model_name" if model not in table.tables else "num_gpu"
            raise TraceError(path, str(exc), line=int(min(rows)) + 2, field=field) from None
    frame = pd.DataFrame({
        "job_id": ids, "vc": ONE_VC, "user": "", "gpu_num": numbers["num_gpu"].astype(np.int64),
        "submit_time": numbers["submission_time"], "duration": numbers["duration"],
        "model_name": models, "batch_size": numbers["batch_size"].astype(np.int64),
        "num_iteration": numbers["num_iteration"], "deadline": numbers["deadline"],
    })
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    size = nodes if nodes is not None else NODES.get(path.stem, DEFAULT_NODES)
    if size < 1:
        raise ValueError(f"nodes must be positive, got {size}")
    too_big = np.flatnonzero(frame["gpu_num"].to_numpy() > size * gpus_per_node)
    if len(too_big):
        raise TraceError(path, f"job {frame['job_id'].iloc[too_big[0]]} asks for {frame['gpu_num'].iloc[too_big[0]]} "
                         f"GPUs, more than the cluster's {size * gpus_per_node}", field="num_gpu")
    cluster = ClusterSpec.uniform({ONE_VC: size}, gpus_per_node, str(path))
    return JobLog(str(path), frame, {ONE_VC: size}, load_cpu_seconds=time.process_time() - t0, format="elasticflow",
                 time_rule="seconds from the start of collection", sizing=f"{size} nodes × {gpus_per_node} GPUs "
                 "(the ElasticFlow paper's size for this trace)" if nodes is None else f"{size} nodes (given)",
                 cluster=cluster, columns={"job_id": "job_id", "submit_time": "submission_time", "gpu_num": "num_gpu",
                                           "duration": "duration"})
