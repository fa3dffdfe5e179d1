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
simcluster.errors.OutputError: --out ...: holds files simcluster did not write (notes.txt); nothing was written. ...
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

from simcluster.atomic import umask
from simcluster.errors import OutputError, WriteError, cannot_write
from simcluster.fast_csv import write_csv

FORMATS = ("csv", "parquet")
MARKER = ".simcluster.json"  # in every folder written here: {"kind": ..., "files": [...]}
FOREIGN_SHOWN = 5  # foreign files named in an error; the rest are counted


def check_output(out: str | os.PathLike[str], kind: str, inputs: Iterable[str | os.PathLike[str]] = (),
                 overwrite: bool = False, option: str = "--out") -> Path:
    """The resolved folder ``out`` if a ``kind`` folder (run, report, sweep…) may be written there, else
    :class:`OutputError`.

    Refused always: a file; the root, home or current folder or any folder above the current one; a folder
    that is or holds one of ``inputs``; a place that cannot be written (below a file, or in a folder this
    user may not write: :func:`writable_place`).  Refused unless ``overwrite``: an existing folder that is not empty
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
    writable_place(path.parent, shown)
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


def writable_place(folder: Path, shown: str) -> None:
    """:class:`OutputError` unless a folder can be made (or written) at ``folder``: it, or its nearest existing
    ancestor, is a folder that this user may write into.  Checked before any work; a write that fails later
    (a full disk) is a :class:`WriteError`."""
    place = Path(folder)
    while not place.exists() and place != place.parent:
        place = place.parent
    if not place.is_dir():
        raise OutputError(f"{shown}: cannot write there: {place} is a file, not a folder")
    if not os.access(place, os.W_OK | os.X_OK):
        raise OutputError(f"{shown}: cannot write into {place}: permission denied (a read-only folder?); give "
                          "a folder you may write into")


def check_writable(out: str | os.PathLike[str], option: str = "--out") -> Path:
    """The resolved folder ``out`` if results can be written in it as it grows (a sweep's folder): not a file,
    and in a place this user may write; else :class:`OutputError`."""
    path = Path(out).expanduser().resolve()
    shown = f"{option} {out}"
    if path.exists() and not path.is_dir():
        raise OutputError(f"{shown}: is a file, not a folder; give a folder for the results")
    writable_place(path, shown)
    return path


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a folder we wrote, or ``None`` (no marker, or one we cannot read)."""
    try:
        marker = json.loads((Path(folder) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def table_problem(path: str | os.PathLike[str], rows: int | None, summary: dict[str, Any] | None = None
                  ) -> str | None:
    """What is wrong with a table of a folder simcluster wrote, read back with ``rows`` rows (None: a CSV's
    lines are counted instead, without parsing it): a CSV whose last line is cut (it does not end a row),
    or another count of rows than it was written with (the folder's marker says; for a run's ``jobs`` table
    of an older folder without counts, ``summary``'s finished plus unfinished jobs bound it from below).
    None when it is whole; the text names the file.

    >>> import tempfile
    >>> folder = write_folder(Path(tempfile.mkdtemp()) / "run", {"jobs.csv": pd.DataFrame({"a": [1, 2]})}, kind="run")
    >>> table_problem(folder / "jobs.csv", 2) is None, table_problem(folder / "jobs.csv", 1)
    (True, '...jobs.csv: holds 1 row(s) where 2 were written: the file was cut short or changed; write it again')
    """
    path = Path(path)
    if path.suffix == ".csv":
        try:
            with path.open("rb") as handle:
                handle.seek(0, os.SEEK_END)
                if handle.tell():
                    handle.seek(-1, os.SEEK_END)
                    if handle.read(1) != b"\n":
                        return (f"{path}: its last row is cut short (the file ends in the middle of a line); "
                                "write it again")
                if rows is None:  # lines less the header (the CSV we write puts no line break inside a field)
                    handle.seek(0)
                    rows = sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b"")) - 1
        except OSError as exc:
            return f"{path}: cannot be read: {exc.strerror or exc}"
    if rows is None:
        return None
    marker = read_marker(path.parent) or {}
    written = (marker.get("rows") or {}).get(path.name)
    if isinstance(written, int) and written != rows:
        return (f"{path}: holds {rows:,} row(s) where {written:,} were written: the file was cut short or "
                "changed; write it again")
    if written is None and summary and path.stem == "jobs":
        try:
            least = int(summary.get("jobs") or 0) + int(summary.get("unfinished_jobs") or 0)
        except (TypeError, ValueError):
            return None
        if rows < least:
            return (f"{path}: holds {rows:,} job(s) but summary.json counts {least:,}: the file was cut short; "
                    "write it again")
    return None


def mark_folder(folder: str | os.PathLike[str], kind: str, files: Iterable[str] = (),
                rows: dict[str, int] | None = None) -> Path:
    """Write the marker that says simcluster wrote ``folder`` as a ``kind`` folder holding ``files`` (and
    ``rows``: the rows of each table, which :func:`table_problem` holds a table to when it is read back).

    For folders that grow in place (a sweep's): call :func:`check_output` first.
    """
    folder = Path(folder)
    marker: dict[str, Any] = {"kind": kind, "written_by": "simcluster", "files": sorted(set(files))}
    if rows:
        marker["rows"] = dict(sorted(rows.items()))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MARKER).write_text(json.dumps(marker, indent=1) + "\n")
    except OSError as exc:
        raise cannot_write(folder, exc) from None
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
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        os.chmod(tmp, 0o777 & ~umask())  # as a plain mkdir makes it (mkdtemp's is 0700: colleagues could not read it)
    except OSError as exc:
        raise cannot_write(out.parent, exc) from None
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
        mark_folder(tmp, kind, [*tables, *(texts or {}), *(files or {})],
                    rows={name: len(frame) for name, frame in tables.items()})
        old = None
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):  # a full disk, a folder made read-only
            raise cannot_write(out.parent, exc) from None
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
