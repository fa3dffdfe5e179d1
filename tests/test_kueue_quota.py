"""Kueue's quota arithmetic (simcluster.tiers.quota_tree) held to Kueue's own worked examples and to invariants.

Pages cited: kueue.sigs.k8s.io/docs/concepts/cluster_queue (borrowingLimit, lendingLimit), .../cohort
(hierarchical cohorts, KEP-79), .../preemption (classic preemption, fair sharing), .../fair_sharing and KEP-1714
(keps/1714-fair-sharing: the share value); code at kubernetes-sigs/kueue ff69552.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.tiers.model import (
    ClusterQueueSpec,
    CohortSpec,
    FairSharing,
    FlavorQuota,
    KueueConfig,
    Preemption,
)
from simcluster.tiers.preemption_bound import PreemptionBound
from simcluster.tiers.quota_node import candidate_rank
from simcluster.tiers.quota_tree import QuotaTree, Workload, satisfies_policy


def tree_of(*cqs: ClusterQueueSpec, cohorts: tuple[CohortSpec, ...] = (), fair: FairSharing | None = None):
    return QuotaTree(KueueConfig({q.name: q for q in cqs}, {c.name: c for c in cohorts}, fair_sharing=fair))


NO_PREEMPTION = Preemption()


def cq(name, cohort, nominal, flavor="cpu", preemption=NO_PREEMPTION, weight=1.0, **limits) -> ClusterQueueSpec:
    return ClusterQueueSpec(name, cohort, (FlavorQuota(flavor, nominal, **limits),), preemption=preemption,
                            fair_weight=weight)


# -- quota: the Cluster Queue page --------------------------------------------------------------------------


def test_without_limits_a_queue_borrows_all_its_cohort_has_unused():
    """Cluster Queue page, "Cohort": team-a-cq (9 CPUs) may use 12+9=21 while team-b-cq (12) is idle."""
    tree = tree_of(cq("team-a-cq", "team-ab", 9), cq("team-b-cq", "team-ab", 12))
    assert tree.available("team-a-cq", "cpu") == 21
    assert tree.fits("team-a-cq", "cpu", 21) and not tree.fits("team-a-cq", "cpu", 22)


def test_a_borrowing_limit_caps_what_a_queue_takes_from_its_cohort():
    """Cluster Queue page, "BorrowingLimit": borrowingLimit 1 on team-a-cq: 9+1=10; team-b-cq still 12+9."""
    tree = tree_of(cq("team-a-cq", "team-ab", 9, borrowing_limit=1), cq("team-b-cq", "team-ab", 12))
    assert tree.available("team-a-cq", "cpu") == 10
    assert tree.available("team-b-cq", "cpu") == 21
    tree.admit(Workload("a1", "team-a-cq", "cpu", 10))
    assert tree.borrowing("team-a-cq", "cpu") == 1 and tree.available("team-a-cq", "cpu") == 0


def test_a_lending_limit_keeps_the_rest_of_a_queues_quota_for_itself():
    """Cluster Queue page, "LendingLimit": team-b-cq (12, lendingLimit 1) lends 1: team-a-cq may use 9+1=10
    while team-b-cq uses at most 12-1=11, and only its own 9 once team-b-cq uses all 12."""
    tree = tree_of(cq("team-a-cq", "team-ab", 9), cq("team-b-cq", "team-ab", 12, lending_limit=1))
    assert tree.available("team-a-cq", "cpu") == 10
    tree.admit(Workload("b1", "team-b-cq", "cpu", 11))
    assert tree.available("team-a-cq", "cpu") == 10
    tree.admit(Workload("b2", "team-b-cq", "cpu", 1))
    assert tree.available("team-a-cq", "cpu") == 9
    assert tree.usage("team-ab", "cpu") == 1  # the cohort holds only what b uses beyond its guaranteed 11


def test_a_flavor_a_queue_lists_no_quota_for_is_never_available():
    """Cohort page: "to borrow ... it must define nominal quota for the desired Resource and Flavor - even if 0"."""
    tree = tree_of(cq("a", "org", 0, flavor="h100"), cq("b", "org", 8, flavor="a100"))
    assert tree.available("a", "a100") == 0 and not tree.fits("a", "a100", 1)
    assert tree.available("a", "h100") == 0


# -- quota: hierarchical cohorts (Cohort page, KEP-79) ------------------------------------------------------


def test_a_cohorts_own_quota_is_a_pool_for_its_queues():
    """Cohort page, "Configuring Quotas": a Cohort with nominalQuota 12 and a ClusterQueue with 0: the queue
    may use the 12 shared CPUs."""
    tree = tree_of(cq("my-cluster-queue", "hello-cohort", 0),
                   cohorts=(CohortSpec("hello-cohort", quotas=(FlavorQuota("cpu", 12),)),))
    assert tree.available("my-cluster-queue", "cpu") == 12
    assert tree.dominant_share("my-cluster-queue", extra=Workload("w", "my-cluster-queue", "cpu", 6)) == 500


def test_a_cohort_lends_its_subtree_up_to_its_lending_limit():
    """KEP-79 (hierarchical cohorts): a child cohort's subtree quota is its own plus what its queues lend; with
    a lendingLimit it keeps the rest (guaranteed = subtree - limit) and lends only the limit to its parent."""
    org = CohortSpec("org", parent="root", quotas=(FlavorQuota("cpu", 0, lending_limit=3),))
    root = CohortSpec("root", quotas=(FlavorQuota("cpu", 10),))
    other = CohortSpec("other", parent="root")
    tree = tree_of(cq("a", "org", 4), cq("b", "org", 6, lending_limit=2), cq("c", "other", 0),
                   cohorts=(org, root, other))
    assert tree.subtree_quota("org", "cpu") == 6  # a's 4 + b's lent 2
    assert tree.subtree_quota("root", "cpu") == 13  # its 10 + org's lent 3
    assert tree.available("a", "cpu") == 4 + 2 + 10
    assert tree.available("b", "cpu") == 6 + 4 + 10
    assert tree.available("c", "cpu") == 13
    tree.admit(Workload("c1", "c", "cpu", 13))
    assert tree.available("a", "cpu") == 3  # org's guaranteed 3 stays with org's queues
    assert tree.available("b", "cpu") == 4 + 3


def test_usage_climbs_only_past_each_nodes_guaranteed_quota():
    """resource_node.go addUsage/removeUsage: a queue with a lending limit holds usage up to its guaranteed
    quota itself; only the rest is stored in the cohort, and a release gives back what was stored."""
    tree = tree_of(cq("a", "org", 8, lending_limit=2), cq("b", "org", 4))
    tree.admit(Workload("a1", "a", "cpu", 7))
    assert tree.usage("org", "cpu") == 1
    tree.release(Workload("a1", "a", "cpu", 7))
    assert tree.usage("org", "cpu") == 0 and tree.usage("a", "cpu") == 0


# -- classic preemption (Preemption page) -------------------------------------------------------------------


def reclaim_case(policy: str) -> tuple[QuotaTree, Workload]:
    """b (4) borrows a's idle 4 with two priority-5 workloads; a then wants its 4 back at priority 1."""
    tree = tree_of(cq("a", "org", 4, preemption=Preemption(reclaim_within_cohort=policy)), cq("b", "org", 4))
    tree.admit(Workload("b-old", "b", "cpu", 4, priority=5, admitted_at=1))
    tree.admit(Workload("b-new", "b", "cpu", 4, priority=5, admitted_at=2))
    return tree, Workload("a1", "a", "cpu", 4, priority=1, admitted_at=3)


