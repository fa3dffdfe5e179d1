"""The engine's cheaper bookkeeping gives what the plain per-node, per-GPU work gives (issue 55 item 2).

- ``SpeedModel.of``, which keeps each node's slowest speed until that node's jobs change, answers as a fresh
  GPU-by-GPU walk does after any sequence of starts and stops of sharing jobs;
- a run is the same with the kept speeds as with them dropped before every question (a sharing policy).
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.cluster import Cluster
from simcluster.cluster_spec import ClusterSpec
from simcluster.colocation.loader import default_model
from simcluster.engine.speed import SpeedModel
from simcluster.job import Job, Workload

WORKLOADS = [Workload("resnet18", "cifar10", 64, 0), Workload("bert", "squad", 32, 1),
             Workload("dcgan", "lsun", 64, 0), Workload("yolov3", "coco", 16, 1)]


def _plain_of(model: SpeedModel, job: Job) -> tuple[float, bool]:
    """The speed as a fresh walk of every GPU of every node finds it (what :meth:`SpeedModel.of` kept nothing of)."""
    slowest, sharing = math.inf, False
    for node, ids in job.allocation:
        alone = job.speed_on(node.gpu_type)
        slowest = min(slowest, alone)
        for i in ids:
            holders = node.gpus[i]
            if len(holders) < 2:
                continue
            sharing = True
            speed = alone
            for other in holders:
                if other is not job:
                    speed *= model.pair(job, other, node.gpu_type)
            slowest = min(slowest, speed)
    speed = slowest * model.spread(job) if model.spread_penalty else slowest
    return (speed * model.terms_factor(job) if model.terms else speed), sharing


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_kept_node_speeds_answer_as_a_fresh_walk(seed: int) -> None:
    rng = random.Random(seed)
    vc = Cluster(ClusterSpec.uniform({"v": 4}, 4), 4).vcs["v"]
    model = SpeedModel(spread_penalty=rng.choice([0.0, 0.25]), colocation=default_model())
    running: list[Job] = []
    for step in range(30):
        if running and rng.random() < 0.35:
            job = running.pop(rng.randrange(len(running)))
            for node, _ in job.allocation:
                node.release(job)
            job.allocation = ()
            model.forget(job)
        else:
            plan = []
            for node in rng.sample(vc.nodes, rng.randint(1, 3)):
                ids = rng.sample(range(4), rng.randint(1, 4))
                if all(len(node.gpus[i]) < 2 for i in ids):  # at most two jobs per GPU, as sharing policies do
                    plan.append((node, sorted(ids)))
            if not plan:
                continue
            job = Job(index=step, job_id=f"j{step}", vc="v", gpu_num=sum(len(ids) for _, ids in plan),
                      submit_time=0, duration=1, workload=rng.choice(WORKLOADS))
            job.allocation = tuple((node, node.attach(job, ids)) for node, ids in plan)
            running.append(job)
        for job in running:  # (asked after every change: what is kept must follow each one)
            assert model.of(job) == _plain_of(model, job)


@pytest.mark.parametrize("policy", ["srtf-wrs", "sjf-ffs"])
def test_a_sharing_run_is_the_same_with_speeds_never_kept(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from simcluster.api import simulate
    from simcluster.config import SimConfig
    from simcluster.traces.synth import spec_from_text, synthesize

    trace = synthesize(spec_from_text("jobs=300,nodes=8,sizes=pow2:32,load=1.2,vcs=1,seed=3"))
    kept = simulate(trace, SimConfig(policy=policy)).jobs
    real_of = SpeedModel.of

    def forgetful_of(self: SpeedModel, job: Job) -> tuple[float, bool]:
        self.kept.clear()
        return real_of(self, job)

    monkeypatch.setattr(SpeedModel, "of", forgetful_of)
    fresh = simulate(trace, SimConfig(policy=policy)).jobs
    assert kept.equals(fresh)
    assert kept["preemptions"].sum() + kept["end_time"].count() > 0
