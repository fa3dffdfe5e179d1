"""ElasticFlow's scaling curves (ASPLOS'23 artifact): A100 iterations per second by global batch and GPU count.

``elasticflow/throughputs_A100/<model>.csv`` of the shared data: one row per global batch size, one
column per GPU count (1, 2, 4, …, 64): strong scaling, the same global batch split over more GPUs,
flat or falling at high counts.  A job is only ever given one of these power-of-two counts (its
*levels*), and where it runs does not change its speed.  A count the table does not have, or a blank
or zero cell, is :class:`~simcluster.elastic.pollux_apps.OutOfMeasuredRange`: never interpolated.

The most GPUs a job may use (:meth:`ElasticFlowThroughputs.max_gpus`) follows the artifact: under
ElasticFlow's own policies a per-model rule (``models.get_max_gpu``: e.g. gpt2 at batch 128 at most 16,
bert at 64 at most 8, else at most the batch and 64; on T4s, the tables of ``throughputs_T4``, its T4 rule:
ncf 1, yolov3 4, bert and cifar10 16, deepspeech2 at 320 32, else 64); under every other policy (EDF,
Tiresias, …) the largest measured count, at most 64 and at most the global batch.

>>> table = ElasticFlowThroughputs({"m": {64: {1: 2.0, 2: 3.0, 4: 3.5, 8: float("nan")}}})
>>> table.rate("m", 64, 2), table.levels("m", 64), table.max_gpus("m", 64, rule="measured")
(3.0, [1, 2, 4], 4)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from simcluster.elastic.pollux_apps import OutOfMeasuredRange
from simcluster.elastic.tables import read_numbers
from simcluster.errors import TraceError

MAX_GPUS = 64
# ElasticFlow's own cap per (model, global batch) on A100s (models.get_max_gpu); other pairs: min(batch, 64)
ELASTICFLOW_CAPS: dict[tuple[str, int], int] = {
    ("gpt2", 128): 16, ("gpt2", 256): 32, ("bert", 64): 8, ("bert", 128): 16,
    ("inception3", 64): 16, ("inception3", 128): 32, ("resnet50", 64): 32, ("vgg16", 64): 32,
}
# the same rule on T4s (Pollux's applications, the artifact's elasticVpollux_e trace): per model, else 64
ELASTICFLOW_T4_CAPS: dict[str, int] = {"bert": 16, "cifar10": 16, "yolov3": 4, "ncf": 1}


@dataclass
class ElasticFlowThroughputs:
    """model → global batch → GPUs → iterations per second (NaN or 0: not measured)."""

    tables: dict[str, dict[int, dict[int, float]]]
    gpu_type: str = "A100"  # whose caps ElasticFlow's own policies follow (its --gpu_type)

    def _row(self, model: str, batch: int) -> dict[int, float]:
        if model not in self.tables:
            raise OutOfMeasuredRange(f"no scaling curve for model {model!r}; measured: {', '.join(sorted(self.tables))}")
        rows = self.tables[model]
        if batch not in rows:
            raise OutOfMeasuredRange(f"{model}: no scaling curve at global batch {batch}; measured: "
                                     f"{', '.join(map(str, sorted(rows)))}")
        return rows[batch]

    def rate(self, model: str, batch: int, gpus: int) -> float:
        """Iterations per second of ``model`` at global ``batch`` on ``gpus`` GPUs."""
        value = self._row(model, batch).get(gpus, math.nan)
        if not value > 0:
            raise OutOfMeasuredRange(f"{model} at global batch {batch}: no measurement on {gpus} GPUs; measured: "
                                     f"{', '.join(map(str, self.levels(model, batch)))}")
        return value

    def levels(self, model: str, batch: int, max_gpus: int | None = None) -> list[int]:
        """The GPU counts measured for (model, batch), ascending, up to ``max_gpus``."""
        return [g for g, v in sorted(self._row(model, batch).items())
                if v > 0 and (max_gpus is None or g <= max_gpus)]

    def max_gpus(self, model: str, batch: int, rule: str = "measured") -> int:
        """The most GPUs a job may use: ``rule`` "elasticflow" (the artifact's caps for its own policies)
        or "measured" (every other policy's: the largest measured count, ≤ 64, ≤ the batch)."""
        if rule == "elasticflow":
            if self.gpu_type == "T4":
                return 32 if (model, batch) == ("deepspeech2", 320) else ELASTICFLOW_T4_CAPS.get(model, MAX_GPUS)
            return ELASTICFLOW_CAPS.get((model, batch), min(batch, MAX_GPUS))
        if rule != "measured":
            raise ValueError(f"rule must be 'elasticflow' or 'measured', got {rule!r}")
        levels = self.levels(model, batch)
        return min(max(levels), MAX_GPUS, batch)

    def next_level(self, model: str, batch: int, gpus: int, max_gpus: int) -> int:
        """The next measured count above ``gpus`` (``gpus`` itself at the top), as ElasticFlow grows a job."""
        return next((g for g in self.levels(model, batch, max_gpus) if g > gpus), gpus)

    def level_below(self, model: str, batch: int, gpus: int, max_gpus: int) -> int:
        """The largest measured count strictly below ``gpus`` (0 if none): what fits in ``gpus − 1`` free GPUs."""
        return max((g for g in self.levels(model, batch, max_gpus) if g < gpus), default=0)


def load_elasticflow_throughputs(folder: str | Path) -> ElasticFlowThroughputs:
    """Every ``<model>.csv`` in ``folder`` (``global_batch_size`` then one column per GPU count)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TraceError(folder, "no such folder of ElasticFlow throughput tables")
    tables: dict[str, dict[int, dict[int, float]]] = {}
    for path in sorted(folder.glob("*.csv")):
        with path.open() as handle:
            header = [c.strip() for c in handle.readline().strip().split(",")]
        if not header or header[0] != "global_batch_size":
            raise TraceError(path, "expected a header 'global_batch_size,1,2,4,…'", line=1)
        try:
            counts = [int(c) for c in header[1:]]
        except ValueError:
            raise TraceError(path, f"GPU-count columns must be whole numbers, got {header[1:]}", line=1) from None
        frame = read_numbers(path, "throughput table", header, allow_blank=True)
        tables[path.stem] = {int(row[0]): {g: float(v) for g, v in zip(counts, row[1:], strict=True)}
                             for row in frame.itertuples(index=False)}
    if not tables:
        raise TraceError(folder, "no <model>.csv throughput tables in it")
    kind = folder.name.removeprefix("throughputs_") if folder.name.startswith("throughputs_") else "A100"
    return ElasticFlowThroughputs(tables, kind)
