"""A cluster's topology as a run uses it: matched to the cluster's nodes, with what spanning each level costs.

``--topology-slowdown block=1,rack=0.25,node=0.05``: a job whose GPUs lie in more than one domain of a level
runs at 1/(1 + X), X the largest cost of the levels it spans (spanning two blocks also spans two racks and two
nodes, so a block's cost counts only where it is the largest); a level not named costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simcluster.settings.fields import ConfigError
from simcluster.topology.arrays import NODE
from simcluster.topology.model import Topology

MAX_SLOWDOWN = 1000.0  # a job 1,001 times slower for spanning: more is a typo, not a network


@dataclass(frozen=True, eq=False)
class ClusterTopology:
    """``topology`` matched to the cluster's nodes (by their names, ``vc0/n3``), ``costs`` the X of each of its
    levels, top-down, then of the node level (0: spanning it costs nothing), and ``note`` how its rows matched.

    >>> topology = Topology.from_labels(("rack",), ["vc0/n0", "vc0/n1"], [["r0", "r1"]])
    >>> ClusterTopology(topology, slowdown_costs("rack=0.25", topology)).costs
    (0.25, 0.0)
    """

    topology: Topology
    costs: tuple[float, ...]
    note: str = ""

    @property
    def costly(self) -> bool:
        """Whether spanning any level costs something."""
        return any(self.costs)


def slowdown_costs(text: str | None, topology: Topology, where: str = "--topology-slowdown") -> tuple[float, ...]:
    """``LEVEL=X,...`` as the X of each of ``topology``'s levels (top-down, then :data:`NODE`); a
    :class:`ConfigError` names an unknown level, a level given twice or a cost that is not a number from 0 to
    1,000.

    >>> topology = Topology.from_labels(("block", "rack"), ["n0", "n1"], [["b0", "b0"], ["r0", "r1"]])
    >>> slowdown_costs("rack=0.25, node=0.05", topology)
    (0.0, 0.25, 0.05)
    >>> slowdown_costs("switch=1", topology)
    Traceback (most recent call last):
    ...
    simcluster.settings.fields.ConfigError: --topology-slowdown: no level 'switch' in the topology (its levels: block, rack, node)
    """
    levels = topology.all_levels
    costs = dict.fromkeys(levels, 0.0)
    seen: set[str] = set()
    for item in (text or "").split(","):
        if not item.strip():
            continue
        level, sep, value = (part.strip() for part in item.partition("="))
        if not sep:
            raise ConfigError(f"{where}: expected LEVEL=X items separated by commas, got {item.strip()!r}")
        if level not in costs:
            raise ConfigError(f"{where}: no level {level!r} in the topology (its levels: {', '.join(levels)})")
        if level in seen:
            raise ConfigError(f"{where}: level {level!r} given twice")
        seen.add(level)
        try:
            cost = float(value)
        except ValueError:
            raise ConfigError(f"{where}: {level}'s cost must be a number, got {value!r}") from None
        if not (math.isfinite(cost) and 0 <= cost <= MAX_SLOWDOWN):
            raise ConfigError(f"{where}: {level}'s cost must be from 0 to {MAX_SLOWDOWN:g}, got {value!r}")
        costs[level] = cost
    return tuple(costs[level] for level in levels)


__all__ = ["NODE", "ClusterTopology", "slowdown_costs"]
