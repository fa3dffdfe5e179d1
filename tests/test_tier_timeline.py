"""Each ClusterQueue's GPUs in use over time and the cluster's allocation rate (simcluster.metrics.tiers), and the
report's picture of them (tiers_share_over_time.png).

The usage compared with a queue's quota is what Kueue counts against it: the GPUs its admitted workloads hold,
against its ``nominalQuota`` (kueue.sigs.k8s.io, Concepts, Cluster Queue: "Resources", "Cohort" and borrowing).
Every expected value below is an integral of a step function worked out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.experiments.pictures import MAX_QUEUES, tier_shares_of
from simcluster.experiments.report import write_report
from simcluster.job import Job
from simcluster.metrics.observer import ClusterTimeline
from simcluster.metrics.tiers import SHARE_COLUMNS, Steps, TierTimeline, nominal_gpus
from simcluster.results import write_run
from simcluster.tiers.kueue_yaml import read_kueue

PNG = b"\x89PNG\r\n\x1a\n"


class Jobs:
    """Jobs driven through the observer's hooks by hand: what the engine does to their allocation, then the hook."""

    def __init__(self, timeline: TierTimeline) -> None:
        self.timeline = timeline

    def hold(self, job: Job, gpus: int) -> None:
        job.allocation = ((SimpleNamespace(name="n0"), list(range(gpus))),) if gpus else ()

    def start(self, job: Job, now: float) -> None:
        self.hold(job, job.gpu_num)
        self.timeline.on_start(job, now)

    def stop(self, job: Job, now: float, hook: str = "on_finish") -> None:
        self.hold(job, 0)
        getattr(self.timeline, hook)(job, now)


def job(name: str, gpus: int, queue: str = "") -> Job:
    return Job(0, name, "vc0", gpus, 0, 100, cluster_queue=queue)


# --- the step function ------------------------------------------------------------------------------------

def test_a_step_functions_average_over_any_interval_is_its_area_over_the_width():
    steps = Steps()
    for at, change in [(10.0, 4), (30.0, 2), (60.0, -6)]:  # 0 → 4 at 10 s → 6 at 30 s → 0 at 60 s
        steps.add(at, change)
    # [0, 20]: 4 GPUs for 10 s = 40 → 2; [20, 50]: 4×10 + 6×20 = 160 → 16/3; [50, 100]: 6×10 = 60 → 1.2
    assert steps.means(np.array([0.0, 20.0, 50.0, 100.0])) == pytest.approx([2.0, 16 / 3, 1.2])
    assert steps.integral(np.array([5.0, 60.0, 1000.0])) == pytest.approx([0.0, 4 * 20 + 6 * 30, 260.0])


def test_changes_at_one_instant_keep_one_point_with_the_level_after_them():
    steps = Steps()
    for change in (8, -8, 4, 2):  # a finish and two starts in one scheduling instant
        steps.add(5.0, change)
    steps.add(7.0, -6)
    assert (list(steps.time), list(steps.value)) == ([5.0, 7.0], [6.0, 0.0])


# --- the observer -----------------------------------------------------------------------------------------

def scripted() -> TierTimeline:
    """Queue a: j1 (4 GPUs) 0–50 s, j2 (2 GPUs) 10–30 s preempted, then 40–80 s; queue b: j3 (8 GPUs) 20–60 s;
    j4 of no queue (1 GPU) 0–100 s."""
    timeline = TierTimeline(["a", "b", "idle"])
    drive = Jobs(timeline)
    j1, j2, j3, j4 = job("j1", 4, "a"), job("j2", 2, "a"), job("j3", 8, "b"), job("j4", 1)
    drive.start(j1, 0.0)
    drive.start(j4, 0.0)
    drive.start(j2, 10.0)
    drive.start(j3, 20.0)
    drive.stop(j2, 30.0, "on_preempt")
    drive.start(j2, 40.0)
    drive.stop(j1, 50.0)
    drive.stop(j3, 60.0)
    drive.stop(j2, 80.0)
    drive.stop(j4, 100.0)
    return timeline


