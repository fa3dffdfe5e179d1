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
