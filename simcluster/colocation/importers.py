"""Public colocation measurements, converted into our table format.

Two published data sets measure jobs sharing a GPU; these functions turn them into the single-job
and pair tables of :mod:`simcluster.colocation.schema` (DataFrames in the schema's columns, which
:func:`~simcluster.colocation.schema.write_table` and :class:`~simcluster.colocation.model.ColocationModel`
accept), so the simulator can use them as it uses our own profiler's tables.

* **Lucid, RTX 3090** (``profiles/lucid_rtx3090/`` of the shared data): ``single_data.csv``
  (``speed`` = samples/s alone, plus the authors' sharing-sensitivity ``label``) and
  ``colocate_info.csv`` (first column an unnamed index; ``speed1``/``speed2`` already normalized).
  Every job ran on one GPU.  The pair table holds no throughputs, so ``iters_per_s`` of a pair is
  the normalized speed times the job's solo iterations/s from ``single_data.csv``.
  The labels are not part of our schema: :func:`read_lucid_labels` returns them.
* **Gavel** (``profiles/gavel/simulation_throughputs.json``): per GPU type, per job type
  ``"('ResNet-18 (batch size 64)', 1)"`` (job type, scale factor = GPUs), ``"null"`` is the
  throughput alone (iterations/s) and every other key the ``[this job, partner]`` throughputs
  when the two share the GPU(s).  A zero throughput means the job cannot run there (alone: the
  GPU type cannot hold it; in a pair: the two cannot share); such rows are kept with
  ``status = failed`` and the reason.  ``model`` is the job type without its batch size,
  ``dataset`` comes from :data:`GAVEL_DATASETS` (the data sets of Gavel's paper, Table 2),
  ``batchsize`` is parsed (``1`` for job types without one, A3C and CycleGAN: see
  :data:`GAVEL_UNBATCHED`), taken as per GPU, ``amp`` is 0 and ``gpu_num`` the scale factor.
  Each unordered pair becomes one row (Gavel lists both orientations; they must agree).

Malformed input raises :class:`~simcluster.colocation.schema.TableError` naming the file, the
row or key, and what is wrong; a missing file raises FileNotFoundError.

Example (needs the shared data)::

    from simcluster.colocation.importers import import_lucid, import_gavel
    single, pair = import_lucid()            # RTX 3090
    single, pair = import_gavel(gpu_type="v100")
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.colocation.schema import (
    PAIR_COLUMNS,
    SINGLE_COLUMNS,
    SINGLE_KEY,
    SPEED_MAX,
    STATUS_FAILED,
    STATUS_OK,
    TableError,
    validate_pair_table,
    validate_single_table,
)
from simcluster.paths import shared_data_dir

__all__ = [
    "GAVEL_DATASETS",
    "GAVEL_UNBATCHED",
    "gavel_gpu_types",
    "gavel_path",
    "import_gavel",
    "import_lucid",
    "import_lucid_pairs",
    "import_lucid_single",
    "lucid_dir",
    "read_lucid_labels",
]

LUCID_SINGLE = "single_data.csv"
LUCID_PAIRS = "colocate_info.csv"
_LUCID_SINGLE_COLUMNS = ["model", "dataset", "batchsize", "amp", "speed", "gpu_util", "gmem_util", "gmem"]
_LUCID_JOB = ["model", "dataset", "gpu_num", "batchsize", "amp", "speed"]
_LUCID_PAIR_COLUMNS = [f"{f}{i}" for i in (1, 2) for f in _LUCID_JOB] + ["gpu_util", "gmem_util", "gmem"]

GAVEL_DATASETS: dict[str, str] = {
    "ResNet-18": "CIFAR-10",
    "ResNet-50": "ImageNet",
    "Transformer": "Multi30k",
    "LM": "Wikitext-2",
    "Recommendation": "ML-20M",
    "A3C": "Pong",
    "CycleGAN": "monet2photo",
}
"""Gavel's job types -> the data set each trains on (Gavel, OSDI'20, Table 2); others use the job type."""

GAVEL_UNBATCHED: dict[str, int] = {"A3C": 1, "CycleGAN": 1}
"""Batch size of Gavel job types whose name gives none: A3C has none (asynchronous actor-learners,
one step per update), CycleGAN trains on one image pair per step.  Others without one get 1 too."""

_GAVEL_KEY = re.compile(r"^\s*(?P<model>.+?)\s*\(batch size (?P<bs>\d+)\)\s*$")


# ----------------------------------------------------------------------------- paths
def lucid_dir() -> Path:
    """``profiles/lucid_rtx3090`` of the shared data (``$SIMCLUSTER_DATA`` honoured)."""
    return shared_data_dir() / "profiles" / "lucid_rtx3090"


def gavel_path() -> Path:
    """``profiles/gavel/simulation_throughputs.json`` of the shared data."""
    return shared_data_dir() / "profiles" / "gavel" / "simulation_throughputs.json"


# ----------------------------------------------------------------------------- helpers
def _read_csv(path: Path, required: list[str]) -> pd.DataFrame:
    """The CSV as text, with unnamed index columns dropped; TableError if columns are missing."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (set SIMCLUSTER_DATA to the shared data folder)")
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise TableError(f"{path}: cannot be read as CSV: {exc}") from exc
    raw = raw[[c for c in raw.columns if c.strip() and not c.startswith("Unnamed:")]]
    raw.columns = [c.strip() for c in raw.columns]
    missing = [c for c in required if c not in raw.columns]
    if missing:
        raise TableError(f"{path}: missing column(s) {', '.join(missing)}; expected {','.join(required)}")
    return raw


