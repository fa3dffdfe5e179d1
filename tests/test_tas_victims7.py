"""Kueue's TAS preemption chooses victims by topology (issue 53): for a job that requires a level (or slices) on a TAS
flavor, candidates go, in Kueue's candidate order, until the quota fits *and* a domain would hold the job, and the
fill-back puts back every victim that neither the quota nor the topology needs.

Kueue v0.17 (pkg/scheduler/preemption/preemption.go): ``classicalPreemptions`` and the fair-sharing strategies
remove candidates one at a time and stop once ``workloadFits``, which checks the quota and then runs
``FindTopologyAssignmentsForWorkload``; ``fillBackWorkloads`` adds each target back (from the last-but-one) where
``workloadFits`` still holds.  Before, the kueue policy took the quota's victims only if they freed a domain, else
none.  The runs are worked by hand on two racks of two 8-GPU nodes; the searches are held to their invariants on
random cohort trees with room tests that need given victims gone.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simcluster.policies.kueue as kueue_policy
from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.metrics.placements import Placements
from simcluster.tiers.model import ClusterQueueSpec, FairSharing, FlavorQuota, KueueConfig, Preemption
from simcluster.tiers.preemption import preemption_targets
from simcluster.tiers.quota_tree import QuotaTree, Workload
from tests.test_kueue_quota import all_usages, scenarios
from tests.test_tas_preemption7 import KUEUE, RACKS

# a, b, c, e (8 GPUs each, priority 0) start at 0-3 s on n0, n1, n2, n3 (racks r0, r0, r1, r1); b ends at 50 s and d
# (8 GPUs, priority 0) takes n1 at 60 s; at 100 s ``big`` (16 GPUs, priority 10) comes to the full 32-GPU queue.
FILLERS = {"job_id": ["a", "b", "c", "e", "d", "big"], "submit_time": [0, 1, 2, 3, 60, 100],
           "gpu_num": [8, 8, 8, 8, 8, 16], "duration": [1000, 49, 1000, 1000, 1000, 500],
           "priority": [0, 0, 0, 0, 0, 10]}


def run(tmp_path, required: str = "rack", tas: bool = True, old: bool = False,
        monkeypatch: pytest.MonkeyPatch | None = None):
    """:data:`FILLERS` in the one ClusterQueue ``team`` (32 GPUs, ``withinClusterQueue: LowerPriority``) of
    tests/test_tas_preemption7.py, ``big`` requiring ``required`` ("" none); ``tas``: the flavor has its
    topologyName; ``old``: the search before this change (the quota's victims, then the room test of those)."""
    if old:
        assert monkeypatch is not None
        monkeypatch.setattr(kueue_policy.Kueue, "_room_test", lambda self, job, flavor: None)
    (tmp_path / "kueue.yaml").write_text(KUEUE if tas else KUEUE.replace(", topologyName: dc", ""))
    (tmp_path / "racks.csv").write_text(RACKS)
    jobs = pd.DataFrame({**FILLERS, "vc": "vc0", "local_queue": "team",
                         "topology_required": ["", "", "", "", "", required]})
    where = Placements()
    config = SimConfig(policy="kueue", kueue=str(tmp_path / "kueue.yaml"), placement="tas-best-fit",
                       topology=str(tmp_path / "racks.csv"))
    result = simulate(load_trace(jobs, {"vc0": 4}), config, observers=[where])
    placed = where.frame()
    nodes = {job: [node.rpartition("/")[2] for node in group.sort_values("start")["node"]]
             for job, group in placed.groupby("job_id")}
    return result, result.jobs.set_index("job_id"), nodes


def test_kueue_takes_one_more_victim_to_free_a_rack_and_the_job_starts_there(tmp_path, monkeypatch):
    """Worked by hand.  At 100 s the candidates, in Kueue's order (all priority 0: the most recently admitted
    first), are d (n1, r0), e (n3, r1), c (n2, r1), a (n0, r0); ``big`` needs 16 GPUs of quota, two victims.

    Kueue's loop: d goes (8 GPUs free: no quota fit); e goes (quota fits, but n1 and n3 are in two racks: no
    topology fit); c goes (n2 and n3 free: rack r1 fits).  Fill-back from the last-but-one: e back? the quota fits
    but r1 would not be free: e stays; d back? the quota fits (a, d: 16 GPUs) and r1 is free: d goes back.  The
    victims are c and e, and ``big`` runs on n2 and n3 from 100 s to 600 s; c and e, priority 0, cannot preempt
    anyone and wait for big's rack (each back on its node at 600 s); a and d run on undisturbed.

    Before (the quota's victims d and e, taken only if they freed a rack: they do not): nobody is preempted at
    100 s, and ``big`` waits until a ends at 1,000 s: then d alone makes the quota fit and frees r0 (n0, n1), and
    ``big`` runs there 1,000-1,500 s."""
    result, table, nodes = run(tmp_path)
    assert [nodes[j] for j in ("a", "d")] == [["n0"], ["n1"]]
    assert nodes["big"] == ["n2", "n3"] and table.loc["big", "spanned_level"] == "node"
    assert (table.loc["big", "start_time"], table.loc["big", "end_time"]) == (100, 600)
    assert table["preemptions"].to_dict() == {"a": 0, "b": 0, "c": 1, "e": 1, "d": 0, "big": 0}
    assert result.summary["kueue"]["cluster_queues"]["team"]["preempted"] == 2
    assert result.summary["kueue"]["quota_fit_but_no_room"] == 0  # (big found its victims at once)
    assert (table.loc["a", "start_time"], table.loc["a", "end_time"]) == (0, 1000)
    assert (table.loc["d", "start_time"], table.loc["d", "end_time"]) == (60, 1060)
    assert (nodes["c"], nodes["e"]) == (["n2", "n2"], ["n3", "n3"])  # (each back on its node, once big ends)
    assert table.loc[["c", "e"], "end_time"].min() > 600 + 900  # (at 600 s, with 900-odd seconds of work left)

    before, old, old_nodes = run(tmp_path, old=True, monkeypatch=monkeypatch)
    assert old["preemptions"].to_dict() == {"a": 0, "b": 0, "c": 0, "e": 0, "d": 1, "big": 0}
    assert (old.loc["big", "start_time"], old.loc["big", "end_time"]) == (1000, 1500)
    assert old_nodes["big"] == ["n0", "n1"]
    assert before.summary["kueue"]["quota_fit_but_no_room"] >= 1  # (big at 100 s: quota victims, no rack)


@pytest.mark.parametrize("required, tas", [("", True), ("", False), ("rack", False)])
def test_the_same_case_without_a_required_level_on_a_tas_flavor_decides_as_before(tmp_path, monkeypatch, required,
                                                                                   tas):
    """No room test where ``big`` requires no level, or its flavor has no topologyName (the run's topology requests
    then honoured on every flavor, the victims' room whole-node): the decisions of the search before, job for job.
    Worked by hand where ``big`` asks nothing: its quota victims are d and e (the two most recently admitted), n1
    and n3 idle hold it at 100 s across the racks."""
    monkeypatch.setattr(kueue_policy, "preemption_targets", None)  # (a search with a room would fail here)
    _, table, nodes = run(tmp_path, required, tas)
    _, old, old_nodes = run(tmp_path, required, tas, old=True, monkeypatch=monkeypatch)
    pd.testing.assert_frame_equal(table, old)
    assert nodes == old_nodes
    if not required:
        assert table["preemptions"].to_dict() == {"a": 0, "b": 0, "c": 0, "e": 1, "d": 1, "big": 0}
        assert nodes["big"] == ["n1", "n3"] and table.loc["big", "start_time"] == 100


# --- the search itself, on a quota tree ----------------------------------------------------------------------

RACK_OF = {"a": 0, "b": 0, "c": 1, "e": 1, "d": 0}  # (each filler's rack, as in the run above: d on n1)


def team_tree(fair: bool) -> QuotaTree:
    """The run's queue at 100 s: 32 GPUs, a, c, e admitted at 0, 2, 3 s, d at 60 s, all priority 0."""
    spec = ClusterQueueSpec("team", quotas=(FlavorQuota("rack", 32),),
                            preemption=Preemption(within_cluster_queue="LowerPriority"))
    tree = QuotaTree(KueueConfig({"team": spec}, fair_sharing=FairSharing(enabled=fair)))
    for key, at in (("a", 0.0), ("c", 2.0), ("e", 3.0), ("d", 60.0)):
        tree.admit(Workload(key, "team", "rack", 8, 0, at))
    return tree


def rack_freed(victims) -> bool:
    """A rack of two nodes whose two jobs both leave: the room test of ``big`` on the run's racks."""
    leaving = [RACK_OF[w.key] for w in victims]
    return any(leaving.count(rack) == 2 for rack in (0, 1))


@pytest.mark.parametrize("fair", [False, True])
def test_the_fill_back_keeps_only_what_the_quota_or_the_topology_needs(fair):
    """The search of the run above, classical and fair: removed d, e, c; d goes back (the quota and rack r1 hold
    without it), e stays (r1 needs it gone).  Without the room test: d and e, the quota's own."""
    tree = team_tree(fair)
    big = Workload("big", "team", "rack", 16, 10, 100.0)
    assert [w.key for w in preemption_targets(tree, big)] == ["d", "e"]
    assert sorted(w.key for w in preemption_targets(tree, big, room=rack_freed)) == ["c", "e"]
    assert preemption_targets(tree, big, room=lambda victims: False) is None
    assert [w.key for w in preemption_targets(tree, big, room=lambda victims: True)] == ["d", "e"]


def test_a_search_with_a_room_test_is_not_remembered_and_leaves_the_quotas_answer_alone():
    """The room reads the GPUs, which change without the cohort tree changing: two searches with different rooms
    in the same tree give each its own answer, and the quota's remembered answer is the same before and after."""
    tree = team_tree(False)
    big = Workload("big", "team", "rack", 16, 10, 100.0)
    answers = [preemption_targets(tree, big, room=room) for room in (lambda v: False, rack_freed, lambda v: False)]
    assert [None if a is None else sorted(w.key for w in a) for a in answers] == [None, ["c", "e"], None]
    assert [w.key for w in preemption_targets(tree, big)] == ["d", "e"]
    assert sorted(w.key for w in preemption_targets(tree, big, room=rack_freed)) == ["c", "e"]
    assert all(not isinstance(value, tuple) or "c" not in {w.key for w in value}
               for value in tree.facts("team").values())  # (no roomed answer among the tree's facts)


def test_no_quota_victims_means_no_search_with_a_room():
    """Where the quota's search finds none, so does the roomed one, without asking the room: the same candidates
    go in the same order, and a stricter fit stops no sooner."""
    tree = team_tree(False)
    asked = []
    higher = Workload("big", "team", "rack", 16, 0, 100.0)  # (priority 0: LowerPriority lets it preempt nobody)
    assert preemption_targets(tree, higher, room=lambda victims: asked.append(victims) or True) is None
    assert asked == []


@st.composite
def crowded(draw):
    """Full queues, so that searches find targets: 1-3 ClusterQueues of one flavor (in one cohort, or alone), each
    filled with workloads of 1-4 GPUs at priorities 0-3 as far as its quota (and the cohort's) lets; an incoming at
    priority 5 that preempts lower priorities in its queue and any borrower of the cohort."""
    rules = Preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort=draw(st.sampled_from(
        ["Any", "LowerPriority", "Never"])), borrow_within_cohort=draw(st.sampled_from(["Never", "LowerPriority"])))
    cohort = draw(st.sampled_from([None, "all"]))
    names = [f"q{i}" for i in range(draw(st.integers(1, 3)))]
    config = KueueConfig({name: ClusterQueueSpec(name, cohort, (FlavorQuota("f", draw(st.integers(4, 16))),),
                                                 preemption=rules) for name in names})
    tree = QuotaTree(config)
    for step in range(draw(st.integers(2, 16))):
        w = Workload(f"w{step}", draw(st.sampled_from(names)), "f", draw(st.integers(1, 4)),
                     draw(st.integers(0, 3)), float(step))
        if tree.fits(w.cluster_queue, "f", w.gpus):
            tree.admit(w)
    incoming = Workload("incoming", draw(st.sampled_from(names)), "f", draw(st.integers(2, 10)), 5, 50.0)
    return config, tree, incoming


