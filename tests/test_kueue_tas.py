"""A Kueue ResourceFlavor with a ``topologyName``: its jobs placed by Topology Aware Scheduling (docs/tiers.md).

Kueue's flavor assigner matches jobs and flavors by TAS: a job that asks for a topology (a required or preferred
level, or slices) is admitted only on a flavor with a topologyName, and its request is honoured by the run's
topology-aware placement; a job that asks for none skips the TAS flavors of its queue (unless they are all it has)
and is placed without topology constraints.  A run that cannot place by TAS (no ``--topology``, or a placement
that reads none) is refused in words.
"""

from __future__ import annotations

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.metrics.placements import Placements
from simcluster.settings.fields import ConfigError
from simcluster.tiers.flavors import check_tas_run, flavor_choices, tas_flavors
from simcluster.tiers.model import FlavorSpec

FLAVOR = """apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: {name}}}
spec: {{nodeLabels: {{pool: gpu}}{topology}}}
"""
TOPOLOGY = """apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: dc}
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
"""
QUEUE = """apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
{flavors}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: {name}, namespace: ml}}
spec: {{clusterQueue: {name}}}
"""
QUOTA = "    - name: {flavor}\n      resources: [{{name: nvidia.com/gpu, nominalQuota: {gpus}}}]"
RACKS = "node,rack\nn0,r0\nn1,r0\nn2,r1\nn3,r1\n"  # four nodes of 8 GPUs, two to a rack (matched by order)


def kueue_files(tmp_path, queues: dict[str, dict[str, int]], tas: tuple[str, ...] = ("rack",)) -> str:
    """A Kueue YAML: the flavors the queues name (those in ``tas`` with topologyName dc), the Topology dc, and
    each ClusterQueue (its flavors' GPU quotas, in order) with a LocalQueue of its name."""
    flavors = dict.fromkeys(f for quotas in queues.values() for f in quotas)
    docs = [FLAVOR.format(name=f, topology=", topologyName: dc" if f in tas else "") for f in flavors]
    docs.append(TOPOLOGY)
    for name, quotas in queues.items():
        lines = "\n".join(QUOTA.format(flavor=f, gpus=g) for f, g in quotas.items())
        docs.append(QUEUE.format(name=name, flavors=lines))
    path = tmp_path / "kueue.yaml"
    path.write_text("---\n".join(docs))
    return str(path)


def racks(tmp_path) -> str:
    path = tmp_path / "racks.csv"
    path.write_text(RACKS)
    return str(path)


def run(tmp_path, jobs: pd.DataFrame, kueue: str, placement: str = "tas-best-fit", topology: bool = True,
        **options):
    where = Placements()
    config = SimConfig(policy="kueue", kueue=kueue, placement=placement,
                       topology=racks(tmp_path) if topology else None, **options)
    result = simulate(load_trace(jobs, {"vc0": 4}), config, observers=[where])
    placed = where.frame()
    nodes = {job: sorted({node.rpartition("/")[2] for node in group["node"]}) for job, group in placed.groupby("job_id")}
    return result.jobs.set_index("job_id"), nodes


def test_a_tas_flavor_job_fits_one_rack_and_a_plain_flavor_job_spreads(tmp_path):
    """Worked by hand.  Three 8-GPU fillers of queue ``plain`` take one node each at 0 s: n0, then n1 (the rack
    with the fewest such pods free, r0), then n2; ``f2`` on n1 ends at 100 s, leaving 8 GPUs free in each rack (n1,
    n3).  At 200 s two 16-GPU jobs come: ``t`` of queue ``tas`` (flavor ``rack``, topologyName dc) requires a rack,
    ``p`` of ``plain`` (a flavor without one) asks for nothing.  Both have quota; ``t`` finds no rack with 16 GPUs
    free and waits, ``p`` spreads over n1 and n3 and runs 200–700 s.  At 1,000 s the fillers end and ``t`` runs
    in one rack, 1,000–1,500 s."""
    kueue = kueue_files(tmp_path, {"tas": {"rack": 16}, "plain": {"default": 40}})
    jobs = pd.DataFrame({"job_id": ["f1", "f2", "f3", "t", "p"], "vc": "vc0",
                         "local_queue": ["plain", "plain", "plain", "tas", "plain"],
                         "submit_time": [0, 0, 0, 200, 200], "gpu_num": [8, 8, 8, 16, 16],
                         "duration": [1000, 100, 1000, 500, 500],
                         "topology_required": ["", "", "", "rack", ""]})
    table, nodes = run(tmp_path, jobs, kueue)
    assert nodes["f1"] == ["n0"] and nodes["f2"] == ["n1"] and nodes["f3"] == ["n2"]
    assert (table.loc["p", "start_time"], table.loc["p", "end_time"]) == (200, 700)
    assert nodes["p"] == ["n1", "n3"] and table.loc["p", "spanned_level"] == "rack"
    assert (table.loc["t", "start_time"], table.loc["t", "end_time"]) == (1000, 1500)
    assert nodes["t"] in (["n0", "n1"], ["n2", "n3"]) and table.loc["t", "spanned_level"] == "node"