def test_reclaim_within_cohort_any_takes_back_nominal_quota_whatever_the_priority():
    """Preemption page / Cluster Queue page: reclaimWithinCohort Any preempts workloads of borrowing queues
    irrespective of priority; the most recently admitted goes first."""
    tree, incoming = reclaim_case("Any")
    assert [w.key for w in tree.preemption_targets(incoming)] == ["b-new"]


def test_reclaim_within_cohort_lower_priority_and_never_leave_higher_priority_borrowers_alone():
    """Cluster Queue page: LowerPriority only preempts lower-priority workloads; Never none in the cohort."""
    assert reclaim_case("LowerPriority")[0].preemption_targets(reclaim_case("LowerPriority")[1]) is None
    tree, incoming = reclaim_case("Never")
    assert tree.preemption_targets(incoming) is None


def test_a_queue_that_does_not_borrow_is_never_a_reclaim_target():
    """Preemption page: a preemptee of another queue must be in a queue running over its nominal quota."""
    tree = tree_of(cq("a", "org", 4, preemption=Preemption(reclaim_within_cohort="Any")), cq("b", "org", 4))
    tree.admit(Workload("b1", "b", "cpu", 4))
    assert tree.preemption_targets(Workload("a1", "a", "cpu", 5)) is None


def within_case(policy: str, queued_at: float) -> list | None:
    tree = tree_of(cq("solo", None, 4, preemption=Preemption(within_cluster_queue=policy)))
    tree.admit(Workload("running", "solo", "cpu", 4, priority=1, admitted_at=5))
    return tree.preemption_targets(Workload("new", "solo", "cpu", 4, priority=1, admitted_at=queued_at))


