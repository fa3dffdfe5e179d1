"""The kueue policy's fast paths (issue 53: 200k jobs within 4x fifo) held to plain references on random inputs.

Each index or memo added for speed answers as the plain computation it replaces: the quota tree's ``available``
walked down a kept path against the recursive ``_available``; remembered preemption searches (targets or none)
against a search on a tree that remembers nothing; the preemption bound remembered per cohort tree against its
plain test, while other trees change.
"""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.tiers import preemption
from simcluster.tiers.model import (
    ClusterQueueSpec,
    CohortSpec,
    FairSharing,
    FlavorQuota,
    KueueConfig,
    Preemption,
)
from simcluster.tiers.preemption import _classify, _fill_back, _still_valid
from simcluster.tiers.preemption_bound import PreemptionBound
from simcluster.tiers.quota_tree import QuotaTree, Workload

FLAVORS = ("f", "g")


@st.composite
def configs(draw) -> KueueConfig:
    """Random forests: up to 4 cohorts (some nested, some with quota), up to 6 queues, 1-2 flavors each, random
    nominal quotas, borrowing and lending limits and preemption rules."""

    def quotas() -> tuple[FlavorQuota, ...]:
        flavors = draw(st.lists(st.sampled_from(FLAVORS), min_size=1, max_size=2, unique=True))
        limit = st.none() | st.integers(0, 6)
        return tuple(FlavorQuota(f, draw(st.integers(0, 8)), draw(limit), draw(limit)) for f in flavors)

    cohorts = {}
    for i in range(draw(st.integers(1, 4))):
        parent = draw(st.none() | st.sampled_from(sorted(cohorts))) if cohorts else None
        cohorts[f"k{i}"] = CohortSpec(f"k{i}", parent, quotas() if draw(st.booleans()) else ())
    cqs = {}
    for i in range(draw(st.integers(1, 6))):
        rules = Preemption(draw(st.sampled_from(["LowerPriority", "LowerOrNewerEqualPriority", "Never", "Any"])),
                           draw(st.sampled_from(["Any", "LowerPriority", "Never"])),
                           draw(st.sampled_from(["Never", "LowerPriority"])), draw(st.none() | st.integers(0, 3)))
        cohort = draw(st.none() | st.sampled_from(sorted(cohorts)))
        cqs[f"q{i}"] = ClusterQueueSpec(f"q{i}", cohort, quotas(), preemption=rules)
    return KueueConfig(cqs, cohorts)


def steps(draw, config: KueueConfig, count: int) -> list[tuple[str, Workload | int]]:
    """Random admissions ("admit", workload) and releases ("release", n: the n-th admitted so far, mod)."""
    queue_flavors = [(q.name, f) for q in config.cluster_queues.values() for f in q.flavors]
    found: list[tuple[str, Workload | int]] = []
    for step in range(count):
        if draw(st.integers(0, 3)) == 0:
            found.append(("release", draw(st.integers(0, 99))))
            continue
        name, flavor = draw(st.sampled_from(queue_flavors))
        found.append(("admit", Workload(f"w{step}", name, flavor, draw(st.integers(1, 6)), draw(st.integers(0, 3)),
                                        float(step), step)))
    return found


def play(tree: QuotaTree, step: tuple[str, Workload | int], bound: PreemptionBound | None = None) -> None:
    """One step on ``tree`` (and ``bound``): an admission where it fits, a release of an admitted workload."""
    kind, what = step
    if kind == "release":
        admitted = [w for name in tree.config.cluster_queues for w in tree.admitted(name)]
        if admitted:
            gone = admitted[what % len(admitted)]
            tree.release(gone)
            if bound is not None:
                bound.release(gone)
    elif tree.fits(what.cluster_queue, what.flavor, what.gpus):
        tree.admit(what)
        if bound is not None:
            bound.admit(what)


@st.composite
def histories(draw):
    config = draw(configs())
    return config, steps(draw, config, draw(st.integers(0, 20)))


@st.composite
def crowded_histories(draw):
    """One cohort (its queues reclaiming Any) crowded with small workloads, so that fair preemption passes
    many candidates of several queues by and the second strategy runs."""
    rules = Preemption("LowerPriority", "Any", draw(st.sampled_from(["Never", "LowerPriority"])))
    cqs = {f"q{i}": ClusterQueueSpec(f"q{i}", "k0", (FlavorQuota("f", draw(st.integers(2, 8))),), preemption=rules,
                                     fair_weight=draw(st.sampled_from([0.5, 1.0, 2.0])))
           for i in range(draw(st.integers(2, 4)))}
    config = KueueConfig(cqs, {"k0": CohortSpec("k0")})
    return config, steps(draw, config, draw(st.integers(5, 30)))


def reference_available(tree: QuotaTree, name: str, flavor: str) -> float:
    """``available`` as it was: the recursive walk up from the queue, never below 0, 0 off its flavors."""
    node = tree.queue_node(name)
    return max(0.0, tree._available(node, flavor)) if flavor in node.quotas else 0.0


