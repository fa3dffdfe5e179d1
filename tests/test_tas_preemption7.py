"""Kueue's preemption with topology (issue 53): on a TAS flavor, victims are taken only where the job's required
level then has room for it (simcluster.placement.room_topology).

Kueue takes a candidate as a victim only once the preemptor's quota fits *and* its topology assignment succeeds
without it (pkg/scheduler/preemption/preemption.go, ``workloadFits``).  Before, the kueue policy asked only for
whole-node room, so a job requiring a rack evicted victims on two racks and still found no rack.  The runs below
are worked by hand on two racks of two 8-GPU nodes; the property tests hold the room test to the topology-aware
placement itself, and to the whole-node test where the job requires no domain.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simcluster.policies.kueue as kueue_policy
from simcluster.api import load_trace, simulate
from simcluster.cluster import Cluster
from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.metrics.placements import Placements
from simcluster.placement.room import fits_once_freed
from simcluster.placement.room_topology import fits_in_topology_once_freed
from simcluster.placement.topology_aware import TasBestFit
from simcluster.topology.request import TopologyRequest

KUEUE = """apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: rack}
spec: {nodeLabels: {pool: gpu}, topologyName: dc}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: dc}
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team}
spec:
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: rack
      resources: [{name: nvidia.com/gpu, nominalQuota: 32}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team, namespace: ml}
