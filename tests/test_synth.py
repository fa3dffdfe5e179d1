"""The synthetic generator: the old traces unchanged, each new shape what it says, bad values refused, and the
realised offered load held on a 64k-GPU cluster."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.experiments.runs import SweepError, synth_spec
from simcluster.traces import load_trace
from simcluster.traces.realised import realised_by_vc, realised_load
from simcluster.traces.synth import PRESETS, SynthSpec, save_trace, spec_from_text, synthesize

runner = CliRunner()

# pd.util.hash_pandas_object(frame).sum(), taken from the generator before sizes, durations, arrivals and
# held loads existed: a spec of the old fields must still draw exactly these traces
BEFORE = [
    ({"jobs": 400, "nodes": 6, "vcs": 2, "load": 1.2, "seed": 4}, 15226805424439741885),
    ({}, 287851317290455631),
    ({"jobs": 3000, "nodes": 64, "vcs": 5, "load": 0.5, "users": 7, "seed": 11, "gpus_per_node": 4},
     10938825563532292569),
    ({"jobs": 50, "nodes": 1, "vcs": 1, "load": 3.0, "seed": 2, "start": "2021-01-01 06:00:00"},
     17594622726663419252),
    ({"jobs": 1000, "nodes": 8192, "vcs": 1, "load": 0.9, "seed": 1}, 9469257593727289956),
]


def digest(frame: pd.DataFrame) -> int:
    return int(pd.util.hash_pandas_object(frame).sum())


def realised(trace) -> float:
    return realised_by_vc(trace.frame, trace.vc_nodes, 8)["cluster"]


@pytest.mark.parametrize(("given", "expected"), BEFORE, ids=[str(g) for g, _ in BEFORE])
def test_a_spec_of_the_old_fields_draws_the_very_trace_it_drew_before(given, expected):
    spec = SynthSpec(**given)
    assert not spec.holds_load
    trace = synthesize(spec)
    assert digest(trace.frame) == expected
    assert trace.notes == []


def test_naming_the_venus_shapes_changes_nothing_unless_the_load_is_held():
    old = synthesize(SynthSpec(jobs=400, nodes=6, vcs=2, load=1.2, seed=4)).frame
    named = SynthSpec(jobs=400, nodes=6, vcs=2, load=1.2, seed=4, sizes="venus", durations="venus",
                      arrivals="diurnal")
    assert not named.holds_load and synthesize(named).frame.equals(old)
    assert SynthSpec(preset="venus-2020").holds_load and SynthSpec(hold_load=True).holds_load


def test_explicit_sizes_are_drawn_only_from_the_sizes_given_in_about_their_weights():
    jobs = synthesize(SynthSpec(jobs=4000, nodes=256, vcs=1, sizes="1:0.5,8:0.3,1024:0.2", seed=1)).frame
    shares = jobs.gpu_num.value_counts(normalize=True)
    assert set(shares.index) == {1, 8, 1024}
    assert shares[1] == pytest.approx(0.5, abs=0.03) and shares[1024] == pytest.approx(0.2, abs=0.03)


def test_pow2_sizes_are_powers_of_two_up_to_the_maximum_each_decay_times_rarer():
    jobs = synthesize(SynthSpec(jobs=6000, nodes=64, vcs=1, sizes="pow2:512", seed=2)).frame
    sizes = set(jobs.gpu_num)
    assert sizes <= {2 ** k for k in range(10)} and max(sizes) <= 512 and {1, 2, 4} <= sizes
    counts = jobs.gpu_num.value_counts()
    assert counts[1] / counts[2] == pytest.approx(2.0, rel=0.15)  # decay 2 by default
    flat = synthesize(SynthSpec(jobs=6000, nodes=64, vcs=1, sizes="pow2:512,decay=1", seed=2)).frame
    assert flat.gpu_num.value_counts(normalize=True).max() < 0.14  # ten sizes, about 10 % each


def test_sizes_and_durations_from_a_trace_are_drawn_from_its_own_values(tmp_path):
    log = tmp_path / "jobs.csv"
    pd.DataFrame({"submit_time": np.arange(6) * 60, "gpu_num": [1, 2, 2, 16, 16, 16],
                  "duration": [30, 700, 700, 5000, 86400, 12]}).to_csv(log, index=False)
    spec = SynthSpec(jobs=3000, nodes=8, vcs=1, sizes=f"trace:{log}", durations=f"trace:{log}", seed=3)
    jobs = synthesize(spec).frame
    assert set(jobs.gpu_num) == {1, 2, 16} and set(jobs.duration) == {30, 700, 5000, 86400, 12}
    assert jobs.gpu_num.value_counts(normalize=True)[16] == pytest.approx(0.5, abs=0.04)


def test_a_trace_whose_jobs_do_not_fit_is_refused_naming_the_size_and_the_vc(tmp_path):
    log = tmp_path / "jobs.csv"
    pd.DataFrame({"submit_time": [0, 60], "gpu_num": [1, 64], "duration": [30, 60]}).to_csv(log, index=False)
    with pytest.raises(ValueError, match=r"a job of 64 GPUs does not fit VC 'vc0' of 16 GPUs \(2 nodes"):
        synthesize(SynthSpec(jobs=100, nodes=2, vcs=1, sizes=f"trace:{log}"))


def test_log_normal_durations_follow_their_parameters_and_grow_with_the_jobs_gpus():
    spec = SynthSpec(jobs=20000, nodes=64, vcs=1, sizes="1:1,256:1", seed=4,
                     durations="lognormal:mu=6,sigma=0.5,grow=0.25,max=100000")
    jobs = synthesize(spec).frame
    small, large = jobs[jobs.gpu_num == 1].duration, jobs[jobs.gpu_num == 256].duration
    assert np.log(small).mean() == pytest.approx(6.0, abs=0.03)
    assert np.log(small).std() == pytest.approx(0.5, abs=0.03)
    assert np.log(large).mean() == pytest.approx(6.0 + 0.25 * 8, abs=0.03)  # 8 doublings from 1 to 256
    assert jobs.duration.max() <= 100000 and jobs.duration.min() >= 1


def test_bursts_submit_their_jobs_in_groups_at_one_instant():
    jobs = synthesize(SynthSpec(jobs=1000, nodes=64, vcs=1, arrivals="bursts:size=8", seed=5)).frame
    counts = jobs.submit_time.value_counts()
    assert (counts % 8 == 0).all()  # 1000 = 125 bursts of 8 (two bursts in one second make 16)
    assert len(counts) >= 100


def test_poisson_arrivals_have_exponential_gaps():
    jobs = synthesize(SynthSpec(jobs=20000, nodes=64, vcs=1, arrivals="poisson", load=0.8, seed=6)).frame
    gaps = np.diff(jobs.submit_time.to_numpy(dtype=float))
    mean = gaps.mean()
    assert mean > 20  # whole-second rounding is small beside the gaps
    assert gaps.std() / mean == pytest.approx(1.0, abs=0.05)  # an exponential's coefficient of variation
    assert (gaps > mean).mean() == pytest.approx(np.exp(-1), abs=0.02)  # and its tail beyond the mean


def test_the_same_seed_draws_the_same_trace_with_every_new_shape():
    spec = SynthSpec(jobs=500, nodes=16, vcs=1, sizes="pow2:32", durations="lognormal:mu=5,sigma=2,grow=0.3",
                     arrivals="bursts:size=4", load=0.9, seed=8)
    assert synthesize(spec).frame.equals(synthesize(spec).frame)
    assert not synthesize(spec).frame.equals(synthesize(SynthSpec(**{**spec.__dict__, "seed": 9})).frame)


def test_the_realised_load_is_held_within_5_percent_on_a_64k_gpu_cluster(tmp_path):
    spec = SynthSpec(preset="llm-era", jobs=200_000, nodes=8192, vcs=1, load=0.9, seed=3)
    started = time.perf_counter()
    trace = synthesize(spec)
    seconds = time.perf_counter() - started
    jobs = trace.frame
    assert sum(trace.vc_nodes.values()) * 8 == 65_536
    assert realised(trace) == pytest.approx(0.9, rel=0.05)
    assert realised(trace) == pytest.approx(0.9, rel=0.001)  # held to the rounding of whole seconds
    assert (jobs.gpu_num >= 1024).sum() >= 20 and jobs.gpu_num.max() <= 16384  # a few large jobs
    assert jobs.gpu_num.median() == 1 and jobs.gpu_num.max() > 64
    assert seconds < 10, seconds
    save_trace(trace, tmp_path / "llm64k")  # and as trace check reads it back from its files
    checked = runner.invoke(app, ["trace", "check", str(tmp_path / "llm64k"), "--json"])
    load = json.loads(checked.stdout)["load"]["cluster"]
    assert load["gpus"] == 65_536 and load["realised"] == pytest.approx(0.9, rel=0.05)


def test_the_first_rule_misses_the_load_on_a_large_cluster_and_holding_it_fixes_that():
    first = synthesize(SynthSpec(jobs=30000, nodes=2048, vcs=1, load=0.7, seed=2))
    held = synthesize(SynthSpec(jobs=30000, nodes=2048, vcs=1, load=0.7, seed=2, hold_load=True))
    assert realised(first) < 0.6  # long jobs spill past the last submission
    assert realised(held) == pytest.approx(0.7, rel=0.01)
    assert "realised offered load" in held.notes[0]


def test_a_load_that_cannot_be_held_says_how_many_jobs_it_would_take():
    with pytest.raises(ValueError, match=r"load 0\.8 cannot be held: .* 100 jobs .*at least about [\d,]+\)"):
        synthesize(SynthSpec(jobs=100, nodes=4096, vcs=1, sizes="pow2:64"))


def test_the_llm_era_preset_is_refused_on_vcs_too_small_for_its_largest_jobs():
    with pytest.raises(ValueError, match=r"the llm-era preset's sizes: a job of 16,384 GPUs does not fit"):
        SynthSpec(preset="llm-era", nodes=1024, vcs=1)
    assert PRESETS["llm-era"][0].endswith("16384:0.00002")


@pytest.mark.parametrize(("given", "message"), [
    ({"sizes": "pow2:1e12"}, "sizes 'pow2:1e12': the largest size must be from 1 to 524,288, got '1e12'"),
    ({"sizes": "pow2:48"}, "sizes 'pow2:48': the largest size must be a power of two, got 48"),
    ({"sizes": "pow2:8,decay=0"}, "sizes 'pow2:8,decay=0': decay must be from 0.01 to 1,000, got '0'"),
    ({"sizes": "1:0.5,8:nan"}, "sizes '1:0.5,8:nan': the weight of 8 must be finite, got 'nan'"),
    ({"sizes": "1:0.5,8:-1"}, "the weight of 8 must be at least 0, got '-1'"),
    ({"sizes": "0:1"}, "sizes '0:1': a size must be from 1 to 1,000,000, got '0'"),
    ({"sizes": "1:0,8:0"}, "the weights must not all be zero"),
    ({"sizes": "big"}, "sizes must be venus, pow2:MAX"),
    ({"sizes": "trace:/no/such"}, "sizes 'trace:/no/such': /no/such: no such file or directory"),
    ({"durations": "lognormal:mu=inf,sigma=1"}, "durations 'lognormal:mu=inf,sigma=1': mu must be finite"),
    ({"durations": "lognormal:mu=5,sigma=-1"}, "sigma must be from 0 to 10, got '-1'"),
    ({"durations": "lognormal:mu=5"}, "durations 'lognormal:mu=5': missing sigma=…"),
    ({"durations": "lognormal:mu=5,sigma=1,max=0"}, "max must be from 1 to 999,999,999, got '0'"),
    ({"durations": "lognormal:mu=5,sigma=1,mu=6"}, "mu is given twice"),
    ({"durations": "gamma:k=2"}, "durations must be venus, lognormal:"),
    ({"arrivals": "bursts:size=0"}, "arrivals 'bursts:size=0': size must be from 1 to 1,000,000, got '0'"),
    ({"arrivals": "bursts:size=2.5"}, "size must be a whole number, got '2.5'"),
    ({"arrivals": "bursts:size=5000", "jobs": 3000}, "3000 jobs in bursts of 5000 make fewer than two"),
    ({"arrivals": "weekly"}, "arrivals must be diurnal, poisson or bursts:size=K, got 'weekly'"),
    ({"preset": "2019"}, "preset must be one of venus-2020, llm-era, got '2019'"),
    ({"load": float("nan")}, "load must be positive and finite, got nan"),
    ({"load": float("inf")}, "load must be positive and finite, got inf"),
    ({"jobs": 2.5}, "jobs must be a whole number, got 2.5"),
    ({"sizes": ""}, "sizes must be a non-empty text, got ''"),
    ({"jobs": 1, "hold_load": True}, "jobs must be at least 2 to hold a load"),
])
def test_bad_values_are_refused_with_a_message_naming_the_field_and_the_value(given, message):
    with pytest.raises(ValueError) as caught:
        SynthSpec(**given)
    assert message in str(caught.value)


def test_a_synth_spec_keeps_the_commas_inside_its_values():
    spec = spec_from_text("jobs=100,nodes=1024,vcs=1,sizes=1:0.5,8:0.3,512:0.2,durations=lognormal:mu=6,"
                          "sigma=1,max=5000,arrivals=bursts:size=4,hold_load=false,load=0.9")
    assert spec.sizes == "1:0.5,8:0.3,512:0.2" and spec.durations == "lognormal:mu=6,sigma=1,max=5000"
    assert spec.arrivals == "bursts:size=4" and spec.hold_load is False and spec.load == 0.9
    assert synth_spec("synth:jobs=10,nodes=2048,vcs=1,preset=llm-era,seed=3", 8).preset == "llm-era"


@pytest.mark.parametrize(("text", "message"), [
    ("synth:jobs=10,color=red", "unknown synthetic-trace field 'color'"),
    ("synth:jobs=10,load=0.9,decay=2", "unknown synthetic-trace field 'decay'"),  # continues no shape
    ("synth:jobs=ten", "field 'jobs' expects int, got 'ten'"),
    ("synth:jobs=10,hold_load=maybe", "field 'hold_load' expects true or false, got 'maybe'"),
    ("synth:jobs=10,sizes=pow2:64,dekay=2", "sizes 'pow2:64,dekay=2': 'dekay=2' is not one of decay=…"),
])
def test_a_bad_synth_spec_stops_the_sweep_with_the_field_and_value(text, message):
    with pytest.raises(SweepError, match="--trace") as caught:
        synth_spec(text, 8)
    assert message in str(caught.value)


def test_the_cli_writes_a_trace_of_the_new_options_that_loads_and_check_reports_its_realised_load(tmp_path):
    out = tmp_path / "t"
    made = runner.invoke(app, ["trace", "synth", "--jobs", "3000", "--nodes", "256", "--vcs", "2", "--load",
                               "0.85", "--sizes", "pow2:128,decay=1.5", "--durations",
                               "lognormal:mu=6,sigma=1.5,grow=0.2", "--arrivals", "poisson", "--seed", "4",
                               "--out", str(out)])
    assert made.exit_code == 0, made.output
    assert "realised offered load 0.850 (held at --load 0.85)" in made.stdout
    trace = load_trace(out)
    assert len(trace) == 3000 and set(trace.frame.gpu_num) <= {2 ** k for k in range(8)}
    checked = runner.invoke(app, ["trace", "check", str(out), "--json"])
    assert checked.exit_code == 0, checked.output
    load = json.loads(checked.stdout)["load"]
    assert load["cluster"]["gpus"] == 2048 and load["cluster"]["realised"] == pytest.approx(0.85, abs=0.001)
    assert set(load["vcs"]) == {"vc0", "vc1"} and all(v["realised"] > 0.5 for v in load["vcs"].values())
    assert load["cluster"]["offered"] > load["cluster"]["realised"]  # the work past the last submission
    text = runner.invoke(app, ["trace", "check", str(out)])
    assert "realised" in text.stdout and "0.850" in text.stdout


def test_the_cli_refuses_a_bad_value_with_its_message_and_writes_nothing(tmp_path):
    done = runner.invoke(app, ["trace", "synth", "--sizes", "pow2:1e12", "--out", str(tmp_path / "x")])
    assert done.exit_code == 2 and (done.exception is None or isinstance(done.exception, SystemExit))
    assert "sizes 'pow2:1e12': the largest size must be from 1 to 524,288" in done.stderr
    assert "Traceback" not in done.output and not (tmp_path / "x").exists()
    unheld = runner.invoke(app, ["trace", "synth", "--jobs", "50", "--nodes", "4096", "--vcs", "1",
                                 "--hold-load", "--out", str(tmp_path / "y")])
    assert unheld.exit_code == 2 and "cannot be held" in unheld.stderr and not (tmp_path / "y").exists()


def test_the_realised_load_counts_only_the_work_inside_the_submission_window():
    submit, duration, gpus = np.array([0, 10, 20, 30]), np.array([5, 100, 10, 50]), np.array([4, 2, 1, 8])
    # 4·5 + 2·20 + 1·10 + 8·0 = 70 GPU-seconds within [0, 30] on 10 GPUs
    assert realised_load(submit, duration, gpus, capacity=10) == pytest.approx(70 / 300)
    assert np.isnan(realised_load([5, 5], [1, 1], [1, 1], capacity=1))  # one instant: no window


def test_save_trace_keeps_the_held_load(tmp_path):
    trace = synthesize(SynthSpec(jobs=2000, nodes=128, vcs=3, sizes="pow2:32", load=0.95, seed=7))
    loaded = load_trace(save_trace(trace, tmp_path / "t"))
    assert realised(loaded) == pytest.approx(realised(trace), abs=1e-9)
    assert realised(trace) == pytest.approx(0.95, rel=0.01)
