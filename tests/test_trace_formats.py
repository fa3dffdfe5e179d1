"""Any job log loads: known formats by their columns, others by --columns; folders; logs without VCs;
the time rule; VC configs with `num` or `node num`."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.paths import shared_data_dir
from simcluster.traces import TraceError, load_trace
from simcluster.traces.formats import trace_format
from simcluster.traces.sizing import MAX_GPUS, offered_load

PHILLY = "timestamp,duration,num_gpus,gpu_time,cluster\n"
ITP = "job_id,submission_time,duration,num_gpu\n"


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def shared(name: str) -> Path:
    path = shared_data_dir() / name
    if not path.exists():
        pytest.skip(f"reference data not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    return path


# --- formats ---------------------------------------------------------------------------------------------------

def test_a_philly_log_is_recognised_by_its_columns_and_its_cluster_column_is_the_vc(tmp_path):
    write(tmp_path, "philly.csv", PHILLY + "2017-10-02 00:00:10,60.0,2,120.0,x\n2017-10-02 00:00:05,30.0,1,30.0,y\n")
    write(tmp_path, "vc_config.csv", "vc,node num\nx,1\ny,2\n")
    trace = load_trace(tmp_path)
    assert trace.format == "philly" and trace_format(tmp_path) == "philly"
    assert trace.vc_nodes == {"x": 1, "y": 2}
    assert trace.frame[["job_id", "vc", "gpu_num", "submit_time", "duration"]].values.tolist() == [
        ["3", "y", 1, 5, 30], ["2", "x", 2, 10, 60]]  # ids are line numbers; seconds from midnight of the first day


def test_an_itp_log_has_no_vcs_and_runs_as_one_vc_of_the_nodes_given(tmp_path):
    path = write(tmp_path, "cluster09.csv", ITP + "a,100,50,16\nb,160,10,1\n")
    trace = load_trace(path, nodes=3)
    assert trace.format == "itp" and trace.vc_nodes == {"cluster": 3}
    assert trace.frame["submit_time"].tolist() == [100, 160]  # relative seconds, as given
    assert "relative seconds" in trace.time_rule and "3 nodes" in trace.sizing


def test_a_log_without_vcs_needs_a_size(tmp_path):
    path = write(tmp_path, "jobs.csv", ITP + "a,100,50,1\n")
    with pytest.raises(TraceError, match="--nodes N .* --cluster .* --load"):
        load_trace(path)


def test_cluster_gives_the_size_in_nodes_of_gpus_per_node(tmp_path):
    path = write(tmp_path, "jobs.csv", ITP + "a,100,50,1\n")
    assert load_trace(path, cluster="v100:512").vc_nodes == {"cluster": 64}
    assert load_trace(path, cluster="v100:8,k80:8", gpus_per_node=4).vc_nodes == {"cluster": 4}
    with pytest.raises(ValueError, match="not a whole number of 8-GPU nodes"):
        load_trace(path, cluster="v100:12")


def test_load_picks_the_fewest_nodes_whose_offered_load_is_at_most_the_target(tmp_path):
    # 4 jobs × 1 GPU × 1000 s over a span of 1000 s: 4 GPU-s per s asked
    path = write(tmp_path, "jobs.csv", ITP + "a,0,1000,1\nb,10,1000,1\nc,20,1000,1\nd,1000,1000,1\n")
    trace = load_trace(path, load=0.5, gpus_per_node=2)
    assert trace.vc_nodes == {"cluster": 4}  # 8 GPUs: load 0.5
    assert "offered load 0.500" in trace.sizing


def test_load_never_picks_a_cluster_smaller_than_the_largest_job(tmp_path):
    path = write(tmp_path, "jobs.csv", ITP + "a,0,10,64\nb,1000,10,1\n")
    trace = load_trace(path, load=0.8)
    assert trace.vc_nodes == {"cluster": 8} and "largest job, 64 GPUs" in trace.sizing


@settings(max_examples=40, deadline=None)
@given(gpu_seconds=st.floats(1, 1e9), span=st.floats(1, 1e7), target=st.floats(0.05, 2.0), per_node=st.integers(1, 16))
def test_the_nodes_for_a_load_are_the_fewest_that_stay_at_or_below_it(gpu_seconds, span, target, per_node):
    from simcluster.traces.sizing import nodes_for_load

    nodes = nodes_for_load(gpu_seconds, span, target, per_node, largest_job=1)
    assert offered_load(gpu_seconds, nodes * per_node, span) <= target * (1 + 1e-9)
    if nodes > 1:
        assert offered_load(gpu_seconds, (nodes - 1) * per_node, span) > target * (1 - 1e-9)


def test_columns_maps_any_log_and_fields_left_out_keep_their_own_names(tmp_path):
    path = write(tmp_path, "mine.csv", "ID,T,G,D,user\nj1,5,1,10,ann\nj2,7,2,20,bob\n")
    trace = load_trace(path, columns="job_id=ID,submit_time=T,gpu_num=G,duration=D", nodes=1)
    assert trace.format == "csv"
    assert trace.frame[["job_id", "user", "gpu_num", "submit_time", "duration"]].values.tolist() == [
        ["j1", "ann", 1, 5, 10], ["j2", "bob", 2, 7, 20]]


def test_columns_vc_empty_runs_a_log_with_vcs_as_one_vc(tmp_path):
    path = write(tmp_path, "jobs.csv", "job_id,vc,gpu_num,submit_time,duration\n1,a,1,0,5\n2,b,1,3,5\n")
    trace = load_trace(path, columns="vc=", nodes=2)
    assert set(trace.frame["vc"]) == {"cluster"} and trace.vc_nodes == {"cluster": 2}


@pytest.mark.parametrize(("columns", "problem"), [
    ("submit=T", "unknown field 'submit'"),
    ("submit_time", "expected FIELD=COLUMN"),
    ("submit_time=", "submit_time is required"),
])
def test_bad_column_names_are_errors_that_say_why(tmp_path, columns, problem):
    path = write(tmp_path, "jobs.csv", ITP + "a,100,50,1\n")
    with pytest.raises(ValueError, match=problem):
        load_trace(path, columns=columns, nodes=1)


def test_a_column_named_by_columns_must_exist(tmp_path):
    path = write(tmp_path, "jobs.csv", "T,G,D\n1,1,1\n")
    with pytest.raises(TraceError, match=r"line 1, field 'X': --columns names column 'X' for duration"):
        load_trace(path, columns="submit_time=T,gpu_num=G,duration=X", nodes=1)


def test_an_unknown_log_lists_the_known_formats_and_the_columns_option(tmp_path):
    path = write(tmp_path, "jobs.csv", "when,what\n1,2\n")
    with pytest.raises(TraceError, match=r"line 1: not a job log of a known format .*philly.*--columns"):
        load_trace(path)


# --- folders ---------------------------------------------------------------------------------------------------

def test_a_folder_with_one_job_log_of_any_format_loads_it(tmp_path):
    write(tmp_path, "jobs.csv", ITP + "a,100,50,1\n")
    write(tmp_path, "notes.txt", "not a trace")
    assert load_trace(tmp_path, nodes=1).source.endswith("jobs.csv")


def test_a_folder_with_several_job_logs_asks_which(tmp_path):
    write(tmp_path, "a.csv", ITP + "a,100,50,1\n")
    write(tmp_path, "b.csv", ITP + "a,100,50,1\n")
    with pytest.raises(TraceError, match=r"holds 2 job logs \(a.csv, b.csv\); name one"):
        load_trace(tmp_path, nodes=1)


def test_a_folder_without_a_job_log_says_what_it_found(tmp_path):
    write(tmp_path, "vc_config.csv", "vc,num\na,1\n")
    write(tmp_path, "other.csv", "x,y\n1,2\n")
    with pytest.raises(TraceError, match=r"no job log of a known format \(other.csv\)"):
        load_trace(tmp_path)


# --- options that do not apply -----------------------------------------------------------------------------------

def test_nodes_and_load_do_not_apply_to_a_log_with_vcs(tmp_path):
    write(tmp_path, "cluster_full_log.csv", "job_id,vc,gpu_num,submit_time,duration\n1,a,1,0,5\n")
    write(tmp_path, "vc_config.csv", "vc,num\na,1\n")
    with pytest.raises(TraceError, match="--nodes size a job log without VCs"):
        load_trace(tmp_path, nodes=4)


def test_a_vc_config_does_not_apply_to_a_log_without_vcs(tmp_path):
    path = write(tmp_path, "jobs.csv", ITP + "a,100,50,1\n")
    config = write(tmp_path, "vcs.csv", "vc,num\na,1\n")
    with pytest.raises(TraceError, match="no VC column, so --vc-config does not apply"):
        load_trace(path, config, nodes=1)


def test_two_sizes_at_once_are_refused(tmp_path):
    path = write(tmp_path, "jobs.csv", ITP + "a,100,50,1\n")
    with pytest.raises(ValueError, match="give one of --nodes, --cluster and --load"):
        load_trace(path, nodes=1, cluster="v100:8")


def test_job_log_options_do_not_apply_to_a_gavel_trace(tmp_path):
    path = write(tmp_path, "t.trace", "ResNet-18 (batch size 64)\tc\td\t--n\t0\t100\t1\t1\t-1\t0\n")
    with pytest.raises(TraceError, match="--nodes apply to CSV job logs, not to a gavel trace"):
        load_trace(path, nodes=2)


# --- times -----------------------------------------------------------------------------------------------------

def test_unix_epoch_seconds_count_from_midnight_of_the_first_day(tmp_path):
    path = write(tmp_path, "jobs.csv", ITP + "a,1600000000,5,1\nb,1600000060,5,1\n")  # 2020-09-13 12:26:40 UTC
    trace = load_trace(path, nodes=1)
    assert trace.frame["submit_time"].tolist() == [44800, 44860]
    assert trace.time_rule.startswith("Unix epoch seconds (UTC), counted from 2020-09-13 00:00:00")


def test_epoch_sets_time_zero_and_earlier_jobs_are_invalid_rows(tmp_path):
    path = write(tmp_path, "jobs.csv", PHILLY + "2017-09-30 23:59:00,5,1,5,x\n2017-10-01 00:00:30,5,1,5,x\n")
    write(tmp_path, "vc_config.csv", "vc,num\nx,1\n")
    with pytest.raises(TraceError, match=r"line 2, field 'timestamp': 2017-09-30 23:59:00 is before the epoch"):
        load_trace(path, epoch="2017-10-01")
    trace = load_trace(path, epoch="2017-10-01", skip_invalid=True)
    assert trace.frame["submit_time"].tolist() == [30]
    assert trace.skipped == {"timestamp: before the epoch": 1}


def test_venus_logs_keep_the_helios_epoch(tmp_path):
    write(tmp_path, "cluster_full_log.csv", "job_id,vc,gpu_num,submit_time,duration\n1,a,1,2020-09-01 00:00:00,5\n")
    write(tmp_path, "vc_config.csv", "vc,num\na,1\n")
    trace = load_trace(tmp_path)
    assert trace.frame["submit_time"].tolist() == [13219200]
    assert "2020-04-01 00:00:00" in trace.time_rule


def test_timestamps_with_a_timezone_are_instants_and_midnight_is_the_logs_own(tmp_path):
    rows = "1,a,1,2020-09-01T00:01:43+08:00,5\n2,a,1,2020-08-31T17:01:43Z,5\n"
    write(tmp_path, "cluster_full_log.csv", "job_id,vc,gpu_num,submit_time,duration\n" + rows)
    write(tmp_path, "vc_config.csv", "vc,num\na,1\n")
    trace = load_trace(tmp_path, epoch="2020-09-01")  # Beijing midnight
    assert trace.frame.set_index("job_id")["submit_time"].to_dict() == {"1": 103, "2": 3703}


def test_fractions_of_a_second_are_floored(tmp_path):
    path = write(tmp_path, "jobs.csv", ITP + "a,10.7,5,1\n")
    assert load_trace(path, nodes=1).frame["submit_time"].tolist() == [10]


# --- VC configs and sizes ----------------------------------------------------------------------------------------

def test_vc_configs_accept_num_or_node_num_and_an_unnamed_first_column(tmp_path):
    from simcluster.traces import load_vc_config

    assert load_vc_config(write(tmp_path, "a.csv", ",num\nx,2\n")) == {"x": 2}
    assert load_vc_config(write(tmp_path, "b.csv", "vc,node num\nx,3\n")) == {"x": 3}
    with pytest.raises(TraceError, match="expected columns 'vc,num' or 'vc,node num'"):
        load_vc_config(write(tmp_path, "c.csv", "vc,size\nx,3\n"))


def test_nodes_beyond_the_gpu_limit_are_refused_with_the_figure(tmp_path):
    path = write(tmp_path, "jobs.csv", ITP + "a,100,50,1\n")
    with pytest.raises(TraceError, match=f"--nodes: 200,000 nodes × 8 GPUs would bring the cluster to 1,600,000 GPUs, "
                       f"more than the limit of {MAX_GPUS:,}"):
        load_trace(path, nodes=200_000)


# --- the public traces -------------------------------------------------------------------------------------------

def test_philly_from_october_has_76580_jobs_in_its_11_vcs():
    trace = load_trace(shared("philly"), epoch="2017-10-01", skip_invalid=True)
    assert len(trace) == 76_580 and len(trace.vc_nodes) == 11
    assert trace.skipped == {"timestamp: before the epoch": 5_657, "cluster: VC not in the VC config": 10}


def test_philly_names_the_rows_whose_vc_is_not_in_its_config():
    with pytest.raises(TraceError, match=r"philly.csv, line \d+, field 'cluster': VC '\w+' is not in the VC config "
                       r"\(17 more invalid row\(s\)"):
        load_trace(shared("philly"))


@pytest.mark.parametrize("cluster", [1, 2, 3, 4, 5])
def test_each_itp_cluster_loads_sized_for_load_0_8(cluster):
    trace = load_trace(shared("itp_2021") / f"cluster0{cluster}.csv", load=0.8)
    f = trace.frame
    span = f["submit_time"].max() - f["submit_time"].min()
    asked, nodes = float((f["gpu_num"] * f["duration"]).sum()), trace.vc_nodes["cluster"]
    assert offered_load(asked, nodes * 8, span) <= 0.8
    assert offered_load(asked, (nodes - 1) * 8, span) > 0.8 or "largest job" in trace.sizing  # the fewest nodes


def test_an_itp_cluster_runs_every_job_once():
    trace = load_trace(shared("itp_2021") / "cluster05.csv", load=0.8)
    result = simulate(trace, SimConfig(policy="srtf"))
    assert result.summary["jobs"] == len(trace) and result.jobs["job_id"].is_unique
    assert result.summary["trace_format"] == "itp"


@pytest.mark.parametrize("module", ["traces.columns", "traces.times", "traces.sizing", "traces.stats", "errors",
                                    "traces.csvfile", "traces.units", "traces.doubts"])
def test_the_examples_in_the_trace_modules_docs_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"simcluster.{module}"))
    assert result.attempted > 0 and result.failed == 0


@settings(max_examples=30, deadline=None)
@given(offsets=st.lists(st.integers(0, 10**8), min_size=1, max_size=20),
       zone=st.sampled_from(["", "Z", "+08:00", "-05:30"]), unix=st.booleans())
def test_times_written_any_supported_way_read_back_as_the_same_seconds(offsets, zone, unix):
    import pandas as pd

    from simcluster.traces.times import submit_seconds

    zero = pd.Timestamp("2021-03-01 00:00:00", tz=None if not zone else ("UTC" if zone == "Z" else zone))
    stamps = [zero + pd.Timedelta(seconds=s) for s in offsets]
    if unix:
        text = [str(int(t.timestamp())) if zone else str(int(t.tz_localize("UTC").timestamp())) for t in stamps]
    else:
        text = [t.strftime("%Y-%m-%dT%H:%M:%S") + zone for t in stamps]
    epoch = str(zero.tz_convert("UTC").tz_localize(None)) if unix and zone else "2021-03-01 00:00:00"
    seconds, rule = submit_seconds(pd.Series(text), epoch, None, None)
    assert seconds.tolist() == [float(s) for s in offsets]
    assert rule.kind == ("unix" if unix else "timestamps")


def test_a_vc_config_with_gpu_types_gives_each_vcs_nodes_by_type_and_names_a_bad_type(tmp_path):
    from simcluster.traces.joblog import load_job_log as load_trace

    log = "job_id,user,vc,gpu_num,submit_time,duration\n1,u,a,8,0,100\n2,u,b,2,5,50\n"
    write(tmp_path, "cluster_log.csv", log)
    write(tmp_path, "vc_config.csv", "vc,num,gpu_type,memory_mib\na,1,v100,\na,2,p100,12288\nb,1,k80,\n")
    trace = load_trace(tmp_path)
    assert trace.vc_nodes == {"a": 3, "b": 1}
    assert [(g.vc, g.gpu_type, g.nodes, g.memory_mib) for g in trace.cluster.groups] == [
        ("a", "v100", 1, 16384.0), ("a", "p100", 2, 12288.0), ("b", "k80", 1, 12288.0)]
    write(tmp_path, "vc_config.csv", "vc,num,gpu_type\na,1,v100\nb,1,9x\n")
    with pytest.raises(TraceError, match="GPU type must be a name") as error:
        load_trace(tmp_path)
    assert (error.value.line, error.value.field) == (3, "gpu_type")