def test_within_cluster_queue_lower_or_newer_equal_priority_preempts_a_newer_equal():
    """Cluster Queue page, withinClusterQueue: LowerPriority spares equal priorities; LowerOrNewerEqualPriority
    preempts an equal-priority workload that is newer than the preemptor."""
    assert within_case("LowerPriority", queued_at=0) is None
    assert [w.key for w in within_case("LowerOrNewerEqualPriority", queued_at=0)] == ["running"]
    assert within_case("LowerOrNewerEqualPriority", queued_at=9) is None


def borrow_case(borrow: str, threshold: int | None) -> list | None:
    """a uses its nominal 4 and needs to borrow 4 more; b borrows c's idle 4 with priority-1 workloads."""
    rules = Preemption(reclaim_within_cohort="Any", borrow_within_cohort=borrow,
                       borrow_within_cohort_max_priority=threshold)
    tree = tree_of(cq("a", "org", 4, preemption=rules), cq("b", "org", 4), cq("c", "org", 4))
    tree.admit(Workload("a0", "a", "cpu", 4, priority=10))
    tree.admit(Workload("b-old", "b", "cpu", 4, priority=1, admitted_at=1))
    tree.admit(Workload("b-new", "b", "cpu", 4, priority=1, admitted_at=2))
    return tree.preemption_targets(Workload("a1", "a", "cpu", 4, priority=10, admitted_at=3))


def test_borrow_within_cohort_lets_a_borrowing_preemptor_evict_lower_priorities_up_to_the_threshold():
    """Cluster Queue page, borrowWithinCohort: with Never a preemptor that must borrow cannot preempt in the
    cohort; with LowerPriority it can, but only workloads at or below maxPriorityThreshold."""
    assert borrow_case("Never", None) is None
    assert [w.key for w in borrow_case("LowerPriority", None)] == ["b-new"]
    assert [w.key for w in borrow_case("LowerPriority", 1)] == ["b-new"]
    assert borrow_case("LowerPriority", 0) is None


def test_candidates_of_other_queues_go_before_the_preemptors_own():
    """Preemption page, "Candidates": workloads from borrowing queues in the cohort first, then lowest priority,
    then the most recently admitted."""
    rules = Preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="LowerPriority")
    tree = tree_of(cq("a", "org", 4, preemption=rules), cq("b", "org", 2))
    tree.admit(Workload("mine", "a", "cpu", 2, priority=0, admitted_at=9))
    tree.admit(Workload("theirs", "b", "cpu", 4, priority=3, admitted_at=1))
    assert [w.key for w in tree.preemption_targets(Workload("new", "a", "cpu", 2, priority=5))] == ["theirs"]


