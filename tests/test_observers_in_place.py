"""Observers follow a job that goes on through a failure (simcluster/metrics/observer.py's RunObserver).

A spare swapped in for a failed node, or the failed node replaced from free ones of the job's domain (Kueue's
TASFailedNodeReplacement), keeps the job running: observers hear a restart, and for a replacement a resize.  An
observer that took the restart for a stop lost the rest of the job's time: ``--placements`` rows ended at the
fault, the GPU-seconds by type and by spanned level stopped counting, the allocation timeline showed the job at
0 GPUs while it ran.  Here each is held to hand-worked figures.

Swap: one 32-GPU job on 4 nodes and 1 spare; node 0 fails at 1,500 s, the spare takes its place (a 50 s swap):
checkpoints every 1,000 s, a 100 s restart, so the job resumes at 1,650 s from 1,000 s of progress and ends at
10,650 s.  Replacement: tests/test_topology_failures.py's racks; the job moves from a/n0 to a/n2 at 1,000 s and
ends at 10,200 s.
"""

from __future__ import annotations

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.cluster import DEFAULT_GPU_TYPE
from simcluster.config import SimConfig
from simcluster.features.topology import Spans
from simcluster.metrics.elastic import AllocationTimeline
from simcluster.metrics.gpu_types import TypeSeconds
from simcluster.metrics.placements import Placements
from tests.test_reliability_engine import Scripted
from tests.test_topology_failures import COSTS, FAULT, racks  # noqa: F401  (racks: a fixture)

SWAP_END = 10_650.0


def swapped_run(*observers):
    frame = pd.DataFrame({"submit_time": [0], "gpu_num": [32], "duration": [10_000]})
    config = SimConfig(checkpoint_interval=1000.0, restart_cost=100.0, spare_nodes=1, spare_swap=50.0)
    return simulate(load_trace(frame, nodes=4), config, faults=Scripted((0, 1500.0, 3000.0)),
                    observers=list(observers))


def test_placements_rows_go_on_after_a_spare_takes_the_failed_nodes_place():
    where = Placements()
    result = swapped_run(where)
    assert result.jobs["end_time"].tolist() == [SWAP_END]
    rows = where.frame()
    assert rows[["node", "start", "end"]].values.tolist() == (
        [[f"cluster/n{i}", 0.0, 1500.0] for i in range(4)] + [[f"cluster/n{i}", 1500.0, SWAP_END] for i in range(4)])


def test_gpu_seconds_by_type_and_the_allocation_timeline_count_the_whole_run_through_a_swap():
    per_type, allocation = TypeSeconds((DEFAULT_GPU_TYPE,)), AllocationTimeline()
    result = swapped_run(per_type, allocation)
    job = result.jobs.iloc[0]
    assert per_type.gpu_seconds == {DEFAULT_GPU_TYPE: 32 * SWAP_END}
    assert allocation.frame()[["time", "gpus"]].values.tolist() == [[0.0, 32], [SWAP_END, 0]]
    assert job["end_time"] == SWAP_END


def test_a_replaced_node_gives_rows_on_the_new_nodes_and_no_run_of_no_time(racks):  # noqa: F811
    where, spans = Placements(), Spans(levels=1)
    trace = load_trace(pd.DataFrame({"vc": "a", "submit_time": 0, "gpu_num": [16], "duration": [10_000]}), {"a": 6})
    config = SimConfig(**COSTS, topology=racks, placement="tas-best-fit", topology_request="required:rack")
    result = simulate(trace, config, faults=FAULT, observers=[where, spans])
    assert result.summary["failures"]["node_replacements"] == 1
    assert where.frame()[["node", "start", "end"]].values.tolist() == [
        ["a/n0", 0.0, 1000.0], ["a/n1", 0.0, 1000.0], ["a/n1", 1000.0, 10_200.0], ["a/n2", 1000.0, 10_200.0]]
    assert sum(spans.gpu_seconds) == pytest.approx(16 * 10_200.0)  # two nodes of one rack all along


def test_a_requeued_job_still_ends_its_run_at_the_fault():
    # without a spare the job leaves its GPUs at the fault and starts again when the node is back
    frame = pd.DataFrame({"submit_time": [0], "gpu_num": [32], "duration": [10_000]})
    where = Placements()
    result = simulate(load_trace(frame, nodes=4), SimConfig(checkpoint_interval=1000.0, restart_cost=100.0),
                      faults=Scripted((0, 1500.0, 3000.0)), observers=[where])
    rows = where.frame()
    assert sorted(set(zip(rows["start"], rows["end"], strict=True))) == [
        (0.0, 1500.0), (3000.0, result.jobs["end_time"].iloc[0])]
