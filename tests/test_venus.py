"""End to end on the public Venus September trace (skips without ../shared/data)."""

from __future__ import annotations

import json

import pytest

from simcluster.cli import main

# The Lucid artifact's published fifo result on this trace (ASPLOS'23 artifact, consolidate placement).
LUCID_FIFO_AVG_JCT = 65_720


@pytest.mark.parametrize("policy", ["fifo", "sjf", "srtf", "tiresias", "qssf"])
def test_cli_runs_each_policy_on_venus(venus_sept, tmp_path, capsys, policy):
    out = tmp_path / policy
    extra = []
    if policy == "qssf":
        extra = ["--estimator", "file", "--estimates", str(venus_sept / "reference_estimates" / "qssf_lgb_priority.csv")]
    with pytest.raises(SystemExit) as exited:
        main(["run", "--trace", str(venus_sept), "--policy", policy, "--out", str(out), "--json", *extra])
    assert exited.value.code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["jobs"] == 23_859
    assert len(summary["per_vc"]) == 15
    assert (out / "jobs.csv").is_file()
    if policy == "fifo":
        assert summary["avg_jct"] == pytest.approx(LUCID_FIFO_AVG_JCT, rel=0.005)
    if policy in ("srtf", "tiresias"):
        assert summary["preemptions"] > 0
    if policy == "qssf":
        assert summary["estimator"] == "file" and summary["estimate_quality"]["jobs"] == 23_859
