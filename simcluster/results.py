"""Writing result folders atomically, and never over anything we did not write.

A folder is written whole into a hidden temporary folder beside it and renamed into place, so a reader
sees the old folder or the new one, never half of one.  Every folder written here carries a marker file
(:data:`MARKER`: what kind of folder it is and which files we wrote), and an existing folder is replaced
only when its marker says we wrote it and it holds nothing else, or when the user asked (``overwrite``).
Some places are never replaced, asked or not: the filesystem root, the home folder, the current
directory and any folder above it, and any folder that holds one of the run's inputs (its trace).

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> (root / "notes").mkdir(); _ = (root / "notes" / "notes.txt").write_text("mine")
>>> check_output(root / "notes", "run")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
simcluster.results.OutputError: --out ...: holds files simcluster did not write (notes.txt); nothing was written. ...
>>> folder = write_folder(root / "run", {}, {"summary.json": "{}"}, kind="run")
>>> sorted(p.name for p in folder.iterdir()), check_output(folder, "run") == folder.resolve()
(['.simcluster.json', 'summary.json'], True)
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from simcluster.fast_csv import write_csv

FORMATS = ("csv", "parquet")
MARKER = ".simcluster.json"  # in every folder written here: {"kind": ..., "files": [...]}
FOREIGN_SHOWN = 5  # foreign files named in an error; the rest are counted


class OutputError(ValueError):
    """A folder that may not be written or replaced; the message says why and what to do instead."""


def check_output(out: str | os.PathLike[str], kind: str, inputs: Iterable[str | os.PathLike[str]] = (),
                 overwrite: bool = False, option: str = "--out") -> Path:
    """The resolved folder ``out`` if a ``kind`` folder (run, report, sweep…) may be written there, else
    :class:`OutputError`.

    Refused always: a file; the root, home or current folder or any folder above the current one; a folder
    that is or holds one of ``inputs``.  Refused unless ``overwrite``: an existing folder that is not empty
    and is not a ``kind`` folder holding only what simcluster wrote into it.  ``option`` names the option in
    the message.
    """
    path = Path(out).expanduser().resolve()
    shown = f"{option} {out}"
    if path.exists() and not path.is_dir():
        raise OutputError(f"{shown}: is a file, not a folder; give a folder for the results")
    for place, what in _precious_places():
        if path == place or path in place.parents:
            raise OutputError(f"{shown}: refusing to write results over {what} ({path}); the folder is replaced "
                              f"whole, so give a new folder such as {option} results/NAME")
    for given in inputs:
        source = Path(given).expanduser().resolve()
        if source == path or path in source.parents:
            raise OutputError(f"{shown}: that folder holds an input of this run ({given}); replacing it would "
                              f"delete the input. Give another folder, e.g. {option} results/NAME")
    if not path.exists() or not any(path.iterdir()) or overwrite:
        return path
    marker = read_marker(path)
    if marker is None:
        raise OutputError(f"{shown}: holds files simcluster did not write ({_listing(_entries(path))}); nothing "
                          f"was written. Give another folder, or add --overwrite to replace it and everything in it")
    if marker.get("kind") != kind:
        raise OutputError(f"{shown}: holds a {marker.get('kind', 'different')} folder, not a {kind} folder; give "
                          "another folder, or add --overwrite to replace it")
    foreign = sorted(_entries(path) - set(marker.get("files", [])))
    if foreign:
        raise OutputError(f"{shown}: besides its {kind} results it holds files simcluster did not write "
                          f"({_listing(foreign)}); nothing was written. Move them away, or add --overwrite to "
                          "replace the folder and everything in it")
    return path


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a folder we wrote, or ``None`` (no marker, or one we cannot read)."""
    try:
        marker = json.loads((Path(folder) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def mark_folder(folder: str | os.PathLike[str], kind: str, files: Iterable[str] = ()) -> Path:
    """Write the marker that says simcluster wrote ``folder`` as a ``kind`` folder holding ``files``.

    For folders that grow in place (a sweep's): call :func:`check_output` first.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    marker = {"kind": kind, "written_by": "simcluster", "files": sorted(set(files))}
    (folder / MARKER).write_text(json.dumps(marker, indent=1) + "\n")
    return folder


def write_folder(out: Path, tables: dict[str, pd.DataFrame], texts: dict[str, str] | None = None,
                 files: dict[str, bytes] | None = None, *, kind: str = "folder",
                 inputs: Iterable[str | os.PathLike[str]] = (), overwrite: bool = False) -> Path:
    """Write ``tables`` (file name → frame; .csv or .parquet), ``texts`` and ``files`` into the folder ``out``.

    :func:`check_output` first (``kind``, ``inputs``, ``overwrite``): an existing folder is replaced only
    if simcluster wrote it.  Everything goes into a hidden temporary folder beside ``out`` that is renamed
    into place at the end, so a failed or interrupted write never leaves a half-written folder (an older
    one is replaced whole).
    """
    out = Path(out)
    check_output(out, kind, inputs, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        for name, frame in tables.items():
            if name.endswith(".parquet"):
                frame.to_parquet(tmp / name, index=False)
            elif name.endswith(".csv"):
                write_csv(frame, tmp / name)  # pandas' bytes, at a fraction of to_csv's cost
            else:  # (to_csv compresses by the name's suffix)
                frame.to_csv(tmp / name, index=False)
        for name, text in (texts or {}).items():
            (tmp / name).write_text(text)
        for name, data in (files or {}).items():
            (tmp / name).write_bytes(data)
        mark_folder(tmp, kind, [*tables, *(texts or {}), *(files or {})])
        old = None
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def write_run(out: Path, tables: dict[str, pd.DataFrame], summary: dict[str, Any], fmt: str = "csv", *,
              inputs: Iterable[str | os.PathLike[str]] = (), overwrite: bool = False) -> Path:
    """A run's folder: ``<table>.<fmt>`` for each table, plus ``summary.json``."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    files = {f"{name}.{fmt}": frame for name, frame in tables.items()}
    return write_folder(out, files, {"summary.json": to_json(summary, indent=2) + "\n"},
                        kind="run", inputs=inputs, overwrite=overwrite)


def _precious_places() -> list[tuple[Path, str]]:
    """Folders never replaced: what is above them would go too (their parents are refused as well)."""
    places = [(Path(Path.cwd().anchor).resolve(), "the filesystem root"),
              (Path.cwd().resolve(), "the current directory or a folder above it")]
    home = os.environ.get("HOME")
    if home:
        places.append((Path(home).expanduser().resolve(), "your home folder or a folder above it"))
    return places


def _entries(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name != MARKER}


def _listing(names: Iterable[str]) -> str:
    names = sorted(names)
    more = len(names) - FOREIGN_SHOWN
    return ", ".join(names[:FOREIGN_SHOWN]) + (f" and {more} more" if more > 0 else "")


def to_json(value: Any, indent: int | None = None) -> str:
    """Strict JSON of a summary or report: NaN and infinities become null (JSON has neither, and
    ``json.dumps`` would write the bare word NaN that other readers reject), numpy scalars plain numbers.

    >>> import numpy as np
    >>> to_json({"avg_jct": float("nan"), "jobs": np.int64(3), "speeds": [np.float32(0.5), float("inf")]})
    '{"avg_jct": null, "jobs": 3, "speeds": [0.5, null]}'
    """
    return json.dumps(_finite(value), indent=indent, default=_plain, allow_nan=False)


def _finite(value: Any) -> Any:
    if getattr(value, "ndim", None) == 0:  # numpy scalars
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(v) for key, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy arrays
        return _finite(value.tolist())
    raise TypeError(f"cannot write {type(value).__name__} to JSON")
