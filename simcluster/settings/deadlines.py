"""Deadlines drawn for jobs that have none (:mod:`simcluster.features.deadlines`); every run reports deadline
satisfaction, so every run reads them."""

from __future__ import annotations

import math
from typing import Any

from simcluster.settings.fields import ConfigError, Reader, always, setting, settings_group

DEADLINES = "Deadlines"  # its panel in `lucid-sim run --help`


def deadline_range(text: Any, where: str = "settings") -> tuple[float, float]:
    """``A,B`` (or ``A/B``, as a sweep's ``--set`` writes it): the range of U(A, B) that draws deadlines, 0 < A ≤ B.

    >>> deadline_range("0.5,1.5"), deadline_range("1/2")
    ((0.5, 1.5), (1.0, 2.0))
    """
    parts = [p.strip() for p in str(text).replace("/", ",").split(",")]
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise ConfigError(f"{where}: setting 'deadlines' must be two numbers A,B (deadline = submit + U(A, B) × "
                          f"duration), got {text!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and 0 < low <= high):
        raise ConfigError(f"{where}: setting 'deadlines' needs 0 < A ≤ B, got {text!r}")
    return low, high


@settings_group(DEADLINES, reads=Reader(always))
class DeadlineOptions:
    deadlines: str | None = setting(
        None, "Give every job without a deadline one drawn as submit + U(A, B) × duration, seeded by --seed (the "
        "ElasticFlow authors' rule), e.g. 0.5,1.5; a trace's own deadline column is always read. summary.json then "
        "has deadline_satisfaction.", parse=deadline_range,
    )
