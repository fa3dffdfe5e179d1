"""Elastic jobs, resized while they run (:mod:`simcluster.features.elastic`): read by the elastic policies that
declare them (``Policy.reads``)."""

from __future__ import annotations

from simcluster.settings.fields import declared, setting, settings_group

ELASTIC = "Elastic jobs"  # its panel in `lucid-sim run --help`


@settings_group(ELASTIC, reads=declared)
class ElasticOptions:
    restart_delay: float = setting(
        30.0, "Seconds an elastic job makes no progress after it starts and after each change of its GPUs (Pollux: "
        "30); a policy may charge its own instead (ElasticFlow's overhead model).", min=0,
        time=True,
    )
    schedule_interval: float = setting(
        60.0, "Seconds between the re-allocations of the interval-driven elastic policies (pollux, optimus, "
        "tiresias-pollux; Pollux: 60).", above=0,
        time=True,
    )
    arrivals_wait: bool = setting(
        False, "Interval-driven elastic policies decide only at the ends of intervals (multiples of "
        "--schedule-interval): an arrival waits for the next one and GPUs a job frees stay idle until then, as in "
        "Pollux's simulator. By default they also decide at once when a job arrives or finishes.",
    )
    progress_rounding: str = setting(
        "exact", "When an elastic job's epoch ends (its speed changes; the last one's end is its finish): at the "
        "exact time, or rounded to a whole second (seconds: Pollux's simulator).",
        choices=("exact", "seconds"),
    )
