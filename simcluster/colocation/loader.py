"""Which colocation model a run uses, by name: what the engine and sharing policies ask of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from simcluster.errors import TraceError
from simcluster.job import Workload

NAMES = ("default", "calibrated", "analytic", "lucid")
"""The models ``--colocation`` takes by name, besides the committed measurements' folder names
(:func:`committed_measurements`); anything else is a folder."""

MEASURED_DIR_NAME = "measured"
"""``traces/profiles/measured/<name>/``: tables our profiler measured on a GPU, committed for users to pick
by name (``--colocation h100``).  They sit one level down so that ``default`` does not take them: a table
of a newer GPU than the trace's, measured at one configuration, is a choice, not a default."""


def committed_measurements() -> dict[str, Path]:
    """Name -> folder of each measured table committed under ``traces/profiles/measured/``."""
    from simcluster.colocation.analytic import PROFILES_DIR

    root = PROFILES_DIR / MEASURED_DIR_NAME
    return {p.name: p for p in sorted(root.iterdir()) if p.is_dir()} if root.is_dir() else {}


class ColocationModel(Protocol):
    """Slowdowns and memory of jobs sharing GPUs; every lookup answers (no KeyError, no NaN)."""

    source: str
    provenance: dict[str, Any]  # kind (measured/calibrated/analytic/public/tables), description, ...

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
    """A model by name or folder.

    * ``default``: a table our profiler measured on a GPU (``traces/profiles/<gpu>/``, metadata.json
      ``"measured": true``) if one is committed, else the calibrated model;
    * ``calibrated``: the model fitted to public measurements (``traces/profiles/calibrated/``);
    * ``analytic``: the unfitted analytic model (for comparison);
    * ``lucid``: the public RTX 3090 table from the shared data;
    * ``h100`` (a folder name under ``traces/profiles/measured/``): tables our profiler measured;
    * a folder with ``single.csv`` and ``pair.csv`` (or ``.parquet``), or with a calibration's
      ``parameters.json`` (``python -m simcluster.colocation.calibrate --out FOLDER``).
    """
    from simcluster.colocation import (  # pandas-heavy: only when sharing
        analytic,
        calibrated,
        importers,
        model,
        schema,
    )

    if spec == "default":
        return analytic.default_model()
    if spec == "calibrated":
        return calibrated.calibrated_model()
    if spec == "analytic":
        return analytic.analytic_model()
    if spec == "lucid":
        single, pair = importers.import_lucid()
        folder = importers.lucid_dir()
        provenance = {"kind": "public", "description": "Lucid's public measurements on an RTX 3090 (ASPLOS'23 "
                      "artifact), interpolated where a pair was not measured", "tables": str(folder)}
        return model.ColocationModel(single, pair, source=f"Lucid RTX 3090 table ({folder})", provenance=provenance)
    folder = committed_measurements().get(spec) or Path(spec)
    if (folder / calibrated.PARAMETERS_FILE).is_file():
        return calibrated.calibrated_model(folder)
    single_path, pair_path = (
        next((p for p in (folder / f"{name}.csv", folder / f"{name}.parquet") if p.is_file()), None)
        for name in ("single", "pair")
    )
    if single_path is None or pair_path is None:
        names = (*NAMES, *committed_measurements())
        raise TraceError(folder, f"colocation tables not found: give {', '.join(repr(n) for n in names)} or a "
                                 "folder with single.csv and pair.csv (or .parquet), or with parameters.json")
    metadata = analytic.measured_metadata(folder)
    if metadata is not None:
        return analytic.measured_model(folder, metadata)
    single, pair = schema.read_single_table(single_path), schema.read_pair_table(pair_path)
    provenance = {"kind": "tables", "description": f"tables in {folder} (not marked as measured on a GPU)",
                  "tables": str(folder)}
    return model.ColocationModel(single, pair, source=f"tables in {folder}", provenance=provenance, validate=False)
