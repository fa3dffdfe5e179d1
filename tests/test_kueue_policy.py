"""The ``kueue`` policy in a run: Kueue's documented decisions (Cluster Queue, Cohort, Preemption and Fair Sharing
concept pages of kueue.sigs.k8s.io; KEP-1714) as whole simulations, through ``simulate`` and ``lucid-sim run``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.errors import TraceError
from simcluster.settings.fields import ConfigError


def cluster_queue(name: str, nominal: float, cohort: str | None = None, borrowing: float | None = None,
                  lending: float | None = None, strategy: str = "BestEffortFIFO", reclaim: str = "Never",
                  within: str = "Never", weight: float | None = None, flavor: str = "default") -> str:
    limits = "".join(f"\n        {key}: {value}" for key, value in
                     (("borrowingLimit", borrowing), ("lendingLimit", lending)) if value is not None)
    return f"""---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  {f"cohort: {cohort}" if cohort else ""}
  queueingStrategy: {strategy}
  namespaceSelector: {{}}
  preemption: {{reclaimWithinCohort: {reclaim}, withinClusterQueue: {within}}}
  {f"fairSharing: {{weight: {weight}}}" if weight is not None else ""}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: {flavor}
      resources:
      - name: nvidia.com/gpu
        nominalQuota: {nominal}{limits}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: {name}, namespace: ml}}
spec: {{clusterQueue: {name}}}
"""


FLAVOR = """---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
"""


def write(tmp_path: Path, *queues: str, extra: str = "") -> str:
    path = tmp_path / "kueue.yaml"
    path.write_text(FLAVOR + "".join(queues) + extra)
    return str(path)


def run(tmp_path: Path, kueue: str, rows: list[tuple], nodes: int = 2, **config) -> pd.DataFrame:
    """Jobs (job_id, local_queue, submit, GPUs, seconds[, priority]) on ``nodes`` nodes of 8 GPUs, by kueue."""
    columns = ["job_id", "local_queue", "submit_time", "gpu_num", "duration", "priority"][:len(rows[0])]
    frame = pd.DataFrame(rows, columns=columns).assign(vc="vc0")
    result = simulate(load_trace(frame, {"vc0": nodes}), SimConfig(policy="kueue", kueue=kueue, **config))
    return result.jobs.set_index("job_id")


def starts(jobs: pd.DataFrame) -> dict[str, float]:
    return {job: float(jobs.loc[job, "submit_time"] + jobs.loc[job, "queue"]) for job in jobs.index}


def test_a_queue_borrows_its_cohorts_idle_quota_up_to_its_borrowing_limit(tmp_path):
    """Cluster Queue page, borrowingLimit: team-a (nominal 8) borrows team-b's idle 8 up to its limit."""
    unlimited = write(tmp_path, cluster_queue("a", 8, "org"), cluster_queue("b", 8, "org"))
    rows = [("j1", "a", 0, 8, 100), ("j2", "a", 0, 8, 100)]
    assert starts(run(tmp_path, unlimited, rows)) == {"j1": 0, "j2": 0}  # j2 borrows b's 8
    limited = write(tmp_path, cluster_queue("a", 8, "org", borrowing=4), cluster_queue("b", 8, "org"))
    assert starts(run(tmp_path, limited, rows)) == {"j1": 0, "j2": 100}  # 8 more would exceed the limit of 4
    alone = write(tmp_path, cluster_queue("a", 8), cluster_queue("b", 8))
    assert starts(run(tmp_path, alone, rows)) == {"j1": 0, "j2": 100}  # no cohort, nothing to borrow


def test_a_lending_limit_keeps_quota_from_the_cohort(tmp_path):
    """Cluster Queue page, lendingLimit: team-b lends at most 4 of its 8, so team-a gets 8 + 4 at most."""
    kueue = write(tmp_path, cluster_queue("a", 8, "org"), cluster_queue("b", 8, "org", lending=4))
    rows = [("j1", "a", 0, 8, 100), ("j2", "a", 0, 4, 100), ("j3", "a", 0, 4, 100)]
    assert starts(run(tmp_path, kueue, rows)) == {"j1": 0, "j2": 0, "j3": 100}


@pytest.mark.parametrize(("reclaim", "b_starts", "a_preempted"), [("Any", 10, 1), ("Never", 100, 0)])
def test_reclaim_within_cohort(tmp_path, reclaim, b_starts, a_preempted):
    """Preemption page: a queue below its nominal quota takes back what the cohort borrowed from it (Any), or
    waits for the borrower to finish (Never)."""
    kueue = write(tmp_path, cluster_queue("a", 8, "org"), cluster_queue("b", 8, "org", reclaim=reclaim))
    jobs = run(tmp_path, kueue, [("a1", "a", 0, 8, 100), ("a2", "a", 0, 8, 100), ("b1", "b", 10, 8, 50)])
    assert starts(jobs)["b1"] == b_starts
    assert int(jobs["preemptions"].sum()) == a_preempted


