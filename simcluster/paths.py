"""Where things live: the repository's own traces, and the shared reference data."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# traces/default, shipped in the package as data/default_trace (a link to it in the checkout), so that an
# installed simcluster runs its default trace too
DEFAULT_TRACE = (Path(__file__).resolve().parent / "data" / "default_trace").resolve()


def shared_data_dir() -> Path:
    """``$SIMCLUSTER_DATA``, else ``../shared/data`` beside the repository checkout."""
    env = os.environ.get("SIMCLUSTER_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def resolve_data(name: str | os.PathLike[str]) -> Path:
    """A path as given when it exists, else the same name in the shared data (``venus_sept``,
    ``gavel_traces/t100.trace``, ``profiles/gavel/simulation_throughputs.json``): the one rule by which
    every command and the Python API find a named trace or table.  A name found in neither place comes
    back as given, for the loader to report as missing.

    >>> resolve_data(__file__) == Path(__file__)
    True
    """
    path = Path(name).expanduser()
    if path.exists() or path.is_absolute():
        return path
    shared = shared_data_dir() / path
    return shared if shared.exists() else path
