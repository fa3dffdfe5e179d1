"""Throughput tables: each job type's iterations/s on each GPU type, alone and paired.

What a trace with per-type throughputs (Gavel's) runs on: a job's speed on a type is its
throughput there ÷ its best (:meth:`ThroughputTable.speeds`), and two jobs sharing a GPU each run
at their pair throughput ÷ their solo throughput there (:meth:`ThroughputTable.pair_factor`).

The format is our colocation tables (:mod:`simcluster.colocation.schema`) with one more column,
``gpu_type``: a single-job table (``model, dataset, batchsize, amp, gpu_num, iters_per_s, …``) and
a pair table (``…1, …2, iters_per_s1, iters_per_s2, …``), one block of rows per GPU type.  A job
type is ``(model, batchsize, gpu_num)``; ``gpu_num`` is Gavel's scale factor.  A missing or zero
throughput means "cannot run there" (alone) or "cannot share" (pair).

Gavel's ``simulation_throughputs.json`` is read with the existing importer
(:func:`simcluster.colocation.importers.import_gavel`, once per GPU type) and stacked.
``--throughputs`` takes that JSON file or a folder with ``single.csv`` and ``pair.csv`` in the
extended format (:func:`save_tables` writes one).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simcluster.colocation.importers import GAVEL_UNBATCHED, gavel_gpu_types, gavel_path, import_gavel
from simcluster.job import TypeSpeeds

JobKey = tuple[str, int, int]  # (model, batch size, scale factor)
PAIR_FLOOR = 0.05  # speed of a job beside a partner the table says it cannot share with (as colocation lookups' floor)
_BATCHED = re.compile(r"^\s*(?P<model>.+?)\s*\(batch size (?P<bs>\d+)\)\s*$")


def job_key(job_type: str, scale_factor: int) -> JobKey:
    """Gavel's job type string + scale factor → table key.

    >>> job_key("ResNet-50 (batch size 64)", 2), job_key("A3C", 1)
    (('ResNet-50', 64, 2), ('A3C', 1, 1))
    """
    match = _BATCHED.match(job_type)
    if match:
        return match["model"], int(match["bs"]), scale_factor
    name = job_type.strip()
    return name, GAVEL_UNBATCHED.get(name, 1), scale_factor


def job_type_name(key: JobKey) -> str:
    model, batch, _ = key
    return model if model in GAVEL_UNBATCHED else f"{model} (batch size {batch})"


@dataclass(eq=False)
class ThroughputTable:
    """Solo and paired throughputs per GPU type (iterations/s); 0 = cannot run / cannot share."""

    gpu_types: tuple[str, ...]
    solo: dict[JobKey, np.ndarray]  # key -> (types,)
    pairs: dict[tuple[JobKey, JobKey], np.ndarray] = field(default_factory=dict)  # (a, b) -> (types, 2)
    source: str = ""

    def speeds(self, key: JobKey, allowed: tuple[str, ...] | None = None) -> TypeSpeeds | None:
        """The job type's speed per GPU type (throughput ÷ its best), only on ``allowed`` types if given;
        None if the table lacks the job type (or it runs on none of the allowed types)."""
        row = self.solo.get(key)
        if row is None:
            return None
        pairs = [(t, float(v)) for t, v in zip(self.gpu_types, row) if v > 0 and (allowed is None or t in allowed)]
        best = max((v for _, v in pairs), default=0.0)
        if best <= 0:
            return None
        return TypeSpeeds({t: v / best for t, v in pairs}, best, key)

    def type_order(self) -> tuple[str, ...]:
        """GPU types fastest first, by mean throughput over the job types (how aware policies fill them)."""
        if not self.solo:
            return ()
        mean = np.mean(np.stack(list(self.solo.values())), axis=0)
        return tuple(self.gpu_types[i] for i in sorted(range(len(self.gpu_types)), key=lambda i: -float(mean[i])))

    @functools.cache  # noqa: B019 — a table lives as long as the process's runs
    def pair_factor(self, a: JobKey, b: JobKey, gpu_type: str) -> float:
        """a's throughput beside b on ``gpu_type`` ÷ a's throughput alone there; PAIR_FLOOR where they
        cannot share (a zero in the table)."""
        pair = self.pair_for(a, b, (gpu_type,))
        solo = self.solo.get(a)
        if pair is None or solo is None or gpu_type not in self.gpu_types or pair[0, 0] <= 0:
            return PAIR_FLOOR
        alone = float(solo[self.gpu_types.index(gpu_type)])
        return float(pair[0, 0]) / alone if alone > 0 else PAIR_FLOOR

    def mean_pair_factors(self, a: JobKey, b: JobKey, types: tuple[str, ...]) -> tuple[float, float]:
        """(a's, b's) factor averaged over the GPU types where they can share; PAIR_FLOOR where nowhere."""
        shared = [t for t in types if self.pair_factor(a, b, t) > PAIR_FLOOR and self.pair_factor(b, a, t) > PAIR_FLOOR]
        if not shared:
            return PAIR_FLOOR, PAIR_FLOOR
        return (float(np.mean([self.pair_factor(a, b, t) for t in shared])),
                float(np.mean([self.pair_factor(b, a, t) for t in shared])))

    def pair_for(self, a: JobKey, b: JobKey, types: tuple[str, ...]) -> np.ndarray | None:
        """(types, 2) throughputs of a and b sharing, or None when they cannot share anywhere."""
        row = self.pairs.get((a, b))
        flipped = row is None
        if flipped:
            row = self.pairs.get((b, a))
            if row is None:
                return None
            row = row[:, ::-1]
        assert row is not None
        out = np.array([row[self.gpu_types.index(t)] if t in self.gpu_types else (0.0, 0.0) for t in types])
        return out if (out.min(axis=1) > 0).any() else None

    @classmethod
    def from_tables(cls, single: pd.DataFrame, pair: pd.DataFrame, source: str = "") -> ThroughputTable:
        """Build from the extended single/pair tables (columns of the colocation schema + ``gpu_type``)."""
        gpu_types = tuple(dict.fromkeys(single["gpu_type"].astype(str).str.lower()))
        index = {t: i for i, t in enumerate(gpu_types)}
        solo: dict[JobKey, np.ndarray] = {}
        for gpu, model, batch, scale, its in zip(single["gpu_type"], single["model"], single["batchsize"],
                                                  single["gpu_num"], single["iters_per_s"]):
            key = (str(model), int(batch), int(scale))
            row = solo.setdefault(key, np.zeros(len(gpu_types)))
            row[index[str(gpu).lower()]] = float(its) if math.isfinite(float(its)) and float(its) > 0 else 0.0
        pairs: dict[tuple[JobKey, JobKey], np.ndarray] = {}
        columns = ["gpu_type", "model1", "batchsize1", "gpu_num1", "model2", "batchsize2", "gpu_num2",
                   "iters_per_s1", "iters_per_s2"]
        for gpu, m1, b1, g1, m2, b2, g2, i1, i2 in pair[columns].itertuples(index=False, name=None):
            if not (math.isfinite(i1) and math.isfinite(i2) and i1 > 0 and i2 > 0):
                continue  # zero or failed: cannot share
            a, b = (str(m1), int(b1), int(g1)), (str(m2), int(b2), int(g2))
            if a[2] != b[2]:
                continue  # only jobs of equal scale factor share GPUs
            row2 = pairs.setdefault((a, b), np.zeros((len(gpu_types), 2)))
            row2[index[str(gpu).lower()]] = (float(i1), float(i2))
        return cls(gpu_types, solo, pairs, source)


def gavel_tables(path: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Gavel's JSON as the extended (single, pair) tables: the existing importer per GPU type, stacked."""
    p = Path(path) if path is not None else gavel_path()
    singles, pairs = [], []
    for gpu in gavel_gpu_types(p):
        if "unconsolidated" in gpu:
            continue  # Gavel's placement-sensitivity variants, not GPU types
        single, pair = import_gavel(p, gpu_type=gpu)
        singles.append(single.assign(gpu_type=gpu))
        pairs.append(pair.assign(gpu_type=gpu))
    return pd.concat(singles, ignore_index=True), pd.concat(pairs, ignore_index=True)


def save_tables(single: pd.DataFrame, pair: pd.DataFrame, folder: str | Path) -> Path:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    single.to_csv(out / "single.csv", index=False)
    pair.to_csv(out / "pair.csv", index=False)
    return out


@functools.lru_cache(maxsize=8)
def load_throughputs(path: str | None = None) -> ThroughputTable:
    """``path``: Gavel's JSON (default: the shared data's) or a folder with extended single.csv/pair.csv."""
    p = Path(path) if path else gavel_path()
    if p.is_dir():
        for name in ("single.csv", "pair.csv"):
            if not (p / name).is_file():
                raise FileNotFoundError(f"{p}: no {name} (expected the throughput tables with a gpu_type column)")
        single, pair = pd.read_csv(p / "single.csv"), pd.read_csv(p / "pair.csv")
        for frame, name in ((single, "single.csv"), (pair, "pair.csv")):
            if "gpu_type" not in frame.columns:
                raise ValueError(f"{p / name}: missing column 'gpu_type'")
        return ThroughputTable.from_tables(single, pair, str(p))
    single, pair = gavel_tables(p)
    return ThroughputTable.from_tables(single, pair, str(p))

