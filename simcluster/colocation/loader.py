"""Which colocation model a run uses: chosen here, by name and by the run's GPU type, and nowhere else.

``--colocation default`` (the default) depends on the GPU type G the run's lookups are for
(:func:`run_gpu_type`): a cluster that names exactly one GPU type (``--cluster h100:64``, a VC config
with a ``gpu_type`` column) runs on that type; a cluster that names none (the Venus, Philly and Helios
traces: every GPU of the untyped type ``gpu``) or several has no G.  ``default@h100`` names G whatever
the cluster says, e.g. to replay venus_sept as if its GPUs were H100s.  Then (:func:`default_model`):

1. G was measured by our profiler (``traces/profiles/measured/<G>/``): its measurements first, then
   the calibrated model refitted to them, or where no refit is committed the calibrated model
   (:class:`~simcluster.colocation.layered.MeasuredFirst`);
2. otherwise the calibrated model fitted to Lucid's RTX 3090 measurements (``traces/profiles/calibrated``):
   the GPUs the Venus trace's jobs were profiled on, so an untyped run keeps the figures it always had;
3. without its parameters, the analytic model.

A run with no G also takes a folder of tables measured on a GPU that a user dropped straight into
``traces/profiles/`` (``traces/profiles/rtx4090/``), as in step 1: their own GPU stands in for the trace's.

A cluster of several GPU types of which our profiler measured one or more (``--cluster h100:8,h200:8``)
gets each type's own default, steps 1-3 for each type (:func:`per_type_default`,
:class:`~simcluster.colocation.per_type.PerGpuType`): a pair sharing an H200 slows down as measured on
H200s, on an H100 as on H100s.

The other names pick one model outright: ``calibrated``, ``analytic``, ``lucid`` (the public RTX 3090
table), a measured folder's name (``h100``: its tables alone, interpolated where they hold no pair), or
any folder of tables or of a calibration's ``parameters.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from simcluster.cluster_spec import DEFAULT_GPU_TYPE
from simcluster.colocation import analytic, calibrated, importers, model, schema
from simcluster.colocation.folders import (
    ANALYTIC_DIR_NAME,
    CALIBRATED_DIR_NAME,
    MEASURED_DIR_NAME,
    PROFILES_DIR,
    committed_measurements,
    find_table,
    measured_metadata,
)
from simcluster.colocation.layered import MeasuredFirst
from simcluster.colocation.per_type import PerGpuType
from simcluster.errors import TraceError
from simcluster.job import Workload

__all__ = [
    "NAMES",
    "ColocationModel",
    "answer_shares",
    "committed_measurements",
    "default_model",
    "load_colocation_model",
    "measured_first",
    "measured_model",
    "per_type_default",
    "run_gpu_type",
]

NAMES = ("default", "calibrated", "analytic", "lucid")
"""The models ``--colocation`` takes by name, besides ``default@<gpu>``, the committed measurements' folder
names (:func:`~simcluster.colocation.folders.committed_measurements`) and any folder."""


class ColocationModel(Protocol):
    """Slowdowns and memory of jobs sharing GPUs; every lookup answers (no KeyError, no NaN).

    A model of several GPU types (:class:`~simcluster.colocation.per_type.PerGpuType`) also has
    ``on(gpu_type)``, the model of one type, which the engine asks for the GPU a pair shares."""

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

    def answered_by(self) -> dict[str, int]:
        """How many lookups each model answered (measured, refit, calibrated, ...)."""
        ...


def run_gpu_type(gpu_types: Sequence[str]) -> str | None:
    """The GPU type a run's colocation lookups are for: the cluster's one named type, else None.

    >>> run_gpu_type(["h100"]), run_gpu_type(["gpu"]), run_gpu_type(["v100", "k80"])
    ('h100', None, None)
    """
    named = {t for t in gpu_types if t != DEFAULT_GPU_TYPE}
    return named.pop() if len(named) == 1 and len(set(gpu_types)) == 1 else None


def load_colocation_model(spec: str, gpu_types: Sequence[str] = ()) -> ColocationModel:
    """A model by name or folder, for a run on a cluster of ``gpu_types`` (see the module docstring).

    A name that is no model and no folder, or ``default@<gpu>`` for a GPU type nobody measured, is a
    TraceError that lists the names that work.
    """
    name, at, gpu = spec.partition("@")
    if name == "default" and at:
        measured = _measured_folders(PROFILES_DIR)
        if gpu not in measured:
            raise TraceError(Path(spec), f"no tables measured on GPU type {gpu!r}: measured types are "
                                         f"{', '.join(repr(g) for g in measured) or 'none'}")
        return default_model(gpu=gpu)
    if spec == "default":
        return per_type_default(gpu_types) or default_model(gpu=run_gpu_type(gpu_types))
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
    single_path, pair_path = find_table(folder, "single"), find_table(folder, "pair")
    if single_path is None or pair_path is None:
        names = (*NAMES, "default@<gpu>", *committed_measurements())
        raise TraceError(folder, f"colocation tables not found: give {', '.join(repr(n) for n in names)} or a "
                                 "folder with single.csv and pair.csv (or .parquet), or with parameters.json")
    metadata = measured_metadata(folder)
    if metadata is not None:
        return measured_model(folder, metadata)
    single, pair = schema.read_single_table(single_path), schema.read_pair_table(pair_path)
    provenance = {"kind": "tables", "description": f"tables in {folder} (not marked as measured on a GPU)",
                  "tables": str(folder)}
    return model.ColocationModel(single, pair, source=f"tables in {folder}", provenance=provenance, validate=False)


def default_model(profiles_dir: str | Path | None = None, gpu: str | None = None) -> ColocationModel:
    """The default colocation model for a run on GPU type ``gpu`` (None: the cluster names none).

    In ``traces/profiles/`` (or ``profiles_dir``), in this order of preference:

    1. ``gpu``'s measured folder (``measured/<gpu>/``, or ``<gpu>/``), or with ``gpu=None`` the first folder
       straight in ``profiles_dir`` whose ``metadata.json`` says ``"measured": true``: :func:`measured_first`;
    2. ``calibrated/parameters.json``: the model fitted to public measurements;
    3. the analytic tables (``analytic/``, or computed in memory).

    A measured folder with a missing or broken table, or a broken ``parameters.json``, is an error
    (TableError), not a silent fallback.  ``source`` and ``provenance`` say which answered.
    """
    root = Path(profiles_dir) if profiles_dir is not None else PROFILES_DIR
    if gpu is not None:
        folder = _measured_folders(root).get(gpu)
    else:
        folder = next(iter(_measured_folders(root, committed=False).values()), None)
    return measured_first(folder, root) if folder is not None else _fitted_default(root)


def per_type_default(gpu_types: Sequence[str], profiles_dir: str | Path | None = None) -> PerGpuType | None:
    """The default model of a cluster of several GPU types of which our profiler measured one or more: each
    type's own default (:class:`~simcluster.colocation.per_type.PerGpuType`); None for any other cluster.

    >>> per_type_default(["h100"]), per_type_default(["v100", "k80"])
    (None, None)
    >>> sorted(per_type_default(["h100", "v100"]).models)
    ['h100', 'v100']
    """
    root = Path(profiles_dir) if profiles_dir is not None else PROFILES_DIR
    types = list(dict.fromkeys(gpu_types))
    measured = _measured_folders(root)
    if len(types) < 2 or not any(t in measured for t in types):
        return None
    other = default_model(root)  # one model for every type nobody measured
    return PerGpuType({t: measured_first(measured[t], root) if t in measured else other for t in types})


def _fitted_default(root: Path) -> model.ColocationModel:
    """The calibrated model of ``root``, or the analytic one where its parameters are missing."""
    if (root / CALIBRATED_DIR_NAME / calibrated.PARAMETERS_FILE).is_file():
        return calibrated.calibrated_model(root / CALIBRATED_DIR_NAME)
    return analytic.analytic_model(root / ANALYTIC_DIR_NAME)


def _measured_folders(root: Path, committed: bool = True) -> dict[str, Path]:
    """GPU type -> measured folder: ``root/measured/*`` (with ``committed``), then folders straight in ``root``
    whose metadata.json says measured (a user's own GPU)."""
    found = committed_measurements(root) if committed else {}
    if root.is_dir():
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            if folder.name not in (ANALYTIC_DIR_NAME, CALIBRATED_DIR_NAME, MEASURED_DIR_NAME, *found) \
                    and measured_metadata(folder) is not None:
                found[folder.name] = folder
    return found


def measured_first(folder: Path, root: Path = PROFILES_DIR) -> MeasuredFirst:
    """``folder``'s measurements first, then its refit (``folder/calibrated/``), else ``root``'s calibrated model."""
    metadata = measured_metadata(folder)
    if metadata is None:
        raise schema.TableError(f'{folder}: no metadata.json saying "measured": true')
    measured = measured_model(folder, metadata)
    device = measured.provenance["device"]
    refit = folder / CALIBRATED_DIR_NAME
    if (refit / calibrated.PARAMETERS_FILE).is_file():
        fitted, fitted_as = calibrated.calibrated_model(refit), "refit"
    else:
        fitted = _fitted_default(root)
        fitted_as = fitted.provenance["kind"]
    provenance = {
        "kind": "measured", "gpu": folder.name, "device": device, "tables": str(folder),
        "description": f"measured by our profiler on {device} where a pair was measured; else {fitted_as}: "
                       f"{fitted.provenance['description']}",
        fitted_as: fitted.provenance,
    }  # fmt: skip
    return MeasuredFirst(measured, fitted, fitted_as=fitted_as, gpu=folder.name, provenance=provenance,
                         source=f"measured on {device} ({folder}), else {fitted.source}")


def measured_model(folder: Path, metadata: dict[str, Any]) -> model.ColocationModel:
    """The tables our profiler measured in ``folder`` (``metadata``: its metadata.json), alone."""
    single_path, pair_path = find_table(folder, "single"), find_table(folder, "pair")
    if single_path is None or pair_path is None:
        raise schema.TableError(f"{folder}: metadata.json says measured, but single and pair tables are not both there")
    device = metadata.get("device_name") or folder.name
    provenance = {"kind": "measured", "description": f"measured by our profiler on {device}",
                  "device": device, "tables": str(folder)}
    return model.ColocationModel(schema.read_single_table(single_path), schema.read_pair_table(pair_path),
                                 source=f"measured on {device} ({folder})", provenance=provenance, validate=False)


def answer_shares(colocation: Any) -> dict[str, dict[str, float]]:
    """For ``summary.json``: each model's pair-speed lookups (``measured``, ``refit``, ``calibrated``, ...),
    as counts and shares of all; a model that cannot tell (a user's own object) answered them all."""
    counts = colocation.answered_by() if hasattr(colocation, "answered_by") else {
        (getattr(colocation, "provenance", None) or {}).get("kind", "tables"): sum(colocation.fallback_counts().values())}
    total = sum(counts.values())
    return {name: {"lookups": n, "share": round(n / total, 4) if total else 0.0} for name, n in counts.items()}
