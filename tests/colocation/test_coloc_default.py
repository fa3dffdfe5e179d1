"""The default colocation model follows the run's GPU type: measurements on it first, then the calibrated model
refitted to them; runs on clusters that name no GPU type keep the RTX 3090 calibration."""

from __future__ import annotations

import ast
import math
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from simcluster.api import simulate
from simcluster.cluster import Cluster
from simcluster.cluster_spec import parse_cluster
from simcluster.colocation.calibrate import fit_measured
from simcluster.colocation.calibrated import read_calibration
from simcluster.colocation.calibration_report import refit_markdown
from simcluster.colocation.folders import committed_measurements
from simcluster.colocation.layered import MeasuredFirst
from simcluster.colocation.loader import answer_shares, load_colocation_model, run_gpu_type
from simcluster.colocation.per_type import PerGpuType
from simcluster.colocation.schema import read_pair_table, read_single_table
from simcluster.config import SimConfig
from simcluster.engine.speed import SpeedModel
from simcluster.job import Job, Workload
from simcluster.traces.joblog import JobLog
from simcluster.traces.synth import SynthSpec, synthesize

H100 = committed_measurements()["h100"]
R18, VGG = Workload("ResNet18", "CIFAR-10", 32, 0), Workload("VGG", "CIFAR-10", 32, 0)


def test_a_cluster_of_one_named_gpu_type_runs_on_it_and_an_untyped_or_mixed_one_on_none() -> None:
    assert run_gpu_type(["h100"]) == "h100"
    assert run_gpu_type(["h100", "h100"]) == "h100"
    assert run_gpu_type(["gpu"]) is None  # venus_sept, Philly, Helios: no GPU type named
    assert run_gpu_type(["h100", "v100"]) is None
    assert run_gpu_type(["h100", "gpu"]) is None  # a partition of untyped GPUs beside named ones
    assert run_gpu_type([]) is None


def test_untyped_runs_keep_the_rtx_3090_calibration_as_their_default() -> None:
    for model in (load_colocation_model("default"), load_colocation_model("default", ["gpu"])):
        assert model.provenance["kind"] == "calibrated" and "Lucid" in model.provenance["description"]
        assert model.pair_speeds(R18, 1, VGG, 1) == load_colocation_model("calibrated").pair_speeds(R18, 1, VGG, 1)


def test_on_the_h100_a_measured_pair_is_answered_by_its_measurement_and_any_other_by_the_refit() -> None:
    model = load_colocation_model("default", ["h100"])
    assert isinstance(model, MeasuredFirst) and model.fitted_as == "refit"
    measured = read_pair_table(H100 / "pair.csv").set_index(["model1", "model2"]).loc[("ResNet18", "VGG")]
    assert model.pair_speeds(R18, 1, VGG, 1) == pytest.approx((measured.speed1, measured.speed2))
    assert model.pair_speeds(VGG, 1, R18, 1) == pytest.approx((measured.speed2, measured.speed1))
    refit = load_colocation_model(str(H100 / "calibrated"))
    r18_amp = Workload("ResNet18", "CIFAR-10", 128, 1)  # never measured on the H100
    assert model.pair_speeds(r18_amp, 1, VGG, 1) == refit.pair_speeds(r18_amp, 1, VGG, 1)
    assert model.pair_speeds(R18, 2, VGG, 2) == refit.pair_speeds(R18, 2, VGG, 2)  # measured on one GPU only
    assert model.answered_by() == {"measured": 2, "refit": 2}
    assert model.fallback_counts()["exact"] == 4  # the refit's tables hold every 32/64/128 x AMP pair
    shares = answer_shares(model)
    assert shares["measured"] == {"lookups": 2, "share": 0.5}


def test_on_the_h100_memory_and_utilization_come_from_its_single_table_where_measured() -> None:
    model = load_colocation_model("default@h100")
    single = read_single_table(H100 / "single.csv").set_index("model")
    assert model.memory_mib(R18, 1) == single.at["ResNet18", "gmem"]
    assert model.solo_util(VGG, 1) == single.at["VGG", "gpu_util"]
    bigger = Workload("ResNet18", "CIFAR-10", 128, 0)
    assert model.memory_mib(bigger, 1) == load_colocation_model(str(H100 / "calibrated")).memory_mib(bigger, 1)
    assert model.answered_by("memory") == {"measured": 1, "refit": 1}


