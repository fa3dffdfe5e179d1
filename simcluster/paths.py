"""Where things live: the repository's own traces, and the shared reference data."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRACE = REPO_ROOT / "traces" / "default"


def shared_data_dir() -> Path:
    """``$SIMCLUSTER_DATA``, else ``../shared/data`` beside the repository checkout."""
    env = os.environ.get("SIMCLUSTER_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"
