"""The scaling models of elastic jobs agree with the public measurements they are built from.

Expected values are computed here from the data files' own rows (the shared data's ``pollux/apps`` and
``elasticflow/throughputs_A100``), not from the code under test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simcluster.elastic.elasticflow_model import ElasticFlowThroughputs, load_elasticflow_throughputs
from simcluster.elastic.pollux_apps import (
    OutOfMeasuredRange,
    canonical_layout,
    load_pollux_app,
    load_pollux_apps,
    statistical_gain,
)
from simcluster.errors import TraceError
from simcluster.paths import shared_data_dir


def shared(relative: str) -> Path:
    path = shared_data_dir() / relative
    if not path.exists():
        pytest.skip(f"reference data not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    return path


@pytest.fixture(scope="module")
def apps_dir() -> Path:
    return shared("pollux/apps")


@pytest.fixture(scope="module")
def apps(apps_dir: Path):  # type: ignore[no-untyped-def]
    return load_pollux_apps(apps_dir)


def test_a_measured_placement_is_read_and_interpolated_between_its_batches(apps, apps_dir: Path) -> None:
    rows = pd.read_csv(apps_dir / "cifar10" / "placements.csv")
    one = rows[rows.placement == 1].sort_values("local_bsz")
    first, second = one.iloc[0], one.iloc[1]
    assert apps["cifar10"].step_times((1,), first.local_bsz) == (first.step_time, first.sync_time)
    middle = (first.local_bsz + second.local_bsz) / 2
    step, sync = apps["cifar10"].step_times((1,), middle)
    assert step == pytest.approx((first.step_time + second.step_time) / 2, rel=1e-12)
    assert sync == pytest.approx((first.sync_time + second.sync_time) / 2, rel=1e-12)


def test_a_placement_is_looked_up_by_its_smallest_rotation(apps, apps_dir: Path) -> None:
    rows = pd.read_csv(apps_dir / "cifar10" / "placements.csv")
    row = rows[rows.placement == 132].iloc[0]
    for layout in ((1, 3, 2), (2, 1, 3), (3, 2, 1), (0, 2, 1, 3)):
        assert apps["cifar10"].step_times(layout, row.local_bsz) == (row.step_time, row.sync_time)
    assert canonical_layout((2, 1, 3)) == (1, 3, 2)
    assert (1, 2, 1, 2) != canonical_layout((1, 1, 2, 2))  # 1212 and 1122 are different placements


def test_a_large_allocation_is_read_from_the_scalability_rows(apps, apps_dir: Path) -> None:
    row = pd.read_csv(apps_dir / "cifar10" / "scalability.csv").iloc[0]  # 6 nodes, 6 GPUs
    assert (row.num_nodes, row.num_replicas) == (6, 6)
    step, sync = apps["cifar10"].step_times((1,) * 6, row.local_bsz)
    assert step == pytest.approx(row.step_time, rel=1e-9)
    assert sync == pytest.approx(row.sync_time, rel=1e-9)


def test_a_batch_off_the_measured_grid_is_an_error_naming_the_range_or_is_clamped_when_asked(apps) -> None:
    with pytest.raises(OutOfMeasuredRange, match=r"cifar10.*2000.*32\.\.1024"):
        apps["cifar10"].step_times((1,), 2000)
    assert apps["cifar10"].step_times((1,), 2000, clamp=True) == apps["cifar10"].step_times((1,), 1024)
    with pytest.raises(OutOfMeasuredRange, match="no measurements"):
        apps["cifar10"].step_times((4,) * 5, 5000)


def test_gradient_statistics_are_interpolated_between_the_validated_batches(apps, apps_dir: Path) -> None:
    low = pd.read_csv(apps_dir / "cifar10" / "validation-512.csv")
    high = pd.read_csv(apps_dir / "cifar10" / "validation-1024.csv")
    weight = (1000 - 512) / (1024 - 512)
    sqr, var = apps["cifar10"].grad_stats(1000, 5)
    assert sqr == pytest.approx(low.grad_sqr[5] + weight * (high.grad_sqr[5] - low.grad_sqr[5]), rel=1e-12)
    assert var == pytest.approx(low.grad_var[5] + weight * (high.grad_var[5] - low.grad_var[5]), rel=1e-12)
    assert apps["cifar10"].gain(1000, 5) == pytest.approx((var + sqr) / (var / (1000 / 128) + sqr))
    assert apps["cifar10"].gain(128, 5) == 1.0


def test_batches_and_epochs_outside_the_validation_runs_are_errors(apps) -> None:
    with pytest.raises(OutOfMeasuredRange, match=r"total batch 64 is outside the validated 128\.\.4096"):
        apps["cifar10"].grad_stats(64, 0)
    with pytest.raises(OutOfMeasuredRange, match="epoch 100"):
        apps["cifar10"].grad_stats(128, 100)


def test_progress_is_counted_in_steps_at_the_smallest_batch(apps, apps_dir: Path) -> None:
    runs = [pd.read_csv(p) for p in sorted((apps_dir / "cifar10").glob("validation-*.csv"))]
    assert apps["cifar10"].total_progress == min(r.progress[99] for r in runs)
    assert apps["cifar10"].epoch_progress(0) == 0.0
    assert apps["cifar10"].epoch_at(5000) == max(int(np.searchsorted(r.progress, 5000, "right")) for r in runs)


def test_each_application_runs_as_many_epochs_as_its_files_hold_and_yolov3_is_capped_at_8_per_gpu(apps) -> None:
    assert {n: a.max_epochs for n, a in apps.items()} == {
        "bert": 2, "cifar10": 100, "deepspeech2": 80, "imagenet": 90, "ncf": 10, "yolov3": 50}
    assert apps["yolov3"].max_local_bsz == 8
    ncf = apps["ncf"]
    assert (ncf.init_batch_size, ncf.max_batch_size, ncf.min_local_bsz, ncf.max_local_bsz) == (256, 32768, 32, 32768)


def test_a_fixed_batch_is_split_as_the_authors_simulator_splits_it(apps) -> None:
    assert apps["cifar10"].fixed_batch(2048, 6) == (342, 0)
    assert apps["ncf"].fixed_batch(32768, 1) == (16384, 1)  # one GPU above the starting batch accumulates
    assert apps["cifar10"].fixed_batch(128, 1) == (128, 0)
    assert apps["yolov3"].fixed_batch(64, 2) == (8, 3)  # 32 per GPU, 8 at a time


def test_goodput_is_gain_over_the_time_of_a_step_and_its_accumulation(apps) -> None:
    app = apps["cifar10"]
    step, sync = app.step_times((2, 2), 256)
    batch = 4 * 256 * 2
    assert app.goodput((2, 2), 256, 1, 3) == pytest.approx(app.gain(batch, 3) / (step + (step - sync)))


def test_the_run_time_of_the_last_epoch_is_its_progress_over_its_goodput(apps) -> None:
    app = apps["cifar10"]
    last = app.max_epochs - 1
    expected = (app.epoch_progress(last + 1) - app.epoch_progress(last)) / app.goodput((4,), 128, 0, last)
    assert app.run_time((4,), 128, 0, from_progress=app.epoch_progress(last)) == pytest.approx(expected)


def test_the_statistical_gain_is_one_at_the_starting_batch_and_at_most_the_scale() -> None:
    for sqr, var in ((1.0, 0.0), (1.0, 3.0), (0.2, 9.0)):
        assert statistical_gain(sqr, var, 1.0) == pytest.approx(1.0)
        for scale in (2.0, 8.0, 32.0):
            assert 1.0 <= statistical_gain(sqr, var, scale) <= scale + 1e-12


def test_a_bad_measurement_file_is_an_error_naming_its_line_and_field(tmp_path: Path, apps_dir: Path) -> None:
    folder = tmp_path / "cifar10"
    folder.mkdir()
    for path in (apps_dir / "cifar10").iterdir():
        (folder / path.name).write_text(path.read_text())
    lines = (folder / "placements.csv").read_text().splitlines()
    lines[3] = lines[3].replace(lines[3].split(",")[2], "fast")
    (folder / "placements.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"placements.csv, line 4, field 'step_time': not a finite number"):
        load_pollux_app(folder)
    with pytest.raises(ValueError, match="unknown application setting"):
        load_pollux_app(apps_dir / "cifar10", max_epoch=3)


# ----------------------------------------------------------------------------- ElasticFlow
@pytest.fixture(scope="module")
def curves() -> ElasticFlowThroughputs:
    return load_elasticflow_throughputs(shared("elasticflow/throughputs_A100"))


def test_elasticflow_rates_are_the_tables_cells(curves: ElasticFlowThroughputs) -> None:
    table = pd.read_csv(shared("elasticflow/throughputs_A100/resnet50.csv"), index_col=0)
    for batch in table.index:
        for gpus in table.columns:
            assert curves.rate("resnet50", int(batch), int(gpus)) == table.loc[batch, gpus]


def test_a_blank_cell_is_no_measurement_and_counts_are_never_interpolated(curves: ElasticFlowThroughputs) -> None:
    assert curves.levels("deepspeech2", 32) == [1, 2, 4, 8, 16, 32]  # its 64-GPU cell is blank
    with pytest.raises(OutOfMeasuredRange, match="no measurement on 64 GPUs"):
        curves.rate("deepspeech2", 32, 64)
    with pytest.raises(OutOfMeasuredRange, match="no measurement on 3 GPUs"):
        curves.rate("resnet50", 64, 3)
    with pytest.raises(OutOfMeasuredRange, match="global batch 512"):
        curves.rate("resnet50", 512, 1)


def test_the_gpu_cap_follows_the_artifact_for_elasticflow_and_the_measurements_for_others(
        curves: ElasticFlowThroughputs) -> None:
    assert curves.max_gpus("gpt2", 128, rule="elasticflow") == 16
    assert curves.max_gpus("bert", 64, rule="elasticflow") == 8
    assert curves.max_gpus("vgg16", 128, rule="elasticflow") == 64
    assert curves.max_gpus("gpt2", 128) == 64
    assert curves.max_gpus("deepspeech2", 32) == 32
    assert curves.next_level("bert", 64, 2, 8) == 4 and curves.next_level("bert", 64, 8, 8) == 8
    assert curves.level_below("bert", 64, 5, 8) == 4 and curves.level_below("bert", 64, 1, 8) == 0


def test_a_bad_throughput_table_is_an_error_naming_the_cell(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("global_batch_size,1,2\n64,1.5,x\n")
    with pytest.raises(TraceError, match=r"m.csv, line 2, field '2': not a finite number: 'x'"):
        load_elasticflow_throughputs(tmp_path)
    (tmp_path / "m.csv").write_text("batch,1,2\n64,1.5,2\n")
    with pytest.raises(TraceError, match="global_batch_size"):
        load_elasticflow_throughputs(tmp_path)
