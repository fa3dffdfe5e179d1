"""tiresias with ``overheads = "elasticflow"``: ElasticFlow's start and restart costs, worked by hand, and the preset
``elasticflow-dlas`` against the artifact's figure on a shared trace.

The hand-worked cases run on one node of 8 GPUs (a small cluster: a start costs 2 + 2 × (log2 GPUs + 1) s, a
restart round 27 s more), 60-s decisions and one queue, so that no demotion changes the order.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import make_trace
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.api import load_trace, simulate
from simcluster.config import ConfigError, SimConfig
from simcluster.engine import Simulation
from simcluster.job import Job
from simcluster.paths import shared_data_dir
from simcluster.policies.tiresias import Tiresias
from simcluster.presets import resolve_config
from simcluster.run import resolve_run
from simcluster.testing import policy_problems

TRACES = shared_data_dir() / "elasticflow" / "traces"


def ends(rows: list[tuple], overheads: str = "elasticflow") -> list[float]:
    """Each job's end under tiresias on one 8-GPU node; rows: (gpu_num, submit_time, duration)."""
    jobs = [Job(index=i, job_id=f"j{i}", vc="a", gpu_num=g, submit_time=s, duration=d)
            for i, (g, s, d) in enumerate(rows)]
    policy = Tiresias(SimConfig(policy="tiresias", thresholds=(1e9,), quantum=60.0, gpus_per_node=8))
    policy.settings = replace(policy.settings, overheads=overheads)
    Simulation(jobs, resolve_run(config=policy.config, cluster={"a": 1}), policy=policy).run()
    return [job.end_time for job in jobs]  # type: ignore[misc]


def test_a_job_pays_its_start_cost_at_the_next_round_and_not_if_it_ends_before():
    # round 0 at t=0 starts j0 (4 GPUs: 2 + 2 × 3 = 8 s owed); j1 arrives at 100, so round 1 is at 120: j0 pays
    # its 8 s there and j1 starts (1 GPU: 4 s owed); j1 ends at 620, before any other round: it pays nothing
    assert ends([(4, 0, 1000), (1, 100, 500)]) == [1008, 620]
    assert ends([(4, 0, 1000), (1, 100, 500)], overheads="none") == [1000, 620]


def test_every_sixtieth_round_charges_every_running_job_its_restart_cost_at_once():
    # j0 (1 GPU) runs throughout.  Short jobs k = 1..30 arrive at 120k + 1: each starts at 120k + 60 and is done
    # 10 s later, before the next round (at 120k + 120, its completion's), so rounds 2k - 1 and 2k fall at
    # 120k + 60 and 120k + 120: round 60, a restart round, is at 3,720.  j31 arrives at 3,700 and starts there.
    # j0 pays 4 s for its start (at round 1) and 2 + 27 + 2 = 31 s at round 60; j31, started in the restart round,
    # pays its 31 s once, at once (its run ends before the next round, yet it pays).
    rows = [(1, 0, 100_000), *[(1, 120 * k + 1, 10) for k in range(1, 31)], (1, 3_700, 1_000)]
    got = ends(rows)
    assert got[0] == 100_000 + 4 + 31
    assert got[1:31] == [120 * k + 70 for k in range(1, 31)]
    assert got[31] == 3_720 + 1_000 + 31


def test_plain_tiresias_charges_nothing_and_the_setting_is_reported():
    rows = [("a", 4, 0, 1000), ("a", 1, 100, 500)]
    plain = simulate(make_trace(rows, {"a": 1}), SimConfig(policy="tiresias"))
    assert plain.jobs["overhead"].sum() == 0 and plain.summary["policy_settings"] == {"overheads": "none"}
    charged = simulate(make_trace(rows, {"a": 1}), SimConfig(policy="tiresias", thresholds=(1e9,),
                                                            policy_settings={"overheads": "elasticflow"}))
    assert charged.jobs["overhead"].tolist() == [8.0, 0.0]


def test_the_costs_do_not_go_with_the_promote_knob():
    config = SimConfig(policy="tiresias", promote_knob=2.0, policy_settings={"overheads": "elasticflow"})
    with pytest.raises(ConfigError, match="promote-knob 2.0: set it to 0"):
        simulate(make_trace([("a", 1, 0, 100)], {"a": 1}), config)


def test_tiresias_and_its_gittins_variant_with_the_costs_keep_every_rule_of_the_kit():
    for name in ("tiresias", "tiresias-gittins"):
        report = policy_problems(name, config=SimConfig(policy_settings={"overheads": "elasticflow"}))
        assert report.ok, str(report)


jobs_rows = st.lists(st.tuples(st.just("a"), st.sampled_from([1, 2, 4, 8]), st.integers(0, 3_000),
                               st.integers(1, 4_000)), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None)
@given(rows=jobs_rows, nodes=st.integers(1, 2))
def test_a_pause_neither_loses_nor_makes_work(rows, nodes):
    rows = sorted(rows, key=lambda r: r[2])
    config = SimConfig(policy="tiresias", thresholds=(500.0, 4_000.0), preempt_overhead_small=0.0,
                       preempt_overhead_large=0.0, policy_settings={"overheads": "elasticflow"})
    jobs = simulate(make_trace(rows, {"a": nodes}), config).jobs
    assert jobs["end_time"].notna().all() and (jobs["overhead"] >= 0).all()
    # every second a job held its GPUs was work or a pause: held = duration + pauses
    assert (jobs["busy_time"] - jobs["duration"] - jobs["overhead"]).abs().max() < 1e-6


@pytest.mark.skipif(not (TRACES / "cluster05.csv").is_file(), reason=f"no ElasticFlow traces in {TRACES}")
def test_the_preset_meets_the_deadlines_elasticflows_dlas_gpu_does_on_cluster05():
    summary = simulate(load_trace(TRACES / "cluster05.csv"), resolve_config("elasticflow-dlas")).summary
    assert summary["policy_settings"] == {"overheads": "elasticflow"}
    assert summary["deadline_satisfaction"] == pytest.approx(0.4817, abs=0.01)  # the artifact's 1,748 of 3,629
