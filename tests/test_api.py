"""The Python API: `from simcluster import simulate, load_trace, SimConfig, run_sweep`, DataFrame traces,
warnings in the summary, and a simulator that never needs PyTorch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import simcluster
from simcluster import SimConfig, load_trace, run_sweep, simulate
from simcluster.traces import TraceError
from simcluster.traces.synth import SynthSpec, synthesize

ROOT = Path(__file__).resolve().parent.parent


def jobs(**columns) -> pd.DataFrame:
    base = {"job_id": ["a", "b", "c"], "vc": "vc0", "gpu_num": [8, 4, 4], "submit_time": [0, 10, 20],
            "duration": [3600, 600, 60]}
    return pd.DataFrame({**base, **columns})


def fresh_python(code: str) -> str:
    """Run ``code`` in a new interpreter (so what it imports is its own) and return what it prints."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_package_exports_the_api_and_importing_it_loads_nothing_heavy():
    assert {"simulate", "load_trace", "SimConfig", "Observer", "run_sweep", "build_grid", "RunResult", "Trace",
            "HeteroTrace", "TraceError", "TraceWarning"} <= set(simcluster.__all__)
    assert run_sweep.__module__ == "simcluster.experiments.sweep"
    loaded = fresh_python("import sys, simcluster; print(sorted({m.split('.')[0] for m in sys.modules} & "
                          "{'pandas', 'numpy', 'simpy', 'torch', 'rich'}))")
    assert loaded == "[]"
    with pytest.raises(AttributeError):
        simcluster.no_such_thing  # noqa: B018


def test_a_dataframe_trace_runs_like_a_file_and_gives_the_same_results(tmp_path):
    frame = jobs()
    frame.to_csv(tmp_path / "cluster_full_log.csv", index=False)
    (tmp_path / "vc_config.csv").write_text("vc,num\nvc0,1\n")
    from_frame = simulate(load_trace(frame, {"vc0": 1}), SimConfig(policy="sjf"))
    from_file = simulate(load_trace(tmp_path), SimConfig(policy="sjf"))
    pd.testing.assert_frame_equal(from_frame.jobs, from_file.jobs)
    assert from_frame.summary["avg_jct"] == from_file.summary["avg_jct"]
    assert from_frame.summary["trace"] == "DataFrame"


def test_a_dataframe_takes_timestamps_and_a_vc_config_file(tmp_path):
    (tmp_path / "vcs.csv").write_text("vc,num\nvc0,2\n")
    stamps = pd.to_datetime(["2020-09-01 00:00:00", "2020-09-01 00:00:10", "2020-09-01 00:00:20"])
    trace = load_trace(jobs(submit_time=stamps), tmp_path / "vcs.csv")
    assert trace.vc_nodes == {"vc0": 2}
    assert list(trace.frame["submit_time"] - trace.frame["submit_time"].min()) == [0, 10, 20]


def test_a_bad_dataframe_row_is_named_by_its_index_and_field():
    frame = jobs(duration=[3600, -5, float("nan")]).set_index(pd.Index([100, 101, 102]))
    with pytest.raises(TraceError, match=r"DataFrame row 101, field 'duration': must be non-negative, got -5 "
                                         r"\(1 more invalid row"):
        load_trace(frame, {"vc0": 1})
    kept = load_trace(frame, {"vc0": 1}, skip_invalid=True)
    assert list(kept.frame["job_id"]) == ["a"] and sum(kept.skipped.values()) == 2
    with pytest.raises(TraceError, match="missing column"):
        load_trace(frame.drop(columns="duration"), {"vc0": 1})
    with pytest.raises(TraceError, match="no VC column, so --vc-config does not apply"):
        load_trace(frame.drop(columns="vc"), {"vc0": 1})
    with pytest.raises(TraceError, match="VC config not found"):
        load_trace(frame)


