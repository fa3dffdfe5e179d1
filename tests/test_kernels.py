"""The engine's two kernels give identical runs, and only the fast one reads SimPy's internals.

The fast loop (simcluster/engine/loop.py) runs events in SimPy's order over SimPy's private queue; the
reference kernel (simcluster/engine/reference.py) does the same with public SimPy only.  These tests hold
them equal on every family of policy, with node failures, a horizon and GPU sharing, and check the fallback
that takes over where a SimPy release moved the internals the fast loop reads.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster.api import RunResult, simulate
from simcluster.config import SimConfig
from simcluster.engine import Simulation, SimulationStalled, loop
from simcluster.engine.kernel import make_kernel
from simcluster.job import Job
from simcluster.run import resolve_run
from simcluster.traces.hetero import HeteroTrace
from simcluster.traces.synth import SynthSpec, synthesize
from tests.test_every_shape import POLICY_NAMES, SHAPES, TABLE, rows_strategy, shape

ENGINE = Path(__file__).resolve().parents[1] / "simcluster"
TIMINGS = ("sim_cpu_seconds", "load_cpu_seconds")


def both(trace, config: SimConfig, **options) -> tuple[RunResult, RunResult]:
    return (simulate(trace, config, kernel="fast", **options), simulate(trace, config, kernel="reference", **options))


def assert_same_run(fast: RunResult, reference: RunResult) -> None:
    pd.testing.assert_frame_equal(fast.jobs, reference.jobs)
    pd.testing.assert_frame_equal(fast.timeline, reference.timeline)
    drop = {k: v for k, v in fast.summary.items() if k not in TIMINGS}
    assert drop == {k: v for k, v in reference.summary.items() if k not in TIMINGS}


TRACE = synthesize(SynthSpec(jobs=400, nodes=6, vcs=2, load=1.2, seed=4))
RUNS = {
    "fifo": {"policy": "fifo"},
    "sjf": {"policy": "sjf"},
    "srtf": {"policy": "srtf"},
    "qssf": {"policy": "qssf"},
    "tiresias": {"policy": "tiresias"},
    "tiresias-gittins with a horizon": {"policy": "tiresias-gittins", "until": 40_000.0},
    "easy-backfill": {"policy": "easy-backfill"},
    "fifo with node failures": {"policy": "fifo", "node_mtbf": 30_000.0, "node_repair": 900.0,
                                "on_no_progress": "abandon", "restart_limit": 3},
    "srtf with failures and checkpoints": {"policy": "srtf", "node_mtbf": 60_000.0, "checkpoint_interval": 600.0},
    "sjf-ffs sharing GPUs": {"policy": "sjf-ffs"},
    "srtf-wrs sharing GPUs": {"policy": "srtf-wrs"},
    "lucid": {"policy": "lucid", "estimator": "oracle"},
    "srtf spread over nodes": {"policy": "srtf", "spread_penalty": 0.3, "placement": "random", "seed": 5},
}


@pytest.mark.parametrize("settings_", RUNS.values(), ids=RUNS.keys())
def test_the_fast_loop_and_the_reference_kernel_give_identical_runs(settings_):
    fast, reference = both(TRACE, SimConfig(**settings_))
    assert_same_run(fast, reference)
    assert "engine_notes" not in fast.summary
    if "node_mtbf" in settings_:  # the runs do what they are named for
        assert fast.summary["node_failures"] > 0 and fast.jobs["restarts"].sum() > 0
    if settings_["policy"] in ("sjf-ffs", "srtf-wrs", "lucid"):
        assert fast.jobs["shared_seconds"].sum() > 0


@pytest.mark.parametrize(("policy", "preset"), [("pollux", None), ("optimus", "pollux-artifact"),
                                                 ("tiresias-pollux", "pollux-artifact")])
def test_the_kernels_agree_on_elastic_jobs_resized_and_re_timed_at_their_epochs(policy, preset):
    from simcluster.api import load_trace
    from simcluster.paths import shared_data_dir
    from simcluster.presets import resolve_config

    path = shared_data_dir() / "pollux" / "workloads" / "0.5" / "workload-3.csv"
    if not path.is_file():
        pytest.skip(f"no Pollux workload at {path}")
    config = resolve_config(preset, overrides={"policy": policy}) if preset else SimConfig(policy=policy)
    fast, reference = both(load_trace(path), config)
    assert_same_run(fast, reference)
    pd.testing.assert_frame_equal(fast.allocations, reference.allocations)
    if policy != "tiresias-pollux":  # (which never resizes: it starts and preempts)
        assert fast.allocations["job_id"].value_counts().max() > 2  # jobs were resized, not only started and ended


@pytest.mark.parametrize("name", ["heterogeneous VC", "GPU fractions"])
def test_the_kernels_agree_on_gpu_types_throughput_pairs_and_fractions(name):
    rows = [(k, (1, 2, 1, 4, 2)[k % 5], 15 * k, 80 + 41 * k % 700) for k in range(40)]
    trace, config, _ = shape(name, rows)
    for policy in ("max_min_fairness_perf", "tiresias", "sjf-ffs"):
        run = SimConfig(**{**config.as_dict(), "policy": policy})
        assert_same_run(*both(trace, run, throughputs=TABLE if isinstance(trace, HeteroTrace) else None))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_strategy, policy=st.sampled_from(POLICY_NAMES), name=st.sampled_from(SHAPES))
def test_on_any_trace_shape_and_policy_the_kernels_agree(rows, policy, name):
    trace, config, _ = shape(name, rows)
    run = SimConfig(**{**config.as_dict(), "policy": policy})
    assert_same_run(*both(trace, run, throughputs=TABLE if isinstance(trace, HeteroTrace) else None))


def test_where_the_fast_loop_cannot_run_the_reference_kernel_runs_and_the_summary_says_so(monkeypatch):
    expected = simulate(TRACE, SimConfig(policy="srtf"))
    monkeypatch.setattr(loop, "UNUSABLE", "Environment._queue is no longer a list")
    fallen_back = simulate(TRACE, SimConfig(policy="srtf"))
    notes = fallen_back.summary.pop("engine_notes")
    assert len(notes) == 1 and "Environment._queue is no longer a list" in notes[0] and "reference kernel" in notes[0]
    assert_same_run(expected, fallen_back)
    with pytest.raises(ValueError, match="the fast loop cannot run"):
        simulate(TRACE, SimConfig(), kernel="fast")


def test_the_probe_finds_the_fast_loop_usable_with_this_simpy():
    assert loop.UNUSABLE is None
    assert make_kernel(simpy.Environment())[0].name == "fast"


def test_the_probe_notices_when_simpy_orders_its_queue_otherwise(monkeypatch):
    class Reversed(simpy.Environment):  # a SimPy whose sequence numbers count down: ties come out reversed
        def __init__(self, initial_time: float = 0) -> None:
            super().__init__(initial_time)
            self._eid = iter(range(10**6, 0, -1))

    monkeypatch.setattr(loop.simpy, "Environment", Reversed)
    assert "another order than SimPy's" in (loop._probe() or "")


def test_the_probe_notices_a_missing_internal(monkeypatch):
    class Moved(simpy.Environment):
        def __init__(self, initial_time: float = 0) -> None:
            super().__init__(initial_time)
            del self._eid

    monkeypatch.setattr(loop.simpy, "Environment", Moved)
    assert "AttributeError" in (loop._probe() or "")


@pytest.mark.parametrize("kernel", ["fast", "reference"])
def test_a_job_that_can_never_run_stalls_the_run_on_either_kernel(kernel):
    jobs = [Job(index=0, job_id="big", vc="a", gpu_num=16, submit_time=0, duration=10)]
    with pytest.raises(SimulationStalled, match="big"):
        Simulation(jobs, resolve_run(config=SimConfig(), cluster={"a": 1}), kernel=kernel).run()


def test_only_the_fast_loop_reads_simpys_internals():
    internals = re.compile(r"\._(queue|eid|now|resume|active_proc|generator|target|defused)\b")
    outcome = re.compile(r"\._(ok|value)\b")  # an event's outcome: set by SimPy's own way, in one function
    readers = {str(p.relative_to(ENGINE)) for p in ENGINE.rglob("*.py") if internals.search(p.read_text())}
    setters = {str(p.relative_to(ENGINE)) for p in ENGINE.rglob("*.py") if outcome.search(p.read_text())}
    assert readers == {"engine/loop.py"}
    assert setters <= {"engine/loop.py", "engine/events.py"}
