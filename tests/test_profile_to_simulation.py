"""From the profiler's tables to a simulation that shares GPUs: the two halves of the product meet."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from profiler.cli import app as profile_app
from simcluster.cli import main as sim_main
from simcluster.colocation.analytic import ANALYTIC_SOURCE
from simcluster.colocation.loader import default_model
from simcluster.traces.synth import SynthSpec, save_trace, synthesize

QUICK = ["--device", "cpu", "--cpu-threads", "1", "--warmup-steps", "1", "--time-limit", "1", "--window", "0.25"]


def test_profiled_tables_drive_a_sharing_simulation(tmp_path: Path, capsys) -> None:
    tables = tmp_path / "cpu-profile"
    runner = CliRunner()
    for command in ("single", "pair"):
        result = runner.invoke(profile_app, [command, "-w", "NeuMF", "-b", "4", "--amp", "off",
                                             "-o", str(tables / f"{command}.csv"), *QUICK])
        assert result.exit_code == 0, result.output
    metadata = json.loads((tables / "metadata.json").read_text())
    assert metadata["measured"] is False  # a CPU run never replaces the default GPU tables

    trace = synthesize(SynthSpec(jobs=200, nodes=2, vcs=1, seed=3, load=1.5))
    trace.frame["model"], trace.frame["dataset"] = "NeuMF", "MovieLens"
    trace.frame["batchsize"], trace.frame["amp"] = 4, 0
    save_trace(trace, tmp_path / "trace")
    with pytest.raises(SystemExit) as exited:
        sim_main(["run", "--trace", str(tmp_path / "trace"), "--policy", "srtf-ars", "--colocation", str(tables),
                  "--out", str(tmp_path / "run"), "--json"])
    assert exited.value.code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["colocation"] == f"tables in {tables}"
    pair = pd.read_csv(tables / "pair.csv")
    if (pair["status"] == "ok").all():  # NeuMF with NeuMF at batch 4 was measured: every answer comes from it,
        # exactly (1-GPU jobs) or interpolated over GPU counts (which 1-GPU pairs form depends on the speeds)
        fallbacks = summary["colocation_fallbacks"]
        assert fallbacks["exact"] + fallbacks["interpolated"] > 0 and fallbacks["default"] == 0
    else:  # e.g. a busy machine made the CPU solo run so slow that "shared" looked > 2× faster:
        assert pair["error"].fillna("").str.len().gt(0).all()  # refused with a reason, answered by fallbacks
        assert sum(summary["colocation_fallbacks"].values()) > 0
    assert summary["jobs"] == 200 and summary["shared_gpu_fraction"] > 0


def test_the_default_model_ignores_tables_not_measured_on_a_gpu(tmp_path: Path) -> None:
    folder = tmp_path / "profiles" / "cpu"
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps({"measured": False}))
    analytic = Path(__file__).resolve().parents[1] / "traces" / "profiles" / "analytic"
    (tmp_path / "profiles" / "analytic").symlink_to(analytic)
    assert default_model(tmp_path / "profiles").source == ANALYTIC_SOURCE