spec: {clusterQueue: team}
"""
RACKS = "node,rack\nn0,r0\nn1,r0\nn2,r1\nn3,r1\n"  # four nodes of 8 GPUs, two to a rack (matched by order)


def run(tmp_path, priorities: list[int], durations: list[int], whole_node_test: bool = False,
        monkeypatch: pytest.MonkeyPatch | None = None):
    """Fillers a, b, c, d (8 GPUs each, submitted at 0, 1, 2, 3 s: on n0, n1, n2, n3, as the test below checks)
    of the given priorities and durations, then at 100 s ``big``: 16 GPUs at priority 10, requiring a rack, in the
    one ClusterQueue ``team`` (32 GPUs of a TAS flavor, ``withinClusterQueue: LowerPriority``).
    ``whole_node_test``: the room test before this change (whole-node room wherever it is)."""
    if whole_node_test:
        assert monkeypatch is not None
        monkeypatch.setattr(kueue_policy, "fits_in_topology_once_freed", fits_once_freed)
    (tmp_path / "kueue.yaml").write_text(KUEUE)
    (tmp_path / "racks.csv").write_text(RACKS)
    jobs = pd.DataFrame({"job_id": ["a", "b", "c", "d", "big"], "vc": "vc0", "local_queue": "team",
                         "submit_time": [0, 1, 2, 3, 100], "gpu_num": [8, 8, 8, 8, 16],
                         "duration": [*durations, 500], "priority": [*priorities, 10],
                         "topology_required": ["", "", "", "", "rack"]})
    where = Placements()
    config = SimConfig(policy="kueue", kueue=str(tmp_path / "kueue.yaml"), placement="tas-best-fit",
                       topology=str(tmp_path / "racks.csv"))
    result = simulate(load_trace(jobs, {"vc0": 4}), config, observers=[where])
    placed = where.frame()
    nodes = {job: sorted({node.rpartition("/")[2] for node in group["node"]}) for job, group in placed.groupby("job_id")}
    return result, result.jobs.set_index("job_id"), nodes


def test_victims_spread_over_two_racks_are_not_preempted_for_a_job_requiring_a_rack(tmp_path, monkeypatch):
    """Worked by hand.  a (priority 0) on n0 and b (5) on n1 fill rack r0; c (0) on n2 and d (5) on n3 fill r1; the
    queue's 32 GPUs are used.  At 100 s ``big`` (priority 10, 16 GPUs, a rack required) needs 16 GPUs of quota:
    its lowest-priority targets are a and c, one in each rack.

    Before (whole-node test): freeing n0 and n2 gives two idle nodes, so a and c are preempted at 100 s; ``big``
    then finds no rack with 16 GPUs free and waits; a and c start again at once on the nodes they left.  Nothing
    was gained: at 300 s d ends (n3 free), ``big``'s one target is c (priority 0, admitted after a), on n2: rack r1
    is free, ``big`` runs there 300–800 s, c is preempted a second time.

    After (Kueue's loop, tests/test_tas_victims7.py): candidates go in Kueue's order, c, a, d, b, until the quota
    fits *and* a rack would hold ``big``: with c and a gone the quota fits but n0 and n2 are in two racks, so d goes
    too (r1 free); the fill-back puts a back (the quota and r1 hold without it).  Victims c and d, both in r1, at
    100 s: ``big`` runs on n2 and n3, 100–600 s, 200 s sooner.  d (priority 5, queued again) then preempts a
    (priority 0, its queue's LowerPriority rule) and runs on n0 until 340 s, where a starts again; c waits for big's
    rack.  Three preemptions as before, none for nothing: each freed GPUs that a job started on at once."""
    durations = [1000, 1000, 1000, 297]  # (d, submitted at 3 s, ends at 300 s)
    before, old, old_nodes = run(tmp_path, [0, 5, 0, 5], durations, whole_node_test=True, monkeypatch=monkeypatch)
    monkeypatch.undo()
    after, new, new_nodes = run(tmp_path, [0, 5, 0, 5], durations)
    for nodes in (old_nodes, new_nodes):  # (the fillers one per node, a and b in r0, c and d in r1)
        assert [nodes[j][-1] for j in "abcd"] == ["n0", "n1", "n2", "n3"]
        assert nodes["big"] == ["n2", "n3"]
    assert old_nodes["d"] == ["n3"] and new_nodes["d"] == ["n0", "n3"]  # (d back on a's node)
    assert old["preemptions"].to_dict() == {"a": 1, "b": 0, "c": 2, "d": 0, "big": 0}
    assert before.summary["preemptions"] == 3
    assert new["preemptions"].to_dict() == {"a": 1, "b": 0, "c": 1, "d": 1, "big": 0}
    assert after.summary["preemptions"] == 3
    assert (old.loc["big", "start_time"], old.loc["big", "end_time"]) == (300, 800)
    assert (new.loc["big", "start_time"], new.loc["big", "end_time"]) == (100, 600)
    assert (new.loc["d", "end_time"], new.loc["a", "end_time"]) == (340, 1280)  # (a again at 340 s, 900 s left)
    assert old.loc["a", "end_time"] > 1000  # (preempted at 100 s for nothing: it pays the restart)
    assert after.summary["kueue"]["quota_fit_but_no_room"] == 0  # (big found its victims at once)


def test_victims_that_free_a_rack_are_preempted_and_the_job_runs_in_that_rack(tmp_path):
    """Worked by hand.  a and b (priority 0) hold rack r0, c and d (priority 5) rack r1.  At 100 s ``big``'s
    targets are a and b: freeing them frees r0, so both are preempted and ``big`` runs on n0 and n1 at once,
    100–600 s; c and d run on."""
    result, table, nodes = run(tmp_path, [0, 0, 5, 5], [1000, 1000, 1000, 1000])
    assert table["preemptions"].to_dict() == {"a": 1, "b": 1, "c": 0, "d": 0, "big": 0}
    assert result.summary["kueue"]["cluster_queues"]["team"]["preempted"] == 2
    assert (table.loc["big", "start_time"], table.loc["big", "end_time"]) == (100, 600)
    assert nodes["big"] == ["n0", "n1"] and table.loc["big", "spanned_level"] == "node"
    assert (table.loc["c", "start_time"], table.loc["c", "end_time"]) == (2, 1002)


# --- the room test itself, against the placement -------------------------------------------------------------


def cluster(racks: list[int], free: list[int], per_node: int = 8):
    """One VC, its nodes' racks as given and each node's GPUs held by one running job (``per_node`` − free)."""
    vc = Cluster({"v": len(racks)}, per_node).vcs["v"]
    vc.topology_levels = ("block", "rack")
    running = []
    for node, rack, left in zip(vc.nodes, racks, free, strict=True):
        node.domains = (rack // 2, rack)  # (two racks to a block)
        if left < per_node:
            job = Job(index=len(running), job_id=f"r{node.index}", vc="v", gpu_num=per_node - left, submit_time=0,
                      duration=9)
            job.allocation = ((node, node.allocate(job, per_node - left)),)
            running.append(job)
    return vc, running


def waiting(gpus: int, request: TopologyRequest | None) -> Job:
    job = Job(index=999, job_id="w", vc="v", gpu_num=gpus, submit_time=0, duration=9)
    job.topology = request
    return job


def test_pods_smaller_than_a_node_fit_a_rack_where_no_node_is_idle():
    """12 GPUs in pods of 4 (pod_gpus(12, 8)) requiring a rack: three nodes of one rack with 4 GPUs free each hold
    them, as the placement places them, where the whole-node test wants an idle node."""
    vc, _ = cluster([0, 0, 0, 1], [4, 4, 4, 4])
    job = waiting(12, TopologyRequest("required", "rack"))
    assert fits_in_topology_once_freed(job, [], vc) and TasBestFit().place(job, vc) is not None
    assert not fits_once_freed(job, [], vc)
    assert not fits_in_topology_once_freed(waiting(16, TopologyRequest("required", "rack")), [], vc)


states = st.integers(2, 10).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 4), min_size=n, max_size=n).map(sorted),  # each node's rack (racks in node order)
    st.lists(st.integers(0, 8), min_size=n, max_size=n),  # each node's free GPUs
    st.lists(st.booleans(), min_size=n, max_size=n),  # whether its job leaves
))
requests = st.one_of(
    st.builds(TopologyRequest, st.just("required"), st.sampled_from(["block", "rack", "node"]),
              st.sampled_from([0, 2, 4])),
    st.builds(TopologyRequest, st.sampled_from(["required", "preferred", ""]), st.just("block"), st.just(0),
              st.just("rack"), st.sampled_from([1, 2, 3])).map(
        lambda r: r if r.mode else TopologyRequest("", "", 0, r.slice_level, r.slice_size)))


@settings(max_examples=150, deadline=None)
@given(states, st.sampled_from([1, 2, 4, 6, 8, 12, 16, 24, 32]), requests)
def test_a_required_level_has_room_iff_the_placement_places_the_job_once_the_victims_leave(state, gpus, request):
    """The room test with victims leaving equals the topology-aware placement's answer once they have really left
    (a fresh placement over the nodes as they are then)."""
    racks, free, leaves = state
    vc, running = cluster(racks, free)
    if request.pod_gpus and gpus % request.pod_gpus:
        request = TopologyRequest(request.mode, request.level)
    if request.slice_size and gpus // request.pod_size(gpus, 8) % request.slice_size:
        return  # (slices must divide the pods: refused before any placement)
    job = waiting(gpus, request)
    leaving = [j for j in running if leaves[j.allocation[0][0].index]]
    answer = fits_in_topology_once_freed(job, leaving, vc)
    for victim in leaving:
        victim.allocation[0][0].release(victim)
    assert answer == (TasBestFit().place(job, vc) is not None)


@settings(max_examples=150, deadline=None)
@given(states, st.integers(1, 40), st.sampled_from([None, "block", "rack", "node"]))
def test_a_job_requiring_no_domain_gets_the_whole_node_test(state, gpus, preferred):
    """No request, or a preferred level: the same answer as :func:`fits_once_freed`, victims or not."""
    racks, free, leaves = state
    vc, running = cluster(racks, free)
    job = waiting(gpus, None if preferred is None else TopologyRequest("preferred", preferred))
    leaving = [j for j in running if leaves[j.allocation[0][0].index]]
    assert fits_in_topology_once_freed(job, leaving, vc) == fits_once_freed(job, leaving, vc)


def test_slices_are_judged_by_kueues_assignment():
    """32 GPUs in pods of 8 and slices of 2 pods, each slice in one rack, all in one block.  Block 0 (racks r0,
    r1) has three idle nodes: r0 holds a slice, r1 none; block 1 (r2) holds one.  With n3's job leaving, r1 holds
    the second slice.  Without slices the same pods need four idle nodes of a block: the same answers."""
    vc, running = cluster([0, 0, 1, 1, 2, 2], [8, 8, 8, 0, 8, 8])
    job = waiting(32, TopologyRequest("required", "block", 8, "rack", 2))
    assert not fits_in_topology_once_freed(job, [], vc)
    assert fits_in_topology_once_freed(job, running, vc)  # (n3's job leaves: r1 whole again)
    plain = waiting(32, TopologyRequest("required", "block", 8))  # (no slices: three idle nodes are not four)
    assert not fits_in_topology_once_freed(plain, [], vc) and fits_in_topology_once_freed(plain, running, vc)


TWO_QUEUES = KUEUE.split("---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue")[0] + "".join(
    f"""---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  preemption: {{withinClusterQueue: LowerPriority}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: rack
      resources: [{{name: nvidia.com/gpu, nominalQuota: 16}}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: {name}, namespace: ml}}
spec: {{clusterQueue: {name}}}
""" for name in ("x", "y"))


class EvictingForever(Exception):
    pass


def two_queue_run(tmp_path):
    (tmp_path / "kueue.yaml").write_text(TWO_QUEUES)
    (tmp_path / "racks.csv").write_text(RACKS)
    jobs = pd.DataFrame({"job_id": ["a", "b", "c", "d", "bx", "by"], "vc": "vc0",
                         "local_queue": ["x", "y", "x", "y", "x", "y"], "submit_time": [0, 1, 2, 3, 100, 100],
                         "gpu_num": [8, 8, 8, 8, 16, 16], "duration": [1000, 1000, 1000, 1000, 500, 500],
                         "priority": [0, 0, 0, 0, 10, 10], "topology_required": ["", "", "", "", "rack", "rack"]})
    config = SimConfig(policy="kueue", kueue=str(tmp_path / "kueue.yaml"), placement="tas-best-fit",
                       topology=str(tmp_path / "racks.csv"))
    where = Placements()
    result = simulate(load_trace(jobs, {"vc0": 4}), config, observers=[where])
    return result.jobs.set_index("job_id"), where.frame().groupby("job_id")["end"].first()


def test_two_queues_wait_for_their_racks_where_the_whole_node_test_evicted_until_racks_came_free(tmp_path,
                                                                                                  monkeypatch):
    """Worked by hand.  Queues x and y (16 GPUs each, no cohort) hold a, c (x: n0, n2) and b, d (y: n1, n3), one in
    each rack.  At 100 s ``bx`` (x) and ``by`` (y), 16 GPUs requiring a rack, priority 10.

    After (Kueue's rule): neither finds a rack with its own queue's victims gone, so nobody is evicted at 100 s.
    At 1,000 s a ends (n0 free): ``by`` needs both of y's jobs gone for its quota, and with b and d gone rack r0 is
    free, so both go and ``by`` runs on n0, n1; ``bx`` needs c gone, and with d gone rack r1 is free: c goes.
    Both run 1,000–1,500 s, three evictions.

    Before (whole-node test): ``bx`` evicts a and c, finds no rack and waits; a and c start again on n0 and n2;
    ``by`` evicts b and d and finds no rack either, but their release reopens x's line, and ``bx`` evicts a and c
    again, now with all four nodes free: it runs at 100 s, and ``by`` on the other rack.  Sooner for the two,
    by evictions Kueue would not make (four at 100 s, two of them for nothing): what the simulator now models is
    Kueue's decision, not a better one."""
    table, first_runs = two_queue_run(tmp_path)
    assert table["preemptions"].to_dict() == {"a": 0, "b": 1, "c": 1, "d": 1, "bx": 0, "by": 0}
    assert table.loc[["bx", "by"], "start_time"].tolist() == [1000, 1000]
    assert first_runs[["a", "b", "c", "d"]].tolist() == [1000, 1000, 1000, 1000]  # (none cut short at 100 s)
    monkeypatch.setattr(kueue_policy, "fits_in_topology_once_freed", fits_once_freed)
    old, old_first_runs = two_queue_run(tmp_path)
    assert old.loc[["bx", "by"], "start_time"].tolist() == [100, 100]
    assert old["preemptions"].sum() == 4 and old_first_runs[["a", "b", "c", "d"]].tolist() == [100] * 4


def tiered_trace(jobs: int) -> pd.DataFrame:
    """8-GPU jobs at priority 0 (and a few of 4) beside 12-, 16- and 32-GPU jobs at priority 100 that require a
    rack, in four queues; log-normal durations, Poisson arrivals offering 1.2 × the GPUs of 64 nodes."""
    rng = np.random.default_rng(1)
    sizes = rng.choice([8, 8, 8, 4, 12, 16, 32], jobs)
    duration = np.clip(np.round(rng.lognormal(7, 1.8, jobs)), 1, 259_200).astype(int)
    rate = 1.2 * 64 * 8 / float(np.mean(sizes * duration))
    return pd.DataFrame({"job_id": [f"j{i}" for i in range(jobs)], "gpu_num": sizes, "duration": duration,
                         "submit_time": np.floor(np.cumsum(rng.exponential(1 / rate, jobs))).astype(int),
                         "vc": "vc0", "local_queue": [f"q{i % 4}" for i in range(jobs)],
                         "priority": np.where(sizes >= 12, 100, 0),
                         "topology_required": np.where(sizes >= 12, "rack", "")})


def cohort_files(tmp_path) -> SimConfig:
    """Four ClusterQueues of 128 GPUs of one TAS flavor in one cohort (reclaimWithinCohort: Any,
    withinClusterQueue: LowerPriority), on 64 nodes in racks of 8."""
    queue = KUEUE.split("---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue")[1]
    queue = queue.replace("preemption: {withinClusterQueue: LowerPriority}",
                          "cohort: all\n  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}")
    queue = queue.replace("nominalQuota: 32", "nominalQuota: 128")
    head = KUEUE.split("---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue")[0]
    body = "".join("---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue" + queue.replace("team", f"q{i}")
                   for i in range(4))
    (tmp_path / "kueue.yaml").write_text(head + body)
    (tmp_path / "racks.csv").write_text("node,rack\n" + "".join(f"n{i},r{i // 8}\n" for i in range(64)))
    return SimConfig(policy="kueue", kueue=str(tmp_path / "kueue.yaml"), placement="tas-best-fit",
                     topology=str(tmp_path / "racks.csv"))


def whole_node_test_counting_evictions():
    """The room test before this change (whole-node room wherever it is), raising :class:`EvictingForever` once it
    has let over 1,000 evictions through at one instant."""
    evictions: dict[float, int] = {}

    def whole_node_test(job, leaving, room):
        leaving = list(leaving)
        answer = fits_once_freed(job, leaving, room)
        if answer and leaving:
            now = room.clock()  # (the simulation's clock, as the VC reads it)
            evictions[now] = evictions.get(now, 0) + len(leaving)
            if evictions[now] > 1000:
                raise EvictingForever(now)
        return answer

    return whole_node_test


def test_jobs_requiring_racks_no_longer_evict_each_others_victims_forever(tmp_path, monkeypatch):
    """The livelock the whole-node test allowed, on 400 jobs of :func:`tiered_trace`: at 34,428 s two jobs
    requiring a rack, of queues q0 and q2, each evict lower-priority jobs of their own queue (q0's on n4 and n8, two
    racks), find no rack and wait; the victims start again where they were, and each eviction's release reopens the
    other's line (GPUs came free), so they evict again, at the same instant, forever.  With the topology test
    neither evicts where it would find no rack: the run ends, every job done."""
    config = cohort_files(tmp_path)
    result = simulate(load_trace(tiered_trace(400), {"vc0": 64}), config)
    assert result.jobs["end_time"].notna().all() and len(result.jobs) == 400
    monkeypatch.setattr(kueue_policy, "fits_in_topology_once_freed", whole_node_test_counting_evictions())
    with pytest.raises(EvictingForever):
        simulate(load_trace(tiered_trace(400), {"vc0": 64}), config)


def test_without_tas_flavors_jobs_requiring_racks_do_not_evict_each_others_victims_forever(tmp_path, monkeypatch):
    """The same livelock in a run whose flavor has no ``topologyName``: the run's topology requests are honoured on
    every flavor (docs/tiers.md), so the room asked before preempting is the topology's there too.  With the
    whole-node test it evicts forever at one instant; with the topology's, the run ends, every job done."""
    config = cohort_files(tmp_path)
    (tmp_path / "kueue.yaml").write_text((tmp_path / "kueue.yaml").read_text().replace(", topologyName: dc", ""))
    result = simulate(load_trace(tiered_trace(400), {"vc0": 64}), config)
    assert result.jobs["end_time"].notna().all() and len(result.jobs) == 400
    monkeypatch.setattr(kueue_policy, "fits_in_topology_once_freed", whole_node_test_counting_evictions())
    with pytest.raises(EvictingForever):
        simulate(load_trace(tiered_trace(400), {"vc0": 64}), config)