def test_its_tables_are_the_refits_with_the_measured_rows_in_place() -> None:
    model = load_colocation_model("default@h100")
    measured = read_pair_table(H100 / "pair.csv")
    assert len(model.single) == 14 * 3 * 2 and len(model.pair) == 84 * 85 // 2  # every key once
    r18_vgg = model.pair[(model.pair.model1 == "ResNet18") & (model.pair.model2 == "VGG")
                         & (model.pair.batchsize1 == 32) & (model.pair.batchsize2 == 32)
                         & (model.pair.amp1 == 0) & (model.pair.amp2 == 0)]
    expected = measured[(measured.model1 == "ResNet18") & (measured.model2 == "VGG")]
    assert r18_vgg.speed1.tolist() == expected.speed1.tolist()
    assert model.provenance["kind"] == "measured" and model.provenance["gpu"] == "h100"
    assert "refit" in model.provenance and model.provenance["refit"]["kind"] == "calibrated"


def measured_workloads_trace(batch_sizes: tuple[int, ...] = (64, 32, 32)) -> JobLog:
    """150 jobs of four workloads the profiler measured, at these batch sizes in turn, AMP off."""
    trace = synthesize(SynthSpec(jobs=150, nodes=2, vcs=1, seed=2, load=1.5))
    models = ["ResNet18", "VGG", "LSTM", "PPO"]
    datasets = {"ResNet18": "CIFAR-10", "VGG": "CIFAR-10", "LSTM": "Wikitext2", "PPO": "LunarLander"}
    trace.frame["model"] = [models[i % 4] for i in range(len(trace.frame))]
    trace.frame["dataset"] = trace.frame["model"].map(datasets)
    trace.frame["batchsize"] = [batch_sizes[i % len(batch_sizes)] for i in range(len(trace.frame))]
    trace.frame["amp"] = 0
    return trace


def test_a_sharing_run_on_h100s_reports_which_model_answered_its_lookups() -> None:
    trace = measured_workloads_trace()
    typed = simulate(trace, SimConfig(policy="srtf-wrs", cluster="h100:16")).summary
    named = simulate(trace, SimConfig(policy="srtf-wrs", colocation="default@h100")).summary
    untyped = simulate(trace, SimConfig(policy="srtf-wrs")).summary
    for summary in (typed, named):
        answered = summary["colocation_answered_by"]
        assert set(answered) == {"measured", "refit"} and answered["measured"]["lookups"] > 0
        assert math.isclose(sum(a["share"] for a in answered.values()), 1.0, abs_tol=1e-3)
        assert summary["colocation_provenance"]["gpu"] == "h100"
    assert set(untyped["colocation_answered_by"]) == {"calibrated"}
    assert untyped["colocation_answered_by"]["calibrated"]["share"] == 1.0


@pytest.mark.parametrize("gpu", sorted(committed_measurements()))
def test_the_committed_refit_is_what_the_fit_gives_and_reports_its_held_out_error(gpu: str) -> None:
    folder = committed_measurements()[gpu]
    committed = read_calibration(folder / "calibrated")
    fresh = fit_measured(folder, with_folds=False).calibration
    assert asdict(fresh.constants) == pytest.approx(asdict(committed.constants), rel=1e-3)  # (another BLAS may
    for mine, theirs in zip(fresh.workloads, committed.workloads, strict=True):  # round the last digits apart)
        assert {k: v for k, v in asdict(mine).items() if k not in ("model", "dataset")} == pytest.approx(
            {k: v for k, v in asdict(theirs).items() if k not in ("model", "dataset")}, rel=1e-3)
    assert committed.fitted_to["gpu"] == gpu and gpu.upper() in committed.fitted_to["short"]
    assert {"mae_in_sample", "mae_leave_one_workload_out", "mae_leave_one_pair_out"} <= set(committed.fit)
    report = (folder / "calibrated" / "README.md").read_text()
    assert f"{committed.fit['mae_leave_one_workload_out']:.3f} for a workload left out" in report


def test_a_table_whose_pairs_all_share_one_workload_is_refitted_with_a_fold_for_every_other(tmp_path: Path) -> None:
    """A campaign cut off early measures one workload beside each of the others: that one has no fold."""
    pair = read_pair_table(H100 / "pair.csv")
    star = pair[(pair["model1"] == "ResNet18") & (pair["model2"] != "ResNet18") & (pair["status"] == "ok")]
    shutil.copy(H100 / "single.csv", tmp_path / "single.csv")
    shutil.copy(H100 / "metadata.json", tmp_path / "metadata.json")
    star.to_csv(tmp_path / "pair.csv", index=False)
    report = fit_measured(tmp_path)
    assert sorted(f.workload for f in report.folds) == sorted(star["model2"])
    assert report.data["in_every_pair"] == ["ResNet18"]
    assert "ResNet18 is in every measured pair" in refit_markdown(report)