def test_reclaim_lower_priority_spares_equal_priorities(tmp_path):
    """Preemption page: reclaimWithinCohort LowerPriority preempts only borrowers of lower priority."""
    kueue = write(tmp_path, cluster_queue("a", 8, "org"), cluster_queue("b", 8, "org", reclaim="LowerPriority"))
    low = run(tmp_path, kueue, [("a1", "a", 0, 8, 100, 0), ("a2", "a", 0, 8, 100, 0), ("b1", "b", 10, 8, 50, 5)])
    same = run(tmp_path, kueue, [("a1", "a", 0, 8, 100, 5), ("a2", "a", 0, 8, 100, 5), ("b1", "b", 10, 8, 50, 5)])
    assert starts(low)["b1"] == 10 and starts(same)["b1"] == 100


def test_within_cluster_queue_preemption_by_priority(tmp_path):
    """Preemption page: withinClusterQueue LowerPriority: a high-priority job evicts a lower one of its queue."""
    kueue = write(tmp_path, cluster_queue("a", 8, within="LowerPriority"))
    jobs = run(tmp_path, kueue, [("low", "a", 0, 8, 100, 0), ("high", "a", 10, 8, 50, 10)], nodes=1)
    assert starts(jobs)["high"] == 10
    assert jobs.loc["low", "preemptions"] == 1
    never = write(tmp_path, cluster_queue("a", 8, within="Never"))
    assert starts(run(tmp_path, never, [("low", "a", 0, 8, 100, 0), ("high", "a", 10, 8, 50, 10)], nodes=1))[
        "high"] == 100


@pytest.mark.parametrize(("strategy", "small_starts"), [("StrictFIFO", 110), ("BestEffortFIFO", 1)])
def test_strict_fifo_blocks_behind_its_head(tmp_path, strategy, small_starts):
    """Cluster Queue page, queueingStrategy: a StrictFIFO head that does not fit blocks the jobs behind it; under
    BestEffortFIFO they go ahead."""
    kueue = write(tmp_path, cluster_queue("a", 8, strategy=strategy))
    jobs = run(tmp_path, kueue, [("j1", "a", 0, 4, 100), ("big", "a", 1, 8, 10), ("small", "a", 1, 4, 10)],
               nodes=1)
    assert starts(jobs)["small"] == small_starts


def test_higher_priority_goes_first_in_a_queue(tmp_path):
    kueue = write(tmp_path, cluster_queue("a", 8))
    jobs = run(tmp_path, kueue, [("j0", "a", 0, 8, 100, 0), ("low", "a", 1, 8, 10, 0), ("high", "a", 2, 8, 10, 9)],
               nodes=1)
    assert starts(jobs)["high"] == 100 and starts(jobs)["low"] == 110


def test_per_queue_figures_and_borrowed_gpu_time(tmp_path):
    kueue = write(tmp_path, cluster_queue("a", 8, "org"), cluster_queue("b", 16, "org"))
    frame = pd.DataFrame([("j1", "a", 0, 8, 3600), ("j2", "a", 0, 8, 3600), ("j3", "b", 0, 4, 1800)],
                         columns=["job_id", "local_queue", "submit_time", "gpu_num", "duration"]).assign(vc="vc0")
    result = simulate(load_trace(frame, {"vc0": 3}), SimConfig(policy="kueue", kueue=kueue))
    tiers = result.summary["tiers"]["by_cluster_queue"]
    assert tiers["a"]["jobs"] == 2 and tiers["b"]["jobs"] == 1
    assert result.jobs["cluster_queue"].tolist() == ["a", "a", "b"]
    queues = result.summary["kueue"]["cluster_queues"]
    # a ran 16 GPUs on a nominal 8 for an hour, borrowing 8 of the 12 that b left idle
    assert queues["a"]["borrowed_gpu_hours"] == pytest.approx(8.0)
    assert queues["b"]["borrowed_gpu_hours"] == 0


def test_a_missing_local_queue_is_refused_naming_the_job(tmp_path):
    kueue = write(tmp_path, cluster_queue("a", 8))
    with pytest.raises(TraceError, match="job j2.*'nope' is no LocalQueue"):
        run(tmp_path, kueue, [("j1", "a", 0, 8, 100), ("j2", "nope", 0, 8, 100)])


def test_kueue_needs_the_kueue_policy(tmp_path):
    kueue = write(tmp_path, cluster_queue("a", 8))
    frame = pd.DataFrame({"job_id": ["j"], "local_queue": ["a"], "submit_time": [0], "gpu_num": [1],
                          "duration": [1], "vc": ["vc0"]})
    with pytest.raises(ConfigError, match="run it with --policy kueue"):
        simulate(load_trace(frame, {"vc0": 1}), SimConfig(policy="fifo", kueue=kueue))


