"""The topology study (``lucid-sim topology``): placements × topology requests on one topology and trace, over
replicas, with what spanning cost each."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.experiments.runs import load_trace_arg
from simcluster.experiments.topology import run_figures, topology_placements, topology_study
from simcluster.paths import REPO_ROOT
from simcluster.placement import PLACEMENTS
from simcluster.settings.fields import ConfigError

# 8 nodes: 2 blocks of 2 racks of 2 nodes (a rack holds 16 GPUs, the largest job of the trace below)
TOPOLOGY = "node,block,rack\n" + "".join(f"h{i},b{i // 4},r{i // 2}\n" for i in range(8))
TRACE = "synth:jobs=200,nodes=8,vcs=1,sizes=pow2:16,arrivals=poisson,load=0.8,seed=3"
SLOWDOWN = "block=0.5,rack=0.2,node=0.05"


@pytest.fixture
def topology(tmp_path):
    path = tmp_path / "topo.csv"
    path.write_text(TOPOLOGY)
    return path


def study(topology, **options):
    return topology_study(TRACE, topology, **{"placements": ["consolidate", "tas-best-fit"], "slowdown": SLOWDOWN,
                                              "replicas": 2, **options})


def test_the_study_has_a_row_per_allowed_combination_and_notes_the_refused_ones(topology):
    found = study(topology)
    assert found.table[["placement", "request"]].values.tolist() == [
        ["consolidate", "none"], ["tas-best-fit", "none"], ["tas-best-fit", "preferred:rack"],
        ["tas-best-fit", "required:rack"]]
    assert found.notes == [("consolidate with preferred:rack, required:rack: left out (consolidate does not read "
                            "topology requests)")]
    assert (found.table["replicas"] == 2).all() and len(found.runs) == 4 * 2
    assert found.settings["baseline"] == "consolidate none" and found.settings["perturb"] == "seeds"


def test_a_required_level_is_never_spanned_and_a_preferred_one_seldom(topology):
    rows = study(topology).table.set_index("request")
    required = rows.loc["required:rack"]
    assert required["spanning_rack_high"] == 0 and required["spanning_block_high"] == 0
    anywhere = rows[rows["placement"] == "tas-best-fit"].loc["none"]
    assert anywhere["spanning_rack_mean"] > 0  # (else the test would show nothing)
    assert rows.loc["preferred:rack", "spanning_rack_mean"] <= anywhere["spanning_rack_mean"]


def test_a_required_level_some_job_can_never_fit_in_is_left_out_saying_why(topology):
    found = study(topology, placements=["tas-best-fit"], requests="none,required:node")
    assert found.table["request"].tolist() == ["none"]
    assert len(found.notes) == 1
    assert found.notes[0].startswith("tas-best-fit with required:node: left out (refused: job ")
    assert "can never lie within one node (required)" in found.notes[0]


def test_every_interval_holds_its_mean_and_the_baseline_differs_from_itself_by_nothing(topology):
    table = study(topology).table
    for figure in ("avg_jct", "avg_queue", "gpu_utilization", "lost_gpu_hours", "spanning_rack"):
        assert (table[f"{figure}_low"] <= table[f"{figure}_mean"] + 1e-9).all()
        assert (table[f"{figure}_mean"] <= table[f"{figure}_high"] + 1e-9).all()
    assert table.loc[0, ["jct_change_mean", "jct_change_low", "jct_change_high"]].tolist() == [0, 0, 0]


def test_the_gpu_time_lost_to_spanning_is_what_the_jobs_held_beyond_their_work(topology):
    trace = load_trace_arg(TRACE)
    result = simulate(trace, SimConfig(topology=str(topology), topology_slowdown=SLOWDOWN, placement="consolidate"))
    jobs = result.jobs
    beyond = float((jobs["gpu_num"] * (jobs["busy_time"] - jobs["duration"])).sum())
    figures = run_figures(result.summary, jobs)
    assert beyond > 0
    assert figures["lost_gpu_hours"] * 3600 == pytest.approx(beyond)
    assert figures["lost_share"] == pytest.approx(beyond / float((jobs["gpu_num"] * jobs["busy_time"]).sum()))


def test_the_default_placements_are_consolidate_and_every_topology_aware_one():
    aware = [name for name in PLACEMENTS.names() if getattr(PLACEMENTS.get(name), "topology_aware", False)]
    assert "kueue-tas" in aware
    assert topology_placements() == ["consolidate", *aware]


def test_bad_input_is_refused_before_any_run(topology):
    with pytest.raises(ConfigError, match="--topology-slowdown: no level 'row'"):
        study(topology, slowdown="row=1")
    with pytest.raises(ConfigError, match="--requests: no level 'row'"):
        study(topology, requests="none,preferred:row")
    with pytest.raises(ValueError, match="unknown placement 'no-such-placement'"):
        study(topology, placements=["no-such-placement"])
    with pytest.raises(ValueError, match="--replicas"):
        study(topology, replicas=1)


def test_a_process_pool_gives_the_same_table_as_one_process(topology):
    one = study(topology, placements=["tas-best-fit"], requests="none,required:rack")
    pool = study(topology, placements=["tas-best-fit"], requests="none,required:rack", workers=2)
    assert one.table.equals(pool.table)


def lucid_sim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simcluster.cli", *args], capture_output=True, text=True,
                          check=False, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def test_the_command_prints_one_json_document_and_writes_the_grid(topology, tmp_path):
    done = lucid_sim("topology", "--topology", str(topology), "--trace", TRACE, "--topology-slowdown", SLOWDOWN,
                     "--placements", "consolidate,tas-best-fit", "--replicas", "2", "--workers", "1",
                     "--out", str(tmp_path / "study"), "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # (one document: anything before or after it is refused)
    assert [(row["placement"], row["request"]) for row in document["rows"]] == [
        ("consolidate", "none"), ("tas-best-fit", "none"), ("tas-best-fit", "preferred:rack"),
        ("tas-best-fit", "required:rack")]
    assert document["notes"] and "consolidate does not read topology requests" in document["notes"][0]
    assert document["written"] == [str(tmp_path / "study" / name) for name in ("topology.csv", "topology_runs.csv")]
    assert len((tmp_path / "study" / "topology.csv").read_text().splitlines()) == 1 + 4


def test_the_command_prints_the_tables_and_the_notes(topology):
    from typer.testing import CliRunner

    from simcluster.cli import app

    result = CliRunner().invoke(app, ["topology", "--topology", str(topology), "--trace", TRACE, "--topology-slowdown",
                                      SLOWDOWN, "--placements", "consolidate,tas-best-fit", "--requests",
                                      "none,required:node", "--replicas", "2", "--workers", "1"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert all(word in text for word in ("JCT", "queue", "util", "lost", "spanning", "rack"))  # (headers may wrap)
    assert "note: tas-best-fit with required:node: left out (refused: job" in text


def test_the_command_names_a_bad_option_and_exits_with_an_error(topology):
    done = lucid_sim("topology", "--topology", str(topology), "--trace", TRACE, "--requests", "sometimes:rack")
    assert done.returncode != 0
    assert "--requests: expected required:LEVEL or preferred:LEVEL, got 'sometimes:rack'" in done.stderr
