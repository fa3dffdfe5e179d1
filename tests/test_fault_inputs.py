"""The fault model's surfaces refuse bad input in words (issue 54, item 5): a message naming the option, or the
file and field, an exit status of 2 from the command line, no traceback and no leaked warning, within a second.

Kueue leaves failure models to the workload (its concept pages cover node failures only through
TASFailedNodeReplacement, https://kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling/): these bounds are
ours, written down in :mod:`simcluster.faults.models`, :mod:`simcluster.settings.reliability` and
``lucid-sim reliability``'s options, each beside the reason for it.
"""

from __future__ import annotations

import json
import warnings

import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.errors import TraceError
from simcluster.faults import ettr, fit_log, load_fit, optimal_interval, read_fault_log
from simcluster.faults.spec import failure_model

runner = CliRunner()
LOG = "node,start,end,class\nn1,0,3600,GPU\nn2,100,7300,NIC\nn1,86400,90000,GPU\n"
STUDY = ["--gpus", "8", "--checkpoint-interval", "1h", "--replicas", "2", "--work", "1h"]


def refused(args: list[str]) -> str:
    """Run ``lucid-sim ARGS`` with warnings as errors; assert exit status 2 and no traceback; the output."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = runner.invoke(app, args)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output and "Warning" not in result.output, result.output
    return result.output


@pytest.mark.parametrize("shape", ["0.001", "0.006", "0.09", "101"])
def test_a_weibull_shape_outside_its_computable_and_meaningful_range_is_refused_naming_shape(shape, tmp_path):
    """Below 0.1 the gaps' coefficient of variation passes 400 (Γ(1 + 1/k) overflows below 1/171): 0.001 was an
    OverflowError, 0.006 a numpy warning and then no faults at all."""
    output = refused(["reliability", "--faults", f"mtbf=1d,shape={shape}", "--out", str(tmp_path), *STUDY])
    assert "--faults shape must be from 0.1 to 100" in output and repr(shape) in output


def test_the_lowest_admitted_shape_draws_near_its_mean_without_a_warning():
    """At shape 0.1 a fleet of 1,000 nodes over 60 days still draws about its mean of 6,000 faults."""
    model = failure_model("mtbf=10d,repair=0,shape=0.1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        faults = sum(1 for _ in model.outages(1000, 8, 60 * 86_400.0, seed=0).stream())
    assert 3000 < faults < 12_000


@pytest.mark.parametrize("interval", ["1e300", "10000d", "31d", "5m..40d"])
def test_reliability_caps_the_checkpoint_interval_at_run_s_thirty_days(interval, tmp_path):
    """`run` refuses an interval above 30 days (MAX_COST_S); `reliability` did not and overflowed in the closed
    form."""
    output = refused(["reliability", "--faults", "mtbf=1d", "--out", str(tmp_path), *STUDY,
                      "--checkpoint-interval", interval])
    assert "--checkpoint-interval" in output and "at most 30 days" in output


def test_the_closed_form_of_a_stretch_too_long_for_its_rate_is_an_ettr_of_zero_not_an_overflow():
    """Daly's expectation (1/Λ + D)(e^{Λ(τ+δ)} − 1) leaves floating point when Λτ passes 709: the job is never
    expected to finish."""
    rate = 2048 / 86_400.0  # 2,048 nodes failing once a day each
    assert ettr(30 * 86_400.0, 60, rate, 300, work=60 * 86_400.0, exposed=True) == 0.0
    assert ettr(30 * 86_400.0, 60, rate, 300) == 0.0
    assert optimal_interval(30 * 86_400.0, 1.0) == pytest.approx(1.0)


@pytest.mark.parametrize("mtbf", ["0.001", "0.5"])
def test_node_mtbf_below_a_second_is_refused_naming_the_option_and_the_value_given(mtbf):
    """The message named a rate of class 'failure' (1000.0), neither --node-mtbf nor 0.001."""
    output = refused(["run", "--node-mtbf", mtbf, "--spare-nodes", "1"])
    assert "--node-mtbf must be 0 (nodes never fail) or from 1 to" in output and f"got {mtbf}" in output


@pytest.mark.parametrize(("mtbf", "says"), [("1e308d", "at most 31,536,000,000,000 s"),
                                           ("1e300d", "at most 31,536,000,000,000 s"),
                                           ("0.001", "at least 1 s"), ("soon", "a time")])
def test_an_absurd_rate_model_mtbf_is_refused_naming_mtbf(mtbf, says):
    """1e308d was 'the mean time between failures (s) must be a finite number, got inf'."""
    output = refused(["run", "--faults", f"mtbf={mtbf}"])
    assert f"--faults mtbf must be {says}" in output and repr(mtbf) in output


@pytest.fixture
def fitted(tmp_path):
    log = tmp_path / "faults.csv"
    log.write_text(LOG)
    fit_log(log, servers=10).save(tmp_path / "fitted.json")
    return tmp_path / "fitted.json"


@pytest.mark.parametrize(("field", "value", "says"), [
    ("classes[0].rate", 1e300, "must be from 0 to 86,400"),
    ("classes[0].repairs_s[0]", 1e300, "must be from 0 to 3,153,600,000"),
    ("classes[0].repairs_s[0]", -1, "must be non-negative"),
    ("rate_per_server_day", 1e300, "faults per server-day"),
    ("classes[0].lognormal_mu", 1e300, "the logarithm of seconds"),
    ("classes[0].lognormal_sigma", 1e300, "must be from 0 to 20"),
    ("classes[0].share", 2, "must be from 0 to 1"),
])
def test_every_bad_value_of_a_fitted_model_names_the_file_and_the_field_path(fitted, field, value, says):
    """A negative repair named its file and field; a rate or repair of 1e300 did not (the model refused it later,
    nameless)."""
    data = json.loads(fitted.read_text())
    entry, _, rest = field.partition(".")
    if rest:
        target = data["classes"][0]
        if "[" in rest:
            target[rest.partition("[")[0]][0] = value
        else:
            target[rest] = value
    else:
        data[entry] = value
    fitted.write_text(json.dumps(data))
    with pytest.raises(TraceError) as caught:
        failure_model(str(fitted))
    assert str(caught.value).startswith(f"{fitted}, field '{field}'") and says in str(caught.value)
    output = refused(["run", "--faults", str(fitted)])
    assert str(fitted) in output and field in output


def test_reliability_caps_the_number_of_job_sizes_as_points_stops_at_200(tmp_path):
    output = refused(["reliability", "--faults", "mtbf=1d", "--out", str(tmp_path), *STUDY,
                      "--gpus", ",".join(["8"] * 20_000)])
    assert "--gpus: at most 200 job sizes" in output and "20,000" in output


def test_reliability_caps_a_job_s_size_so_that_its_memory_stays_bounded(tmp_path):
    """A 10M-GPU job was a MemoryError or the kernel's OOM kill: each node is simulated."""
    output = refused(["reliability", "--faults", "mtbf=1d", "--out", str(tmp_path), *STUDY, "--gpus", "10000000"])
    assert "--gpus 10,000,000: a job of at most 131,072 nodes" in output and "1,250,000 nodes" in output