def test_each_queues_gpus_are_a_step_function_of_its_jobs_starts_and_stops():
    timeline = scripted()
    a, b = timeline.queues["a"], timeline.queues["b"]
    assert (list(a.time), list(a.value)) == ([0.0, 10.0, 30.0, 40.0, 50.0, 80.0], [4.0, 6.0, 4.0, 6.0, 2.0, 0.0])
    assert (list(b.time), list(b.value)) == ([20.0, 60.0], [8.0, 0.0])
    # a: 4×10 + 6×20 + 4×10 + 6×10 + 2×30 = 320 GPU-s over 100 s; b: 8×40 = 320; the cluster adds j4's 100
    assert timeline.mean_gpus(0.0, 100.0) == pytest.approx({"a": 3.2, "b": 3.2, "idle": 0.0})
    assert timeline.allocation_rate(0.0, 100.0, gpus=16) == pytest.approx(740 / 1600)


def test_few_changes_are_kept_exactly_in_the_table():
    table = scripted().share_over_time(0.0, 100.0)
    assert list(table.columns) == SHARE_COLUMNS
    a = table[table["tier"] == "a"]
    assert a["time"].tolist() == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 80.0]  # every change of any queue
    assert a["gpus"].tolist() == [4.0, 6.0, 6.0, 4.0, 6.0, 2.0, 2.0, 0.0]
    assert table.groupby("tier").size().to_dict() == {"a": 8, "b": 8, "idle": 8}


def test_many_changes_are_averaged_exactly_over_at_most_the_points_asked():
    table = scripted().share_over_time(0.0, 100.0, points=4)
    a = table[table["tier"] == "a"]
    b = table[table["tier"] == "b"]
    assert a["time"].tolist() == [0.0, 25.0, 50.0, 75.0] and a["end"].tolist() == [25.0, 50.0, 75.0, 100.0]
    # a over [0, 25]: 4×10 + 6×15 = 130; [25, 50]: 6×5 + 4×10 + 6×10 = 130; [50, 75]: 2×25; [75, 100]: 2×5
    assert a["gpus"].tolist() == pytest.approx([5.2, 5.2, 2.0, 0.4])
    assert b["gpus"].tolist() == pytest.approx([1.6, 8.0, 3.2, 0.0])  # 8×5, 8×25, 8×10 over 25 s
    # the averages keep every GPU-second: their time-weighted sum is the queue's whole integral
    assert ((a["end"] - a["time"]) * a["gpus"]).sum() == pytest.approx(320.0)


def test_the_allocation_rate_over_time_counts_jobs_of_no_queue_too():
    frame = scripted().allocation_over_time(0.0, 100.0, gpus=10, points=2)
    # [0, 50]: j1 200 + j2 2×30=60 + j3 8×30=240 + j4 50 = 550; [50, 100]: j2 60 + j3 80 + j4 50 = 190
    assert frame["allocated_gpus"].tolist() == pytest.approx([11.0, 3.8])
    assert frame["allocation_rate"].tolist() == pytest.approx([1.1, 0.38])  # above 1: more GPUs than the 10 given


def test_a_restart_that_keeps_its_gpus_changes_nothing_and_a_resize_counts_the_new_size():
    timeline = TierTimeline()
    drive = Jobs(timeline)
    elastic = job("e", 4, "a")
    drive.start(elastic, 0.0)
    timeline.on_restart(elastic, 10.0)  # a spare swapped in: it holds the same GPUs
    drive.hold(elastic, 8)
    timeline.on_resize(elastic, 20.0)
    drive.stop(elastic, 30.0, "on_restart")  # its node failed: back to the queue
    a = timeline.queues["a"]
    assert (list(a.time), list(a.value)) == ([0.0, 20.0, 30.0], [4.0, 8.0, 0.0])
    assert timeline.mean_gpus(0.0, 40.0) == {"a": pytest.approx((4 * 20 + 8 * 10) / 40)}


