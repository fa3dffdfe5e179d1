"""How the round-based mechanism realises an allocation: our choices, and Gavel's simulator's.

One frozen record, read from :class:`~simcluster.config.SimConfig` (its Gavel group, :class:`~simcluster.settings.gavel.GavelOptions`), so that the
round policies' state (:mod:`simcluster.policies.gavel.rounds`) stays free of settings plumbing.  ``simcluster/presets/gavel.toml`` sets Gavel's choices; the README sets them side
by side with ours.

>>> gavel = Mechanism(realloc_interval=1920.0, reset_rule="gavel")
>>> gavel.may_reset(now=600.0, last_reset=0.0), gavel.may_reset(now=900.0, last_reset=200.0)
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from simcluster.config import SimConfig

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.policies.gavel.rounds import RoundPolicy

RESET_RULES = ("interval", "gavel")
TYPE_ORDERS = ("aware", "gavel")
PAIR_SHARES = ("partner", "drop")


@dataclass(frozen=True)
class Mechanism:
    """The round mechanism's settings; the defaults are ours, ``presets/gavel.toml`` Gavel's."""

    round_seconds: float = 360.0
    realloc_interval: float = 0.0  # least seconds between allocation resets
    midround_release: bool = True  # GPUs freed (and arrivals) are used at once, not at the next round
    new_jobs_wait: bool = False  # jobs that arrive after a reset get no GPUs until the next one
    reset_rule: str = "interval"  # "gavel": Gavel's exceptions to the interval (see ``may_reset``)
    type_order: str = "aware"  # "gavel": fill types fastest first for packing policies too (``fills_fastest_first``)
    pair_share_on_finish: str = "partner"  # "drop": a finished job's pair share lapses (Gavel's simulator)

    def __post_init__(self) -> None:
        if not self.round_seconds > 0:
            raise ValueError(f"--round must be positive, got {self.round_seconds}")
        if self.reset_rule not in RESET_RULES:
            raise ValueError(f"reset rule must be one of {', '.join(RESET_RULES)}, got {self.reset_rule!r}")
        if self.type_order not in TYPE_ORDERS:
            raise ValueError(f"type order must be one of {', '.join(TYPE_ORDERS)}, got {self.type_order!r}")
        if self.pair_share_on_finish not in PAIR_SHARES:
            raise ValueError(f"pair share on finish must be one of {', '.join(PAIR_SHARES)}, "
                             f"got {self.pair_share_on_finish!r}")

    @classmethod
    def from_config(cls, config: SimConfig) -> Mechanism:
        return cls(round_seconds=config.round_seconds, realloc_interval=config.realloc_interval,
                   midround_release=config.midround_release, new_jobs_wait=config.new_jobs_wait,
                   reset_rule=config.reset_rule, type_order=config.type_order,
                   pair_share_on_finish=config.pair_share_on_finish)

    @property
    def gavel_clock(self) -> bool:
        """Gavel's simulator's reset clock: its "last reset" of 0 means "never", so a reset at time 0
        does not start the interval; and when no job runs, time jumps to the next arrival, with a
        reset forced once no arrivals remain."""
        return self.reset_rule == "gavel"

    def may_reset(self, now: float, last_reset: float | None) -> bool:
        """Whether the interval allows a reset now (the job set must also have changed)."""
        if last_reset is None or (self.gavel_clock and last_reset == 0.0):
            return True
        return now - last_reset >= self.realloc_interval - 1e-6

    def fills_fastest_first(self, policy: RoundPolicy) -> bool:
        """Whether rounds visit GPU types fastest first (else in a seeded random order, which is how
        Gavel keeps heterogeneity-agnostic policies from favouring fast GPUs).  Gavel's simulator
        decides by the policy's class name — random only without "Perf" or "Packing" in it — so its
        gandiva ("Gandiva_Packing") fills the fastest type first."""
        return policy.aware or (self.type_order == "gavel" and policy.packing)
