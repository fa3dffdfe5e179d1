"""Which GPU type's nodes each ResourceFlavor selects, on a cluster of several GPU types.

A Kueue ResourceFlavor selects its nodes by labels (``nodeLabels``); on a GPU cluster one of them names the GPU
model, in the words of whoever labels the nodes: ``nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3`` (NVIDIA's
GPU feature discovery), ``cloud.google.com/gke-accelerator: nvidia-h100-80gb`` (GKE), or an operator's own
``gpu-type: h100``.  The simulator's cluster names its GPU types itself (``h100``, ``A100``), so a flavor is mapped
to the type whose name one of its label values contains, letters and digits only, in any case; where several types
match, the longest name wins (``a100-80gb`` before ``a100``).  A flavor without node labels selects every node, as
in Kueue: it maps to no one type.  A flavor whose labels name none of the cluster's types is refused, naming it and
the types, since its quota would then stand for nodes the cluster does not have.

>>> from types import MappingProxyType
>>> from simcluster.tiers.model import FlavorSpec
>>> h100 = FlavorSpec("h100-flavor", MappingProxyType({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}))
>>> any_node = FlavorSpec("default")
>>> flavor_types({"h100-flavor": h100, "default": any_node}, ("A100", "H100"))
{'h100-flavor': 'H100', 'default': None}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from simcluster.settings.fields import ConfigError
from simcluster.tiers.model import FlavorSpec


def _letters(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


def flavor_type(flavor: FlavorSpec, gpu_types: Sequence[str]) -> str | None:
    """The GPU type whose nodes ``flavor`` selects (module docstring); None where it selects every node.

    >>> from types import MappingProxyType
    >>> flavor_type(FlavorSpec("big", MappingProxyType({"gpu": "a100-80gb"})), ("a100", "a100-80gb", "v100"))
    'a100-80gb'
    >>> flavor_type(FlavorSpec("tpu", MappingProxyType({"accelerator": "tpu-v5"})), ("a100", "v100"))
    Traceback (most recent call last):
    ...
    simcluster.settings.fields.ConfigError: --kueue: ResourceFlavor 'tpu' selects nodes labelled accelerator=tpu-v5, \
which name none of the cluster's GPU types (a100, v100): a flavor's node labels must name one (nvidia.com/gpu.product: \
NVIDIA-A100-SXM4-80GB names a100), or have none to select every node
    """
    if not flavor.node_labels:
        return None
    values = [_letters(value) for value in flavor.node_labels.values()]
    named = [t for t in gpu_types if _letters(t) and any(_letters(t) in value for value in values)]
    if not named:
        labels = ", ".join(f"{key}={value}" for key, value in flavor.node_labels.items())
        raise ConfigError(f"--kueue: ResourceFlavor {flavor.name!r} selects nodes labelled {labels}, which name none "
                          f"of the cluster's GPU types ({', '.join(gpu_types)}): a flavor's node labels must name one "
                          f"(nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB names {gpu_types[0]}), or have none to "
                          "select every node")
    return max(named, key=lambda t: len(_letters(t)))


def flavor_types(flavors: Mapping[str, FlavorSpec], gpu_types: Sequence[str]) -> dict[str, str | None]:
    """Each flavor's GPU type (:func:`flavor_type`), by name; every flavor None on a cluster of one type (its
    labels then select the cluster's nodes, whatever they say: the quotas are accounts over one pool)."""
    if len(gpu_types) <= 1:
        return dict.fromkeys(flavors)
    return {name: flavor_type(spec, gpu_types) for name, spec in flavors.items()}


# --- flavors placed by Topology Aware Scheduling (a ResourceFlavor's topologyName) --------------------------------

TAS_PLACEMENTS_HINT = "tas-best-fit, tas-least-free, tas-balanced, kueue-tas (Kueue's default profile)"


def tas_flavors(flavors: Mapping[str, FlavorSpec]) -> frozenset[str]:
    """The flavors that name a Topology (``topologyName``): Kueue places their workloads by TAS.

    >>> tas_flavors({"rack": FlavorSpec("rack", topology_name="dc"), "any": FlavorSpec("any")})
    frozenset({'rack'})
    """
    return frozenset(name for name, spec in flavors.items() if spec.topology_name)


