"""The run's seam: a run is resolved once, features contribute through hooks, and the hub names none of them."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import simcluster.features
import simcluster.plugins
from simcluster import api
from simcluster.api import load_trace, simulate, simulate_resolved
from simcluster.config import GROUPS, SimConfig, knobs
from simcluster.engine import Simulation
from simcluster.features import FEATURES, Contribution, Ended, Feature
from simcluster.metrics.observer import Observer
from simcluster.results import write_run
from simcluster.run import resolve_run
from simcluster.settings.fields import names_of

JOBS = pd.DataFrame({"submit_time": [0, 5, 10], "gpu_num": [8, 8, 4], "duration": [60, 30, 20]})

POLICY_FILE = '''
from simcluster.sdk import Policy, start_in_order_until_blocked

class Plain(Policy):
    name = "plain"

    def schedule(self, vc, ctx):
        start_in_order_until_blocked(vc, ctx)
'''


def test_a_run_resolves_each_plugin_spec_once_and_reads_a_plugin_file_once(tmp_path, monkeypatch):
    path = tmp_path / "plain.py"
    path.write_text(POLICY_FILE)
    resolved, read = [], []
    resolve, from_file = simcluster.plugins.resolve, simcluster.plugins._from_file
    monkeypatch.setattr(simcluster.plugins, "resolve", lambda spec, kind: resolved.append(kind) or resolve(spec, kind))
    monkeypatch.setattr(simcluster.plugins, "_from_file", lambda spec, kind: read.append(spec) or from_file(spec, kind))
    result = simulate(load_trace(JOBS, nodes=1), SimConfig(policy=str(path)))
    assert sorted(resolved) == ["placement", "policy"] and len(read) == 1
    assert result.summary["policy"] == "plain" and result.summary["policy_source"]["sha256"]


def test_the_engine_and_the_collection_resolve_nothing(monkeypatch):
    run = resolve_run(load_trace(JOBS, nodes=1), SimConfig(policy="srtf"))

    def refuse(*args, **kwargs):
        raise AssertionError("resolved again after resolve_run")

    for name in ("resolve", "resolve_plugins", "display_name", "origin_of", "absolute_spec"):
        monkeypatch.setattr(simcluster.plugins, name, refuse)
    result = simulate_resolved(run)
    assert result.summary["policy"] == "srtf" and len(result.jobs) == 3
    jobs = run.make_jobs()
    Simulation(jobs, run).run()
    assert all(job.end_time is not None for job in jobs)


def test_a_resolved_run_is_immutable_and_simulates_the_same_twice():
    run = resolve_run(load_trace(JOBS, nodes=1), SimConfig(policy="sjf", deadlines="1,2", seed=4))
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.config = SimConfig()  # type: ignore[misc]
    first, second = simulate_resolved(run), simulate_resolved(run)
    pd.testing.assert_frame_equal(first.jobs, second.jobs)
    assert "deadline" in first.jobs and first.summary["deadline_satisfaction"] == second.summary["deadline_satisfaction"]


class Starts(Observer):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_start(self, job, now):
        self.seen.append(job.job_id)


class CountedStarts(Contribution):
    """Every hook of a contribution, each adding something a test can see."""

    def __init__(self, label: str) -> None:
        self.starts = Starts()
        self.observers = [self.starts]
        self.label = label

    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        jobs["starts_seen"] = [self.starts.seen.count(job_id) for job_id in jobs["job_id"]]
        return jobs

    def timeline(self, ended: Ended, timeline: pd.DataFrame) -> pd.DataFrame:
        timeline["doubled_busy"] = timeline["busy_gpus"] * 2
        return timeline

    def figures(self, ended: Ended, jobs: pd.DataFrame) -> dict:
        return {"starts": len(self.starts.seen), "label": self.label}

    def warnings(self, ended: Ended) -> list[str]:
        return [f"{len(self.starts.seen)} starts seen"]

    def run_figures(self, ended: Ended, jobs: pd.DataFrame, summary: dict) -> dict:
        return {"starts_per_gpu": len(self.starts.seen) / summary["gpus"]}

    def tables(self, ended: Ended) -> dict[str, pd.DataFrame]:
        return {"starts": pd.DataFrame({"job_id": self.starts.seen})}


class CountStarts(Feature):
    name = "count_starts"

    def in_play(self, run):
        return run.policy.name != "fifo"

    def plan(self, run):
        return f"{run.policy.name} on {run.cluster.total_gpus} GPUs"

    def start(self, plan, jobs, run):
        return CountedStarts(plan)


def test_a_feature_registered_by_one_line_contributes_through_every_hook(tmp_path, monkeypatch):
    monkeypatch.setattr(simcluster.features, "FEATURES", (*FEATURES, CountStarts()))
    trace = load_trace(JOBS, nodes=1)
    assert "count_starts" not in [p.feature.name for p in resolve_run(trace, SimConfig()).features]
    result = simulate(trace, SimConfig(policy="sjf"))
    assert result.jobs["starts_seen"].tolist() == [1, 1, 1]
    assert (result.timeline["doubled_busy"] == 2 * result.timeline["busy_gpus"]).all()
    summary = result.summary
    assert summary["starts"] == 3 and summary["label"] == "sjf on 8 GPUs" and summary["starts_per_gpu"] == 3 / 8
    assert "3 starts seen" in summary["warnings"]
    keys = list(summary)  # the feature's figures before the run's own, its run figures after them
    assert keys.index("starts") < keys.index("avg_jct") < keys.index("starts_per_gpu")
    write_run(tmp_path / "run", result.tables(), summary)
    assert (tmp_path / "run" / "starts.csv").read_text().split() == ["job_id", "0", "2", "1"]  # (sjf: 2 is shorter)


def test_the_hub_is_a_page_that_branches_on_no_feature():
    for function in (simulate, simulate_resolved):
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        body = tree.body[0].body[1:]  # (less the docstring)
        assert body[-1].end_lineno - body[0].lineno < 40, function.__name__
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.If, ast.IfExp, ast.Match))], function.__name__
    imported = {node.module for node in ast.walk(ast.parse(inspect.getsource(api)))
                if isinstance(node, ast.ImportFrom) and node.module}
    features = {type(f).__module__ for f in FEATURES}
    assert not imported & (features | {"simcluster.metrics.elastic", "simcluster.metrics.reliability",
                                       "simcluster.metrics.fragmentation", "simcluster.metrics.gpu_types"})
    init = inspect.getsource(Simulation.__init__)
    assert "resolve(" not in init and "display_name(" not in init and "origin_of(" not in init


def test_every_setting_belongs_to_one_group_and_each_feature_names_its_own():
    grouped = [name for group in GROUPS for name in names_of(group)]
    assert sorted(grouped) == sorted(knobs()) and len(set(grouped)) == len(grouped)
    assert [f.name for f in dataclasses.fields(SimConfig) if f.name in knobs()] == grouped  # (their order too)
    for feature in FEATURES:
        assert feature.settings is None or feature.settings in GROUPS, feature.name
    panels = {group: {dataclasses.fields(group)[0].metadata["panel"]} for group in GROUPS}
    assert len({next(iter(p)) for p in panels.values()}) == len(GROUPS)  # a panel of --help per group


def test_features_live_one_per_module_and_are_registered():
    folder = Path(simcluster.features.__file__).parent
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "base"}
    assert modules == {type(f).__module__.rsplit(".", 1)[-1] for f in FEATURES}


def test_a_sharing_policys_run_keeps_its_deadline_figures_beside_the_colocation_ones():
    # (the colocation figures once replaced the figures before them: deadline_satisfaction went missing)
    result = simulate(load_trace(JOBS, nodes=1), SimConfig(policy="sjf-bsbf", deadlines="1,2", seed=1))
    summary = result.summary
    assert "colocation" in summary and summary["jobs_with_deadline"] == 3 and "deadline_satisfaction" in summary
    assert list(summary).index("deadline_satisfaction") < list(summary).index("colocation")


def test_lucid_sim_run_resolves_each_plugin_spec_once(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from simcluster.cli import app

    path = tmp_path / "plain.py"
    path.write_text(POLICY_FILE)
    JOBS.to_csv(tmp_path / "jobs.csv", index=False)
    resolved, read = [], []
    resolve, from_file = simcluster.plugins.resolve, simcluster.plugins._from_file
    monkeypatch.setattr(simcluster.plugins, "resolve", lambda spec, kind: resolved.append(kind) or resolve(spec, kind))
    monkeypatch.setattr(simcluster.plugins, "_from_file", lambda spec, kind: read.append(spec) or from_file(spec, kind))
    done = CliRunner().invoke(app, ["run", "--trace", str(tmp_path / "jobs.csv"), "--nodes", "1", "--policy", str(path),
                                    "--out", str(tmp_path / "out"), "--json"])
    assert done.exit_code == 0, done.output
    assert sorted(resolved) == ["placement", "policy"] and len(read) == 1