def test_a_cluster_of_h200s_answers_from_the_h200_measurements_first() -> None:
    if "h200" not in committed_measurements():
        pytest.skip("no H200 tables committed")
    model = load_colocation_model("default", ["h200"])
    assert isinstance(model, MeasuredFirst) and model.provenance["gpu"] == "h200"
    measured = read_pair_table(committed_measurements()["h200"] / "pair.csv")
    row = measured[(measured["status"] == "ok") & (measured["model1"] != measured["model2"])].iloc[0]
    a, b = Workload(row.model1, row.dataset1, 32, 0), Workload(row.model2, row.dataset2, 32, 0)
    assert model.pair_speeds(a, 1, b, 1) == pytest.approx((row.speed1, row.speed2))
    assert load_colocation_model("default", ["h100"]).pair_speeds(a, 1, b, 1) != pytest.approx(
        (row.speed1, row.speed2))


def test_no_colocation_module_imports_another_inside_a_function() -> None:
    """Function-local imports between these modules were how a cycle hid (analytic <-> calibrated)."""
    folder = Path(__file__).resolve().parents[2] / "simcluster" / "colocation"
    hidden = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("simcluster.colocation"):
                        hidden.append(f"{path.name}:{inner.lineno} {inner.module}")
    assert hidden == []


def test_a_cluster_of_several_gpu_types_answers_each_from_its_own_model() -> None:
    model = load_colocation_model("default", ["h100", "h200", "v100"])
    assert isinstance(model, PerGpuType) and model.provenance["kind"] == "per-gpu-type"
    h100, h200, v100 = model.on("h100"), model.on("h200"), model.on("v100")
    assert (h100.provenance["gpu"], h200.provenance["gpu"], v100.provenance["kind"]) == ("h100", "h200", "calibrated")
    measured = read_pair_table(committed_measurements()["h200"] / "pair.csv").set_index(["model1", "model2"])
    on_h200 = measured.loc[("ResNet18", "VGG")]
    assert h200.pair_speeds(R18, 1, VGG, 1) == pytest.approx((on_h200.speed1, on_h200.speed2))
    assert h100.pair_speeds(R18, 1, VGG, 1) != pytest.approx((on_h200.speed1, on_h200.speed2))
    each = [m.pair_speeds(R18, 1, VGG, 1) for m in (h100, h200, v100)]
    assert model.pair_speeds(R18, 1, VGG, 1) == pytest.approx(tuple(sum(s) / 3 for s in zip(*each)))
    assert model.pair_speeds(R18, 1, VGG, 1, gpu_types=("h200",)) == h200.pair_speeds(R18, 1, VGG, 1)
    assert model.memory_mib(R18, 1) == max(m.memory_mib(R18, 1) for m in (h100, h200, v100))
    assert load_colocation_model("default", ["h100"]).provenance["gpu"] == "h100"  # one type: as before
    assert not isinstance(load_colocation_model("default", ["v100", "k80"]), PerGpuType)  # nobody measured


def test_on_a_mixed_cluster_a_pair_slows_down_as_measured_on_the_gpu_it_shares() -> None:
    model = load_colocation_model("default", ["h100", "h200"])
    cluster = Cluster(parse_cluster("h100:8,h200:8"), 8)
    speed = SpeedModel(colocation=model)
    vc = next(iter(cluster.vcs.values()))
    for gpu_type in ("h100", "h200"):
        node = next(n for n in vc.nodes if n.gpu_type == gpu_type)
        a = Job(index=0, job_id="a", vc=vc.name, gpu_num=1, submit_time=0, duration=10, workload=R18)
        b = Job(index=1, job_id="b", vc=vc.name, gpu_num=1, submit_time=0, duration=10, workload=VGG)
        a.allocation = ((node, node.attach(a, [0])),)
        b.allocation = ((node, node.attach(b, [0])),)  # the same GPU
        expected = model.on(gpu_type).pair_speeds(R18, 1, VGG, 1)
        assert speed.of(a)[0] == pytest.approx(expected[0]) and speed.of(b)[0] == pytest.approx(expected[1])


def test_a_sharing_run_on_a_mixed_cluster_reports_each_types_answers() -> None:
    trace = measured_workloads_trace((32,))
    summary = simulate(trace, SimConfig(policy="srtf-wrs", cluster="h100:8,h200:8")).summary
    answered = summary["colocation_answered_by"]
    assert set(answered) <= {"measured (h100)", "refit (h100)", "measured (h200)", "refit (h200)"}
    assert answered["refit (h100)"]["lookups"] > 0 and answered["refit (h200)"]["lookups"] > 0
    assert math.isclose(sum(a["share"] for a in answered.values()), 1.0, abs_tol=1e-3)
    assert summary["colocation_provenance"]["kind"] == "per-gpu-type"
    assert set(summary["colocation_provenance"]["types"]) == {"h100", "h200"}