def _numbers(
    raw: pd.DataFrame,
    column: str,
    path: Path,
    *,
    integer: bool = False,
    positive: bool = False,
    optional: bool = False,
) -> np.ndarray:
    """The column as floats; TableError naming file, 1-based data row and field for a bad value."""
    out = np.empty(len(raw), dtype=float)
    for i, text in enumerate(raw[column].tolist()):
        text = str(text).strip()
        if not text:
            if optional:
                out[i] = math.nan
                continue
            raise TableError(f"{path}, row {i + 1}, field {column!r}: missing value")
        try:
            value = float(text)
        except ValueError:
            raise TableError(f"{path}, row {i + 1}, field {column!r}: not a number: {text!r}") from None
        if not math.isfinite(value):
            raise TableError(f"{path}, row {i + 1}, field {column!r}: not a finite number: {text!r}")
        if integer and value != int(value):
            raise TableError(f"{path}, row {i + 1}, field {column!r}: expected an integer, got {text!r}")
        if positive and value <= 0:
            raise TableError(
                f"{path}, row {i + 1}, field {column!r}: expected a positive number, got {text!r}"
            )
        out[i] = value
    return out


def _texts(raw: pd.DataFrame, column: str, path: Path) -> list[str]:
    values = [str(v).strip() for v in raw[column].tolist()]
    for i, value in enumerate(values):
        if not value:
            raise TableError(f"{path}, row {i + 1}, field {column!r}: empty; a name is required")
    return values


