"""One colocation model per GPU type: the default model of a cluster of several types.

On a cluster of H100s and H200s two jobs sharing an H100 slow each other down as measured on H100s, and
on an H200 as measured on H200s. :class:`PerGpuType` holds the model of each of the cluster's GPU types
(each type's own default: its measurements first, then its refit; one shared model, the calibrated one,
for every type nobody measured) and answers for a GPU type through :meth:`PerGpuType.on`, which the
engine calls wherever it knows the GPU two jobs share.

Questions asked without a GPU type (a policy predicting how a pair would fare in a VC, a job's memory
before it is placed) get an answer that holds on every type: speeds and utilizations averaged over the
types' models, memory the largest. lucid's packing classifier learns from the first type's tables.

>>> from simcluster.colocation.loader import load_colocation_model
>>> from simcluster.job import Workload
>>> model = load_colocation_model("default", ["h100", "v100"])
>>> model.on("h100").provenance["gpu"], model.on("v100").provenance["kind"]
('h100', 'calibrated')
>>> a, b = Workload("ResNet18", "CIFAR-10", 32, 0), Workload("VGG", "CIFAR-10", 32, 0)
>>> mean = model.pair_speeds(a, 1, b, 1)
>>> [round(x, 6) for x in mean] == [round((h + v) / 2, 6) for h, v in zip(model.on("h100").pair_speeds(a, 1, b, 1),
...                                                                        model.on("v100").pair_speeds(a, 1, b, 1))]
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from simcluster.job import Workload

__all__ = ["PerGpuType"]


class PerGpuType:
    """The colocation model of each GPU type of a cluster (see the module's docstring).

    ``models``: every GPU type of the cluster (in type order) -> its model; types nobody measured share one
    model object. Answers what a single model answers, so policies and the engine need no other path.
    """

    def __init__(self, models: Mapping[str, Any]) -> None:
        if not models:
            raise ValueError("a per-type colocation model needs at least one GPU type")
        self.models = dict(models)
        self._distinct = _each_once(self.models.values())
        first = next(iter(self.models.values()))
        self.single, self.pair = first.single, first.pair  # (what lucid's packing classifier learns from)
        self.source = "; ".join(f"{gpu}: {m.source}" for gpu, m in self.models.items())
        self.provenance = {
            "kind": "per-gpu-type",
            "description": "each GPU type's own model: " + "; ".join(
                f"{gpu}: {m.provenance.get('description', m.source)}" for gpu, m in self.models.items()),
            "types": {gpu: m.provenance for gpu, m in self.models.items()},
        }

    def on(self, gpu_type: str) -> Any:
        """The model of ``gpu_type`` (a type the cluster does not have: the first type's)."""
        model = self.models.get(gpu_type)
        return model if model is not None else next(iter(self.models.values()))

    # ----------------------------------------------------------------- questions without a GPU type
    def pair_speeds(self, a: Workload, a_gpus: int, b: Workload, b_gpus: int,
                    gpu_types: Sequence[str] = ()) -> tuple[float, float]:
        """Speeds of a and b sharing GPUs, averaged over the models of ``gpu_types`` (default: every type)."""
        models = self._distinct if not gpu_types else _each_once(map(self.on, gpu_types))
        speeds = [m.pair_speeds(a, a_gpus, b, b_gpus) for m in models]
        return sum(s[0] for s in speeds) / len(speeds), sum(s[1] for s in speeds) / len(speeds)

    def slowdowns(self, a: Workload, a_gpus: int, b: Workload, b_gpus: int) -> tuple[float, float]:
        s1, s2 = self.pair_speeds(a, a_gpus, b, b_gpus)
        return 1.0 / s1, 1.0 / s2

    def memory_mib(self, w: Workload, gpus: int) -> float:
        """The most memory ``w`` uses on any of the types (it must fit wherever it lands)."""
        return max(m.memory_mib(w, gpus) for m in self._distinct)

    def solo_util(self, w: Workload, gpus: int) -> float:
        return sum(m.solo_util(w, gpus) for m in self._distinct) / len(self._distinct)

    def solo_mem_util(self, w: Workload, gpus: int) -> float:
        return sum(m.solo_mem_util(w, gpus) for m in self._distinct) / len(self._distinct)

    # ----------------------------------------------------------------- bookkeeping
    def answered_by(self, quantity: str = "pair") -> dict[str, int]:
        """Lookups by the model that answered, each measured type's layers named with the type
        (``measured (h100)``, ``refit (h100)``), the shared model of the other types by its kind."""
        counts: dict[str, int] = {}
        for model in self._distinct:
            gpu = model.provenance.get("gpu") if model.provenance.get("kind") == "measured" else None
            for name, n in model.answered_by(quantity).items():
                key = f"{name} ({gpu})" if gpu else name
                counts[key] = counts.get(key, 0) + n
        return counts

    def fallback_counts(self, quantity: str = "pair") -> dict[str, int]:
        counts: dict[str, int] = {}
        for model in self._distinct:
            for step, n in model.fallback_counts(quantity).items():
                counts[step] = counts.get(step, 0) + n
        return counts

    def reset_counts(self) -> None:
        for model in self._distinct:
            model.reset_counts()

    def __repr__(self) -> str:
        return f"PerGpuType({', '.join(f'{gpu}={m!r}' for gpu, m in self.models.items())})"


def _each_once(models: Iterable[Any]) -> list[Any]:
    """``models`` without repeats of one object (types nobody measured share one), in order."""
    return list({id(m): m for m in models}.values())