def test_settings_the_run_ignores_are_warnings_in_the_summary_or_errors_when_they_change_the_system():
    trace = load_trace(jobs(), {"vc0": 1})
    result = simulate(trace, SimConfig(policy="fifo", quantum=30, max_jobs_per_gpu=3))
    assert result.summary["warnings"] == [
        "--quantum 30 is ignored: fifo does not read it (read by tiresias, tiresias-gittins)",
        "--max-jobs-per-gpu 3 is ignored: fifo does not read it (read by lucid, sjf-ffs, sjf-bsbf, srtf-ars, srtf-wrs)",
    ]
    assert simulate(trace, SimConfig(policy="tiresias", quantum=30)).summary["warnings"] == []
    merged = simulate(trace, SimConfig(policy="srtf", cluster="v100:512")).summary  # --cluster: every policy
    assert merged["gpus"] == 512 and merged["warnings"] == [
        "--cluster v100:512: the trace's 1 VC(s) (vc0) are merged into one VC 'cluster' of v100:512"]


def colocation_tables(folder: Path, measured: bool, fast_speed: float) -> Path:
    analytic = ROOT / "traces" / "profiles" / "analytic"
    folder.mkdir()
    (folder / "single.csv").write_text((analytic / "single.csv").read_text())
    pair = pd.read_csv(analytic / "pair.csv")
    pair.loc[0, "speed1"] = fast_speed
    pair.to_csv(folder / "pair.csv", index=False)
    (folder / "metadata.json").write_text(json.dumps({"measured": measured, "device_name": "cpu (x86_64)"}))
    return folder


def test_tables_measured_on_a_cpu_or_faster_shared_than_alone_are_flagged_in_the_summary(tmp_path):
    tables = colocation_tables(tmp_path / "profile", measured=False, fast_speed=1.3)
    trace = synthesize(SynthSpec(jobs=200, nodes=4, vcs=1, seed=2))
    warnings = simulate(trace, SimConfig(policy="srtf-ars", colocation=str(tables))).summary["warnings"]
    assert any("measured on cpu (x86_64) (metadata.json: measured false)" in w for w in warnings)
    assert any("1 of " in w and "run faster shared than alone (speed up to 1.30 > 1.05)" in w for w in warnings)
    sound = colocation_tables(tmp_path / "gpu", measured=True, fast_speed=0.9)
    assert simulate(trace, SimConfig(policy="srtf-ars", colocation=str(sound))).summary["warnings"] == []


def test_a_run_whose_lookups_mostly_fall_back_to_the_default_says_so():
    trace = load_trace(jobs(model="NoSuchNet", dataset="x", batchsize=32, amp=0, gpu_num=[4, 4, 4]), {"vc0": 1})
    warnings = simulate(trace, SimConfig(policy="srtf-ars")).summary["warnings"]
    assert any("the tables never measured these pairs" in w for w in warnings), warnings


def test_the_simulator_and_lucid_profile_help_never_import_torch():
    code = ("import sys\n"
            "from simcluster import SimConfig, simulate\n"
            "from simcluster.traces.synth import SynthSpec, synthesize\n"
            "trace = synthesize(SynthSpec(jobs=100, nodes=4, vcs=2, seed=1))\n"
            "for policy in ('sjf', 'srtf-ars'):\n"
            "    simulate(trace, SimConfig(policy=policy))\n"
            "import simcluster.cli, profiler.cli\n"
            "print('torch' in sys.modules)")
    assert fresh_python(code) == "False"


@pytest.mark.parametrize("enabled", [True, False])
def test_a_run_leaves_the_garbage_collector_as_it_found_it(enabled):
    import gc

    trace = synthesize(SynthSpec(jobs=50, nodes=4, vcs=2, seed=3))
    before = gc.get_threshold()
    (gc.enable if enabled else gc.disable)()
    try:
        simulate(trace, SimConfig(policy="srtf"))
        assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == (enabled, before, 0)
        with pytest.raises(ValueError):
            simulate(trace, SimConfig(policy="tiresias", quantum=-1))
        assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == (enabled, before, 0)
    finally:
        gc.enable()


def test_every_exported_name_has_a_docstring_example_that_runs():
    import doctest

    for name in simcluster.__all__:
        value = getattr(simcluster, name)
        tests = [t for t in doctest.DocTestFinder(recurse=False).find(value, name, globs={}) if t.examples]
        assert tests, f"simcluster.{name} has no example in its docstring"
        module = __import__(value.__module__, fromlist=["_"])
        for test in tests:
            test.globs = dict(vars(module))
            result = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE).run(test)
            assert result.failed == 0, f"simcluster.{name}'s example fails"
