"""Importers of Lucid's and Gavel's public tables: real files, tiny files, malformed files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from coloc_tables import gavel_file, lucid_folder

from simcluster.colocation import (
    PAIR_COLUMNS,
    SINGLE_COLUMNS,
    TableError,
    read_pair_table,
    read_single_table,
    write_table,
)
from simcluster.colocation.importers import (
    gavel_gpu_types,
    import_gavel,
    import_lucid,
    import_lucid_pairs,
    import_lucid_single,
    read_lucid_labels,
)

LUCID_SINGLE = """\
model,dataset,batchsize,amp,speed,gpu_util,gmem_util,gmem,label
ResNet18,CIFAR-10,32,0,1600.0,60.0,25.0,2300.0,0
ResNet18,CIFAR-10,64,1,3200.0,70.0,30.0,2600.0,1
LSTM,Wikitext2,64,0,6400.0,95.0,70.0,3900.0,2
"""

LUCID_PAIRS = """\
,model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,speed2,gpu_util,gmem_util,gmem
0,ResNet18,CIFAR-10,1,32,0,0.9,LSTM,Wikitext2,1,64,0,0.5,99.0,80.0,6200
1,ResNet18,CIFAR-10,1,64,1,1.05,ResNet18,CIFAR-10,1,32,0,0.8,90.0,50.0,4900
"""


def lucid_dir(tmp_path: Path, single: str = LUCID_SINGLE, pairs: str = LUCID_PAIRS) -> Path:
    (tmp_path / "single_data.csv").write_text(single)
    (tmp_path / "colocate_info.csv").write_text(pairs)
    return tmp_path


# ----------------------------------------------------------------------------- Lucid, tiny
def test_tiny_lucid_tables_convert(tmp_path: Path) -> None:
    single, pair = import_lucid(lucid_dir(tmp_path))
    assert list(single.columns) == SINGLE_COLUMNS and list(pair.columns) == PAIR_COLUMNS
    first = single.iloc[0]
    assert (first.gpu_num, first.samples_per_s, first.iters_per_s) == (1, 1600.0, 50.0)
    assert first.status == "ok" and math.isnan(first.torch_peak_mem)
    row = pair.iloc[0]
    assert (row.model1, row.batchsize1, row.model2, row.batchsize2) == ("ResNet18", 32, "LSTM", 64)
    assert row.speed1 == 0.9 and row.iters_per_s1 == pytest.approx(0.9 * 50.0)
    assert row.iters_per_s2 == pytest.approx(0.5 * 100.0)
    assert pair.iloc[1].speed1 == 1.05  # measured above 1 is kept as measured in the table
    # what the importer returns is a valid table for write_table and the readers
    write_table(pair, tmp_path / "pair.csv")
    write_table(single, tmp_path / "single.parquet")
    pd.testing.assert_frame_equal(read_pair_table(tmp_path / "pair.csv"), pair, check_dtype=False)
    assert len(read_single_table(tmp_path / "single.parquet")) == 3


def test_lucid_labels(tmp_path: Path) -> None:
    labels = read_lucid_labels(lucid_dir(tmp_path) / "single_data.csv")
    assert list(labels.columns) == ["model", "dataset", "batchsize", "amp", "gpu_num", "label"]
    assert labels["label"].tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    ("single", "pairs", "message"),
    [
        (
            LUCID_SINGLE.replace(",speed,", ",throughput,"),
            LUCID_PAIRS,
            r"single_data.csv: missing column\(s\) speed",
        ),
        (
            LUCID_SINGLE.replace("1600.0", "fast"),
            LUCID_PAIRS,
            r"single_data.csv, row 1, field 'speed': not a number",
        ),
        (LUCID_SINGLE.replace("1600.0", "-3"), LUCID_PAIRS, r"row 1, field 'speed': expected a positive"),
        (LUCID_SINGLE.replace(",64,1,", ",64,2,"), LUCID_PAIRS, r"row 2, field 'amp': expected 0 or 1"),
        (
            LUCID_SINGLE.replace(",32,0,", ",32.5,0,"),
            LUCID_PAIRS,
            r"row 1, field 'batchsize': expected an integer",
        ),
        (
            LUCID_SINGLE,
            LUCID_PAIRS.replace(",speed2,", ",spd2,"),
            r"colocate_info.csv: missing column\(s\) speed2",
        ),
        (
            LUCID_SINGLE,
            LUCID_PAIRS.replace(",0.5,", ",,"),
            r"colocate_info.csv, row 1, field 'speed2': missing",
        ),
        (LUCID_SINGLE, LUCID_PAIRS.replace(",0.5,", ",2.5,"), r"colocate_info.csv, row 1, field 'speed2'"),
        (
            LUCID_SINGLE,
            LUCID_PAIRS.replace("LSTM,Wikitext2,1,64", "LSTM,Wikitext2,1,128"),
            r"colocate_info.csv, row 1: job 2 LSTM,Wikitext2,128,0,1 has no row in the single table",
        ),
        (LUCID_SINGLE, "", r"colocate_info.csv: cannot be read"),
    ],
)
def test_malformed_lucid_tables_name_file_row_and_field(
    tmp_path: Path, single: str, pairs: str, message: str
) -> None:
    with pytest.raises(TableError, match=message):
        import_lucid(lucid_dir(tmp_path, single, pairs))


def test_missing_lucid_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="single_data.csv: no such file"):
        import_lucid_single(tmp_path / "single_data.csv")


# ----------------------------------------------------------------------------- Lucid, real
def test_real_lucid_tables() -> None:
    folder = lucid_folder()
    single, pair = import_lucid(folder)
    assert len(single) == 66 and len(pair) == 1388
    assert (single["gpu_num"] == 1).all() and (pair["status"] == "ok").all()
    raw = pd.read_csv(folder / "colocate_info.csv", index_col=0)
    assert pair["speed1"].tolist() == raw["speed1"].tolist()
    assert pair["gmem"].tolist() == raw["gmem"].astype(float).tolist()
    labels = read_lucid_labels(folder / "single_data.csv")
    assert set(labels["label"]) == {0, 1, 2} and len(labels) == 66
    again = import_lucid_pairs(folder / "colocate_info.csv")
    pd.testing.assert_frame_equal(again, pair)


# ----------------------------------------------------------------------------- Gavel, tiny
def gavel(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "throughputs.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


A = "('ResNet-18 (batch size 64)', 1)"
B = "('A3C', 1)"
C = "('Foo (batch size 8)', 1)"
TINY = {
    "v100": {
        A: {"null": 10.0, A: [6.0, 6.0], B: [8.0, 2.0], C: [0.0, 0.0]},
        B: {"null": 4.0, A: [2.0, 8.0], B: [3.0, 3.0]},
        C: {"null": 5.0, A: [0.0, 0.0]},
    },
    "k80": {A: {"null": 0.0}},
}


def test_tiny_gavel_converts(tmp_path: Path) -> None:
    single, pair = import_gavel(gavel(tmp_path, TINY), "v100")
    assert single[["model", "dataset", "batchsize", "amp", "gpu_num"]].values.tolist() == [
        ["ResNet-18", "CIFAR-10", 64, 0, 1],
        ["A3C", "Pong", 1, 0, 1],
        ["Foo", "Foo", 8, 0, 1],  # unknown job type: its own name as the data set
    ]
    assert single.iloc[0].samples_per_s == 640.0
    # A-A, A-B (once, though listed from both sides), A-C, B-B
    assert len(pair) == 4
    ab = pair[(pair.model1 == "ResNet-18") & (pair.model2 == "A3C")].iloc[0]
    assert (ab.speed1, ab.speed2, ab.iters_per_s1) == (0.8, 0.5, 8.0)
    ac = pair[pair.model2 == "Foo"].iloc[0]
    assert ac.status == "failed" and "cannot share" in ac.error and math.isnan(ac.speed1)
    write_table(pair, tmp_path / "pair.csv")
    assert len(read_pair_table(tmp_path / "pair.csv")) == 4


def test_gavel_job_that_cannot_run_alone(tmp_path: Path) -> None:
    single, pair = import_gavel(gavel(tmp_path, TINY), "k80")
    assert single.iloc[0].status == "failed" and "does not run on k80" in single.iloc[0].error
    assert pair.empty


def bad(**changes: object) -> dict:
    document = json.loads(json.dumps(TINY))
    for path, value in changes.items():
        gpu, job, partner = path.split("|")
        target = document[gpu][{"A": A, "B": B, "C": C}.get(job, job)]
        if value is None:
            del target[partner]
        else:
            target[{"A": A, "B": B, "C": C}.get(partner, partner)] = value
    return document


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", r"not valid JSON"),
        ([1, 2], r"expected an object of GPU types"),
        ({"v100": {"ResNet-18 (batch size 64)": {"null": 1.0}}}, r"bad job key"),
        ({"v100": {"('X', 0)": {"null": 1.0}}}, r"bad job key"),
        (bad(**{"v100|A|null": None}), r"expected an object with a \"null\""),
        (bad(**{"v100|A|B": [8.0]}), r"-> \('A3C', 1\): expected \[this job, partner\]"),
        (bad(**{"v100|A|B": [8.0, "x"]}), r"expected a throughput number"),
        (bad(**{"v100|A|B": [8.0, -2.0]}), r"non-negative finite throughput"),
        (bad(**{"v100|A|B": [8.0, 2.5]}), r"disagrees with the mirrored entry"),
        (bad(**{"v100|A|('Bar', 1)": [1.0, 1.0]}), r"partner job type has no entry"),
        (bad(**{"v100|A|A": [30.0, 30.0]}), r"exceed 2 x the solo ones"),
    ],
)
def test_malformed_gavel_names_file_and_key(tmp_path: Path, document: object, message: str) -> None:
    path = gavel(tmp_path, document)
    with pytest.raises(TableError, match=message) as caught:
        import_gavel(path, "v100")
    assert str(path) in str(caught.value)


def test_gavel_unknown_gpu_type_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(TableError, match="no GPU type 'a100'; available: v100, k80"):
        import_gavel(gavel(tmp_path, TINY), "a100")


# ----------------------------------------------------------------------------- Gavel, real
def test_real_gavel_tables() -> None:
    path = gavel_file()
    assert {"k80", "p100", "v100"} <= set(gavel_gpu_types(path))
    single, pair = import_gavel(path, "v100")
    assert len(single) == 83 and (single["status"] == "ok").all()
    assert set(single["gpu_num"]) == {1, 2, 4, 8}
    r18 = single[(single.model == "ResNet-18") & (single.batchsize == 64) & (single.gpu_num == 1)].iloc[0]
    assert r18.dataset == "CIFAR-10"
    ok = pair[pair.status == "ok"]
    assert len(ok) > 300 and (ok.speed1 <= 1.0 + 1e-9).all() and (ok.speed1 > 0).all()
    assert (pair.status == "failed").sum() > 0
    assert not pair.duplicated(["model1", "dataset1", "batchsize1", "gpu_num1",
                                "model2", "dataset2", "batchsize2", "gpu_num2"]).any()  # fmt: skip
    k80_single, _ = import_gavel(path, "k80")
    assert (k80_single.status == "failed").any()  # some jobs do not run on a K80
