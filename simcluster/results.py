"""Writing result folders atomically: all files appear together or none do."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

FORMATS = ("csv", "parquet")


def write_folder(out: Path, tables: dict[str, pd.DataFrame], texts: dict[str, str] | None = None,
                 files: dict[str, bytes] | None = None) -> Path:
    """Write ``tables`` (file name → frame; .csv or .parquet), ``texts`` and ``files`` into the folder ``out``.

    Everything goes into a hidden temporary folder beside ``out`` that is
    renamed into place at the end, so a failed or interrupted write never
    leaves a half-written folder (an older one is replaced whole).
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        for name, frame in tables.items():
            if name.endswith(".parquet"):
                frame.to_parquet(tmp / name, index=False)
            else:
                frame.to_csv(tmp / name, index=False)
        for name, text in (texts or {}).items():
            (tmp / name).write_text(text)
        for name, data in (files or {}).items():
            (tmp / name).write_bytes(data)
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


def write_run(out: Path, tables: dict[str, pd.DataFrame], summary: dict[str, Any], fmt: str = "csv") -> Path:
    """A run's folder: ``<table>.<fmt>`` for each table, plus ``summary.json``."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    files = {f"{name}.{fmt}": frame for name, frame in tables.items()}
    return write_folder(out, files, {"summary.json": json.dumps(summary, indent=2, default=_plain) + "\n"})


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")
