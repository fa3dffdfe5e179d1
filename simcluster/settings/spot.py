"""Spot nodes: capacity the provider lends and takes back (:mod:`simcluster.features.spot`, docs/tiers.md "Spot
nodes"): how many nodes of each VC are spot, what reclaims them, and which jobs may run on them."""

from __future__ import annotations

import math
from typing import Any

from simcluster.settings.fields import ConfigError, Reader, setting, settings_group

SPOT = "Spot nodes"  # its panel in `lucid-sim run --help`
SPOT_JOBS = ("preemptible", "any")


def spot_count(text: Any, where: str = "settings") -> tuple[float, bool]:
    """``--spot-nodes``: a whole number of nodes of each VC (``2``), or a share of each VC's nodes (``25%``), as
    (number, is a share); a :class:`ConfigError` naming the option and the value as given otherwise.

    >>> spot_count("2"), spot_count("25%"), spot_count("")
    ((2.0, False), (25.0, True), (0.0, False))
    >>> spot_count("-1", "command line")
    Traceback (most recent call last):
    ...
    simcluster.settings.fields.ConfigError: command line: --spot-nodes must be a whole number of nodes of each VC (0 or more) or a share of them such as 25%, got '-1'
    """
    given = str(text).strip()
    if not given:
        return 0.0, False
    share = given.endswith("%")
    try:
        value = float(given.removesuffix("%"))
    except ValueError:
        value = math.nan
    whole = share or value == int(value) if math.isfinite(value) else False
    if not (math.isfinite(value) and value >= 0 and whole and (value <= 100 or not share)):
        raise ConfigError(f"{where}: --spot-nodes must be a whole number of nodes of each VC (0 or more) or a share "
                          f"of them such as 25%, got {text!r}")
    return value, share


def spot_nodes_of(text: Any, nodes: int) -> int:
    """How many of a VC's ``nodes`` are spot under ``--spot-nodes`` ``text`` (a share rounded down).

    >>> spot_nodes_of("25%", 6), spot_nodes_of("2", 6), spot_nodes_of("100%", 6)
    (1, 2, 6)
    """
    value, share = spot_count(text)
    return math.floor(nodes * value / 100 + 1e-9) if share else int(value)


def has_spot_nodes(config: Any) -> bool:
    """Whether ``config`` asks for spot nodes (a count or share above 0).

    >>> from types import SimpleNamespace
    >>> has_spot_nodes(SimpleNamespace(spot_nodes="0")), has_spot_nodes(SimpleNamespace(spot_nodes="10%"))
    (False, True)
    """
    return spot_count(getattr(config, "spot_nodes", ""))[0] > 0


# (read wherever given: a run's spot nodes may come from its cluster's spot column, which a reader does not see; the
# feature refuses them in words where the run has none)
@settings_group(SPOT, reads=Reader(lambda run: True))
class SpotOptions:
    spot_nodes: str = setting(
        "", "Spot nodes: this many nodes of each VC (its last ones), or a share of each VC's nodes (25%, rounded "
        "down), are capacity the provider may reclaim (--spot-reclaims); or a spot column of the VC config or node "
        "list names them. By default only preemptible jobs (a trace column preemptible) run on them, spot nodes "
        "first (--spot-jobs).",
        reads=Reader(lambda run: True), parse=spot_count,
    )
    spot_reclaims: str = setting(
        "", "What reclaims the spot nodes, as --faults reads a failure model: a rate per spot node "
        "(mtbf=1d,repair=1h: a reclaim a day on average, the node back an hour later) or an availability log "
        "replayed (CSV node,start,end or InfiniteHBD JSON). The jobs on a reclaimed node are evicted: they lose "
        "their work since their last checkpoint (--checkpoint-interval), owe --eviction-cost and wait again.",
    )
    spot_jobs: str = setting(
        "preemptible", "Which jobs may run on spot nodes: preemptible (Kueue's spot flavor with a taint that only "
        "preemptible work tolerates; they try spot nodes first) or any (guaranteed jobs too, after the other nodes).",
        choices=SPOT_JOBS,
    )
