"""Loading Gavel traces, openb pod lists and cluster specs; bad input names file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from simcluster.cluster_spec import load_node_list, parse_cluster
from simcluster.traces import TraceError, load_trace
from simcluster.traces.gavel import GavelSynthSpec, load_gavel_trace, save_gavel_trace, synthesize_gavel
from simcluster.traces.hetero import HeteroTrace

GOOD = "ResNet-18 (batch size 64)\tpython3 main.py\tdir\t--num_steps\t1\t1000\t1\t1\t-1.000000\t0\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_load_trace_recognises_a_gavel_trace(tmp_path):
    trace = load_trace(write(tmp_path, "a.trace", GOOD + GOOD.replace("\t0\n", "\t30\n")))
    assert isinstance(trace, HeteroTrace) and len(trace) == 2 and trace.kind == "gavel"
    assert trace.frame["submit_time"].tolist() == [0.0, 30.0]


@pytest.mark.parametrize("line,field", [
    ("A3C\tc\td\t--x\t0\t-5\t1\t1\t-1\t0", "total_steps"),
    ("A3C\tc\td\t--x\t0\t5\t0\t1\t-1\t0", "scale_factor"),
    ("A3C\tc\td\t--x\t0\t5\t1\tx\t-1\t0", "priority_weight"),
    ("A3C\tc\td\t--x\t0\t5\t1\t1\t-1\t-3", "arrival_time"),
    ("A3C\tc\td\t--x\t0\t5\t1\t1\t0\t3", "SLO"),
    ("A3C\tc\td", "line"),
    ("A3C\tc\td\t--x\t0\t5\t1\t1\t-1\tinf", "arrival_time"),
    ("A3C\tc\td\t--x\t0\t5\t1\t1\t-1\t1e19", "arrival_time"),
    ("A3C\tc\td\t--x\t0\t5\t10000000\t1\t-1\t0", "scale_factor"),
])
def test_bad_gavel_lines_name_the_file_line_and_field(tmp_path, line, field):
    path = write(tmp_path, "bad.trace", GOOD + line + "\n")
    with pytest.raises(TraceError) as caught:
        load_gavel_trace(path)
    assert caught.value.line == 2 and caught.value.field == field and str(path) in str(caught.value)


def test_skip_invalid_drops_and_counts_bad_lines(tmp_path):
    trace = load_gavel_trace(write(tmp_path, "b.trace", GOOD + "A3C\tc\td\t--x\t0\t-5\t1\t1\t-1\t0\n"),
                             skip_invalid=True)
    assert len(trace) == 1 and sum(trace.skipped.values()) == 1


def test_cluster_spec_and_node_list(tmp_path):
    c = parse_cluster("v100:4,p100:4,k80:4")
    assert c.gpu_types == ("v100", "p100", "k80") and c.total_gpus == 12 and c.as_dict()["k80"]["memory_mib"] == 12 * 1024
    assert c.vcs == ("cluster",) and [g.gpus_per_node for g in parse_cluster("v100:12", 8).groups] == [8, 4]
    with pytest.raises(ValueError, match="TYPE:COUNT"):
        parse_cluster("v100=4")
    nodes = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,V100M16\nn1,1,1,8,T4\n")
    c = load_node_list(nodes)
    assert c.type_gpus() == {"t4": 8, "v100m16": 2} and c.gpu_types == ("t4", "v100m16")
    bad = write(tmp_path, "bad.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,two,T4\n")
    with pytest.raises(TraceError) as caught:
        load_node_list(bad)
    assert caught.value.line == 2 and caught.value.field == "gpu"


OPENB = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         "scheduled_time\n"
         "p0,1000,1,1,500,,LS,Running,0,100,0\n"
         "p1,1000,1,1,500,,LS,Running,0,100,0\n"
         "p2,1000,1,1,1000,,LS,Running,0,50,0\n"
         "p3,1000,1,0,0,,LS,Running,0,50,0\n")
NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,1,T4\n"


def test_openb_pods_share_a_gpu_by_fraction(tmp_path):
    from simcluster.api import simulate
    from simcluster.config import SimConfig

    write(tmp_path, "openb_node_list_gpu_node.csv", NODES)
    trace = load_trace(write(tmp_path, "pods.csv", OPENB))
    assert isinstance(trace, HeteroTrace) and trace.kind == "openb" and len(trace) == 3
    assert trace.skipped["num_gpu: CPU-only pod (no GPU)"] == 1
    result = simulate(trace, SimConfig(policy="fifo"))
    ends = result.jobs.set_index("job_id")["end_time"]
    assert ends["p0"] == 100.0 and ends["p1"] == 100.0  # two halves of the one GPU, side by side
    assert ends["p2"] == 150.0  # the whole-GPU pod waits for both
    assert result.summary["gpu_utilization"] == pytest.approx(150 / 150)


def test_openb_bad_rows_name_line_and_field(tmp_path):
    path = write(tmp_path, "pods.csv", OPENB.replace("p1,1000,1,1,500", "p1,1000,1,1,1500"))
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    assert caught.value.line == 3 and caught.value.field == "gpu_milli"


@pytest.mark.parametrize(("row", "field"), [("p1,1000,1,1,500,,LS,Running,0,10000000000000,0", "deletion_time"),
                                            ("p1,1000,1,99999999,1000,,LS,Running,0,100,0", "num_gpu")])
def test_openb_times_and_gpu_counts_beyond_the_bounds_are_bad_rows(tmp_path, row, field):
    lines = OPENB.splitlines()
    lines[2] = row
    with pytest.raises(TraceError, match="beyond the bound") as caught:
        load_trace(write(tmp_path, "pods.csv", "\n".join(lines) + "\n"))
    assert caught.value.line == 3 and caught.value.field == field


def test_openb_shared_data_loads_with_its_node_list(openb):
    trace = load_trace(openb / "openb_pod_list_gpushare40.csv")
    assert trace.cluster is not None and trace.cluster.total_gpus == 6212
    assert (trace.frame["gpu_milli"] < 1000).sum() > 3000


def test_gavel_synth_round_trips_through_the_loader(tmp_path, gavel_traces):
    trace = synthesize_gavel(GavelSynthSpec(jobs=200, jobs_per_hour=10, seed=1))
    scales = trace.frame["gpu_num"].value_counts(normalize=True)
    assert 0.55 < scales[1] < 0.9 and set(scales.index) <= {1, 2, 4, 8}
    gaps = trace.frame["submit_time"].diff().dropna()
    assert 200 < gaps.mean() < 600  # 10 jobs per hour: 360 s on average
    path = save_gavel_trace(trace, tmp_path / "s.trace")
    again = load_gavel_trace(path)
    assert again.frame["total_steps"].tolist() == trace.frame["total_steps"].tolist()


def test_shared_gavel_traces_load(gavel_traces):
    t500 = load_trace(gavel_traces / "t500.trace")
    assert len(t500) == 500 and dict(t500.frame["gpu_num"].value_counts()) == {1: 375, 4: 93, 2: 32}
