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
    tables = [next((folder / f"{name}{ext}" for ext in (".csv", ".parquet") if (folder / f"{name}{ext}").is_file()), None)
              for name in ("single", "pair")]
    if not folder.is_dir() or None in tables:
        raise TraceError(folder, "colocation tables not found: give 'default', 'lucid' or a folder "
                                 "with single.csv and pair.csv (or .parquet)")
    single, pair = schema.read_single_table(tables[0]), schema.read_pair_table(tables[1])
    return model.ColocationModel(single, pair, source=f"tables in {folder}", validate=False)
