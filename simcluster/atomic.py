"""Writing files so that a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from simcluster.errors import WriteError, cannot_write


def umask() -> int:
    """This process's umask (what a plain ``open`` or ``mkdir`` takes away from 0666 or 0777)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write`` on a temporary file beside ``path``, then rename it into place.

    The file gets the permissions a plain ``open(path, "w")`` would give it
    (0666 less the umask), not the 0600 of a temporary file.  A write that fails (a read-only folder, a
    full disk) leaves no file behind and raises :class:`~simcluster.errors.WriteError` (an ``OSError``)
    naming the folder.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise cannot_write(path.parent, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):  # a full disk: said as one sentence
            raise cannot_write(path.parent, exc) from None
        raise
    return path
