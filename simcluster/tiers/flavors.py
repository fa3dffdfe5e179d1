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