def test_fill_back_keeps_only_the_targets_needed():
    """Preemption page, "Targets": the initial targets are traversed in reverse and each is dropped while the
    preemptor still fits: the two small newest workloads go back, the big one alone is preempted."""
    tree = tree_of(cq("solo", None, 10, preemption=Preemption(within_cluster_queue="LowerPriority")))
    for key, gpus, t in [("x", 2, 3), ("y", 2, 2), ("z", 6, 1)]:
        tree.admit(Workload(key, "solo", "cpu", gpus, admitted_at=t))
    assert [w.key for w in tree.preemption_targets(Workload("new", "solo", "cpu", 6, priority=1))] == ["z"]
    assert tree.usage("solo", "cpu") == 10  # the trial removals were undone


# -- fair sharing (Fair Sharing page, KEP-1714) -------------------------------------------------------------


def test_the_share_is_borrowed_over_the_cohorts_lendable_times_1000_over_the_weight():
    """KEP-1714, "Share value function and weights": usage above nominal, over the lendable quota of the parent
    (nominal quotas, or lendingLimits where set), x 1000, divided by the weight; 0 weight: infinite."""
    tree = tree_of(cq("a", "org", 5), cq("b", "org", 5, weight=2), cq("c", "org", 2, lending_limit=0, weight=0))
    tree.admit(Workload("a1", "a", "cpu", 7))
    assert tree.dominant_share("a") == 200  # 2 of a's and b's 10 lendable
    assert tree.dominant_share("b", extra=Workload("b1", "b", "cpu", 7)) == 100
    assert tree.dominant_share("c", extra=Workload("c1", "c", "cpu", 3)) == float("inf")
    assert tree.dominant_share("c", extra=Workload("c1", "c", "cpu", 2)) == 0
    assert tree.dominant_share("a", without=[Workload("a1", "a", "cpu", 7)]) == 0


def test_fair_admission_prefers_the_queue_left_with_the_lower_share():
    """Preemption page, "ClusterQueue share value": Kueue admits from the queue with the lowest share first;
    a queue that would not borrow goes before one that would (FairSharingPrioritizeNonBorrowing): c1 (no
    borrowing), b1 (1 of 12 borrowed: 83), a1 (2 borrowed: 167, despite its priority)."""
    tree = tree_of(cq("a", "org", 4), cq("b", "org", 4), cq("c", "org", 4))
    tree.admit(Workload("a0", "a", "cpu", 5))
    heads = [Workload("a1", "a", "cpu", 1, priority=9), Workload("b1", "b", "cpu", 5),
             Workload("c1", "c", "cpu", 2, admitted_at=5)]
    assert [w.key for w in sorted(heads, key=tree.fair_order_key)] == ["c1", "b1", "a1"]
    assert tree.fair_pick(heads).key == "c1"


def strategies_case(strategies: tuple[str, ...]) -> list | None:
    """b (4) borrows 4 with one 8-GPU workload (share 333); a (4) wants 6 (its share would be 167)."""
    fair = FairSharing(enabled=True, preemption_strategies=strategies)
    rules = Preemption(reclaim_within_cohort="Any")
    tree = tree_of(cq("a", "org", 4, preemption=rules), cq("b", "org", 4), cq("c", "org", 4), fair=fair)
    tree.admit(Workload("b-big", "b", "cpu", 8))
    return tree.preemption_targets(Workload("a1", "a", "cpu", 6))


def test_less_than_initial_share_preempts_where_less_or_equal_to_final_share_refuses():
    """Preemption page, "Preemption strategies": LessThanOrEqualToFinalShare needs the preemptor's new share
    (167) <= the target's share without the workload (0): refused; LessThanInitialShare needs 167 < 333: yes."""
    assert strategies_case(("LessThanOrEqualToFinalShare",)) is None
    assert [w.key for w in strategies_case(("LessThanInitialShare",))] == ["b-big"]
    both = strategies_case(("LessThanOrEqualToFinalShare", "LessThanInitialShare"))
    assert [w.key for w in both] == ["b-big"]