def test_a_fitted_model_saved_without_json_is_read_as_a_model(fitted):
    """It was read as a CSV log ("unknown column '{'")."""
    bare = fitted.with_name("fitted")
    bare.write_bytes(fitted.read_bytes())
    model, expected = failure_model(str(bare)), load_fit(fitted).model()
    assert [(c.name, c.rate, c.repair.mean) for c in model.classes] == [
        (c.name, c.rate, c.repair.mean) for c in expected.classes]
    result = runner.invoke(app, ["run", "--faults", str(bare), "--out", str(fitted.parent / "out"),
                                 "--until", "3600"])
    assert result.exit_code == 0, result.output


def test_a_fault_log_command_given_a_fitted_model_says_it_looks_like_one(fitted):
    bare = fitted.with_name("fitted")
    bare.write_bytes(fitted.read_bytes())
    with pytest.raises(TraceError, match="holds one JSON object, not a fault log: a fitted model"):
        read_fault_log(bare)
    output = refused(["faults", "show", str(bare)])
    assert "unknown column" not in output and "a fitted model" in output


def test_an_infinitehbd_log_saved_without_json_is_read_as_that_log(tmp_path):
    events = [{"node_id": "n1", "event_time": 0.5, "event_type": "fault_start",
               "fault_type": {"Level": "L1", "Class": "GPU", "Desc": ""}},
              {"node_id": "n1", "event_time": 1.5, "event_type": "fault_end",
               "fault_type": {"Level": "L1", "Class": "GPU", "Desc": ""}}]
    path = tmp_path / "trace.txt"
    path.write_text(json.dumps(events))
    log = read_fault_log(path)
    assert log.format == "infinitehbd" and len(log.faults) == 1