@settings(max_examples=200, deadline=None)
@given(histories(), st.data())
def test_available_walked_down_a_kept_path_equals_the_recursive_walk(history, data):
    """At every step, and inside trials that take usage out and put it in, for every queue and flavor (its own
    and not): the same float, and fits agrees with it (with and without borrowing)."""
    config, played = history
    tree = QuotaTree(config)

    def check() -> None:
        for name in config.cluster_queues:
            for flavor in FLAVORS:
                expected = reference_available(tree, name, flavor)
                assert tree.available(name, flavor) == expected
                for gpus in (0, 1, 3, 7):
                    within = flavor in tree.queue_node(name).quotas and not tree.would_borrow(name, flavor, gpus)
                    assert tree.fits(name, flavor, gpus) == (flavor in tree.queue_node(name).quotas
                                                             and gpus <= expected)
                    assert tree.fits(name, flavor, gpus, borrowing=False) == (within and gpus <= expected)

    for step in played:
        play(tree, step)
        check()
    admitted = [w for name in config.cluster_queues for w in tree.admitted(name)]
    with tree.trial():
        for w in data.draw(st.lists(st.sampled_from(admitted), unique_by=lambda w: w.key)) if admitted else []:
            tree.remove_usage(w)
            check()
        name = data.draw(st.sampled_from(sorted(config.cluster_queues)))
        flavor = config.cluster_queues[name].flavors[0]
        tree.add_usage(Workload("extra", name, flavor, data.draw(st.integers(1, 9))))
        check()
    check()


def incomings(draw, config: KueueConfig) -> list[Workload]:
    queue_flavors = [(q.name, f) for q in config.cluster_queues.values() for f in q.flavors]
    found = []
    for i in range(draw(st.integers(1, 4))):
        name, flavor = draw(st.sampled_from(queue_flavors))
        found.append(Workload(f"in{i}", name, flavor, draw(st.integers(1, 9)), draw(st.integers(0, 4)),
                              float(draw(st.integers(0, 20))), 1000 + i))
    return found


@settings(max_examples=200, deadline=None)
@given(histories(), st.data(), st.booleans())
def test_a_remembered_preemption_search_answers_as_a_fresh_one(history, data, fair):
    """Searches asked again, between changes in the same tree and in others, give the same targets as the
    same search on a twin tree that forgets everything before each search."""
    config, played = history
    remembering, forgetting = QuotaTree(config), QuotaTree(config)
    fair_sharing = FairSharing(enabled=fair)
    asked = incomings(data.draw, config)
    for step in played:
        play(remembering, step)
        play(forgetting, step)
        for incoming in data.draw(st.lists(st.sampled_from(asked), max_size=4)):
            forgetting._facts.clear()
            expected = forgetting.preemption_targets(incoming, fair_sharing)
            found = remembering.preemption_targets(incoming, fair_sharing)
            assert (None if found is None else [w.key for w in found]) == \
                   (None if expected is None else [w.key for w in expected])


@settings(max_examples=200, deadline=None)
@given(histories(), st.data(), st.booleans())
def test_the_preemption_bound_remembered_per_tree_answers_as_its_plain_test(history, data, fair):
    """``could_fit`` remembered per cohort tree (changes elsewhere keep it) equals ``_could_fit`` asked afresh."""
    config, played = history
    tree = QuotaTree(config)
    bound = PreemptionBound(tree)
    asked = incomings(data.draw, config)
    for step in played:
        play(tree, step, bound)
        for incoming in data.draw(st.lists(st.sampled_from(asked), max_size=4)):
            assert bound.could_fit(incoming, fair) == bound._could_fit(incoming, fair)


def test_a_search_remembered_in_one_tree_is_forgotten_when_that_tree_changes_only():
    """Two cohorts: a search in one is kept while the other admits, and asked again after its own tree changes.

    Queue a1 (4 GPUs, reclaims Any) has a borrower b1 of 4 GPUs in its cohort; the other cohort's admission keeps
    the answer, a1's cohort's release of the borrower turns it into a plain fit."""
    rules = Preemption(reclaim_within_cohort="Any")
    cqs = {"a1": ClusterQueueSpec("a1", "A", (FlavorQuota("f", 4),), preemption=rules),
           "b1": ClusterQueueSpec("b1", "A", (FlavorQuota("f", 0),)),
           "c1": ClusterQueueSpec("c1", "C", (FlavorQuota("f", 4),))}
    tree = QuotaTree(KueueConfig(cqs))
    borrower = Workload("borrower", "b1", "f", 4)
    tree.admit(borrower)
    incoming = Workload("in", "a1", "f", 2, priority=1)
    assert [w.key for w in tree.preemption_targets(incoming)] == ["borrower"]
    tree.admit(Workload("elsewhere", "c1", "f", 4))
    assert [w.key for w in tree.preemption_targets(incoming)] == ["borrower"]
    tree.release(borrower)
    assert tree.preemption_targets(incoming) == []