def test_less_or_equal_to_final_share_preempts_small_workloads_down_to_equal_shares():
    """Preemption page: LessThanOrEqualToFinalShare "might favor preemption of smaller workloads": with b's
    borrowing in 2-GPU pieces one goes, leaving both queues at the same share (167 <= 167)."""
    fair = FairSharing(enabled=True, preemption_strategies=("LessThanOrEqualToFinalShare",))
    rules = Preemption(reclaim_within_cohort="Any")
    tree = tree_of(cq("a", "org", 4, preemption=rules), cq("b", "org", 4), cq("c", "org", 4), fair=fair)
    for i in range(4):
        tree.admit(Workload(f"b{i}", "b", "cpu", 2, admitted_at=i))
    targets = tree.preemption_targets(Workload("a1", "a", "cpu", 6))
    assert [w.key for w in targets] == ["b3"]
    assert tree.dominant_share("a", extra=Workload("a1", "a", "cpu", 6)) == tree.dominant_share("b", without=targets)


def test_a_hierarchical_tournament_compares_sibling_cohorts():
    """Cohort page, "Hierarchical Cohorts" (fair sharing weights of sibling orgs) and fair_sharing_iterator.go's
    tournament: the org whose share stays lower wins, whichever queue inside it nominates."""
    cohorts = (CohortSpec("root"), CohortSpec("important", "root", fair_weight=0.75),
               CohortSpec("regular", "root", fair_weight=0.25))
    tree = tree_of(cq("i1", "important", 4), cq("r1", "regular", 4), cohorts=cohorts)
    # both would borrow 2 of the 8 lendable: 250 / 0.75 = 333 against 250 / 0.25 = 1000
    heads = [Workload("r", "r1", "cpu", 6, priority=5), Workload("i", "i1", "cpu", 6)]
    assert tree.fair_pick(heads).key == "i"
    assert round(tree.dominant_share("important", extra=heads[1])) == 333


# -- invariants ---------------------------------------------------------------------------------------------

FLAVORS = ("f", "g")


@st.composite
def configs(draw) -> KueueConfig:
    """Random forests: up to 4 cohorts (each under an earlier one or a root), up to 5 queues, 1-2 flavors, with
    random nominal quotas and borrowing and lending limits."""

    def quotas() -> tuple[FlavorQuota, ...]:
        flavors = draw(st.lists(st.sampled_from(FLAVORS), min_size=1, max_size=2, unique=True))
        limit = st.none() | st.integers(0, 6)
        return tuple(FlavorQuota(f, draw(st.integers(0, 8)), draw(limit), draw(limit)) for f in flavors)

    cohorts = {}
    for i in range(draw(st.integers(1, 4))):
        parent = draw(st.none() | st.sampled_from(sorted(cohorts))) if cohorts else None
        own = quotas() if draw(st.booleans()) else ()
        cohorts[f"k{i}"] = CohortSpec(f"k{i}", parent, own, fair_weight=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])))
    rules = Preemption(draw(st.sampled_from(["LowerPriority", "LowerOrNewerEqualPriority", "Never"])),
                       draw(st.sampled_from(["Any", "LowerPriority", "Never"])),
                       draw(st.sampled_from(["Never", "LowerPriority"])), draw(st.none() | st.integers(0, 3)))
    cqs = {}
    for i in range(draw(st.integers(1, 5))):
        cohort = draw(st.none() | st.sampled_from(sorted(cohorts)))
        cqs[f"q{i}"] = ClusterQueueSpec(f"q{i}", cohort, quotas(), preemption=rules,
                                        fair_weight=draw(st.sampled_from([0.0, 1.0, 2.0])))
    return KueueConfig(cqs, cohorts)


def all_usages(tree: QuotaTree, config: KueueConfig) -> dict:
    names = [*config.cluster_queues, *(n for n in tree._cohorts if n not in config.cluster_queues)]
    return {(n, f): tree.usage(n, f) for n in names for f in FLAVORS}