def test_a_window_of_no_time_gives_an_empty_table_and_zero_figures():
    timeline = scripted()
    assert timeline.share_over_time(5.0, 5.0).empty
    assert timeline.mean_gpus(5.0, 5.0) == {"a": 0.0, "b": 0.0, "idle": 0.0}
    assert timeline.allocation_rate(5.0, 5.0, 8) == 0.0


def test_the_summary_figures_hold_the_means_and_the_nominal_quotas():
    figures = scripted().figures(0.0, 100.0, gpus=16, nominal={"b": 8, "a": 4})
    assert figures == {"mean_gpus": {"a": 3.2, "b": 3.2, "idle": 0.0}, "allocation_rate_mean": 0.4625,
                       "nominal_gpus": {"a": 4.0, "b": 8.0}}


# --- in a simulation ----------------------------------------------------------------------------------------

def cluster_queue(name: str, nominal: int) -> str:
    return f"""---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  cohort: org
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default
      resources:
      - name: nvidia.com/gpu
        nominalQuota: {nominal}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: {name}, namespace: ml}}
spec: {{clusterQueue: {name}}}
"""


FLAVOR = "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: default}\n"
ROWS = [("j1", "a", 0, 8, 100), ("j2", "a", 0, 8, 100), ("j3", "b", 50, 8, 100), ("j4", "b", 60, 4, 40)]


@pytest.fixture(scope="module")
def kueue_run(tmp_path_factory):
    """Cluster Queue page, borrowing: a (nominal 8) takes b's idle 8 for j2 at 0 s; b's j3 and j4, arriving while a
    holds all 16 GPUs, start when a's jobs end at 100 s (no reclaim: reclaimWithinCohort Never)."""
    folder = tmp_path_factory.mktemp("kueue")
    kueue = folder / "kueue.yaml"
    kueue.write_text(FLAVOR + cluster_queue("a", 8) + cluster_queue("b", 8))
    frame = pd.DataFrame(ROWS, columns=["job_id", "local_queue", "submit_time", "gpu_num", "duration"]).assign(vc="vc0")
    tiers, cluster = TierTimeline(["a", "b"]), ClusterTimeline()
    result = simulate(load_trace(frame, {"vc0": 2}), SimConfig(policy="kueue", kueue=str(kueue)),
                      observers=[tiers, cluster])
    return result, tiers, cluster, str(kueue)


def test_in_a_kueue_run_each_queue_holds_what_its_jobs_held(kueue_run):
    result, tiers, _, _ = kueue_run
    jobs = result.jobs.set_index("job_id")
    starts = (jobs["submit_time"] + jobs["queue"]).to_dict()
    assert starts == {"j1": 0, "j2": 0, "j3": 100, "j4": 100}
    a, b = tiers.queues["a"], tiers.queues["b"]
    assert (list(a.time), list(a.value)) == ([0.0, 100.0], [16.0, 0.0])
    assert (list(b.time), list(b.value)) == ([100.0, 140.0, 200.0], [12.0, 8.0, 0.0])
    # over the run (0–200 s): a 16×100 / 200 = 8; b (12×40 + 8×60) / 200 = 4.8; 16 GPUs
    assert tiers.mean_gpus(0.0, 200.0) == pytest.approx({"a": 8.0, "b": 4.8})
    assert tiers.allocation_rate(0.0, 200.0, 16) == pytest.approx((1600 + 960) / 3200)


def test_the_cluster_allocated_gpus_agree_with_the_engines_busy_gpus(kueue_run):
    _, tiers, cluster, _ = kueue_run
    busy = cluster.frame()
    expected = Steps()
    for at, level in zip(busy["time"], busy["busy_gpus"], strict=True):
        expected.add(float(at), level - expected.level)
    edges = np.array([0.0, 37.0, 100.0, 150.0, 200.0])
    assert tiers.allocated.means(edges) == pytest.approx(expected.means(edges))


def test_nominal_quotas_come_from_the_kueue_files(kueue_run):
    assert nominal_gpus(read_kueue(kueue_run[3])) == {"a": 8.0, "b": 8.0}


