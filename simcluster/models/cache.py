"""Models learned from fixed tables, kept on disk between runs: trained once, not once per run.

Lucid's packing model learns from the colocation tables alone, never from the trace, so every run on the
same tables would fit the same classifier again (about a CPU-second, plus 1–2 s to import InterpretML and
scikit-learn, against 0.1 s for a whole fifo run of 6,000 jobs).  The paper trains it offline, once; so do we:
what a run needs of it (its lookup tables, term importances and held-out accuracy) is written as JSON
under a key that digests everything the fit depends on — its training rows, settings, seed and the
InterpretML version — and read back by the next run instead of fitting.  A changed table or setting makes
another key, so an entry is never stale; an unreadable entry is refitted and rewritten.

Where: ``$SIMCLUSTER_CACHE`` (``off`` turns the cache off), else ``$XDG_CACHE_HOME/simcluster``, else
``~/.cache/simcluster``.  A folder that cannot be written only costs the refit.

>>> import tempfile
>>> folder, key = Path(tempfile.mkdtemp()), digest("packing", [1, 2, 3])
>>> read_entry("packing", key, folder) is None
True
>>> write_entry("packing", key, {"scores": [0.5, -1.25]}, folder)
>>> read_entry("packing", key, folder), digest("packing", [1, 2, 4]) == key
({'scores': [0.5, -1.25]}, False)
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from simcluster.atomic import atomic_write

FORMAT = 1  # bumped when what an entry holds changes: older entries are then never read


def cache_dir() -> Path | None:
    """The cache's folder, or None when ``SIMCLUSTER_CACHE=off``."""
    env = os.environ.get("SIMCLUSTER_CACHE")
    if env is not None:
        return None if env.strip().lower() in {"off", "0", "no", "false", ""} else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "simcluster"


def interpret_version() -> str:
    """The installed InterpretML's version, read from its metadata (importing it costs a second or two)."""
    from importlib.metadata import PackageNotFoundError, version

    for name in ("interpret-core", "interpret"):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return "unknown"


def digest(kind: str, inputs: Any) -> str:
    """A key for ``inputs`` (anything ``json.dumps`` writes, ``str`` used for the rest), with the format and
    InterpretML's version folded in, so another fit never answers for this one."""
    text = json.dumps([FORMAT, kind, interpret_version(), inputs], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _path(kind: str, key: str, folder: Path | None) -> Path | None:
    folder = folder or cache_dir()
    return None if folder is None else folder / f"{kind}-{key}.json"


def read_entry(kind: str, key: str, folder: Path | None = None) -> dict[str, Any] | None:
    """The entry stored under ``key`` in ``folder`` (default: :func:`cache_dir`), or None (none yet, the cache
    off, or a file that does not parse)."""
    path = _path(kind, key, folder)
    if path is None or not path.is_file():
        return None
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) else None


def write_entry(kind: str, key: str, entry: dict[str, Any], folder: Path | None = None) -> None:
    """Store ``entry`` under ``key`` (atomically: a reader sees all of it or none); a folder that cannot be
    written is passed over, as the cache only saves time."""
    path = _path(kind, key, folder)
    if path is None:
        return
    text = json.dumps(entry).encode()
    try:
        atomic_write(path, lambda handle: handle.write(text))
    except OSError:
        pass
