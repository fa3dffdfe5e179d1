"""Doubts about a run's inputs that its figures do not show: said out loud, in ``summary.json``'s ``warnings``.

A sharing run answers every colocation lookup, guessed or measured (:mod:`simcluster.colocation.model`);
when most answers are the neutral default, or the tables were measured on a CPU, or they claim jobs run
faster shared than alone, the figures rest on guesses and the reader must be told.

>>> print(fallbacks_warning({"exact": 15_080, "default": 101_453}))
101,453 of 116,533 colocation lookups (87%) fell back to a workload's average slowdown (0) or the neutral default (101,453): the tables never measured these pairs, so their slowdowns are guesses
>>> fallbacks_warning({"exact": 95, "default": 5}) is None
True
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEFAULT_SHARE_LIMIT = 0.10  # a run whose lookups fall back to the neutral default more often is flagged
SUSPECT_SPEED = 1.05  # a pair "faster shared than alone" by more than measurement noise


def fallbacks_warning(counts: dict[str, int], limit: float = DEFAULT_SHARE_LIMIT) -> str | None:
    """A warning when more than ``limit`` of the pair lookups were guesses: answered by a workload's average
    slowdown over other partners (``model_average``) or by the neutral default, not by measurements of the
    pair or an interpolation between them."""
    total = sum(counts.values())
    guessed = counts.get("model_average", 0) + counts.get("default", 0)
    if not total or guessed / total <= limit:
        return None
    return (f"{guessed:,} of {total:,} colocation lookups ({guessed / total:.0%}) fell back to a workload's "
            f"average slowdown ({counts.get('model_average', 0):,}) or the neutral default "
            f"({counts.get('default', 0):,}): the tables never measured these pairs, so their slowdowns are guesses")


def table_warnings(model: Any) -> list[str]:
    """Doubts about the tables behind a colocation ``model`` that a user measured or gave as a folder (the
    public, calibrated and analytic models are described by their own provenance)."""
    provenance = getattr(model, "provenance", None) or {}
    if provenance.get("kind") not in ("measured", "tables"):
        return []
    folder = Path(provenance["tables"])
    found = []
    metadata = _metadata(folder)
    if metadata is not None and metadata.get("measured") is False:
        device = metadata.get("device_name") or "not a GPU"
        found.append(f"colocation tables in {folder} were measured on {device} (metadata.json: measured false): "
                     "their speeds do not describe jobs sharing a GPU")
    fast = _fast_pairs(model.pair)
    if fast:
        count, total, top = fast
        found.append(f"{count} of {total} measured pairs in {folder} run faster shared than alone (speed up to "
                     f"{top:.2f} > {SUSPECT_SPEED:g}): a solo run measured too slow; the simulator caps speeds at 1. "
                     "Profile them again (lucid-profile pair measures a pair again when it seems faster shared)")
    return found


def _metadata(folder: Path) -> dict[str, Any] | None:
    try:
        document = json.loads((folder / "metadata.json").read_text())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def _fast_pairs(pair: Any) -> tuple[int, int, float] | None:
    """(pairs faster than SUSPECT_SPEED, measured pairs, the fastest speed) of a pair table's measured
    rows, or None if none is."""
    if not len(pair):
        return None
    speeds = pair[["speed1", "speed2"]].astype(float).max(axis=1)
    fast = speeds > SUSPECT_SPEED
    return (int(fast.sum()), len(pair), float(speeds.max())) if fast.any() else None
