"""A run's Kueue objects, read once per file version: the ``tiers`` feature checks the jobs against them as the
run is resolved and the ``kueue`` policy decides by them in every simulation of it (a sweep's worker process
reads them once)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from simcluster.tiers.kueue_yaml import read_kueue
from simcluster.tiers.model import FairSharing, KueueConfig


def kueue_of(path: str) -> KueueConfig:
    """The Kueue objects of ``path`` (a file, or a folder of them: several files are a folder, so that a sweep's
    ``--set kueue=a.yaml,b.yaml`` is two runs), read again only when a file changed."""
    return _read(path, _stamp(Path(path)))


def _stamp(path: Path) -> tuple[int, int]:
    try:
        found = path.stat()
    except OSError:
        return (0, 0)  # (read_kueue says it cannot be read)
    if path.is_dir():
        return (found.st_mtime_ns, sum(child.stat().st_mtime_ns for child in path.iterdir()))
    return (found.st_mtime_ns, found.st_size)


@lru_cache(maxsize=8)
def _read(path: str, stamp: tuple[int, int]) -> KueueConfig:
    return read_kueue(path)


def fair_sharing_of(setting: str, kueue: KueueConfig) -> FairSharing:
    """Fair sharing as ``--fair-sharing`` says (on, off), or as the Configuration document among the files says
    (auto; off without one).

    >>> fair_sharing_of("auto", KueueConfig({})).enabled, fair_sharing_of("on", KueueConfig({})).enabled
    (False, True)
    """
    given = kueue.fair_sharing or FairSharing()
    if setting == "auto":
        return given
    return FairSharing(setting == "on", given.preemption_strategies)
