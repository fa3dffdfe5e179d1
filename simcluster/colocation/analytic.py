"""The analytic colocation model: pair speeds from utilization, with no measurement behind it.

Without measurements the simulator still needs pair speeds, so this module estimates them from two
single-job figures, GPU utilization ``u`` (% of time a kernel runs) and memory:

**Pair speeds** (:func:`analytic_pair_speeds`).  A job using ``u`` % of the GPU alone needs that
share of the GPU's time to run at full speed.  Two jobs demand ``u1 + u2``:

* ``u1 + u2 <= 100``: both fit; each keeps its full share.
* above 100: the GPU is divided max-min fairly (each job gets ``min(demand, fair share)``, the
  share a light job leaves goes to the heavy one), and a job's speed is its allocation over its
  demand.  A light job beside a heavy one is barely slowed; two heavy jobs each get half.
* in both cases each job also loses ``KAPPA * u_other / 100`` (10 % against a fully busy
  partner) to interference: caches, memory bandwidth and context switches shared with the
  partner's kernels.

So ``speed_i = alloc_i / u_i * (1 - KAPPA * u_j / 100)``, in (0, 1], non-increasing in either
job's utilization, continuous at ``u1 + u2 = 100``.  The memory of the pair is the sum of the two
jobs' memory (each NVML figure holds its own CUDA context); whether it fits is for the simulator
to check against its GPU.

**Single jobs** (:func:`estimate_single_table`): our own assumptions, not measurements, for the
14 workloads of the trace x batch sizes 32/64/128 x AMP off/on on one 24 GiB-class GPU (the
RTX 3090 class the trace's durations come from).  Each workload is described by a few timing and
size figures (:data:`ASSUMPTIONS`, from general knowledge of the networks: FLOPs per sample,
layer counts, parameter counts, activation sizes) and a step-time model::

    gpu_ms  = fixed_ms + per_sample_us * batch / 1000      (AMP: per-sample / amp_gain, fixed x 1.1)
    step_ms = sync_ms + max(host_ms, gpu_ms)               (AMP: host x 1.25, autocast + GradScaler)
    util    = 100 * gpu_ms / step_ms
    gmem    = 600 + 1.1 * (params_m * 16 + act_mib * batch * (0.6 with AMP))   MiB

``sync_ms`` is host work the GPU cannot overlap (input batch, loss read-back), ``host_ms`` the
Python and kernel-launch time that overlaps GPU work, 16 bytes per parameter hold weights,
gradients and two optimizer moments, 600 MiB is the CUDA context and library workspaces, 10 %
allocator slack.  BERT at batch 64/128 in fp32 comes out above 24 GiB: a simulator with such GPUs
will not place it, as it would run out of memory.

The committed tables ``traces/profiles/analytic/single.csv`` and ``pair.csv`` are written by
:func:`write_analytic_tables` (``python -m simcluster.colocation.analytic``).  They are no longer the
default: fitted to public measurements, this model's successor (:mod:`simcluster.colocation.calibrated`)
predicts measured pair speeds far better.  The default is chosen in one place,
:func:`simcluster.colocation.loader.default_model`; these tables are its last resort.

>>> analytic_pair_speeds(30.0, 40.0)          # both fit: interference only
(0.96, 0.97)
>>> analytic_pair_speeds(100.0, 20.0)         # the light job keeps its 20 %, the heavy one gets 80 %
(0.784, 0.9)
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simcluster.colocation.folders import ANALYTIC_DIR_NAME, PROFILES_DIR, find_table
from simcluster.colocation.model import ColocationModel
from simcluster.colocation.schema import (
    PAIR_COLUMNS,
    SINGLE_COLUMNS,
    STATUS_OK,
    read_pair_table,
    read_single_table,
    validate_pair_table,
    validate_single_table,
    write_table,
)

__all__ = [
    "ANALYTIC_SOURCE",
    "ASSUMPTIONS",
    "BATCH_SIZES",
    "KAPPA",
    "WorkloadAssumption",
    "analytic_model",
    "analytic_pair_speeds",
    "analytic_pair_table",
    "estimate_single_table",
    "write_analytic_tables",
]

ANALYTIC_SOURCE = "analytic model (not measured)"
ANALYTIC_PROVENANCE = {
    "kind": "analytic",
    "description": "analytic model from our own assumptions, neither measured nor fitted to measurements "
                   "(its pair speeds are far from measured ones: see traces/profiles/calibrated/README.md)",
}
KAPPA = 0.1
"""Speed lost to interference against a partner that keeps the GPU fully busy."""
BATCH_SIZES = (32, 64, 128)


@dataclass(frozen=True, slots=True)
class WorkloadAssumption:
    """Estimated per-step costs and sizes of one workload (fp32, one GPU); see the module docstring."""

    model: str
    dataset: str
    sync_ms: float  # host time per step the GPU cannot overlap
    host_ms: float  # overlappable host time: Python, kernel launches
    fixed_ms: float  # GPU time per step independent of the batch (optimizer, small kernels)
    per_sample_us: float  # GPU time per sample, forward + backward, fp32
    amp_gain: float  # how much faster the per-sample GPU work runs under AMP
    params_m: float  # millions of parameters
    act_mib: float  # activation memory kept for backward, MiB per sample, fp32
    bandwidth: float  # memory-bandwidth utilization per unit of GPU utilization


ASSUMPTIONS: tuple[WorkloadAssumption, ...] = (
    # CIFAR-10 CNNs (32x32): light per sample, many layers -> launch and input overheads show.
    WorkloadAssumption("ResNet18", "CIFAR-10", 2.5, 4.0, 0.5, 150.0, 1.6, 11.2, 10.0, 0.50),
    WorkloadAssumption("MobileNetV2", "CIFAR-10", 2.5, 6.0, 0.3, 120.0, 1.3, 2.2, 14.0, 0.60),
    WorkloadAssumption("EfficientNet", "CIFAR-10", 2.5, 9.0, 0.3, 110.0, 1.3, 4.0, 16.0, 0.50),
    WorkloadAssumption("VGG", "CIFAR-10", 2.0, 2.5, 1.5, 80.0, 2.0, 15.0, 6.0, 0.50),
    # ImageNet (224x224): heavy per sample, the GPU is busy.
    WorkloadAssumption("ResNet50", "ImageNet", 3.0, 8.0, 2.0, 2300.0, 2.2, 25.6, 100.0, 0.80),
    WorkloadAssumption("MobileNetV3", "ImageNet", 3.0, 9.0, 0.5, 600.0, 1.4, 5.5, 45.0, 0.60),
    # Language: BERT-base at 384 tokens is the heaviest job; the others are small.
    WorkloadAssumption("BERT", "SQuAD", 2.0, 10.0, 8.0, 25000.0, 2.8, 110.0, 450.0, 0.70),
    WorkloadAssumption("Transformer", "Multi30k", 2.0, 6.0, 3.0, 350.0, 2.2, 43.0, 12.0, 0.40),
    WorkloadAssumption("LSTM", "Wikitext2", 2.0, 4.0, 1.0, 60.0, 1.5, 13.9, 15.0, 0.80),
    # Others: a GAN, point clouds, recommendation, reinforcement learning (tiny MLPs, launch-bound).
    WorkloadAssumption("DCGAN", "LSUN", 2.0, 5.0, 0.8, 170.0, 1.7, 6.4, 8.0, 0.45),
    WorkloadAssumption("PointNet", "ShapeNet", 3.0, 4.0, 0.5, 400.0, 1.8, 3.5, 45.0, 0.50),
    WorkloadAssumption("NeuMF", "MovieLens", 1.5, 3.0, 0.5, 2.0, 1.0, 0.8, 0.02, 0.20),
    WorkloadAssumption("PPO", "LunarLander", 0.5, 2.5, 0.5, 1.0, 1.0, 0.01, 0.01, 0.10),
    WorkloadAssumption("TD3", "BipedalWalker", 0.5, 4.0, 0.8, 1.0, 1.0, 0.2, 0.01, 0.10),
)
"""Our assumptions for the 14 workloads (units as in :class:`WorkloadAssumption`)."""

_CUDA_CONTEXT_MIB = 600.0
_ALLOCATOR_SLACK = 1.1
_BYTES_PER_PARAM = 16.0
_AMP_ACTIVATIONS = 0.6
_AMP_HOST = 1.25
_AMP_FIXED = 1.1
_AMP_BANDWIDTH = 0.8


# ----------------------------------------------------------------------------- single jobs
def _estimate(w: WorkloadAssumption, batch: int, amp: bool) -> dict[str, Any]:
    per_sample = w.per_sample_us / (w.amp_gain if amp else 1.0)
    gpu_ms = w.fixed_ms * (_AMP_FIXED if amp else 1.0) + per_sample * batch / 1000.0
    step_ms = w.sync_ms + max(w.host_ms * (_AMP_HOST if amp else 1.0), gpu_ms)
    util = min(100.0, 100.0 * gpu_ms / step_ms)
    activations = w.act_mib * batch * (_AMP_ACTIVATIONS if amp else 1.0)
    gmem = _CUDA_CONTEXT_MIB + _ALLOCATOR_SLACK * (w.params_m * 1e6 * _BYTES_PER_PARAM / 2**20 + activations)
    iters = 1000.0 / step_ms
    return {
        "model": w.model, "dataset": w.dataset, "batchsize": batch, "amp": int(amp), "gpu_num": 1,
        "iters_per_s": round(iters, 4), "samples_per_s": round(iters * batch, 3),
        "gpu_util": round(util, 2),
        "gmem_util": round(min(100.0, util * w.bandwidth * (_AMP_BANDWIDTH if amp else 1.0)), 2),
        "gmem": round(gmem), "torch_peak_mem": round(gmem - _CUDA_CONTEXT_MIB),
        "status": STATUS_OK, "error": "",
    }  # fmt: skip


def estimate_single_table(assumptions: tuple[WorkloadAssumption, ...] = ASSUMPTIONS) -> pd.DataFrame:
    """The single-job table (schema format) our assumptions give: workloads x 32/64/128 x AMP 0/1."""
    rows = [_estimate(w, batch, amp) for w in assumptions for batch in BATCH_SIZES for amp in (False, True)]
    return validate_single_table(pd.DataFrame(rows, columns=SINGLE_COLUMNS), "analytic single table")


# ----------------------------------------------------------------------------- pairs
def analytic_pair_speeds(u1: float, u2: float, kappa: float = KAPPA) -> tuple[float, float]:
    """Normalized speeds of two jobs with solo GPU utilizations ``u1``, ``u2`` (%) sharing a GPU.

    Max-min fair division of the GPU's time when the demands exceed 100 %, times an
    interference term ``1 - kappa * u_other / 100``; see the module docstring.
    """
    d1 = min(100.0, max(0.0, float(u1))) if math.isfinite(u1) else 100.0
    d2 = min(100.0, max(0.0, float(u2))) if math.isfinite(u2) else 100.0
    if d1 + d2 <= 100.0:
        a1, a2 = d1, d2
    elif d1 <= 50.0:
        a1, a2 = d1, 100.0 - d1
    elif d2 <= 50.0:
        a1, a2 = 100.0 - d2, d2
    else:
        a1 = a2 = 50.0
    share1 = a1 / d1 if d1 > 0 else 1.0
    share2 = a2 / d2 if d2 > 0 else 1.0
    return (
        round(share1 * (1.0 - kappa * d2 / 100.0), 6),
        round(share2 * (1.0 - kappa * d1 / 100.0), 6),
    )


def analytic_pair_table(single: pd.DataFrame, kappa: float = KAPPA) -> pd.DataFrame:
    """Every unordered pair (self-pairs included) of the ok, one-GPU rows of ``single``, analytic speeds."""
    single = validate_single_table(single, "single table for the analytic pair table")
    jobs = single[(single["status"] == STATUS_OK) & single["gpu_util"].notna()].to_dict("records")
    rows = []
    for i, a in enumerate(jobs):
        for b in jobs[i:]:
            if a["gpu_num"] != b["gpu_num"]:
                continue
            s1, s2 = analytic_pair_speeds(a["gpu_util"], b["gpu_util"], kappa)
            row = {
                f"{f}{k}": job[f]
                for k, job in ((1, a), (2, b))
                for f in ("model", "dataset", "batchsize", "amp", "gpu_num")
            }
            row.update(
                iters_per_s1=round(s1 * a["iters_per_s"], 4), iters_per_s2=round(s2 * b["iters_per_s"], 4),
                speed1=s1, speed2=s2,
                gpu_util=round(min(100.0, a["gpu_util"] + b["gpu_util"]), 2),
                gmem_util=_sum_percent(a["gmem_util"], b["gmem_util"]),
                gmem=_sum(a["gmem"], b["gmem"]),
                status=STATUS_OK, error="",
            )  # fmt: skip
            rows.append(row)
    return validate_pair_table(pd.DataFrame(rows, columns=PAIR_COLUMNS), "analytic pair table")


def _sum(x: float, y: float) -> float:
    return x + y if math.isfinite(x) and math.isfinite(y) else math.nan


def _sum_percent(x: float, y: float) -> float:
    total = _sum(x, y)
    return round(min(100.0, total), 2) if math.isfinite(total) else math.nan


# ----------------------------------------------------------------------------- files and models
_README = """# Analytic colocation tables (not measured)

