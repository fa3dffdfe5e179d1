"""``load_trace`` for every format: Venus job logs, Gavel ``.trace`` files and openb pod lists.

Gavel traces and openb pod lists become a :class:`~simcluster.hetero.trace.HeteroTrace`, which
:func:`simcluster.api.simulate` runs on the round-based engine; anything else goes to the Venus loader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def trace_format(path: str | Path) -> str:
    """'gavel', 'openb' or 'venus' (the default) for a trace path."""
    p = Path(path)
    if p.is_file() and p.suffix == ".trace":
        return "gavel"
    if p.is_file() and p.suffix == ".csv":
        from simcluster.traces.openb import looks_like_openb

        if looks_like_openb(p):
            return "openb"
    return "venus"


def load_trace(path: str | Path, vc_config: str | Path | None = None, **options: Any) -> Any:
    """Load and validate a trace of any supported format (see :func:`trace_format`).

    ``options`` are the Venus loader's (``gpus_per_node``, ``skip_invalid``, ``epoch``); the
    heterogeneous loaders honour ``skip_invalid`` and, for openb, ``nodes`` (node-list CSV).
    """
    kind = trace_format(path)
    if kind == "gavel":
        from simcluster.traces.gavel import load_gavel_trace

        return load_gavel_trace(path, skip_invalid=options.get("skip_invalid", False))
    if kind == "openb":
        from simcluster.traces.openb import load_openb_trace

        return load_openb_trace(path, options.get("nodes"), skip_invalid=options.get("skip_invalid", False))
    from simcluster.traces.venus import load_trace as load_venus

    options.pop("nodes", None)
    return load_venus(path, vc_config, **options)