def test_in_a_mixed_queue_a_job_asking_for_a_topology_takes_only_the_tas_flavor(tmp_path):
    """Queue ``team`` has flavor ``rack`` (TAS, 8 GPUs of quota) then ``default`` (16).  Kueue's flavor assigner:
    ``r1`` and ``r2`` prefer a rack, so only ``rack`` may hold them — ``r1`` takes its 8 GPUs and ``r2`` waits for
    them (100 s) although ``default`` has quota and the cluster idle GPUs; ``a`` asks for nothing, so it skips the
    TAS flavor and runs at once on ``default``.  Without the topologyName the same trace admits ``r2`` at once on
    ``default`` (the flavors are plain quota accounts, as before TAS)."""
    jobs = pd.DataFrame({"job_id": ["r1", "r2", "a"], "vc": "vc0", "local_queue": "team",
                         "submit_time": [0, 0, 0], "gpu_num": [8, 8, 8], "duration": [100, 100, 100],
                         "topology_preferred": ["rack", "rack", ""]})
    quotas = {"team": {"rack": 8, "default": 16}}
    table, _ = run(tmp_path, jobs, kueue_files(tmp_path, quotas))
    assert table["start_time"].to_dict() == {"r1": 0, "r2": 100, "a": 0}
    plain, _ = run(tmp_path, jobs, kueue_files(tmp_path, quotas, tas=()))
    assert plain["start_time"].to_dict() == {"r1": 0, "r2": 0, "a": 0}


def test_a_tas_only_queue_takes_jobs_without_a_request_unconstrained(tmp_path):
    """Every flavor of ``tas`` is a TAS flavor, so TAS is implied (Kueue's isTASImplied): a job asking for no
    topology is admitted there and may spread over both racks."""
    jobs = pd.DataFrame({"job_id": ["big"], "vc": "vc0", "local_queue": "tas", "submit_time": [0],
                         "gpu_num": [24], "duration": [100], "topology_required": [""]})
    table, nodes = run(tmp_path, jobs, kueue_files(tmp_path, {"tas": {"rack": 32}}))
    assert table.loc["big", "start_time"] == 0 and table.loc["big", "spanned_level"] == "rack"
    assert len(nodes["big"]) == 3


def test_a_tas_flavor_without_a_topology_is_refused(tmp_path):
    """The Topology's levels are node labels the simulator's nodes do not carry: Kueue would admit none of the
    flavor's jobs, so the run is refused, saying how to give the topology or drop the topologyName."""
    jobs = pd.DataFrame({"job_id": ["j"], "vc": "vc0", "local_queue": "tas", "submit_time": [0], "gpu_num": [8],
                         "duration": [100]})
    kueue = kueue_files(tmp_path, {"tas": {"rack": 16}})
    with pytest.raises(ConfigError, match=r"ResourceFlavor 'rack' names Topology 'dc' \(levels "
                                          r"cloud.provider.com/topology-rack, kubernetes.io/hostname\).*this run has "
                                          r"no topology; give --topology FILE.*or remove the flavor's topologyName"):
        run(tmp_path, jobs, kueue, placement="consolidate", topology=False)


def test_a_tas_flavor_under_a_placement_that_reads_no_topology_is_refused(tmp_path):
    jobs = pd.DataFrame({"job_id": ["j"], "vc": "vc0", "local_queue": "tas", "submit_time": [0], "gpu_num": [8],
                         "duration": [100]})
    kueue = kueue_files(tmp_path, {"tas": {"rack": 16}})
    with pytest.raises(ConfigError, match="placement consolidate reads no topology; choose a topology-aware one "
                                          r"\(tas-best-fit"):
        run(tmp_path, jobs, kueue, placement="consolidate")


def test_a_job_asking_for_a_topology_in_a_queue_without_a_tas_flavor_is_refused(tmp_path):
    """Kueue would never admit it (no flavor of its queue supports TAS): refused, naming the job and the queue."""
    jobs = pd.DataFrame({"job_id": ["ok", "stuck"], "vc": "vc0", "local_queue": ["tas", "plain"],
                         "submit_time": [0, 0], "gpu_num": [8, 8], "duration": [100, 100],
                         "topology_required": ["rack", "rack"]})
    kueue = kueue_files(tmp_path, {"tas": {"rack": 16}, "plain": {"default": 16}})
    with pytest.raises(ConfigError, match=r"job stuck asks for a topology \(required:rack\) but ClusterQueue 'plain' "
                                          r"has no flavor with a topologyName \(its flavors: default\)"):
        run(tmp_path, jobs, kueue)


def test_without_tas_flavors_every_job_may_take_every_flavor():
    """No topologyName among the files: the choices are the queues' flavors, as before TAS (runs unchanged)."""
    assert tas_flavors({"a": FlavorSpec("a")}) == frozenset()
    choices = flavor_choices({"q": ("a", "b")}, frozenset())
    assert choices["q", True] == choices["q", False] == ("a", "b")
    check_tas_run({"a": FlavorSpec("a")}, {}, None, "consolidate", False)  # (nothing to refuse)
