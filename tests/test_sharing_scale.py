"""The sharing family's shortcuts held to the plain rules (issue 55): the one-node plan's mask of the nodes with
room (:func:`~simcluster.policies.sharing.room_mask`) and SJF-FFS's bound on a head's GPUs."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from simcluster.cluster import VirtualCluster
from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.job import Job
from simcluster.policies import sharing, sjf_sharing
from simcluster.policies.sharing import may_share_on, nodes_in, room_mask, shared_plan
from simcluster.policies.sjf_sharing import SjfAllShared
from simcluster.run import resolve_run
from simcluster.tables import load_tables
from simcluster.traces.synth import SynthSpec, synthesize

SHORT = (Phase.explicit, Phase.reuse, Phase.generate)  # whole runs: a failing example is reported unshrunk


def held_vc(seed: int, nodes: int, per_node: int) -> VirtualCluster:
    """A VC whose GPUs hold random jobs, one or two per GPU, with some nodes down (empty)."""
    rng = random.Random(seed)
    vc = VirtualCluster("v", nodes=nodes, gpus_per_node=per_node)
    index = 0
    for node in vc.nodes:
        if rng.random() < 0.15:
            node.set_up(False)
            continue
        for _ in range(rng.randint(0, per_node + 2)):
            job = Job(index, str(index), "v", 1, 0.0, 60.0)
            index += 1
            idle = list(node.free_ids)
            singly = [i for i, holders in enumerate(node.gpus) if len(holders) == 1]
            if idle and (not singly or rng.random() < 0.5):
                node.attach(job, [rng.choice(idle)])
            elif singly:
                node.attach(job, [rng.choice(singly)])
    return vc


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), per_node=st.sampled_from([2, 4, 8]), need=st.integers(1, 9),
       max_jobs=st.sampled_from([2, 3]))
def test_room_mask_holds_the_nodes_may_share_on_can_pass(seed, per_node, need, max_jobs):
    """A node is in the mask exactly when it is up and, with pairs only, has ``need`` GPUs idle or singly used:
    the nodes of each count of idle GPUs below ``need`` that the mask keeps are those ``may_share_on`` passes."""
    vc = held_vc(seed, 12, per_node)
    mask = room_mask(vc, need, max_jobs)
    plain = {node.index for node in vc.nodes
             if node.up and (max_jobs != 2 or need <= node.gpu_count - node.shared)}
    assert {node.index for node in nodes_in(vc.nodes, mask)} == plain
    for idle in range(min(need, per_node + 1)):
        kept = [n.index for n in nodes_in(vc.nodes, vc.buckets[idle] & mask) if may_share_on(n, need, max_jobs)]
        assert kept == [n.index for n in vc.nodes_with_free(idle) if may_share_on(n, need, max_jobs)]


def plain_sjf_schedule(vc, ctx, plan_of) -> None:
    """SJF-FFS's pass as it was: the head started, else searched a shared plan, else the pass ends."""
    while (job := vc.pending.first()) is not None:
        if ctx.try_start(job):
            continue
        plan = plan_of(job, vc, ctx, sharing.share_anyone) if job.gpu_milli >= 1000 else None
        if plan is None:
            return
        ctx.start_on(job, plan)


def runs(trace, config, plain: bool):
    """SJF-FFS's run, (start, end, preemptions, shared seconds) per job, and how many plans it searched;
    ``plain``: the pass as it was, every head that cannot start searched."""
    colocation = load_tables(trace, config, True).colocation
    jobs = trace.make_jobs()
    resolved = resolve_run(config=config, cluster=trace.vc_nodes, colocation=colocation)
    policy = SjfAllShared(config)
    searched = [0]

    def counted(job, vc, ctx, cost):
        searched[0] += 1
        return shared_plan(job, vc, ctx, cost)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sjf_sharing, "shared_plan", counted)
        if plain:
            patch.setattr(policy, "schedule", lambda vc, ctx: plain_sjf_schedule(vc, ctx, counted))
        Simulation(jobs, resolved, policy=policy).run()
    return [(j.start_time, j.end_time, j.preemptions, j.shared_seconds) for j in jobs], searched[0]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], phases=SHORT)
@given(seed=st.integers(0, 10_000), max_jobs=st.sampled_from([2, 3]), mtbf=st.sampled_from([0.0, 40_000.0]),
       load=st.sampled_from([0.8, 1.6]))
def test_sjf_ffs_runs_equal_those_that_search_every_head(seed, max_jobs, mtbf, load):
    """Jobs of one node's GPUs and of several (to 32 on nodes of 8), node failures and repairs: the same starts,
    ends and shared seconds as when every head that cannot start is searched, and no more searches."""
    trace = synthesize(SynthSpec(jobs=200, nodes=6, vcs=1, load=load, sizes="pow2:32", seed=seed))
    config = SimConfig(policy="sjf-ffs", max_jobs_per_gpu=max_jobs, node_mtbf=mtbf, node_repair=900,
                       on_no_progress="abandon", until=300_000.0)
    (fast, searched), (plain, searched_plain) = (runs(trace, config, plain=p) for p in (False, True))
    assert fast == plain
    assert searched <= searched_plain


def test_sjf_ffs_searches_fewer_plans_on_a_congested_trace():
    """Where multi-node heads wait for more GPUs than idle and singly used ones, their searches are spared (so
    the runs compared above exercise the bound)."""
    trace = synthesize(SynthSpec(jobs=300, nodes=6, vcs=1, load=2.0, sizes="pow2:32", seed=3))
    (fast, searched), (plain, searched_plain) = (runs(trace, SimConfig(policy="sjf-ffs", until=300_000.0), plain=p)
                                                 for p in (False, True))
    assert fast == plain
    assert searched < searched_plain * 0.8, (searched, searched_plain)


def test_a_one_node_plan_without_room_anywhere_is_none():
    """Nodes of 4 GPUs, two of each shared by two jobs and one singly used: a 3-GPU job finds no node (two
    GPUs idle or singly used each), a 2-GPU one shares the singly used GPU of the first node."""
    vc = VirtualCluster("v", nodes=2, gpus_per_node=4)
    jobs = iter(Job(i, str(i), "v", 1, 0.0, 60.0) for i in range(20))
    for node in vc.nodes:
        for gpu in (0, 0, 1, 1, 2):
            node.attach(next(jobs), [gpu])

    class Ctx:
        config = SimConfig(max_jobs_per_gpu=2)
        now = 0.0

    assert room_mask(vc, 3, 2) == 0 and room_mask(vc, 2, 2) == 0b11
    assert shared_plan(Job(98, "w", "v", 3, 0.0, 60.0), vc, Ctx(), sharing.share_anyone) is None
    assert shared_plan(Job(99, "x", "v", 2, 0.0, 60.0), vc, Ctx(), sharing.share_anyone) == [(vc.nodes[0], [2, 3])]
