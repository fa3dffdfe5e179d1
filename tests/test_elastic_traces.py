"""Elastic-job traces: Pollux's workloads and ElasticFlow's ITP traces are told by their columns and read with
every field a policy needs; deadlines come from a column or are drawn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simcluster.elastic.pollux_apps import load_pollux_apps
from simcluster.errors import TraceError
from simcluster.paths import shared_data_dir
from simcluster.traces import load_trace
from simcluster.traces.deadlines import deadline_seconds, draw_deadlines, parse_deadline_range, with_deadlines
from simcluster.traces.elasticflow import load_elasticflow_trace
from simcluster.traces.files import file_format
from simcluster.traces.pollux import load_pollux_trace


def shared(relative: str) -> Path:
    path = shared_data_dir() / relative
    if not path.exists():
        pytest.skip(f"reference data not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    return path


@pytest.fixture(scope="module")
def workload6() -> Path:
    return shared("pollux/workloads/1.0/workload-6.csv")


@pytest.fixture(scope="module")
def apps():  # type: ignore[no-untyped-def]
    return load_pollux_apps(shared("pollux/apps"))


def test_the_formats_are_told_by_their_columns(workload6: Path) -> None:
    assert file_format(workload6) == "pollux"
    assert file_format(shared("elasticflow/traces/cluster01.csv")) == "elasticflow"
    assert file_format(shared("itp_2021/cluster01.csv")) == "itp"  # the same jobs without deadlines


def test_a_pollux_workload_has_its_jobs_on_the_papers_cluster(workload6: Path, apps) -> None:
    trace = load_trace(workload6)
    raw = pd.read_csv(workload6)
    assert trace.format == "pollux" and len(trace) == len(raw) == 160
    assert trace.cluster.describe() == "gpu:64" and trace.vc_nodes == {"cluster": 16}
    frame = trace.frame.set_index("job_id")
    first = raw.iloc[0]
    assert frame.loc[first["name"], "application"] == first.application
    assert frame.loc[first["name"], "batch_size"] == first.batch_size
    assert frame.loc[first["name"], "gpu_num"] == first.num_replicas
    assert frame.loc[first["name"], "submit_time"] == first.time


def test_a_pollux_jobs_duration_is_its_modelled_time_at_the_requested_gpus_and_batch(workload6: Path, apps) -> None:
    """ncf on one GPU at 32,768: two micro-batches of 16,384, the step times read from the placement rows."""
    trace = load_pollux_trace(workload6, apps)
    row = trace.frame[(trace.frame.application == "ncf") & (trace.frame.gpu_num == 1)].iloc[0]
    assert row.batch_size == 32768
    rows = pd.read_csv(shared("pollux/apps/ncf/placements.csv"))
    one = rows[rows.placement == 1].sort_values("local_bsz")
    step = np.interp(16384, one.local_bsz, one.step_time)
    sync = np.interp(16384, one.local_bsz, one.sync_time)
    seconds_per_step = step + (step - sync)
    ncf = apps["ncf"]
    expected = sum((ncf.epoch_progress(e + 1) - ncf.epoch_progress(e)) / (ncf.gain(32768, e) / seconds_per_step)
                   for e in range(ncf.max_epochs))
    assert row.duration == np.ceil(expected)  # whole seconds, as in every job log


def test_every_pollux_workload_loads(apps) -> None:
    root = shared("pollux/workloads")
    sizes = {load: {len(load_pollux_trace(root / load / f"workload-{n}.csv", apps)) for n in range(1, 9)}
             for load in ("0.5", "1.0", "1.5", "2.0", "realistic")}
    assert sizes == {"0.5": {80}, "1.0": {160}, "1.5": {240}, "2.0": {320}, "realistic": {160}}


def test_a_bad_pollux_row_is_an_error_naming_its_line_and_field(tmp_path: Path, apps) -> None:
    path = tmp_path / "w.csv"
    path.write_text("name,time,application,num_replicas,batch_size\na-0,10,cifar10,2,256\nb-1,20,resnet,1,128\n")
    with pytest.raises(TraceError, match=r"w.csv, line 3, field 'application': unknown application 'resnet'"):
        load_pollux_trace(path, apps)
    path.write_text("name,time,application,num_replicas,batch_size\na-0,10,cifar10,2,99999\n")
    with pytest.raises(TraceError, match=r"line 2, field 'batch_size': batch size 99999 is above cifar10's largest"):
        load_pollux_trace(path, apps)
    path.write_text("name,time,application,num_replicas,batch_size\na-0,ten,cifar10,2,256\n")
    with pytest.raises(TraceError, match=r"line 2, field 'time': not a number: 'ten'"):
        load_pollux_trace(path, apps)


def test_options_of_job_logs_are_refused_for_elastic_traces(workload6: Path) -> None:
    with pytest.raises(TraceError, match="--columns do not apply to a pollux trace"):
        load_trace(workload6, columns="submit_time=time")
    with pytest.raises(TraceError, match="holds 8 job logs"):
        load_trace(workload6.parent)
    assert load_trace(workload6, nodes=20).cluster.describe() == "gpu:80"


def test_an_elasticflow_trace_keeps_its_deadlines_and_has_the_papers_cluster() -> None:
    path = shared("elasticflow/traces/cluster01.csv")
    trace = load_trace(path)
    raw = pd.read_csv(path)
    assert trace.format == "elasticflow" and len(trace) == 1595
    assert trace.cluster.describe() == "gpu:512"
    frame = trace.frame.set_index("job_id")
    job = raw.iloc[0]
    assert frame.loc[job.job_id, "deadline"] == job.deadline
    assert frame.loc[job.job_id, "num_iteration"] == job.num_iteration
    assert (frame.loc[job.job_id, "model_name"], frame.loc[job.job_id, "batch_size"]) == (job.model_name, job.batch_size)
    assert load_trace(shared("elasticflow/traces/cluster04.csv")).cluster.describe() == "gpu:1024"


def test_a_bad_elasticflow_row_is_an_error_naming_its_line_and_field(tmp_path: Path) -> None:
    curves = shared("elasticflow/throughputs_A100")
    header = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
    path = tmp_path / "c.csv"
    path.write_text(header + "a,0,100,resnet50,500,64,1,100\nb,10,100,alexnet,500,64,1,100\n")
    with pytest.raises(TraceError, match=r"c.csv, line 3, field 'model_name': no scaling curve for model 'alexnet'"):
        load_elasticflow_trace(path, curves)
    path.write_text(header + "a,100,100,resnet50,50,64,1,100\n")
    with pytest.raises(TraceError, match=r"line 2, field 'deadline': deadline 50 is before"):
        load_elasticflow_trace(path, curves)
    path.write_text(header + "a,0,100,resnet50,500,64,3,100\n")
    with pytest.raises(TraceError, match=r"line 2, field 'num_gpu'.*3 GPUs"):
        load_elasticflow_trace(path, curves)


# ----------------------------------------------------------------------------- deadlines
def test_a_deadline_range_must_be_two_positive_ordered_numbers() -> None:
    assert parse_deadline_range("0.5, 1.5") == (0.5, 1.5)
    for bad in ("1.5,0.5", "0,1", "a,b", "1"):
        with pytest.raises(ValueError, match="--deadlines"):
            parse_deadline_range(bad)


def test_drawn_deadlines_are_submit_plus_a_uniform_share_of_duration_and_repeat_by_seed() -> None:
    submit = np.arange(1000.0)
    duration = np.full(1000, 3600.0)
    one = draw_deadlines(submit, duration, 0.5, 1.5, seed=7)
    assert np.array_equal(one, draw_deadlines(submit, duration, 0.5, 1.5, seed=7))
    assert not np.array_equal(one, draw_deadlines(submit, duration, 0.5, 1.5, seed=8))
    share = (one - submit) / duration
    assert share.min() >= 0.5 and share.max() < 1.5 and abs(share.mean() - 1.0) < 0.05
    assert np.array_equal(one, np.floor(one))


def test_drawn_deadlines_fill_only_jobs_without_one_unless_told_to_replace() -> None:
    frame = pd.DataFrame({"submit_time": [0.0, 0.0], "duration": [100.0, 100.0], "deadline": [42.0, np.nan]})
    kept = with_deadlines(frame, (1.0, 1.0))
    assert kept["deadline"].tolist() == [42.0, 100.0]
    assert with_deadlines(frame, (1.0, 1.0), replace=True)["deadline"].tolist() == [100.0, 100.0]
    assert np.isnan(with_deadlines(frame.drop(columns="deadline"))["deadline"]).all()  # best-effort


def test_a_deadline_column_keeps_its_distance_from_the_submit_time() -> None:
    text = pd.Series(["1500", "", "2100"])
    submitted = pd.Series(["1000", "1000", "2000"])
    out = deadline_seconds("log.csv", text, submitted, np.array([0.0, 0.0, 1000.0]), np.array([2, 3, 4]))
    assert out[0] == 500.0 and np.isnan(out[1]) and out[2] == 1100.0
    with pytest.raises(TraceError, match=r"log.csv, line 3, field 'deadline': deadline 900 is before"):
        deadline_seconds("log.csv", pd.Series(["1500", "900"]), pd.Series(["1000", "1000"]), np.zeros(2),
                         np.array([2, 3]))
    with pytest.raises(TraceError, match="line 2, field 'deadline': not a number of seconds: 'soon'"):
        deadline_seconds("log.csv", pd.Series(["soon"]), pd.Series(["1000"]), np.zeros(1), np.array([2]))