def test_the_cli_runs_kueue_and_prints_one_json_document(tmp_path):
    from typer.testing import CliRunner

    from simcluster.cli import app

    kueue = write(tmp_path, cluster_queue("a", 8, "org"), cluster_queue("b", 8, "org", reclaim="Any"))
    trace = tmp_path / "jobs.csv"
    pd.DataFrame([("a1", "a", 0, 8, 100), ("a2", "a", 0, 8, 100), ("b1", "b", 10, 8, 50)],
                 columns=["job_id", "local_queue", "submit_time", "gpu_num", "duration"]).assign(vc="vc0").to_csv(
        trace, index=False)
    (tmp_path / "vcs.csv").write_text("vc,num\nvc0,2\n")
    out = CliRunner().invoke(app, ["run", "--trace", str(trace), "--vc-config", str(tmp_path / "vcs.csv"),
                                   "--policy", "kueue", "--kueue", kueue, "--json", "--out", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert summary["kueue"]["cluster_queues"]["a"]["preempted"] == 1


KEP_1714 = """
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
fairSharing: {enable: true}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: root}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default
      resources: [{name: nvidia.com/gpu, nominalQuota: 300}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: c1}
spec: {parent: root, fairSharing: {weight: 1}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: c2}
spec: {parent: root, fairSharing: {weight: 1}}
"""


def test_kep_1714_weighted_shares_at_steady_state(tmp_path):
    """KEP-1714 (hierarchical fair sharing): 300 GPUs under a root cohort, cohorts C1 and C2 of equal weight, inside
    C1 queues of weights 1, 1 and 3: 150 GPUs to each cohort, 30/30/90 inside C1 — time-averaged within 5 %, every
    queue backlogged with 1-GPU jobs of 50 to 150 s, after the first 500 s.  (At the start every queue's head is
    admitted in each cycle while GPUs are free, as in Kueue: the shares come as GPUs free up one by one, each to
    the queue the tournament picks.)"""
    queues = [("q1", "c1", 1), ("q2", "c1", 1), ("q3", "c1", 3), ("q4", "c2", 1)]
    kueue = write(tmp_path, *(cluster_queue(name, 0, cohort, weight=weight) for name, cohort, weight in queues),
                  extra="---" + KEP_1714)
    durations = np.random.default_rng(0).integers(50_000, 150_001, size=4 * 2500)  # (ms: finishes one at a time)
    rows = [(f"{name}-{i}", name, 0, 1) for name, _, _ in queues for i in range(2500)]
    frame = pd.DataFrame(rows, columns=["job_id", "local_queue", "submit_time", "gpu_num"]).assign(
        duration=durations, vc="vc0")

    def mean_gpus(fair_sharing: str) -> dict[str, float]:
        result = simulate(load_trace(frame, {"vc0": 75}, gpus_per_node=4, duration_unit="ms"),
                          SimConfig(policy="kueue", kueue=kueue, fair_sharing=fair_sharing))
        assert result.summary["kueue"]["fair_sharing"] is (fair_sharing == "auto")  # (the Configuration's)
        jobs, start, end = result.jobs, 500.0, 1500.0
        busy = (jobs["end_time"].clip(start, end) - jobs["start_time"].clip(start, end))
        return (busy.groupby(jobs["cluster_queue"]).sum() / (end - start)).to_dict()

    fair = mean_gpus("auto")
    for name, gpus in {"q1": 30, "q2": 30, "q3": 90, "q4": 150}.items():
        assert fair[name] == pytest.approx(gpus, rel=0.05), fair
    classical = mean_gpus("off")  # (without fair sharing, oldest first: the first queues' jobs take what frees up)
    assert classical["q4"] < 75 < classical["q1"] + classical["q2"] - 150, classical


@pytest.mark.parametrize(("cycle", "admitted_b"), [("heads", 1), ("one", 0)])
def test_a_cycle_admits_one_head_or_every_head(tmp_path, cycle, admitted_b):
    """Kueue's cycle takes one head per ClusterQueue and admits each that fits (``cycle=heads``); by default each
    admission starts a new cycle, as if the instant's events came one at a time: a's second job (older, same
    priority) then goes before b's first."""
    kueue = write(tmp_path, cluster_queue("a", 0, "org"), cluster_queue("b", 0, "org"),
                  extra="---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: org}\nspec:\n"
                        "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: default\n"
                        "      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]\n")
    jobs = run(tmp_path, kueue, [("a1", "a", 0, 8, 100), ("a2", "a", 0, 8, 100), ("b1", "b", 0, 8, 100)],
               policy_settings=(("cycle", cycle),))
    assert int((jobs["start_time"] == 0).loc[["b1"]].sum()) == admitted_b
