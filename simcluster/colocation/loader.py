"""Which colocation model a run uses, by name: what the engine and sharing policies ask of it."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from simcluster.job import Workload
from simcluster.traces.errors import TraceError


class ColocationModel(Protocol):
    """Slowdowns and memory of jobs sharing GPUs; every lookup answers (no KeyError, no NaN)."""

    source: str

    def pair_speeds(self, a: Workload, a_gpus: int, b: Workload, b_gpus: int) -> tuple[float, float]:
        """Normalized speeds (shared / alone) of a and b while they share GPUs."""
        ...

    def memory_mib(self, w: Workload, gpus: int) -> float:
        """GPU memory the workload uses on each of its GPUs."""
        ...

    def fallback_counts(self) -> dict[str, int]:
        """How many lookups each fallback step answered."""
        ...


def load_colocation_model(spec: str) -> ColocationModel:
    """'default' (our committed tables), 'lucid' (the public RTX 3090 table) or a folder of tables."""
    from simcluster.colocation import analytic, importers, model, schema  # pandas-heavy: only when sharing

    if spec == "default":
        return analytic.default_model()
    if spec == "lucid":
        single, pair = importers.import_lucid()
        return model.ColocationModel(single, pair, source=f"Lucid RTX 3090 table ({importers.lucid_dir()})")
    folder = Path(spec)
    single_path, pair_path = (
        next((p for p in (folder / f"{name}.csv", folder / f"{name}.parquet") if p.is_file()), None)
        for name in ("single", "pair")
    )
    if single_path is None or pair_path is None:
        raise TraceError(folder, "colocation tables not found: give 'default', 'lucid' or a folder "
                                 "with single.csv and pair.csv (or .parquet)")
    single, pair = schema.read_single_table(single_path), schema.read_pair_table(pair_path)
    return model.ColocationModel(single, pair, source=f"tables in {folder}", validate=False)
