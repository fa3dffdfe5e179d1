"""Where the colocation models keep their files: ``traces/profiles/`` and the folders in it.

The bottom floor of :mod:`simcluster.colocation`: paths and the few facts about a folder that every
model and the loader need, and no model.  ``traces/profiles/`` holds

* ``analytic/``: the unfitted analytic model's tables (:mod:`simcluster.colocation.analytic`);
* ``calibrated/``: ``parameters.json`` of the model fitted to Lucid's RTX 3090 measurements
  (:mod:`simcluster.colocation.calibrated`);
* ``measured/<gpu>/``: tables our profiler measured on a GPU, one folder per GPU type, named as a
  cluster names that type (``h100``), with ``metadata.json`` saying ``"measured": true``; its
  ``calibrated/`` subfolder, when there, holds the calibrated model refitted to those tables.

A measured folder may also sit directly in ``traces/profiles/`` (a user's own GPU, dropped in): the
loader's ``default`` takes it for runs on clusters that name no GPU type.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simcluster.paths import REPO_ROOT

__all__ = [
    "ANALYTIC_DIR_NAME",
    "CALIBRATED_DIR_NAME",
    "MEASURED_DIR_NAME",
    "PROFILES_DIR",
    "TABLE_SUFFIXES",
    "committed_measurements",
    "find_table",
    "measured_metadata",
]

PROFILES_DIR = REPO_ROOT / "traces" / "profiles"
ANALYTIC_DIR_NAME = "analytic"
CALIBRATED_DIR_NAME = "calibrated"
MEASURED_DIR_NAME = "measured"
TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


def find_table(folder: Path, stem: str) -> Path | None:
    """``folder/stem.csv`` (or ``.parquet``, ``.pq``) if one is there."""
    for suffix in TABLE_SUFFIXES:
        path = folder / f"{stem}{suffix}"
        if path.is_file():
            return path
    return None


def measured_metadata(folder: Path) -> dict[str, Any] | None:
    """The folder's metadata.json if it says ``"measured": true``; None otherwise (or unreadable)."""
    path = folder / "metadata.json"
    if not path.is_file():
        return None
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return document if isinstance(document, dict) and document.get("measured") is True else None


def committed_measurements(root: Path = PROFILES_DIR) -> dict[str, Path]:
    """GPU type -> folder of each measured table under ``root/measured/`` (``h100`` -> ``.../measured/h100``)."""
    folder = root / MEASURED_DIR_NAME
    return {p.name: p for p in sorted(folder.iterdir()) if p.is_dir()} if folder.is_dir() else {}
