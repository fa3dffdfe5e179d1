"""ElasticFlow's traces with deadlines (ASPLOS'23 artifact): its ITP traces (``elasticflow/traces/clusterNN.csv``),
its Philly-derived trace and the traces of its generator.

``job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration`` — the ITP
job logs (``itp_2021/``) with the authors' additions: a (model, global batch) drawn per job, the job's
length in iterations (= its recorded duration at its recorded GPU count on A100s) and an absolute
deadline on the trace's clock.  Told apart from a plain ITP log by the ``num_iteration``,
``model_name`` and ``deadline`` columns.  The artifact's other traces spell three of them as
``submit_time``, ``iteration`` and ``ddl`` (``philly_103959.csv`` adds ``real_iteration`` and
``real_duration``, which its simulator never reads; its generator's traces may add ``best_effort``): the
columns are picked as the artifact's reader picks them (:mod:`simcluster.traces.elastic_formats`).  Every
(model, batch) must have a scaling curve in ``throughputs_<GPU>`` (``elasticflow/throughputs_A100`` beside
the traces in the shared data, or the artifact's ``scheduler/throughputs_*`` beside its
``traces_for_ElasticFlow/``), and every job's GPU count must be measured there.  The cluster is the
paper's: 8 GPUs per node, 128 nodes for cluster04, 32 for ``philly_103959`` (16 nodes of 4 T4 GPUs for
``elasticVpollux_e``) and 64 for the other traces, unless ``nodes`` says otherwise.

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
from simcluster.traces.elastic_formats import elasticflow_columns
from simcluster.traces.joblog import JobLog

GPUS_PER_NODE = 8
# the artifact's cluster per trace (its run_fig8a.sh / run_fig8b.sh): nodes, GPUs per node, GPU type
NODES = {"cluster04": 128, "cluster07": 128, "cluster08": 128, "cluster09": 128, "cluster10": 32,
         "philly_103959": 32, "elasticVpollux_e": 16, "resnet_cifar_trace": 1}
NODE_GPUS = {"elasticVpollux_e": 4}
GPU_TYPES = {"elasticVpollux_e": "T4"}
DEFAULT_NODES = 64
# far above any real trace (a year is 3.2e7 s): a value past these is a broken file, not a long job
MAX_SECONDS = 1e12
MAX_ITERATIONS = 1e15
MAX_BATCH = 1 << 24


def throughputs_beside(path: Path) -> Path:
    """The scaling curves of the trace's GPU type (A100 unless the artifact ran it on others): ``throughputs_<GPU>``
    beside the traces' folder (the shared data's layout) or in the artifact's ``scheduler/`` beside its
    ``traces_for_ElasticFlow/``, else the shared data's ``elasticflow/throughputs_<GPU>``."""
    name = f"throughputs_{GPU_TYPES.get(path.stem, 'A100')}"
    up = path.resolve().parent.parent
    for beside in (up / name, up / "scheduler" / name):
        if beside.is_dir():
            return beside
    return shared_data_dir() / "elasticflow" / name


def _numbers(path: Path, raw: pd.DataFrame, column: str, field: str) -> np.ndarray:
    """One numeric column, or a TraceError at its first bad row (not a number, NaN, inf, negative, absurd)."""
    values = pd.to_numeric(raw[column].str.strip(), errors="coerce").to_numpy(dtype=float)
    counted = field in ("num_iteration", "batch_size", "num_gpu", "real_iteration")
    high = MAX_ITERATIONS if field in ("num_iteration", "real_iteration") else MAX_BATCH if counted else MAX_SECONDS
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values < (1 if counted else 0)) | (values > high)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        kind = "positive" if counted else "non-negative"
        raise TraceError(path, f"must be a {kind} number of at most {high:g}, got {raw[column].iloc[row]!r}",
                         line=row + 2, field=column)
    return values


def load_elasticflow_trace(path: str | Path, throughputs: str | Path | ElasticFlowThroughputs | None = None, *,
                           nodes: int | None = None, gpus_per_node: int | None = None) -> JobLog:
    """Read and check an ElasticFlow trace (see the module's docstring)."""
    t0 = time.process_time()
    path = Path(path)
    header = read_side_csv(path, "ElasticFlow trace", ()).columns.tolist()
    names = elasticflow_columns(header)
    raw = read_side_csv(path, "ElasticFlow trace", list(names.values()))
    table = throughputs if isinstance(throughputs, ElasticFlowThroughputs) else \
        load_elasticflow_throughputs(Path(throughputs) if throughputs else throughputs_beside(path))
    numbers = {field: _numbers(path, raw, names[field], field)
               for field in ("submission_time", "num_iteration", "deadline", "batch_size", "num_gpu", "duration")}
    for extra in ("real_iteration", "real_duration"):  # never read by the artifact, but checked all the same
        if extra in raw.columns:
            _numbers(path, raw, extra, extra)
    deadline = numbers["deadline"].copy()
    if "best_effort" in raw.columns:  # 1: no deadline (the artifact's sys.maxsize), 0: the deadline column's
        flag = raw["best_effort"].str.strip()
        wrong = ~flag.isin(["0", "1"]).to_numpy()
        if wrong.any():
            row = int(np.flatnonzero(wrong)[0])
            raise TraceError(path, f"must be 0 or 1, got {raw['best_effort'].iloc[row]!r}", line=row + 2,
                             field="best_effort")
        deadline[(flag == "1").to_numpy()] = np.nan
    early = np.flatnonzero(deadline < numbers["submission_time"])
    if len(early):
        row = int(early[0])
        raise TraceError(path, f"deadline {raw[names['deadline']].iloc[row]} is before the submission time "
                         f"{raw[names['submission_time']].iloc[row]}", line=row + 2, field=names["deadline"])
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
        "num_iteration": numbers["num_iteration"], "deadline": deadline,
    })
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    size = nodes if nodes is not None else NODES.get(path.stem, DEFAULT_NODES)
    per_node = gpus_per_node if gpus_per_node is not None else NODE_GPUS.get(path.stem, GPUS_PER_NODE)
    if size < 1 or per_node < 1:
        raise ValueError(f"nodes and GPUs per node must be positive, got {size} and {per_node}")
    too_big = np.flatnonzero(frame["gpu_num"].to_numpy() > size * per_node)
    if len(too_big):
        raise TraceError(path, f"job {frame['job_id'].iloc[too_big[0]]} asks for {frame['gpu_num'].iloc[too_big[0]]} "
                         f"GPUs, more than the cluster's {size * per_node}", field="num_gpu")
    cluster = ClusterSpec.uniform({ONE_VC: size}, per_node, str(path))
    return JobLog(str(path), frame, {ONE_VC: size}, load_cpu_seconds=time.process_time() - t0, format="elasticflow",
                 time_rule="seconds from the start of collection", sizing=f"{size} nodes × {per_node} GPUs "
                 "(the ElasticFlow paper's size for this trace)" if nodes is None else f"{size} nodes (given)",
                 cluster=cluster, columns={"job_id": "job_id", "submit_time": names["submission_time"],
                                           "gpu_num": "num_gpu", "duration": "duration"})
