"""The sharing family's shortcuts of issue 55 (session 7) held to the plain rules: a many-node shared plan that
cannot succeed asks the partners a full search would have asked, and no others
(:func:`~simcluster.policies.sharing.ask_every_partner`); srtf's sharing walk reads each running job's share
from :class:`~simcluster.policies.srtf.KeptShares`, always the float :func:`~simcluster.policies.quota.gpu_share`
sums GPU by GPU."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from simcluster.cluster import Cluster, VirtualCluster
from simcluster.cluster_spec import ClusterSpec
from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.job import Job
from simcluster.policies.quota import gpu_share
from simcluster.policies.sharing import shared_plan
from simcluster.policies.srtf import KeptShares
from simcluster.policies.srtf_ars import SrtfAllShared
from simcluster.policies.srtf_wrs import SrtfWiseSharing
from simcluster.run import resolve_run
from simcluster.tables import load_tables
from simcluster.traces.synth import SynthSpec, synthesize

SHORT = (Phase.explicit, Phase.reuse, Phase.generate)  # whole runs: a failing example is reported unshrunk
MEMORY = 16_000.0  # MiB per GPU


def held_vc(rng: random.Random, nodes: int, per_node: int) -> VirtualCluster:
    """A VC whose GPUs hold random jobs of random memory, one or two per GPU, some on two nodes, some nodes down."""
    vc = Cluster(ClusterSpec.uniform({"v": nodes}, per_node), per_node).vcs["v"]
    for node in vc.nodes:
        if rng.random() < 0.15:
            node.set_up(False)
    up = [node for node in vc.nodes if node.up]
    for index in range(rng.randint(0, nodes * per_node * 2)):
        job = Job(index, str(index), "v", 1, 0.0, 60.0, memory=rng.choice([1_000.0, 6_000.0, 9_000.0]))
        allocation = []
        for node in rng.sample(up, min(len(up), rng.choice([1, 1, 2]))):
            room = [i for i, holders in enumerate(node.gpus) if len(holders) < 2]
            if room:
                allocation.append((node, node.attach(job, sorted(rng.sample(room, rng.randint(1, len(room)))))))
        if allocation:
            job.allocation = tuple(allocation)
    return vc


def plainly_asked(job: Job, vc: VirtualCluster, cost) -> set[Job]:
    """The partners a search of every node asks: each job alone on a GPU with room for ``job``'s memory beside
    it, on an up node (a GPU holds two jobs at most)."""
    asked: dict[Job, object] = {}
    for node in vc.nodes:
        if not node.up or not node.used:
            continue
        for i, holders in enumerate(node.gpus):
            fits = len(holders) == 1 and holders[0].memory + job.memory <= (node.gpu_memory or MEMORY)
            if fits and holders[0] not in asked:
                asked[holders[0]] = cost(job, holders[0])
    return set(asked)


def plainly_usable(job: Job, vc: VirtualCluster, cost) -> int:
    """Idle GPUs plus GPUs held alone by a job that accepts ``job`` beside it, with room for its memory."""
    total = 0
    for node in vc.nodes:
        if not node.up:
            continue
        total += node.gpu_count - node.used
        for i, holders in enumerate(node.gpus):
            if len(holders) == 1 and holders[0].memory + job.memory <= (node.gpu_memory or MEMORY):
                total += cost(job, holders[0]) is not None
    return total


class Ctx:
    config = SimConfig(max_jobs_per_gpu=2, gpu_memory=MEMORY)
    now = 0.0


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 100_000), per_node=st.sampled_from([2, 4, 8]), nodes=st.integers(2, 7),
       need=st.integers(1, 40), memory=st.sampled_from([1_000.0, 8_000.0, 12_000.0]))
def test_a_many_node_plan_fails_exactly_when_too_few_gpus_are_usable_asking_the_plain_partners(
        seed, per_node, nodes, need, memory):
    rng = random.Random(seed)
    vc = held_vc(rng, nodes, per_node)
    need = max(need, per_node + 1)  # (more than a node's GPUs: the many-node search)
    job = Job(10_000, "w", "v", need, 0.0, 60.0, memory=memory)
    refusing = {j for node in vc.nodes for j in node.jobs if rng.random() < 0.3}
    asked: list[Job] = []

    def cost(waiting: Job, resident: Job) -> float | None:
        asked.append(resident)
        return None if resident in refusing else float(resident.index % 5)

    plan = shared_plan(job, vc, Ctx(), cost)
    assert len(asked) == len(set(asked))  # (each partner asked once per search)
    enough = plainly_usable(job, vc, lambda w, r: None if r in refusing else 0.0) >= need
    assert (plan is not None) == enough
    if plan is None:
        assert set(asked) == plainly_asked(job, vc, lambda w, r: None)
    else:
        assert sum(len(ids) for _, ids in plan) == need
        assert set(asked) <= plainly_asked(job, vc, lambda w, r: None)


def test_a_hopeless_many_node_plan_asks_only_the_partners_with_room():
    """Two nodes of 2 GPUs: a job alone on GPU 0 of each, a pair on node 1's GPU 1, node 0's GPU 1 idle. A 4-GPU
    job cannot have 4 GPUs (3 idle or held alone); it asks both lone jobs, not the pair, and is refused."""
    vc = Cluster(ClusterSpec.uniform({"v": 2}, 2), 2).vcs["v"]
    a, b, c, d = (Job(i, str(i), "v", 1, 0.0, 60.0) for i in range(4))
    for job, node, gpu in ((a, 0, 0), (b, 1, 0), (c, 1, 1), (d, 1, 1)):
        job.allocation = ((vc.nodes[node], vc.nodes[node].attach(job, [gpu])),)
    asked: list[str] = []

    def cost(waiting: Job, resident: Job) -> float:
        asked.append(resident.job_id)
        return 0.0

    assert shared_plan(Job(9, "w", "v", 4, 0.0, 60.0), vc, Ctx(), cost) is None
    assert sorted(asked) == ["0", "1"]
    assert shared_plan(Job(9, "w", "v", 3, 0.0, 60.0), vc, Ctx(), cost) is not None


class CheckedShares(KeptShares):
    """Kept shares that say, at every question, whether the kept answer is the sum worked out afresh."""

    asked = 0

    def __call__(self, job: Job) -> float:
        share = super().__call__(job)
        fresh = gpu_share(job)
        assert share == fresh and type(share) is type(fresh), (job.job_id, share, fresh)
        CheckedShares.asked += job.sharing
        return share


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow], phases=SHORT)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from([SrtfAllShared, SrtfWiseSharing]),
       max_jobs=st.sampled_from([2, 3]), mtbf=st.sampled_from([0.0, 40_000.0]))
def test_kept_shares_are_the_shares_summed_afresh(seed, policy, max_jobs, mtbf):
    """Whole runs of srtf's sharing variants, jobs to 32 GPUs on nodes of 8, node failures and repairs."""
    trace = synthesize(SynthSpec(jobs=250, nodes=6, vcs=1, load=1.6, sizes="pow2:32", seed=seed))
    config = SimConfig(policy="srtf-ars", max_jobs_per_gpu=max_jobs, node_mtbf=mtbf, node_repair=900,
                       on_no_progress="abandon", until=300_000.0)
    colocation = load_tables(trace, config, True).colocation
    scheduler = policy(config)
    scheduler._shares = CheckedShares()
    before = CheckedShares.asked
    Simulation(trace.make_jobs(), resolve_run(config=config, cluster=trace.vc_nodes, colocation=colocation),
               policy=scheduler).run()
    assert CheckedShares.asked > before  # (shared jobs' shares were asked for)