def recomputed_cohort_usage(tree: QuotaTree, cohort: str, flavor: str) -> float:
    """A cohort's usage from scratch: Σ over children of max(0, child usage - child guaranteed)."""
    total = 0.0
    for child in tree.cohort_members(cohort):
        used = tree.usage(child, flavor) if child in tree._cqs else recomputed_cohort_usage(tree, child, flavor)
        total += max(0.0, used - (tree.subtree_quota(child, flavor) - tree.lendable(child, flavor)))
    return total


@st.composite
def scenarios(draw):
    config = draw(configs())
    tree = QuotaTree(config)
    queue_flavors = [(q.name, f) for q in config.cluster_queues.values() for f in q.flavors]
    for step in range(draw(st.integers(0, 14))):
        admitted = [w for name in config.cluster_queues for w in tree.admitted(name)]
        if admitted and draw(st.integers(0, 3)) == 0:
            tree.release(draw(st.sampled_from(admitted)))
            continue
        name, flavor = draw(st.sampled_from(queue_flavors))
        w = Workload(f"w{step}", name, flavor, draw(st.integers(1, 6)), draw(st.integers(0, 3)), float(step))
        if tree.fits(name, flavor, w.gpus):
            tree.admit(w)
    name, flavor = draw(st.sampled_from(queue_flavors))
    incoming = Workload("incoming", name, flavor, draw(st.integers(1, 8)), draw(st.integers(2, 5)), 7.5)
    return config, tree, incoming


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_admitted_states_keep_every_queues_availability_and_the_cohort_sums(scenario):
    """resource_node.go: with admissions that fit, no queue's raw available goes negative; fits ⇔ available ≥
    GPUs; every cohort's usage equals the sum over its children of usage beyond their guaranteed quota."""
    config, tree, _ = scenario
    for name, spec in config.cluster_queues.items():
        for flavor in spec.flavors:
            assert tree._available(tree._cqs[name], flavor) >= 0
            for gpus in (1, 3, 8):
                assert tree.fits(name, flavor, gpus) == (tree.available(name, flavor) >= gpus)
    for cohort in tree._cohorts:
        for flavor in FLAVORS:
            assert tree.usage(cohort, flavor) == recomputed_cohort_usage(tree, cohort, flavor)


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_a_release_undoes_an_admission_exactly(scenario):
    config, tree, incoming = scenario
    before = all_usages(tree, config)
    tree.admit(incoming)
    tree.release(incoming)
    assert all_usages(tree, config) == before


def assert_minimal_fit(tree: QuotaTree, incoming: Workload, targets: list[Workload], strict: bool) -> None:
    """Releasing the targets makes the incoming fit; keeping any one of them back breaks the fit (``strict``:
    the fit without borrowing, which classical attempts without borrowing minimise for)."""
    for w in targets:
        tree.release(w)
    assert tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus)
    for w in targets:
        tree.admit(w)
        assert not tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus, borrowing=not strict)
        tree.release(w)
    for w in targets:
        tree.admit(w)


@settings(max_examples=200, deadline=None)
@given(scenarios(), st.booleans())
def test_preemption_targets_make_the_incoming_fit_and_are_minimal(scenario, fair):
    """preemption.go: classical (fill-back after each attempt) and fair (fill-back with borrowing) target sets
    make room and none of their members could be spared; the tree is left as it was."""
    config, tree, incoming = scenario
    before = all_usages(tree, config)
    targets = tree.preemption_targets(incoming, FairSharing(enabled=fair))
    assert all_usages(tree, config) == before
    if targets is None:
        return
    if not targets:
        assert tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus)
        return
    assert len({w.key for w in targets}) == len(targets)
    assert_minimal_fit(tree, incoming, targets, strict=not fair)


# -- the indexed candidates and remembered searches (issue 53: a decision costs what it touches) ------------