def flavor_choices(queues: Mapping[str, Sequence[str]], tas: frozenset[str]) -> dict[tuple[str, bool], tuple[str, ...]]:
    """The flavors a job of each ClusterQueue may be admitted on, by whether it asks for a topology, in the queue's
    order — Kueue's flavor assigner (``checkPodSetAndFlavorMatchForTAS``): a job that asks for one (a level or
    slices) skips the flavors without a topologyName; one that asks for none skips the TAS flavors, unless every
    flavor of its queue is one (a TAS-only queue: TAS is implied, the job placed unconstrained).  Without any TAS
    flavor every job may take every flavor of its queue, as before TAS.

    >>> choices = flavor_choices({"mixed": ("rack", "any"), "tas-only": ("rack",), "plain": ("any",)},
    ...                          frozenset({"rack"}))
    >>> choices["mixed", True], choices["mixed", False], choices["tas-only", False], choices["plain", True]
    (('rack',), ('any',), ('rack',), ())
    """
    out: dict[tuple[str, bool], tuple[str, ...]] = {}
    for queue, flavors in queues.items():
        flavors = tuple(flavors)
        if not tas:
            out[queue, True] = out[queue, False] = flavors
            continue
        placed = tuple(f for f in flavors if f in tas)
        plain = tuple(f for f in flavors if f not in tas)
        out[queue, True] = placed
        out[queue, False] = plain if plain else placed  # (a TAS-only queue: TAS implied)
    return out


def check_tas_run(flavors: Mapping[str, FlavorSpec], topologies: Mapping[str, tuple[str, ...]],
                  topology: str | None, placement: str, topology_aware: bool) -> None:
    """Refuse a run whose Kueue files place some flavor by TAS where the run cannot: without ``--topology`` (a
    Topology's levels are node labels the simulator's nodes do not carry: its workloads would never be admitted,
    as in Kueue where no node has the labels), or under a ``placement`` that reads no topology.

    >>> tas = {"gpu": FlavorSpec("gpu", topology_name="dc")}
    >>> check_tas_run(tas, {"dc": ("rack", "kubernetes.io/hostname")}, "topo.csv", "kueue-tas", True)
    >>> check_tas_run(tas, {"dc": ("rack", "kubernetes.io/hostname")}, None, "kueue-tas", True)
    Traceback (most recent call last):
    ...
    simcluster.settings.fields.ConfigError: --kueue: ResourceFlavor 'gpu' names Topology 'dc' (levels rack, \
kubernetes.io/hostname): Kueue places its jobs by Topology Aware Scheduling, over the nodes' topology labels, and \
this run has no topology; give --topology FILE (a CSV node,LEVEL,...; Slurm's topology.conf; or kubectl get nodes \
-o json with --topology-levels naming the Topology's YAML), or remove the flavor's topologyName to use its quota \
without a topology
    """
    named = sorted(tas_flavors(flavors))
    if not named:
        return
    first = flavors[named[0]]
    assert first.topology_name is not None
    more = f" (and {len(named) - 1} more flavor{'s' * (len(named) > 2)})" if len(named) > 1 else ""
    which = (f"ResourceFlavor {first.name!r}{more} names Topology {first.topology_name!r} "
             f"(levels {', '.join(topologies.get(first.topology_name, ()))})")
    if not topology:
        raise ConfigError(f"--kueue: {which}: Kueue places its jobs by Topology Aware Scheduling, over the nodes' "
                          "topology labels, and this run has no topology; give --topology FILE (a CSV "
                          "node,LEVEL,...; Slurm's topology.conf; or kubectl get nodes -o json with --topology-levels "
                          "naming the Topology's YAML), or remove the flavor's topologyName to use its quota without "
                          "a topology")
    if not topology_aware:
        raise ConfigError(f"--kueue: {which}: Kueue places its jobs by Topology Aware Scheduling, and placement "
                          f"{placement} reads no topology; choose a topology-aware one ({TAS_PLACEMENTS_HINT})")