def plain_minimal_set(tree: QuotaTree, incoming: Workload, groups: list, borrowing: bool,
                      room: None = None) -> list[Workload] | None:
    """``_minimal_set`` as it was: the fit asked after every removal (no room test: searches here ask none)."""
    assert room is None
    targets = []
    with tree.trial():
        for group in groups:
            heap = [(entries[0][0], entries[0][1], i, 0) for i, (entries, _, _) in enumerate(group)]
            heapq.heapify(heap)
            while heap:
                i, pos = heap[0][2], heap[0][3]
                entries, lca, advantage = group[i]
                w = entries[pos][2]
                if lca is not None and not _still_valid(
                        tree, incoming, (w, _classify(tree, incoming, w, advantage), lca), borrowing):
                    heapq.heappop(heap)
                    continue
                tree.remove_usage(w)
                targets.append(w)
                if tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus, borrowing):
                    return _fill_back(tree, incoming, targets, borrowing)
                if pos + 1 < len(entries):
                    heapq.heapreplace(heap, (entries[pos + 1][0], entries[pos + 1][1], i, pos + 1))
                else:
                    heapq.heappop(heap)
    return None


@settings(max_examples=300, deadline=None)
@given(histories(), st.data())
def test_classical_targets_asking_the_fit_only_once_it_can_hold_equal_asking_after_every_removal(history, data):
    """``_minimal_set`` skips the fit while the GPUs removed cannot close the gap (evicting F GPUs raises a
    queue's available by at most F): the same targets as asking after every removal."""
    config, played = history
    tree = QuotaTree(config)
    for step in played:
        play(tree, step)
    for incoming in incomings(data.draw, config):
        tree._facts.clear()
        fast = tree.preemption_targets(incoming, FairSharing(enabled=False))
        tree._facts.clear()
        skipping, preemption._minimal_set = preemption._minimal_set, plain_minimal_set
        try:
            plain = tree.preemption_targets(incoming, FairSharing(enabled=False))
        finally:
            preemption._minimal_set = skipping
        assert (None if fast is None else [w.key for w in fast]) == (None if plain is None else [w.key for w in plain])


def plain_first_strategy(tree: QuotaTree, incoming: Workload, candidates: dict, strategy: str,
                         room: None = None) -> tuple:
    """``_first_strategy`` as it was: every candidate passed by listed, in order (no room test)."""
    assert room is None
    ordering = preemption._FairOrdering(tree, incoming, candidates)
    targets: list[Workload] = []
    retry: list[Workload] = []
    within_nominal = not tree.would_borrow(incoming.cluster_queue, incoming.flavor, 0)
    for queue in ordering:
        if queue.name == incoming.cluster_queue or within_nominal:
            if preemption._take(tree, incoming, ordering.pop(queue), targets):
                return True, targets, retry
            continue
        preemptor_new, target_old = ordering.shares(queue)
        if preemptor_new.key()[0] == 1 and target_old.key()[0] == 0:
            while ordering.has_workload(queue):
                retry.append(ordering.pop(queue))
            continue
        while ordering.has_workload(queue):
            w = ordering.pop(queue)
            with tree.trial():
                tree.remove_usage(w)
                target_new = ordering.target_share(queue)
            if preemption._strategy_holds(strategy, preemptor_new, target_old, target_new):
                if preemption._take(tree, incoming, w, targets):
                    return True, targets, retry
                break
            retry.append(w)
    return False, targets, retry


def plain_second_strategy(tree: QuotaTree, incoming: Workload, retry: list, targets: list, room: None = None) -> bool:
    """``_second_strategy`` as it was: the candidates passed by grouped by queue, all of them (no room test)."""
    assert room is None
    by_queue: dict[str, list[Workload]] = {}
    for w in retry:
        by_queue.setdefault(w.cluster_queue, []).append(w)
    ordering = preemption._FairOrdering(tree, incoming, by_queue)
    for queue in ordering:
        preemptor_new, target_old = ordering.shares(queue)
        w = ordering.pop(queue)
        passes = preemption._strategy_holds("LessThanInitialShare", preemptor_new, target_old, target_old)
        if passes and preemption._take(tree, incoming, w, targets):
            return True
        ordering.drop(queue)
    return False


@settings(max_examples=300, deadline=None)
@given(histories() | crowded_histories(), st.data(), st.sampled_from([(), ("LessThanInitialShare",),
                                                ("LessThanOrEqualToFinalShare", "LessThanInitialShare")]))
def test_fair_targets_stepping_over_passed_candidates_equal_listing_them_all(history, data, strategies):
    """The first fair strategy keeps only each queue's first candidate passed by (all the second reads), and
    remembers whether a strategy holds per size evicted: the same targets as the plain strategies."""
    config, played = history
    tree = QuotaTree(config)
    for step in played:
        play(tree, step)
    fair = FairSharing(enabled=True, preemption_strategies=strategies)
    for incoming in incomings(data.draw, config):
        tree._facts.clear()
        fast = tree.preemption_targets(incoming, fair)
        tree._facts.clear()
        kept = preemption._first_strategy, preemption._second_strategy
        preemption._first_strategy, preemption._second_strategy = plain_first_strategy, plain_second_strategy
        try:
            plain = tree.preemption_targets(incoming, fair)
        finally:
            preemption._first_strategy, preemption._second_strategy = kept
        assert (None if fast is None else [w.key for w in fast]) == (None if plain is None else [w.key for w in plain])
