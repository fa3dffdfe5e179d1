"""Synthetic traces shaped like Venus (Helios, SC'21), seeded.

Shapes taken from the public Venus September 2020 trace (summary figures
only): GPU counts are mostly 1 and 8 with a tail to 128; durations are
log-normal (median about 3 minutes, a heavy tail to days); submissions
follow a diurnal cycle that peaks in the afternoon; a few users submit most
jobs; each job is one of the 14 profiled workloads in Venus' proportions.
The arrival rate is set so that the offered load (GPU-seconds asked per
GPU-second available) equals ``load``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simcluster.config import setting
from simcluster.results import write_folder
from simcluster.traces.joblog import JobLog
from simcluster.traces.venus import DEFAULT_EPOCH

GPU_COUNTS = {1: 0.565, 2: 0.063, 3: 0.002, 4: 0.069, 6: 0.002, 8: 0.194, 16: 0.022, 24: 0.009,
              32: 0.040, 64: 0.003, 128: 0.017, 160: 0.001}
LOG_DURATION_MEAN, LOG_DURATION_STD, MAX_DURATION = 5.7, 2.43, 1_300_000
# share of submissions in each hour of the day
DIURNAL = [34, 32, 28, 25, 13, 11, 11, 11, 16, 29, 45, 54, 54, 54, 70, 73, 70, 69, 56, 55, 54, 60, 43, 33]
# (model, dataset, share of jobs, batch sizes seen) — the 14 workloads of the Lucid artifact
WORKLOADS = [
    ("PointNet", "ShapeNet", 4570, (32, 64, 128)), ("EfficientNet", "CIFAR-10", 3664, (32, 64, 128)),
    ("MobileNetV2", "CIFAR-10", 3624, (32, 64, 128)), ("ResNet18", "CIFAR-10", 2509, (32, 64, 128)),
    ("VGG", "CIFAR-10", 2392, (32, 64, 128)), ("PPO", "LunarLander", 1651, (32, 64, 128)),
    ("TD3", "BipedalWalker", 1615, (32, 64, 128)), ("NeuMF", "MovieLens", 1534, (64, 128)),
    ("MobileNetV3", "ImageNet", 736, (32, 64, 128)), ("BERT", "SQuAD", 656, (32,)),
    ("LSTM", "Wikitext2", 247, (64, 128)), ("DCGAN", "LSUN", 231, (32, 64, 128)),
    ("ResNet50", "ImageNet", 219, (32, 64, 128)), ("Transformer", "Multi30k", 211, (32, 64)),
]
AMP_SHARE = 0.43


@dataclass(frozen=True)
class SynthSpec:
    jobs: int = setting(2000, "Number of jobs.")
    nodes: int = setting(32, "Nodes in the cluster, split among the VCs.")
    vcs: int = setting(4, "Number of virtual clusters.")
    gpus_per_node: int = setting(8, "GPUs per node.")
    load: float = setting(0.8, "Offered load: GPU-seconds asked per GPU-second available.")
    users: int = setting(50, "Number of users (a few submit most jobs).")
    seed: int = setting(0, "Random seed; the same seed gives the same trace.")
    start: str = setting("2020-09-01 00:00:00", "Submit time of the first day.")
    epoch: str = field(default=DEFAULT_EPOCH, metadata={"help": "Time zero of the simulation."})

    def __post_init__(self) -> None:
        for name in ("jobs", "nodes", "vcs", "gpus_per_node", "users"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.vcs > self.nodes:
            raise ValueError(f"cannot split {self.nodes} nodes into {self.vcs} VCs")
        if not 0 < self.load:
            raise ValueError(f"load must be positive, got {self.load}")


def synthesize(spec: SynthSpec) -> JobLog:
    """A trace with integer-second submit times, ready to simulate or save."""
    rng = np.random.default_rng(spec.seed)
    n = spec.jobs
    vc_nodes = _split_nodes(spec, rng)
    vc_names = list(vc_nodes)

    # jobs go to VCs in proportion to their size (each VC equally loaded); users live in one VC
    # each, and within a VC a Zipf-like few submit most jobs
    vcs = rng.choice(len(vc_names), size=n, p=_normalise(list(vc_nodes.values())))
    user_vc = np.concatenate([np.arange(len(vc_names)), rng.integers(len(vc_names), size=max(0, spec.users - len(vc_names)))])
    users = np.empty(n, dtype=np.int64)
    for v in range(len(vc_names)):
        members = np.flatnonzero(user_vc == v)
        weight = 1.0 / np.arange(1, len(members) + 1) ** 1.1
        mine = vcs == v
        users[mine] = members[rng.choice(len(members), size=int(mine.sum()), p=_normalise(weight))]

    sizes = np.array(list(GPU_COUNTS))
    gpu = rng.choice(sizes, size=n, p=_normalise(list(GPU_COUNTS.values())))
    capacity = np.array([vc_nodes[v] * spec.gpus_per_node for v in vc_names])[vcs]
    gpu = np.minimum(gpu, np.maximum(1, capacity // 2))  # no VC is filled by one job

    duration = np.clip(np.rint(rng.lognormal(LOG_DURATION_MEAN, LOG_DURATION_STD, n)), 1, MAX_DURATION)
    total_gpus = sum(vc_nodes.values()) * spec.gpus_per_node
    span = float((gpu * duration).sum()) / (spec.load * total_gpus)
    submit = _diurnal_times(np.sort(rng.uniform(0.0, span, n)))
    offset = (pd.Timestamp(spec.start) - pd.Timestamp(spec.epoch)) // pd.Timedelta(seconds=1)

    kinds = rng.choice(len(WORKLOADS), size=n, p=_normalise([w[2] for w in WORKLOADS]))
    options = np.array([[*w[3], *[w[3][-1]] * (3 - len(w[3]))] for w in WORKLOADS], dtype=np.int64)
    n_options = np.array([len(w[3]) for w in WORKLOADS])
    batch = options[kinds, (rng.random(n) * n_options[kinds]).astype(int)]
    frame = pd.DataFrame(
        {
            "job_id": [f"s{spec.seed}-{i}" for i in range(n)],
            "user": [f"u{u}" for u in users],
            "vc": np.array(vc_names, dtype=object)[vcs],
            "gpu_num": gpu.astype(np.int64),
            "submit_time": (submit.astype(np.int64) + offset),
            "duration": duration.astype(np.int64),
            "model": np.array([w[0] for w in WORKLOADS], dtype=object)[kinds],
            "dataset": np.array([w[1] for w in WORKLOADS], dtype=object)[kinds],
            "batchsize": batch,
            "amp": (rng.random(n) < AMP_SHARE).astype(np.int64),
        }
    )
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    return JobLog(f"synth(seed={spec.seed}, jobs={n})", frame, vc_nodes, format="synthetic",
                 time_rule=f"seconds from {spec.epoch}", epoch=spec.epoch,
                 sizing=f"{len(vc_nodes)} VCs of the generator ({spec.nodes} nodes × {spec.gpus_per_node} GPUs)")


def vc_nodes_of(spec: SynthSpec) -> dict[str, int]:
    """The VCs and their nodes that :func:`synthesize` gives ``spec``, without drawing its jobs.

    >>> spec = SynthSpec(jobs=100, nodes=12, vcs=3, seed=4)
    >>> vc_nodes_of(spec) == synthesize(spec).vc_nodes
    True
    """
    return _split_nodes(spec, np.random.default_rng(spec.seed))  # the generator's first draw, as there


def save_trace(trace: JobLog, out: Path, epoch: str = DEFAULT_EPOCH) -> Path:
    """Write ``cluster_full_log.csv`` (Venus columns, wall-clock submit times) and ``vc_config.csv``."""
    frame = trace.frame.copy()
    stamps = pd.Timestamp(epoch) + pd.to_timedelta(frame["submit_time"], unit="s")
    frame["submit_time"] = stamps.dt.strftime("%Y-%m-%d %H:%M:%S")
    frame.insert(3, "jobname", "")
    frame.insert(5, "cpu_num", frame["gpu_num"])
    frame.insert(6, "state", "COMPLETED")
    config = pd.DataFrame({"vc": list(trace.vc_nodes), "num": list(trace.vc_nodes.values())})
    return write_folder(Path(out), {"cluster_full_log.csv": frame, "vc_config.csv": config})


def _split_nodes(spec: SynthSpec, rng: np.random.Generator) -> dict[str, int]:
    share = rng.dirichlet(np.full(spec.vcs, 2.0))
    nodes = np.maximum(1, np.floor(share * spec.nodes).astype(int))
    while nodes.sum() > spec.nodes:
        nodes[np.argmax(nodes)] -= 1
    nodes[np.argmax(share)] += spec.nodes - nodes.sum()
    return {f"vc{i}": int(k) for i, k in enumerate(nodes)}


def _diurnal_times(uniform: np.ndarray) -> np.ndarray:
    """Warp uniform times so each day's submissions follow the hourly profile."""
    day, within = np.divmod(uniform, 86400.0)
    cdf = np.concatenate([[0.0], np.cumsum(DIURNAL) / sum(DIURNAL)])
    hours = np.interp(within / 86400.0, cdf, np.arange(25) * 3600.0)
    return np.floor(day * 86400.0 + hours)


def _normalise(weights) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    return w / w.sum()
