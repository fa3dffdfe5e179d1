"""The table format shared by profiler and simulator: what it accepts and how it complains."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from simcluster.colocation import (
    PAIR_COLUMNS,
    SINGLE_COLUMNS,
    TableError,
    read_pair_table,
    read_single_table,
    write_table,
)

SINGLE_CSV = """\
model,dataset,batchsize,amp,gpu_num,iters_per_s,samples_per_s,gpu_util,gmem_util,gmem,torch_peak_mem,status,error
ResNet18,CIFAR-10,32,0,1,20.5,656.0,80.1,40.2,2000,1800.5,ok,
BERT,SQuAD,128,1,1,,,,,,,failed,out of memory: CUDA out of memory
ResNet18,CIFAR-10,32,1,2,15.0,960.0,,,1500,1500,ok,
"""

PAIR_CSV = """\
model1,dataset1,batchsize1,amp1,gpu_num1,model2,dataset2,batchsize2,amp2,gpu_num2,iters_per_s1,iters_per_s2,speed1,speed2,gpu_util,gmem_util,gmem,status,error
ResNet18,CIFAR-10,32,0,1,LSTM,Wikitext2,64,1,1,10.0,30.0,0.5,0.9,95,50,6000,ok,
ResNet18,CIFAR-10,32,0,1,BERT,SQuAD,32,0,1,,,,,,,,failed,job 2 (BERT): out of memory
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_valid_single_table_loads_with_its_types(tmp_path: Path) -> None:
    table = read_single_table(write(tmp_path, "single.csv", SINGLE_CSV))
    assert list(table.columns) == SINGLE_COLUMNS
    assert table["batchsize"].dtype == "int64" and table["amp"].dtype == "int64"
    assert table["iters_per_s"].dtype == "float64"
    assert table.loc[0, "error"] == "" and table.loc[1, "status"] == "failed"
    assert math.isnan(table.loc[2, "gpu_util"])


def test_a_valid_pair_table_loads(tmp_path: Path) -> None:
    table = read_pair_table(write(tmp_path, "pair.csv", PAIR_CSV))
    assert list(table.columns) == PAIR_COLUMNS
    assert table.loc[0, "speed1"] == 0.5
    assert table.loc[1, "error"].startswith("job 2")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_what_is_written_reads_back_the_same(tmp_path: Path, suffix: str) -> None:
    original = read_single_table(write(tmp_path, "in.csv", SINGLE_CSV))
    path = tmp_path / f"out{suffix}"
    write_table(original, path)
    pd.testing.assert_frame_equal(read_single_table(path), original)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "single.csv", SINGLE_CSV)
    pd.read_csv(path).drop(columns=["torch_peak_mem"]).to_csv(path, index=False)
    with pytest.raises(TableError, match=r"single\.csv: missing column\(s\) torch_peak_mem"):
        read_single_table(path)


@pytest.mark.parametrize(
    ("bad", "good", "message"),
    [
        ("20.5,656.0", "fast,656.0", r"row 1, field 'iters_per_s': not a number: 'fast'"),
        ("20.5,656.0", "-20.5,656.0", r"row 1, field 'iters_per_s': expected a positive number"),
        ("32,1,2", "32,3,2", r"row 3, field 'amp': expected 0 or 1, got 3"),
        ("32,1,2", "32.5,1,2", r"row 3, field 'batchsize': expected a positive integer, got 32.5"),
        ("80.1,40.2", "180.1,40.2", r"row 1, field 'gpu_util': expected a percentage"),
        (
            ",failed,out of memory: CUDA out of memory",
            ",failed,",
            r"row 2, field 'error': a failed row must say why",
        ),
        (",ok,\nBERT", ",done,\nBERT", r"row 1, field 'status': expected 'ok' or 'failed', got 'done'"),
        ("ok,\nBERT", "ok,\nResNet18,CIFAR-10,32,0,1,20.5,656.0,,,,,ok,\nBERT", r"row 2: duplicate key"),
    ],
)
def test_a_bad_value_is_reported_with_file_row_and_field(
    tmp_path: Path, bad: str, good: str, message: str
) -> None:
    assert bad in SINGLE_CSV
    path = write(tmp_path, "single.csv", SINGLE_CSV.replace(bad, good, 1))
    with pytest.raises(TableError, match=message) as caught:
        read_single_table(path)
    assert str(path) in str(caught.value)


def test_an_ok_row_needs_its_throughput(tmp_path: Path) -> None:
    path = write(tmp_path, "single.csv", SINGLE_CSV.replace("20.5,656.0", ",656.0"))
    with pytest.raises(TableError, match=r"row 1, field 'iters_per_s': missing"):
        read_single_table(path)


@pytest.mark.parametrize("speed", ["0", "-0.5", "2.5"])
def test_a_normalized_speed_must_lie_in_zero_to_two(tmp_path: Path, speed: str) -> None:
    path = write(tmp_path, "pair.csv", PAIR_CSV.replace(",0.5,0.9,", f",{speed},0.9,"))
    with pytest.raises(TableError, match=r"row 1, field 'speed1': expected a normalized speed in \(0, 2\]"):
        read_pair_table(path)


def test_writing_a_broken_table_fails_and_keeps_the_old_file(tmp_path: Path) -> None:
    path = write(tmp_path, "single.csv", SINGLE_CSV)
    broken = read_single_table(path)
    broken.loc[0, "amp"] = 7
    with pytest.raises(TableError, match="'amp'"):
        write_table(broken, path)
    assert path.read_text() == SINGLE_CSV


def test_a_frame_of_neither_kind_or_an_unknown_extension_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TableError, match="neither a single-job table"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "x.csv")
    with pytest.raises(TableError, match="unknown table format '.txt'"):
        read_single_table(tmp_path / "x.txt")
    with pytest.raises(TableError, match="no such file"):
        read_pair_table(tmp_path / "absent.csv")


def test_a_repeat_table_holds_a_pair_several_times_but_each_repetition_once(tmp_path: Path) -> None:
    from simcluster.colocation import REPEAT_COLUMNS, read_repeat_table

    pair = read_pair_table(write(tmp_path, "pair.csv", PAIR_CSV)).iloc[:1]
    repeats = pd.concat([pair.assign(repeat=1), pair.assign(repeat=2)], ignore_index=True)
    write_table(repeats, tmp_path / "pair_repeats.csv")
    table = read_repeat_table(tmp_path / "pair_repeats.csv")
    assert list(table.columns) == REPEAT_COLUMNS and list(table["repeat"]) == [1, 2]
    with pytest.raises(TableError, match=r"row 2: duplicate key .*repeat=1"):
        write_table(pd.concat([pair.assign(repeat=1)] * 2, ignore_index=True), tmp_path / "again.csv")
    with pytest.raises(TableError, match="field 'repeat': expected a positive integer, got 0"):
        write_table(pair.assign(repeat=0), tmp_path / "zero.csv")