POLICIES = ["Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"]


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_the_indexed_candidates_are_the_plain_filter_and_sort_of_a_queues_workloads(scenario):
    """Preemption page, "Candidates": the workloads a policy lets the incoming preempt, in CandidatesOrdering
    within one queue (lower priority, then newer first): the tree's index answers what a filter of every admitted
    workload by satisfies_policy, sorted, answers."""
    config, tree, incoming = scenario
    for name, spec in config.cluster_queues.items():
        for flavor in spec.flavors:
            for policy in POLICIES:
                indexed = [entry[2] for entry in tree.in_preemption_order(name, flavor, policy, incoming)]
                plain = sorted((w for w in tree.admitted(name) if w.flavor == flavor
                                and satisfies_policy(policy, incoming, w)), key=candidate_rank)
                assert indexed == plain


def rebuilt(config: KueueConfig, tree: QuotaTree) -> QuotaTree:
    """The same admitted workloads in a tree that has remembered nothing."""
    fresh = QuotaTree(config)
    for name in config.cluster_queues:
        for w in tree.admitted(name):
            fresh.admit(w)
    return fresh


@settings(max_examples=150, deadline=None)
@given(scenarios(), st.booleans(), st.integers(0, 3))
def test_a_remembered_search_answers_as_a_fresh_search_until_the_tree_changes(scenario, fair, priority):
    """A search that found no targets is remembered until the next admission or release in the cohort tree:
    asked again it answers as a tree that remembers nothing; after a change the search runs again."""
    config, tree, incoming = scenario
    rules = FairSharing(enabled=fair)
    first = tree.preemption_targets(incoming, rules)
    assert tree.preemption_targets(incoming, rules) == first
    assert rebuilt(config, tree).preemption_targets(incoming, rules) == first
    change = Workload("change", incoming.cluster_queue, incoming.flavor, 1, priority)
    if tree.fits(change.cluster_queue, change.flavor, 1):
        tree.admit(change)
        assert tree.preemption_targets(incoming, rules) == rebuilt(config, tree).preemption_targets(incoming, rules)
    for w in [w for name in config.cluster_queues for w in tree.admitted(name)][:3]:
        tree.release(w)
        assert tree.preemption_targets(incoming, rules) == rebuilt(config, tree).preemption_targets(incoming, rules)


@settings(max_examples=100, deadline=None)
@given(scenarios(), st.booleans())
def test_the_preemption_bound_remembers_only_while_nothing_changes(scenario, fair):
    """PreemptionBound.could_fit, remembered among the tree's facts, answers as a bound worked out afresh, after
    admissions and releases too."""
    config, tree, incoming = scenario
    bound = PreemptionBound(tree)
    for name in config.cluster_queues:
        for w in tree.admitted(name):
            bound.admit(w)
    assert bound.could_fit(incoming, fair) == bound._could_fit(incoming, fair)
    for w in list(tree.admitted(incoming.cluster_queue))[:2]:
        tree.release(w)
        bound.release(w)
        assert bound.could_fit(incoming, fair) == bound._could_fit(incoming, fair)


def test_a_search_that_found_nothing_runs_again_once_the_tree_changes():
    """Preemption page, withinClusterQueue LowerPriority: with a higher priority workload in the way nothing
    makes room; once it ends and a lower priority one takes its place, the two lower ones are the targets."""
    tree = tree_of(cq("a", None, 4, preemption=Preemption(within_cluster_queue="LowerPriority")))
    high, low = Workload("high", "a", "cpu", 2, priority=5), Workload("low", "a", "cpu", 2, priority=0)
    tree.admit(high)
    tree.admit(low)
    incoming = Workload("incoming", "a", "cpu", 4, priority=3, admitted_at=9)
    assert tree.preemption_targets(incoming) is None
    assert tree.preemption_targets(incoming) is None  # (remembered)
    tree.release(high)
    tree.admit(Workload("low2", "a", "cpu", 2, priority=0, admitted_at=1))
    assert sorted(w.key for w in tree.preemption_targets(incoming)) == ["low", "low2"]