def needing(keys: list[str]):
    """A room test that needs a drawn set of workloads gone (monotone, as a topology's: more victims, more room)."""
    needed = st.sets(st.sampled_from(keys), min_size=1, max_size=2) if keys else st.just(set())
    return needed.map(lambda gone: (lambda victims: gone <= {w.key for w in victims}))


@settings(max_examples=200, deadline=None)
@given(st.one_of(scenarios(), crowded()), st.booleans(), st.data())
def test_roomed_targets_make_the_incoming_fit_and_room_and_none_could_be_spared(scenario, fair, data):
    """On random cohort trees (classical and fair): the targets free the quota and the room; putting any one back
    breaks one of them (the fit without borrowing for classical, which may have minimised for it); the tree is left
    as it was; a room that always holds gives the quota's answer.  The room needs workloads the quota's own targets
    leave running, or any of the flavor's."""
    config, tree, incoming = scenario
    sharing = FairSharing(enabled=fair)
    before = all_usages(tree, config)
    quota_only = preemption_targets(tree, incoming, sharing)
    assert preemption_targets(tree, incoming, sharing, room=lambda victims: True) == quota_only
    keys = sorted(w.key for name in config.cluster_queues for w in tree.admitted(name) if w.flavor == incoming.flavor)
    spared = [key for key in keys if key not in {w.key for w in quota_only or ()}]
    room = data.draw(needing(spared) if spared and data.draw(st.booleans()) else needing(keys))
    targets = preemption_targets(tree, incoming, sharing, room=room)
    assert all_usages(tree, config) == before
    if not quota_only:
        assert targets == quota_only
        return
    if targets is None:
        return
    assert len({w.key for w in targets}) == len(targets) and room(targets)
    for w in targets:
        tree.release(w)
    assert tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus)
    for w in targets:
        tree.admit(w)
        rest = [t for t in targets if t is not w]
        assert not (tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus, borrowing=fair) and room(rest))
        tree.release(w)
    for w in targets:
        tree.admit(w)