# ----------------------------------------------------------------------------- Lucid
def _lucid_single_frame(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(our single table, the raw rows with numeric fields parsed) of ``single_data.csv``."""
    raw = _read_csv(path, _LUCID_SINGLE_COLUMNS)
    batch = _numbers(raw, "batchsize", path, integer=True, positive=True)
    amp = _numbers(raw, "amp", path, integer=True)
    bad_amp = np.flatnonzero(~np.isin(amp, (0.0, 1.0)))
    if len(bad_amp):
        row = int(bad_amp[0])
        raise TableError(f"{path}, row {row + 1}, field 'amp': expected 0 or 1, got {raw['amp'].iloc[row]!r}")
    samples = _numbers(raw, "speed", path, positive=True)
    table = pd.DataFrame(
        {
            "model": _texts(raw, "model", path),
            "dataset": _texts(raw, "dataset", path),
            "batchsize": batch.astype(np.int64),
            "amp": amp.astype(np.int64),
            "gpu_num": np.ones(len(raw), dtype=np.int64),
            "iters_per_s": samples / batch,
            "samples_per_s": samples,
            "gpu_util": _numbers(raw, "gpu_util", path, optional=True),
            "gmem_util": _numbers(raw, "gmem_util", path, optional=True),
            "gmem": _numbers(raw, "gmem", path, optional=True),
            "torch_peak_mem": math.nan,
            "status": STATUS_OK,
            "error": "",
        }
    )
    return table, raw


def import_lucid_single(path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """Lucid's ``single_data.csv`` as our single-job table (one GPU; ``speed`` is samples/s)."""
    p = Path(path) if path is not None else lucid_dir() / LUCID_SINGLE
    table, _ = _lucid_single_frame(p)
    return validate_single_table(table, str(p))


def read_lucid_labels(path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """Lucid's sharing-sensitivity ``label`` per configuration (0 shares well ... 2 shares badly).

    Columns: the single table's key (``model, dataset, batchsize, amp, gpu_num``) and ``label``.
    """
    p = Path(path) if path is not None else lucid_dir() / LUCID_SINGLE
    table, raw = _lucid_single_frame(p)
    if "label" not in raw.columns:
        raise TableError(f"{p}: missing column 'label'")
    labels = table[SINGLE_KEY].copy()
    labels["label"] = _numbers(raw, "label", p, integer=True).astype(np.int64)
    return labels


def import_lucid_pairs(
    path: str | os.PathLike[str] | None = None, single: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Lucid's ``colocate_info.csv`` as our pair table.

    ``single`` (our single table, by default imported from ``single_data.csv`` beside ``path``)
    supplies the solo iterations/s that turn the normalized speeds into ``iters_per_s1``/``2``.
    """
    p = Path(path) if path is not None else lucid_dir() / LUCID_PAIRS
    if single is None:
        single = import_lucid_single(p.parent / LUCID_SINGLE)
    solo = {
        (m, d, int(b), int(a), int(g)): float(it)
        for m, d, b, a, g, it in single[[*SINGLE_KEY, "iters_per_s"]].itertuples(index=False, name=None)
        if math.isfinite(float(it))
    }
    raw = _read_csv(p, _LUCID_PAIR_COLUMNS)
    columns: dict[str, Any] = {}
    for i in (1, 2):
        columns[f"model{i}"] = _texts(raw, f"model{i}", p)
        columns[f"dataset{i}"] = _texts(raw, f"dataset{i}", p)
        for field in ("batchsize", "gpu_num"):
            columns[f"{field}{i}"] = _numbers(raw, f"{field}{i}", p, integer=True, positive=True).astype(
                np.int64
            )
        columns[f"amp{i}"] = _numbers(raw, f"amp{i}", p, integer=True).astype(np.int64)
        columns[f"speed{i}"] = _numbers(raw, f"speed{i}", p, positive=True)
        iters = np.empty(len(raw))
        for row in range(len(raw)):
            key = tuple(columns[f"{f}{i}"][row] for f in ("model", "dataset", "batchsize", "amp", "gpu_num"))
            key = (str(key[0]), str(key[1]), int(key[2]), int(key[3]), int(key[4]))
            if key not in solo:
                raise TableError(
                    f"{p}, row {row + 1}: job {i} {','.join(map(str, key))} has no row in the single "
                    f"table (needed for its solo throughput)"
                )
            iters[row] = columns[f"speed{i}"][row] * solo[key]
        columns[f"iters_per_s{i}"] = iters
    for field in ("gpu_util", "gmem_util", "gmem"):
        columns[field] = _numbers(raw, field, p, optional=True)
    columns["status"] = STATUS_OK
    columns["error"] = ""
    table = pd.DataFrame({c: columns[c] for c in PAIR_COLUMNS})
    return validate_pair_table(table, str(p))


def import_lucid(directory: str | os.PathLike[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(single, pair)`` tables from Lucid's RTX 3090 folder (default: the shared data's)."""
    d = Path(directory) if directory is not None else lucid_dir()
    single = import_lucid_single(d / LUCID_SINGLE)
    return single, import_lucid_pairs(d / LUCID_PAIRS, single)


# ----------------------------------------------------------------------------- Gavel
def _load_gavel(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (set SIMCLUSTER_DATA to the shared data folder)")
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TableError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise TableError(f"{path}: expected an object of GPU types at the top, got {type(document).__name__}")
    return document


def gavel_gpu_types(path: str | os.PathLike[str] | None = None) -> list[str]:
    """The GPU types in Gavel's throughput file (``k80``, ``p100``, ``v100``, and variants)."""
    return list(_load_gavel(Path(path) if path is not None else gavel_path()))


def _parse_gavel_key(key: str, where: str) -> tuple[str, str, int, int]:
    """``"('ResNet-18 (batch size 64)', 1)"`` -> (model, dataset, batch size, scale factor)."""
    try:
        parsed = ast.literal_eval(key)
    except (ValueError, SyntaxError):
        parsed = None
    if (
        not isinstance(parsed, tuple)
        or len(parsed) != 2
        or not isinstance(parsed[0], str)
        or not isinstance(parsed[1], int)
        or isinstance(parsed[1], bool)
        or parsed[1] <= 0
    ):
        raise TableError(f"{where}: bad job key {key!r}; expected \"('<job type>', <scale factor > 0>)\"")
    job_type, scale = parsed[0].strip(), parsed[1]
    match = _GAVEL_KEY.match(job_type)
    if match:
        model, batch = match["model"], int(match["bs"])
        if batch <= 0:
            raise TableError(f"{where}: bad batch size in job key {key!r}")
    else:
        model, batch = job_type, GAVEL_UNBATCHED.get(job_type, 1)
    if not model:
        raise TableError(f"{where}: empty job type in job key {key!r}")
    return model, GAVEL_DATASETS.get(model, model), batch, scale


def _throughput(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TableError(f"{where}: expected a throughput number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise TableError(f"{where}: expected a non-negative finite throughput, got {value!r}")
    return number


def import_gavel(
    path: str | os.PathLike[str] | None = None, gpu_type: str = "v100"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(single, pair)`` tables for one GPU type of Gavel's ``simulation_throughputs.json``.

    Speeds are the shared throughput over the same job's ``"null"`` (solo) throughput.
    """
    p = Path(path) if path is not None else gavel_path()
    document = _load_gavel(p)
    if gpu_type not in document:
        raise TableError(f"{p}: no GPU type {gpu_type!r}; available: {', '.join(map(str, document))}")
    jobs = document[gpu_type]
    if not isinstance(jobs, dict) or not jobs:
        raise TableError(f"{p}, {gpu_type}: expected a non-empty object of job types")

    configs: dict[str, tuple[str, str, int, int]] = {}
    solo: dict[str, float] = {}
    single_rows: list[dict[str, Any]] = []
    for key, entry in jobs.items():
        where = f"{p}, {gpu_type}, {key}"
        config = _parse_gavel_key(key, f"{p}, {gpu_type}")
        if config in configs.values():
            raise TableError(f"{where}: the same job configuration appears twice")
        if not isinstance(entry, dict) or "null" not in entry:
            raise TableError(f'{where}: expected an object with a "null" (solo throughput) entry')
        configs[key] = config
        solo[key] = _throughput(entry["null"], f'{where}, "null"')
        model, dataset, batch, scale = config
        ok = solo[key] > 0
        single_rows.append(
            {
                "model": model,
                "dataset": dataset,
                "batchsize": batch,
                "amp": 0,
                "gpu_num": scale,
                "iters_per_s": solo[key] if ok else math.nan,
                "samples_per_s": solo[key] * batch * scale if ok else math.nan,
                "gpu_util": math.nan,
                "gmem_util": math.nan,
                "gmem": math.nan,
                "torch_peak_mem": math.nan,
                "status": STATUS_OK if ok else STATUS_FAILED,
                "error": "" if ok else f"zero solo throughput: does not run on {gpu_type} in Gavel's table",
            }
        )

    order = {key: i for i, key in enumerate(jobs)}
    pair_rows: list[dict[str, Any]] = []
    for key, entry in jobs.items():
        for partner, value in entry.items():
            if partner == "null":
                continue
            where = f"{p}, {gpu_type}, {key} -> {partner}"
            if partner not in configs:
                raise TableError(f"{where}: partner job type has no entry (no solo throughput)")
            if not isinstance(value, list) or len(value) != 2:
                raise TableError(f"{where}: expected [this job, partner] throughputs, got {value!r}")
            mine, theirs = (_throughput(v, where) for v in value)
            mirror = jobs[partner].get(key)
            if mirror is not None and partner != key:
                if not isinstance(mirror, list) or len(mirror) != 2:
                    raise TableError(
                        f"{p}, {gpu_type}, {partner} -> {key}: expected [this job, partner] "
                        f"throughputs, got {mirror!r}"
                    )
                back = [_throughput(v, f"{p}, {gpu_type}, {partner} -> {key}") for v in mirror]
                if not (
                    math.isclose(back[0], theirs, rel_tol=1e-6, abs_tol=1e-9)
                    and math.isclose(back[1], mine, rel_tol=1e-6, abs_tol=1e-9)
                ):
                    raise TableError(
                        f"{where}: {value!r} disagrees with the mirrored entry {partner} -> {key}: {mirror!r}"
                    )
                if order[partner] < order[key]:
                    continue  # this unordered pair was written from the partner's side
            a, b = configs[key], configs[partner]
            row: dict[str, Any] = {}
            for i, (model, dataset, batch, scale) in ((1, a), (2, b)):
                row.update(
                    {
                        f"model{i}": model,
                        f"dataset{i}": dataset,
                        f"batchsize{i}": batch,
                        f"amp{i}": 0,
                        f"gpu_num{i}": scale,
                    }
                )
            problem = ""
            if solo[key] <= 0 or solo[partner] <= 0:
                problem = f"a job does not run alone on {gpu_type} (zero solo throughput)"
            elif mine <= 0 or theirs <= 0:
                problem = "cannot share: zero throughput in Gavel's table"
            if problem:
                row.update(
                    iters_per_s1=math.nan,
                    iters_per_s2=math.nan,
                    speed1=math.nan,
                    speed2=math.nan,
                    status=STATUS_FAILED,
                    error=problem,
                )
            elif max(mine / solo[key], theirs / solo[partner]) > SPEED_MAX:
                raise TableError(
                    f"{where}: shared throughputs {value!r} exceed {SPEED_MAX:g} x the solo ones "
                    f"({solo[key]!r}, {solo[partner]!r}); not a plausible measurement"
                )
            else:
                row.update(
                    iters_per_s1=mine,
                    iters_per_s2=theirs,
                    speed1=mine / solo[key],
                    speed2=theirs / solo[partner],
                    status=STATUS_OK,
                    error="",
                )
            row.update(gpu_util=math.nan, gmem_util=math.nan, gmem=math.nan)
            pair_rows.append(row)

    single = validate_single_table(pd.DataFrame(single_rows, columns=SINGLE_COLUMNS), f"{p} ({gpu_type})")
    pair = validate_pair_table(pd.DataFrame(pair_rows, columns=PAIR_COLUMNS), f"{p} ({gpu_type})")
    return single, pair
