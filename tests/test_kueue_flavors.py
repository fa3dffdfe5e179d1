"""Kueue's ResourceFlavors mapped to the cluster's GPU types: a workload admitted on a flavor is placed on the nodes
its node labels select (simcluster.tiers.flavors), as Kueue's flavors select nodes by label."""

from __future__ import annotations

from types import MappingProxyType

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.metrics.placements import Placements
from simcluster.settings.fields import ConfigError
from simcluster.tiers.flavors import flavor_type
from simcluster.tiers.model import FlavorSpec

FLAVORS = """apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
spec: {nodeLabels: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: A100_QUOTA}]
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team, namespace: ml}
spec: {clusterQueue: team}
"""


def run(tmp_path, a100_quota: int = 16, cluster: str = "a100:16,h100:16", jobs: int = 3):
    path = tmp_path / "kueue.yaml"
    path.write_text(FLAVORS.replace("A100_QUOTA", str(a100_quota)))
    frame = pd.DataFrame({"job_id": [f"j{i}" for i in range(jobs)], "gpu_num": 8, "submit_time": 0,
                          "duration": 100, "local_queue": "team"})
    trace = load_trace(frame, cluster=cluster)
    where = Placements()
    result = simulate(trace, SimConfig(policy="kueue", kueue=str(path), cluster=cluster), observers=[where])
    placed = where.frame()
    return result, dict(zip(placed["job_id"], placed["gpu_type"]))


def test_each_job_runs_on_the_nodes_of_the_flavor_it_was_admitted_on(tmp_path):
    """Kueue tries a queue's flavors in order: the first 8-GPU job fits a100's 8 GPUs of quota, the second only
    h100's, and runs on an H100 node although an A100 node is idle."""
    result, types = run(tmp_path, a100_quota=8, jobs=2)
    assert types == {"j0": "a100", "j1": "h100"}
    assert result.jobs["start_time"].tolist() == [0, 0]


def test_quota_without_nodes_of_its_type_waits_for_them(tmp_path):
    """a100's quota of 24 GPUs takes the third job too (Kueue assigns the first flavor whose quota fits), but the
    a100 nodes hold 16: it waits for them, as the pods of a workload admitted on a flavor wait for its nodes, and
    does not run on the idle H100s."""
    result, types = run(tmp_path, a100_quota=24)
    starts = dict(zip(result.jobs["job_id"], result.jobs["start_time"]))
    assert types == {"j0": "a100", "j1": "a100", "j2": "a100"}
    assert (starts["j0"], starts["j1"], starts["j2"]) == (0, 0, 100)


def test_a_flavor_naming_no_gpu_type_of_the_cluster_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="ResourceFlavor 'h100' selects nodes labelled .*name none of the "
                                          r"cluster's GPU types \(a100, v100\)"):
        run(tmp_path, cluster="a100:16,v100:16")


def test_the_longest_type_name_a_label_contains_is_the_flavors():
    spec = FlavorSpec("f", MappingProxyType({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}))
    assert flavor_type(spec, ("a100", "a10", "a100-sxm4-80gb")) == "a100-sxm4-80gb"
    assert flavor_type(FlavorSpec("any"), ("a100", "h100")) is None
