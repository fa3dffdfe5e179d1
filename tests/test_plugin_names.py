"""A plug-in is named by its declared name wherever tables name policies; every place that takes a policy takes
the same specs; the Python API of sweeps takes what the command line takes, in Python's terms."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.experiments.sweep import SweepError, build_grid, parse_sets, run_sweep
from simcluster.plugins import display_name
from simcluster.traces.synth import SynthSpec, synthesize
from tests.conftest import write_source as write

runner = CliRunner()
SYNTH = "synth:jobs=30,nodes=2,vcs=1,seed=4"
CAPPED = '''
from dataclasses import dataclass
from simcluster.sdk import Policy, setting, start_in_order_until_blocked

@dataclass(frozen=True)
class Knobs:
    max_wait: float = setting(3600.0, "Seconds after which a job goes first.", min=0)

class SrtfCap(Policy):
    """Shortest job first, but a job waiting longer than max_wait goes first."""
    name = "srtf-cap"
    Settings = Knobs

    def pending_key(self, job):
        return (job.duration, job.index)

    schedule = staticmethod(start_in_order_until_blocked)
'''


def test_a_plugin_is_labelled_by_its_name_and_its_file_stays_in_the_summary(tmp_path):
    path = write(tmp_path, "srtf_cap.py", CAPPED)
    summary = simulate(synthesize(SynthSpec(jobs=20, nodes=2, vcs=1, seed=2)), SimConfig(policy=str(path))).summary
    assert summary["policy"] == "srtf-cap"
    assert summary["policy_source"]["spec"] == str(path) and len(summary["policy_source"]["sha256"]) == 64
    assert summary["config"]["policy"] == str(path)


def test_a_subclass_of_a_builtin_is_not_named_like_the_builtin(tmp_path):
    path = write(tmp_path, "mine.py", '''
        from simcluster.policies.srtf import ShortestRemainingTimeFirst

        class MySrtf(ShortestRemainingTimeFirst):
            """srtf, subclassed."""
    ''')
    assert display_name(str(path)) == "MySrtf"


def test_a_sweep_names_a_plugin_by_its_name_and_the_report_takes_its_name_or_file_as_baseline(tmp_path,
                                                                                            monkeypatch):
    write(tmp_path, "srtf_cap.py", CAPPED)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "sweep"
    done = runner.invoke(app, ["sweep", "--trace", SYNTH, "--policy", "fifo,./srtf_cap.py", "--out", str(out),
                               "--workers", "1", "-q"])
    assert done.exit_code == 0, done.stderr
    runs = pd.read_csv(out / "runs.csv")
    assert sorted(runs["policy"]) == ["fifo", "srtf-cap"]
    assert any("srtf-cap" in run for run in runs["run_id"])
    for baseline in ("./srtf_cap.py", "srtf-cap"):
        report = tmp_path / f"report-{baseline.strip('./')}"
        made = runner.invoke(app, ["report", str(out), "--out", str(report), "--baseline", baseline, "--json"])
        assert made.exit_code == 0, made.stderr
        table = pd.read_csv(report / "comparison.csv")
        assert "srtf-cap" in set(table["policy"]) and not table["policy"].str.contains("/").any()
        assert set(table["baseline"].dropna()) == {"srtf-cap"}
    unknown = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "r3"), "--baseline", "nobody"])
    assert unknown.exit_code != 0 and "no run of that policy" in unknown.stderr


def test_two_plugins_of_one_name_in_a_sweep_are_an_error_naming_both_files(tmp_path):
    first = write(tmp_path / "a", "srtf_cap.py", CAPPED)
    second = write(tmp_path / "b", "cap.py", CAPPED.replace("Shortest job first", "Another"))
    with pytest.raises(SweepError, match="two policies of this sweep are named 'srtf-cap'") as caught:
        build_grid([SYNTH], ["fifo", str(first), str(second)], [0])
    assert str(first) in str(caught.value) and str(second) in str(caught.value)
    done = runner.invoke(app, ["sweep", "--trace", SYNTH, "--policy", f"{first},{second}",
                               "--out", str(tmp_path / "out"), "-q"])
    assert done.exit_code != 0 and "named 'srtf-cap'" in " ".join(done.stderr.split())


def test_build_grid_takes_policy_classes_and_plain_setting_values(tmp_path):
    path = write(tmp_path, "srtf_cap.py", CAPPED)
    from simcluster.plugins import resolve_policy

    cls = resolve_policy(str(path))
    specs = build_grid([SYNTH], [cls, "srtf"], [0], sets={"max_wait": [3600, 7200], "quantum": 60})
    ids = [s.run_id for s in specs]
    assert len(ids) == 3 and all("quantum=60" in i for i in ids)
    mine = [s for s in specs if "srtf-cap" in s.run_id]
    assert [dict(s.config.policy_settings)["max_wait"] for s in mine] == [3600.0, 7200.0]
    assert [s.config.quantum for s in specs] == [60.0] * 3
    scalar = build_grid([SYNTH], [cls], [0], sets={"max_wait": 3600})
    assert dict(scalar[0].config.policy_settings)["max_wait"] == 3600.0
    outcome = run_sweep(scalar, tmp_path / "out", workers=1)
    assert not outcome.failed
    assert json.loads(next((tmp_path / "out" / "runs").glob("*/summary.json")).read_text())["policy"] == "srtf-cap"


@pytest.mark.parametrize(("kwargs", "said"), [
    ({"sets": {"quantum": "soon"}}, "sets['quantum']: setting 'quantum' must be a time"),
    ({"sets": {"no_such": [1, 2]}}, "sets['no_such']: unknown setting 'no_such'"),
    ({"sets": {"quantum": []}}, "sets['quantum']: an empty list"),
    ({"sets": {"seed": [1]}}, "sets['seed']: give the seeds as build_grid's seeds argument"),
    ({"policies": ["fifo", 3]}, "policies[1]: give a policy's name"),
])
def test_build_grid_errors_speak_python_not_the_command_line(kwargs, said):
    given = {"policies": ["fifo"], **kwargs}
    with pytest.raises(SweepError) as caught:
        build_grid([SYNTH], given.pop("policies"), [0], **given)
    assert said in str(caught.value) and "--set" not in str(caught.value)


def test_the_command_line_still_says_its_flag():
    with pytest.raises(SweepError, match=r"--set no_such=…: unknown setting"):
        build_grid([SYNTH], ["fifo"], [0], parse_sets(["no_such=1"]))


# --- report: --baseline's specs from Python, and runs of one name from different code -----------------------

def run_folder(tmp_path, policy: str, out: str):
    trace = tmp_path / "trace"
    if not trace.exists():
        write(trace, "cluster_log.csv", "job_id,user,vc,gpu_num,submit_time,duration\n" + "".join(
            f"j{i},u{i % 3},a,{1 + i % 4},{i * 50},{300 + 170 * (i % 5)}\n" for i in range(30)))
        write(trace, "vc_config.csv", "vc,num\na,1\n")
    done = runner.invoke(app, ["run", "--trace", str(trace), "--policy", policy, "--out", str(tmp_path / out),
                               "-q"])
    assert done.exit_code == 0, done.stderr
    return tmp_path / out


def baselines(made) -> set[str]:
    return set(made.table["baseline"].dropna())


def test_write_report_takes_as_baseline_what_the_cli_takes(tmp_path, monkeypatch):
    from simcluster.experiments.report import ReportError, write_report
    from simcluster.plugins import resolve_policy

    path = write(tmp_path, "srtf_cap.py", CAPPED)
    folders = [run_folder(tmp_path, "fifo", "fifo"), run_folder(tmp_path, str(path), "cap")]
    monkeypatch.chdir(tmp_path)
    for i, baseline in enumerate(["srtf-cap", str(path), path, "./srtf_cap.py", resolve_policy(str(path))]):
        made = write_report(folders, tmp_path / f"r{i}", baseline=baseline)
        assert baselines(made) == {"srtf-cap"}, baseline
    assert baselines(write_report(folders, tmp_path / "rf", baseline="fifo")) == {"fifo"}
    with pytest.raises(ReportError, match="--baseline nobody: no run of that policy among fifo, srtf-cap"):
        write_report(folders, tmp_path / "rn", baseline="nobody")


def test_runs_of_one_name_from_different_files_are_kept_apart_and_labelled_by_file(tmp_path):
    from simcluster.experiments.report import ReportError, write_report

    first = write(tmp_path / "a", "srtf_cap.py", CAPPED)
    second = write(tmp_path / "b", "srtf_cap.py", CAPPED.replace("(job.duration, job.index)", "-job.gpu_num"))
    folders = [run_folder(tmp_path, "fifo", "fifo1"), run_folder(tmp_path, str(first), "cap1"),
               run_folder(tmp_path, "fifo", "fifo2"), run_folder(tmp_path, str(second), "cap2"),
               run_folder(tmp_path, str(first), "cap1-again")]
    made = write_report(folders, tmp_path / "r")
    overall = made.table[made.table["vc"] == "all"].set_index("label")
    assert sorted(overall.index) == ["fifo", "srtf-cap (a/srtf_cap.py)", "srtf-cap (b/srtf_cap.py)"]
    assert overall["runs"].to_dict() == {"fifo": 2, "srtf-cap (a/srtf_cap.py)": 2, "srtf-cap (b/srtf_cap.py)": 1}
    assert any("2 different policies are named srtf-cap" in note for note in made.notes)
    with pytest.raises(ReportError, match=r"--baseline srtf-cap: the runs hold 2 different policies named "
                                          r"srtf-cap .*by its file"):
        write_report(folders, tmp_path / "r2", baseline="srtf-cap")
    assert baselines(write_report(folders, tmp_path / "r3", baseline=second)) == {"srtf-cap (b/srtf_cap.py)"}
    shown = write_report(folders, tmp_path / "r4", baseline="srtf-cap (a/srtf_cap.py)")
    assert baselines(shown) == {"srtf-cap (a/srtf_cap.py)"}
    cli = runner.invoke(app, ["report", *map(str, folders), "--out", str(tmp_path / "r5"), "--baseline", "srtf-cap"])
    assert cli.exit_code != 0 and "2 different policies named srtf-cap" in " ".join(cli.stderr.split())


def test_one_file_edited_between_runs_is_two_policies_told_apart_by_digest(tmp_path):
    from simcluster.experiments.report import write_report

    path = write(tmp_path, "srtf_cap.py", CAPPED)
    before = run_folder(tmp_path, str(path), "before")
    write(tmp_path, "srtf_cap.py", CAPPED.replace("(job.duration, job.index)", "-job.gpu_num"))
    after = run_folder(tmp_path, str(path), "after")
    labels = sorted(write_report([before, after], tmp_path / "r").table["label"].unique())
    assert len(labels) == 2 and all(label.startswith("srtf-cap (srtf_cap.py sha256 ") for label in labels)