# --- the report's picture -------------------------------------------------------------------------------------

def write_kueue_run(kueue_run, folder: Path) -> Path:
    """A run folder as a run with Kueue's queues writes it: tiers_timeline.csv, and the figures in summary.json."""
    result, tiers, _, kueue = kueue_run
    end = float(result.summary["makespan"])
    summary = dict(result.summary)
    summary["tiers"] = {**summary.get("tiers", {}),
                        "timeline": tiers.figures(0.0, end, summary["gpus"], nominal_gpus(read_kueue(kueue)))}
    tables = result.tables() | {"tiers_timeline": tiers.share_over_time(0.0, end)}
    return write_run(folder, tables, summary)


def test_a_run_folder_with_the_table_gets_the_picture_and_one_without_does_not(kueue_run, tmp_path):
    folder = write_kueue_run(kueue_run, tmp_path / "runs" / "kueue")
    written = pd.read_csv(folder / "tiers_timeline.csv")
    assert list(written.columns) == SHARE_COLUMNS and set(written["tier"]) == {"a", "b"}
    report = write_report([folder], tmp_path / "report")
    assert "tiers_share_over_time.png" in report.files
    png = (tmp_path / "report" / "tiers_share_over_time.png").read_bytes()
    assert png.startswith(PNG)
    assert b"tiers_share_over_time.png" in (tmp_path / "report" / "report.html").read_bytes()

    plain = result_folder_without_tiers(kueue_run, tmp_path / "plain")
    assert not any(name.startswith("tiers_") for name in write_report([plain], tmp_path / "report2").files)


def result_folder_without_tiers(kueue_run, folder: Path) -> Path:
    result = kueue_run[0]
    tables = {name: table for name, table in result.tables().items() if name != "tiers_timeline"}
    return write_run(folder, tables, dict(result.summary))


def test_a_kueue_run_carries_its_queues_timeline_and_figures(kueue_run):
    """The tiers feature wires the timeline in: the run's own tables and summary carry it."""
    result = kueue_run[0]
    table = result.tables()["tiers_timeline"]
    assert list(table.columns) == SHARE_COLUMNS and set(table["tier"]) == {"a", "b"}
    timeline = result.summary["tiers"]["timeline"]
    assert timeline["nominal_gpus"] == {"a": 8.0, "b": 8.0} and 0 < timeline["allocation_rate_mean"] <= 1


def test_the_picture_reads_the_runs_quotas_and_allocation_from_the_folder(kueue_run, tmp_path):
    folder = write_kueue_run(kueue_run, tmp_path / "run")
    summary = json.loads((folder / "summary.json").read_text())
    chart = tier_shares_of("run", pd.read_csv(folder / "tiers_timeline.csv"), 0.0, summary)
    assert chart.hours.tolist() == pytest.approx([0.0, 100 / 3600, 140 / 3600, 200 / 3600])
    assert chart.gpus["a"].tolist() == [16.0, 0.0, 0.0] and chart.gpus["b"].tolist() == [0.0, 12.0, 8.0]
    assert chart.allocation.tolist() == pytest.approx([1.0, 0.75, 0.5])
    assert chart.allocation_mean == pytest.approx(summary["tiers"]["timeline"]["allocation_rate_mean"])
    assert chart.fair_share == {"a": 8.0, "b": 8.0}


def test_more_queues_than_the_picture_draws_are_summed_as_one_line():
    queues = [f"q{i:02d}" for i in range(MAX_QUEUES + 3)]
    table = pd.DataFrame({"time": 0.0, "end": 3600.0, "tier": queues,
                          "gpus": [float(i) for i in range(len(queues))]})
    chart = tier_shares_of("many", table, 0.0, {"gpus": 200})
    assert len(chart.gpus) == MAX_QUEUES + 1
    assert chart.gpus["other (3 queues)"].tolist() == [0.0 + 1.0 + 2.0]  # the three that used the least
    assert chart.allocation.tolist() == pytest.approx([sum(range(len(queues))) / 200])
