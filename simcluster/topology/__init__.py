"""Cluster topologies (issue 52): the nodes and the domains above them, racks, NVLink domains, switch blocks.

:class:`Topology` is the model (:mod:`~simcluster.topology.model`); :func:`read_topology` reads one from a
CSV table, Slurm's topology.conf or a Kubernetes node list (:mod:`~simcluster.topology.files`).
"""

from simcluster.topology.arrays import NODE, TopologyError
from simcluster.topology.files import parse_csv_topology, read_topology, topology_format
from simcluster.topology.hostlist import HostlistError, expand_hostlist
from simcluster.topology.kubernetes import kueue_topology_levels, parse_kubernetes_nodes, parse_kueue_levels
from simcluster.topology.model import Topology, cluster_nodes
from simcluster.topology.slurm import parse_slurm_topology

__all__ = [
    "NODE",
    "HostlistError",
    "Topology",
    "TopologyError",
    "cluster_nodes",
    "expand_hostlist",
    "kueue_topology_levels",
    "parse_csv_topology",
    "parse_kubernetes_nodes",
    "parse_kueue_levels",
    "parse_slurm_topology",
    "read_topology",
    "topology_format",
]
