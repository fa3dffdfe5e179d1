"""``lucid-profile`` as a user meets it: help, plans, refusals, and a real tiny CPU run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from profiler.cli import app
from simcluster.colocation import read_single_table

runner = CliRunner()
QUICK = [
    "--device",
    "cpu",
    "--time-limit",
    "2",
    "--window",
    "0.25",
    "--cv-windows",
    "3",
    "--warmup-steps",
    "2",
]


def test_help_names_both_sweeps() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "single" in result.output and "pair" in result.output


def test_the_workloads_command_lists_all_fourteen() -> None:
    result = runner.invoke(app, ["workloads"])
    assert result.exit_code == 0
    for name in ("ResNet18", "BERT", "TD3", "BipedalWalker"):
        assert name in result.output


def test_a_dry_run_lists_the_plan_with_an_estimate_and_runs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "single.csv"
    result = runner.invoke(
        app, ["single", "--dry-run", "-w", "ResNet18,BERT", "-b", "32,64", "--device", "cpu", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("to run") == 8  # 2 workloads x 2 batch sizes x AMP on/off
    assert "8 run(s) on cpu (tiny sizes)" in result.output
    assert not out.exists()


def test_a_pair_dry_run_counts_the_solo_runs_it_needs(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "pair",
            "--dry-run",
            "-w",
            "NeuMF,TD3",
            "-b",
            "8",
            "--amp",
            "off",
            "--device",
            "cpu",
            "-o",
            str(tmp_path / "p.csv"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("to run") == 3  # NeuMF+NeuMF, NeuMF+TD3, TD3+TD3
    assert "2 solo run(s) missing" in result.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["single", "-w", "ResNet-18"],
            "unknown workload 'ResNet-18'; valid workloads: ResNet18, MobileNetV2",
        ),
        (["single", "-b", "32,big"], "'big' is not a positive integer"),
        (["single", "-o", "table.txt"], "must end in .csv or .parquet"),
        (["single", "--time-limit", "0.5", "--window", "1"], "must be at least one window"),
        (["pair", "-w", "BERT", "-b", "32", "--amp", "off", "--no-include-self"], "no pairs"),
        (["single", "--amp", "maybe"], "maybe"),
    ],
)
def test_bad_input_is_refused_with_a_message_naming_it(arguments: list[str], message: str) -> None:
    result = runner.invoke(app, [*arguments, "--device", "cpu", "--dry-run"])
    assert result.exit_code != 0
    assert message in " ".join(result.output.split())


def test_a_tiny_cpu_sweep_writes_a_table_and_metadata_then_resumes(tmp_path: Path) -> None:
    out = tmp_path / "single.csv"
    arguments = [
        "single",
        "-w",
        "NeuMF",
        "-b",
        "4",
        "--amp",
        "off",
        "--cpu-threads",
        "1",
        "-o",
        str(out),
        *QUICK,
    ]

    result = runner.invoke(app, arguments)

    assert result.exit_code == 0, result.output
    assert "warning" in result.output  # no GPU utilization on a CPU run
    table = read_single_table(out)
    assert list(table["model"]) == ["NeuMF"] and table.loc[0, "status"] == "ok"
    metadata = json.loads((tmp_path / "metadata.json").read_text())["tables"]["single.csv"]
    assert metadata["environment"]["device"] == "cpu" and metadata["environment"]["torch"]
    assert metadata["settings"]["measure"]["time_limit_s"] == 2.0

    again = runner.invoke(app, arguments)
    assert again.exit_code == 0, again.output
    assert "skipped 1" in again.output


def test_a_table_measured_elsewhere_is_not_extended(tmp_path: Path) -> None:
    out = tmp_path / "single.csv"
    out.write_text(
        "model,dataset,batchsize,amp,gpu_num,iters_per_s,samples_per_s,gpu_util,gmem_util,gmem,torch_peak_mem,status,error\n"
    )
    (tmp_path / "metadata.json").write_text(
        json.dumps(
            {"tables": {"single.csv": {"environment": {"device_name": "NVIDIA RTX 3090", "size": "full"}}}}
        )
    )
    result = runner.invoke(app, ["single", "-w", "NeuMF", "-b", "4", "--amp", "off", "-o", str(out), *QUICK])
    assert result.exit_code != 0
    assert "NVIDIA RTX 3090" in " ".join(result.output.split())


def test_a_broken_existing_table_is_named_instead_of_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "single.csv"
    out.write_text("model,dataset\nResNet18,CIFAR-10\n")
    result = runner.invoke(app, ["single", "-w", "NeuMF", "-o", str(out), "--device", "cpu"])
    assert result.exit_code != 0
    assert "missing column" in " ".join(result.output.split())
    assert out.read_text() == "model,dataset\nResNet18,CIFAR-10\n"


def test_help_names_the_campaign_and_its_plan() -> None:
    result = runner.invoke(app, ["--help"])
    assert "campaign" in result.output and "plan" in result.output
    result = runner.invoke(app, ["campaign", "--help"])
    assert result.exit_code == 0 and "--minutes" in result.output and "--max-rows" in result.output


def test_plan_writes_the_issue_plan_of_a_job_log_and_campaign_dry_runs_it(tmp_path: Path) -> None:
    log = tmp_path / "jobs.csv"
    log.write_text("job_id,model,batchsize,amp\n1,NeuMF,64,1\n2,NeuMF,128,0\n3,TD3,32,0\n4,TD3,32,0\n")
    plan = tmp_path / "plan.toml"
    result = runner.invoke(app, ["plan", "--trace", str(log), "-o", str(plan), "--tables", str(tmp_path / "t{gpu}")])
    assert result.exit_code == 0, result.output
    assert "the trace's configurations alone: 3" in result.output and "pairs at batch 32: 105" in result.output
    result = runner.invoke(app, ["campaign", str(plan), "--device", "cpu", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "the trace's configurations alone" in result.output and "repeatability" in result.output
    assert not (tmp_path / "tcpu").exists()  # a dry run writes nothing


def test_a_broken_plan_or_log_is_refused_with_what_is_wrong(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('[campaign]\nname = "x"\nout = "t"\n[[stage]]\nname = "s"\nsingles = ["Nothing,8,0"]\n')
    result = runner.invoke(app, ["campaign", str(plan), "--device", "cpu"])
    assert result.exit_code == 2 and "unknown workload 'Nothing'" in result.output
    log = tmp_path / "jobs.csv"
    log.write_text("job_id,model\n1,NeuMF\n")
    result = runner.invoke(app, ["plan", "--trace", str(log), "-o", str(plan)])
    assert result.exit_code == 2 and "cannot read model, batchsize and amp" in result.output
