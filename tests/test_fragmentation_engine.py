"""The six placements of the fragmentation study in the event-driven engine, and fragmentation as a run metric."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.cluster import Pool
from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.fragmentation.rules import RULE_NAMES
from simcluster.job import Job
from simcluster.run import resolve_run
from simcluster.sdk import Placement, Plan
from tests.test_fragmentation import small_openb


class LastNode(Placement):
    """Puts every job on GPU 0 of the VC's last node, fractions included."""

    places_fractions = True
    chooses_types = True
    asked: ClassVar[list[str]] = []

    def place(self, job: Job, vc: Pool) -> Plan | None:
        LastNode.asked.append(job.job_id)
        return [(vc.nodes[-1], [0])]


def test_a_placement_that_places_fractions_is_asked_for_them() -> None:
    jobs = [Job(index=0, job_id="half", vc="c", gpu_num=1, submit_time=0, duration=10, gpu_milli=500)]
    Simulation(jobs, resolve_run(config=SimConfig(placement=LastNode, gpus_per_node=2), cluster={"c": 3})).run()
    assert LastNode.asked == ["half"]
    assert jobs[0].end_time == 10


@pytest.mark.parametrize("placement", RULE_NAMES)
def test_each_placement_runs_an_openb_trace_in_time(tmp_path: Path, placement: str) -> None:
    result = simulate(load_trace(small_openb(tmp_path / "openb")), SimConfig(placement=placement))
    assert result.summary["jobs"] == len(result.jobs)
    assert (result.jobs["end_time"] > 0).all()


def test_runs_with_gpu_fractions_report_fragmentation(tmp_path: Path) -> None:
    result = simulate(load_trace(small_openb(tmp_path / "openb")), SimConfig(placement="fgd"))
    assert {"frag_gpus", "frag_pct_of_idle"} <= set(result.timeline.columns)
    assert result.timeline["frag_gpus"].notna().all() and (result.timeline["frag_gpus"] >= 0).all()
    assert set(result.summary["fragmentation"]) >= {"mean_frag_gpus", "mean_frag_pct_of_idle"}


def test_runs_without_fractions_have_no_fragmentation_metric() -> None:
    from simcluster.traces.synth import SynthSpec, synthesize

    result = simulate(synthesize(SynthSpec(jobs=30, nodes=4, vcs=1, seed=1)), SimConfig())
    assert "fragmentation" not in result.summary and "frag_gpus" not in result.timeline.columns
    assert isinstance(result.timeline, pd.DataFrame)