`single.csv` and `pair.csv` here are **estimates, not measurements**, and no longer the default: against
the pair speeds Lucid's authors measured on an RTX 3090 they are worse than predicting the mean speed for
every pair (see `../calibrated/README.md`). The default is the calibrated model (`../calibrated/`), or on a
GPU type our profiler measured (`../measured/<gpu>/`) those measurements first; these tables answer only if
the calibrated parameters are missing, or when asked for by name (`--colocation analytic`, for comparison).

- `single.csv`: the 14 workloads x batch sizes 32/64/128 x AMP off/on on one GPU, from our own
  assumptions about each workload's step time and memory (general knowledge of the networks, no
  measured table copied), through a step-time model: see `simcluster/colocation/analytic.py`.
- `pair.csv`: every pair of those configurations, with speeds from the analytic formula
  (max-min fair division of GPU time by solo utilization, plus a 10 % interference term against a
  fully busy partner) and memory as the sum of the two jobs' memory.

Regenerate both with `python -m simcluster.colocation.analytic` (deterministic).
"""


def write_analytic_tables(directory: str | os.PathLike[str] | None = None) -> tuple[Path, Path]:
    """Write ``single.csv``, ``pair.csv`` and ``README.md`` of the analytic model; returns the two tables."""
    folder = Path(directory) if directory is not None else PROFILES_DIR / ANALYTIC_DIR_NAME
    single = estimate_single_table()
    pair = analytic_pair_table(single)
    single_path, pair_path = folder / "single.csv", folder / "pair.csv"
    write_table(single, single_path)
    write_table(pair, pair_path)
    (folder / "README.md").write_text(_README)
    for path in (single_path, pair_path):
        path.chmod(0o644)  # write_table's temporary file is private; these are shared tables
    return single_path, pair_path


def analytic_model(directory: str | os.PathLike[str] | None = None) -> ColocationModel:
    """The analytic model from its committed tables, or computed in memory when they are absent."""
    folder = Path(directory) if directory is not None else PROFILES_DIR / ANALYTIC_DIR_NAME
    single_path, pair_path = find_table(folder, "single"), find_table(folder, "pair")
    if single_path is not None and pair_path is not None:
        return ColocationModel(
            read_single_table(single_path), read_pair_table(pair_path), source=ANALYTIC_SOURCE,
            provenance=ANALYTIC_PROVENANCE,
        )
    single = estimate_single_table()
    return ColocationModel(single, analytic_pair_table(single), source=ANALYTIC_SOURCE,
                           provenance=ANALYTIC_PROVENANCE)


def main(argv: list[str] | None = None) -> int:
    """Regenerate the analytic tables: ``python -m simcluster.colocation.analytic [FOLDER]``."""
    args = sys.argv[1:] if argv is None else argv
    single_path, pair_path = write_analytic_tables(args[0] if args else None)
    print(f"wrote {single_path} and {pair_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
