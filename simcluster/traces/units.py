"""The units a job log's numbers are in: ``--duration-unit`` and ``--time-format``.

Durations are seconds unless ``--duration-unit`` says ``ms``, ``min`` or ``h``; in another unit they
may have fractions, and become whole seconds by rounding to the nearest.  Submit times are read by
the rule of :mod:`simcluster.traces.times` unless ``--time-format`` names their form: ``epoch-s`` or
``epoch-ms`` (Unix time in seconds or milliseconds), or a strftime pattern such as
``%d/%m/%Y %H:%M``.

>>> seconds_per("min"), parse_time_format("epoch-ms"), parse_time_format("%d.%m.%Y %H:%M")
(60.0, 'epoch-ms', '%d.%m.%Y %H:%M')
"""

from __future__ import annotations

DURATION_UNITS = {"s": 1.0, "ms": 0.001, "min": 60.0, "h": 3600.0}
UNIX_FORMATS = {"epoch-s": 1.0, "epoch-ms": 0.001}  # --time-format: seconds per unit of Unix time


def seconds_per(unit: str | None) -> float:
    """Seconds in one ``--duration-unit`` (None: seconds)."""
    if unit is None:
        return 1.0
    if unit not in DURATION_UNITS:
        raise ValueError(f"--duration-unit must be one of {', '.join(DURATION_UNITS)}, got {unit!r}")
    return DURATION_UNITS[unit]


def parse_time_format(text: str | None) -> str | None:
    """``--time-format``: None or ``auto`` (the rule), ``epoch-s``, ``epoch-ms``, or a strftime pattern."""
    if text is None or text == "auto":
        return None
    if text in UNIX_FORMATS or "%" in text:
        return text
    raise ValueError(f"--time-format must be auto, epoch-s, epoch-ms or a strftime pattern with % fields "
                     f"(e.g. '%Y-%m-%d %H:%M:%S'), got {text!r}")
