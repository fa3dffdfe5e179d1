"""Tiresias' settings (:mod:`simcluster.policies.tiresias`): read by the policies that declare them
(``Policy.reads``)."""

from __future__ import annotations

from simcluster.settings.fields import declared, setting, settings_group

TIRESIAS = "Policy: tiresias"  # its panel in `lucid-sim run --help`


@settings_group(TIRESIAS, reads=declared)
class TiresiasOptions:
    quantum: float = setting(60.0, "Seconds between scheduling decisions of quantum-based policies (tiresias).",
                             above=0, time=True)
    thresholds: tuple[float, ...] = setting(
        (18000.0,), "Attained-service thresholds (GPU-seconds) between tiresias' priority queues, comma-separated; "
        "K queues need K-1.",
    )
    promote_knob: float = setting(
        0.0, "Tiresias' starvation guard: a job waiting longer than knob × its last run goes to the top queue "
        "(0: off).", min=0,
    )
    promotion_hold: bool = setting(
        True, "A job promoted by --promote-knob holds the top queue on its first run since, until it leaves that "
        "queue: no waiting job preempts it, so one promotion cannot starve the job it displaced into the next "
        "(issue 55). Off: the Tiresias artifact's rule, where a later promotion may preempt it at its next "
        "decision.",
    )
