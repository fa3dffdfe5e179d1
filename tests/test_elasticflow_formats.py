"""ElasticFlow's other trace formats: its Philly-derived trace (``submit_time``, ``ddl``, ``iteration`` and
``real_iteration``) and its generator's traces (with ``best_effort``) load as its simulator reads them, and a bad
value is an error naming the file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simcluster.api import load_trace, simulate
from simcluster.elastic.elasticflow_model import load_elasticflow_throughputs
from simcluster.errors import TraceError
from simcluster.paths import shared_data_dir
from simcluster.presets import resolve_config
from simcluster.testing import ELASTICFLOW_ROWS
from simcluster.traces.elastic_formats import elasticflow_columns, looks_like_elasticflow
from simcluster.traces.elasticflow import load_elasticflow_trace
from simcluster.traces.files import file_format

CURVES = shared_data_dir() / "elasticflow" / "throughputs_A100"
needs_curves = pytest.mark.skipif(not CURVES.is_dir(), reason=f"no ElasticFlow throughputs in {CURVES} "
                                  "(set SIMCLUSTER_DATA to the shared data folder)")

PHILLY = "job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,real_duration,duration,iteration\n"
GENERATED = "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration,best_effort\n"


def philly_rows(rows: list[tuple[float, int, str, float, int, int]] = ELASTICFLOW_ROWS, real_factor: int = 3) -> str:
    """Rows of the Philly format whose ``real_iteration`` is ``real_factor`` times ``iteration`` (the artifact's
    file has them equal; here they differ, so that a test can tell which one was read)."""
    return "".join(f"{i},{t},{n * real_factor},{m},{t + d},{b},{g},{n // 5},{n // 10},{n}\n"
                   for i, (t, n, m, d, b, g) in enumerate(rows))


def test_every_spelling_of_the_artifacts_reader_is_told_as_an_elasticflow_trace() -> None:
    philly = PHILLY.strip().split(",")
    assert looks_like_elasticflow(philly) and looks_like_elasticflow(GENERATED.strip().split(","))
    assert not looks_like_elasticflow(["job_id", "submit_time", "duration", "num_gpu"])  # a plain log
    assert elasticflow_columns(philly) == {"submission_time": "submit_time", "num_iteration": "iteration",
                                           "deadline": "ddl", "job_id": "job_id", "model_name": "model_name",
                                           "batch_size": "batch_size", "num_gpu": "num_gpu", "duration": "duration"}
    # where a file has both spellings, the artifact's reader takes submission_time, deadline and iteration
    both = [*philly, "submission_time", "deadline", "num_iteration"]
    picked = elasticflow_columns(both)
    assert (picked["submission_time"], picked["deadline"], picked["num_iteration"]) == \
        ("submission_time", "deadline", "iteration")


@needs_curves
def test_a_philly_format_trace_loads_with_deadlines_from_ddl_and_iterations_from_iteration(tmp_path: Path) -> None:
    path = tmp_path / "philly_like.csv"
    path.write_text(PHILLY + philly_rows())
    assert file_format(path) == "elasticflow"
    trace = load_trace(path)
    assert trace.format == "elasticflow" and len(trace) == len(ELASTICFLOW_ROWS)
    frame = trace.frame.set_index("job_id")
    for i, (t, n, m, d, b, g) in enumerate(ELASTICFLOW_ROWS):
        job = frame.loc[str(i)]
        assert (job.submit_time, job.deadline, job.num_iteration) == (t, t + d, n)  # not real_iteration (3n)
        assert (job.model_name, job.batch_size, job.gpu_num, job.duration) == (m, b, g, n // 10)
    assert trace.cluster.describe() == "gpu:512"  # 64 nodes of 8 GPUs, as any trace not named otherwise


@needs_curves
def test_the_artifacts_own_trace_names_get_the_clusters_it_ran_them_on(tmp_path: Path) -> None:
    (tmp_path / "philly_103959.csv").write_text(PHILLY + philly_rows())
    (tmp_path / "resnet_cifar_trace.csv").write_text(GENERATED + "0,0,77215,resnet50_cifar10,4426,256,1,3930,0\n")
    assert load_trace(tmp_path / "philly_103959.csv").cluster.describe() == "gpu:256"  # run_fig8b.sh: n32g8
    assert load_trace(tmp_path / "resnet_cifar_trace.csv").cluster.describe() == "gpu:8"  # one server of 8


@needs_curves
def test_a_philly_format_trace_runs_under_elasticflow_and_the_artifacts_preset(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from simcluster.cli import app

    path = tmp_path / "philly_like.csv"
    path.write_text(PHILLY + philly_rows(real_factor=10))
    out = CliRunner().invoke(app, ["run", "--trace", str(path), "--nodes", "2", "--preset", "elasticflow-artifact",
                                   "--json", "--out", str(tmp_path / "run")])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert summary["policy"] == "elasticflow" and summary["jobs_with_deadline"] == len(ELASTICFLOW_ROWS)
    # the work run is `iteration`: a file whose `iteration` is the real_iteration above meets fewer deadlines
    longer = tmp_path / "longer.csv"
    longer.write_text(PHILLY + philly_rows([(t, n * 10, m, d, b, g) for t, n, m, d, b, g in ELASTICFLOW_ROWS], 1))
    config = resolve_config("elasticflow-artifact")
    met = simulate(load_trace(path, nodes=2), config).summary["deadlines_met"]
    assert met == summary["deadlines_met"]
    assert simulate(load_trace(longer, nodes=2), config).summary["deadlines_met"] < met


@needs_curves
def test_a_best_effort_job_of_a_generated_trace_has_no_deadline(tmp_path: Path) -> None:
    path = tmp_path / "generated.csv"
    path.write_text(GENERATED + "0,0,77215,resnet50_cifar10,4426,256,1,3930,0\n1,10,1000,resnet50_cifar10,20,256,1,30,1\n")
    deadlines = load_trace(path).frame.set_index("job_id")["deadline"]
    assert deadlines["0"] == 4426 and np.isnan(deadlines["1"])
    path.write_text(GENERATED + "0,0,77215,resnet50_cifar10,4426,256,1,3930,yes\n")
    with pytest.raises(TraceError, match=r"generated.csv, line 2, field 'best_effort': must be 0 or 1"):
        load_trace(path)


@needs_curves
@pytest.mark.parametrize(("field", "value", "problem"), [
    ("iteration", "nan", "positive number"), ("iteration", "inf", "positive number"),
    ("iteration", "-5", "positive number"), ("iteration", "1e20", "at most 1e\\+15"),
    ("iteration", "many", "positive number"), ("real_iteration", "-1", "positive number"),
    ("real_duration", "nan", "non-negative number"), ("ddl", "-inf", "non-negative number"),
    ("ddl", "1e13", "at most 1e\\+12"), ("submit_time", "-3", "non-negative number"),
    ("num_gpu", "0", "positive number"), ("batch_size", "1e9", "at most"), ("duration", "", "non-negative number"),
])
def test_a_bad_value_of_the_philly_format_names_its_file_line_and_field(tmp_path: Path, field: str, value: str,
                                                                       problem: str) -> None:
    header = PHILLY.strip().split(",")
    rows = [line.split(",") for line in philly_rows().strip().split("\n")]
    rows[2][header.index(field)] = value  # the third job: line 4 of the file
    path = tmp_path / "bad.csv"
    path.write_text(PHILLY + "".join(",".join(row) + "\n" for row in rows))
    with pytest.raises(TraceError, match=rf"bad.csv, line 4, field '{field}': must be a .*{problem}"):
        load_elasticflow_trace(path, CURVES)


@needs_curves
def test_a_deadline_before_its_submission_is_an_error_naming_the_ddl_column(tmp_path: Path) -> None:
    path = tmp_path / "early.csv"
    path.write_text(PHILLY + "0,100,50,resnet50,99,64,1,10,10,50\n")
    with pytest.raises(TraceError, match=r"early.csv, line 2, field 'ddl': deadline 99 is before the submission"):
        load_elasticflow_trace(path, CURVES)


def test_a_trace_on_t4s_reads_the_t4_curves_beside_the_artifacts_traces_and_their_caps(tmp_path: Path) -> None:
    traces, curves = tmp_path / "traces_for_ElasticFlow", tmp_path / "scheduler" / "throughputs_T4"
    traces.mkdir()
    curves.mkdir(parents=True)
    (curves / "ncf.csv").write_text("global_batch_size,1,2,4\n32768,46.9,37.6,56.3\n")
    (curves / "cifar10.csv").write_text("global_batch_size,1,2,4,8,16,32,64\n2048,0.7,1.2,2.5,3.8,6.5,4.5,3.7\n")
    (traces / "elasticVpollux_e.csv").write_text(
        "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration\n"
        "0,10,1548,ncf,100,32768,4,66\n1,20,2000,cifar10,9000,2048,8,700\n")
    trace = load_trace(traces / "elasticVpollux_e.csv")
    assert trace.cluster.describe() == "gpu:64" and len(trace) == 2  # run_fig8a.sh: 16 nodes of 4 T4s
    table = load_elasticflow_throughputs(curves)
    assert table.gpu_type == "T4"
    assert table.max_gpus("ncf", 32768, rule="elasticflow") == 1 and table.max_gpus("cifar10", 2048, "elasticflow") == 16
    assert table.max_gpus("cifar10", 2048, rule="measured") == 64
