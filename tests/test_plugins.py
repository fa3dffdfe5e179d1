"""Policies and placements from anywhere: a file, a module, an installed package's entry point, a class."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import ConfigError, SimConfig
from simcluster.guard import PluginFailed
from simcluster.plugins import (
    PluginError,
    absolute_spec,
    display_name,
    resolve,
    resolve_placement,
    resolve_policy,
)
from simcluster.presets import resolve_config
from simcluster.traces.synth import SynthSpec, synthesize
from tests.conftest import write_source as write

runner = CliRunner()
LARGEST_FIRST = '''
from dataclasses import dataclass
from simcluster.sdk import Policy, setting, start_in_order_until_blocked

@dataclass(frozen=True)
class Knobs:
    bias: float = setting(0.0, "Seconds added to every job's key.", min=0)
    mode: str = setting("big", "Which jobs go first.", choices=("big", "small"))

class LargestFirst(Policy):
    """The job asking for the most GPUs first."""
    Settings = Knobs
    reads = frozenset({"quantum"})

    def pending_key(self, job):
        sign = -1 if self.settings.mode == "big" else 1
        return (sign * job.gpu_num, job.submit_time + self.settings.bias)

    schedule = staticmethod(start_in_order_until_blocked)
'''


def small_trace():
    return synthesize(SynthSpec(jobs=40, nodes=2, vcs=1, seed=3))


def test_a_policy_loads_from_a_file_and_its_class_is_found_alone(tmp_path):
    path = write(tmp_path, "largest.py", LARGEST_FIRST)
    cls, origin = resolve(str(path), "policy")
    assert cls.__name__ == "LargestFirst" and origin.source == "file" and len(origin.sha256) == 64
    assert resolve_policy(f"{path}:LargestFirst") is cls  # the same file, loaded once
    assert display_name(str(path)) == "LargestFirst"


def test_a_file_with_several_policies_names_the_candidates(tmp_path):
    path = write(tmp_path, "two.py", LARGEST_FIRST + "\nclass Other(LargestFirst):\n    pass\n")
    with pytest.raises(PluginError, match=r"defines 2 policy classes \(LargestFirst, Other\); name one"):
        resolve_policy(str(path))
    with pytest.raises(PluginError, match="no policy class 'Nope'.*it defines: LargestFirst, Other"):
        resolve_policy(f"{path}:Nope")
    assert resolve_policy(f"{path}:Other").__name__ == "Other"


def test_bad_plugin_files_are_named_with_what_is_wrong(tmp_path):
    with pytest.raises(PluginError, match="no such file"):
        resolve_policy(str(tmp_path / "missing.py"))
    empty = write(tmp_path, "empty.py", "X = 1\n")
    with pytest.raises(PluginError, match="defines no policy class"):
        resolve_policy(str(empty))
    broken = write(tmp_path, "broken.py", "import math\n\nvalue = 1 / 0\n")
    with pytest.raises(PluginError, match=r"ZeroDivisionError.*broken.py line 3"):
        resolve_policy(str(broken))


def test_a_module_class_spec_and_an_entry_point_resolve(tmp_path, monkeypatch):
    package = tmp_path / "site" / "mysched"
    write(package, "__init__.py", "")
    write(package, "policies.py", LARGEST_FIRST)
    dist = tmp_path / "site" / "mysched-1.2.dist-info"
    write(dist, "METADATA", "Metadata-Version: 2.1\nName: mysched\nVersion: 1.2\n")
    write(dist, "entry_points.txt", "[simcluster.policies]\nlargest = mysched.policies:LargestFirst\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    by_module, origin = resolve("mysched.policies:LargestFirst", "policy")
    assert origin.source == "module"
    by_name, origin = resolve("largest", "policy")
    assert by_name is by_module and origin.source == "entry point" and origin.location == "mysched 1.2"
    listed = runner.invoke(app, ["policies", "--json"])
    assert json.loads(listed.stdout)["largest"]["source"].startswith("entry point mysched.policies:LargestFirst")


def test_a_relative_path_means_relative_to_where_the_command_ran(tmp_path, monkeypatch):
    write(tmp_path / "mine", "largest.py", LARGEST_FIRST)
    monkeypatch.chdir(tmp_path)
    assert absolute_spec("mine/largest.py") == str(tmp_path / "mine" / "largest.py")
    assert absolute_spec("mine/largest.py:LargestFirst").endswith("mine/largest.py:LargestFirst")
    assert absolute_spec("srtf") == "srtf"


def test_a_class_given_to_the_api_runs_and_the_result_names_its_code(tmp_path):
    path = write(tmp_path, "largest.py", LARGEST_FIRST)
    cls = resolve_policy(str(path))
    by_class = simulate(small_trace(), SimConfig(policy=cls))
    by_spec = simulate(small_trace(), SimConfig(policy=str(path)))
    assert by_class.jobs["end_time"].tolist() == by_spec.jobs["end_time"].tolist()
    source = by_spec.summary["policy_source"]
    assert source["source"] == "file" and source["location"] == str(path) and len(source["sha256"]) == 64
    assert by_spec.summary["policy_settings"] == {"bias": 0.0, "mode": "big"}


def test_a_policy_declares_settings_which_are_checked_and_recorded(tmp_path):
    path = write(tmp_path, "largest.py", LARGEST_FIRST)
    small_first = simulate(small_trace(), SimConfig(policy=str(path), policy_settings={"mode": "small", "bias": "5"}))
    assert small_first.summary["policy_settings"] == {"bias": 5.0, "mode": "small"}
    with pytest.raises(ConfigError, match="policy LargestFirst: unknown setting 'biass' .did you mean 'bias'"):
        simulate(small_trace(), SimConfig(policy=str(path), policy_settings={"biass": 1}))
    with pytest.raises(ConfigError, match="policy LargestFirst: setting 'bias' must be a number"):
        simulate(small_trace(), SimConfig(policy=str(path), policy_settings={"bias": "soon"}))
    with pytest.raises(ConfigError, match="'mode' must be one of big, small"):
        simulate(small_trace(), SimConfig(policy=str(path), policy_settings={"mode": "medium"}))
    with pytest.raises(ConfigError, match="policy srtf declares no settings of its own"):
        simulate(small_trace(), SimConfig(policy="srtf", policy_settings={"x": 1}))


def test_a_declared_run_setting_is_read_without_a_warning(tmp_path):
    path = write(tmp_path, "largest.py", LARGEST_FIRST)
    result = simulate(small_trace(), SimConfig(policy=str(path), quantum=30))
    assert not any("quantum" in w for w in result.summary["warnings"])
    result = simulate(small_trace(), SimConfig(policy=str(path), promote_knob=2))
    assert any("--promote-knob 2 is ignored" in w for w in result.summary["warnings"])


def test_set_and_a_policy_table_in_toml_set_the_policys_settings(tmp_path):
    path = write(tmp_path, "largest.py", LARGEST_FIRST)
    config = write(tmp_path, "run.toml", f'seed = 1\n\n[policy]\nname = "{path}"\nmode = "small"\nbias = 2\n')
    made = resolve_config(config_file=config, policy_settings={"bias": "7"})
    assert dict(made.policy_settings) == {"mode": "small", "bias": "7"}
    out = tmp_path / "out"
    done = runner.invoke(app, ["run", "--config", str(config), "--set", "bias=7", "--out", str(out), "--json"])
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["policy_settings"] == {"bias": 7.0, "mode": "small"}
    bad = runner.invoke(app, ["run", "--policy", str(path), "--set", "mood=big", "--out", str(tmp_path / "o2")])
    assert bad.exit_code == 2 and "unknown setting 'mood'" in bad.stderr and "did you mean 'mode'" in bad.stderr
    assert not (tmp_path / "o2").exists()


def test_a_sweep_gives_a_policys_own_setting_only_to_the_policies_that_declare_it(tmp_path):
    from simcluster.experiments.sweep import SweepError, build_grid, parse_sets

    path = write(tmp_path, "largest.py", LARGEST_FIRST)
    specs = build_grid(["synth:jobs=10"], ["fifo", str(path)], [0], parse_sets(["mode=big,small"]))
    assert [s.run_id for s in specs] == ["synth-jobs10-fifo-seed0", "synth-jobs10-LargestFirst-seed0-mode=big",
                                         "synth-jobs10-LargestFirst-seed0-mode=small"]
    assert dict(specs[2].config.policy_settings) == {"mode": "small"}
    with pytest.raises(SweepError, match="no policy of this sweep .fifo, srtf. declares it"):
        build_grid(["synth:jobs=10"], ["fifo", "srtf"], [0], parse_sets(["mode=big"]))


def test_placements_load_from_files_too(tmp_path):
    path = write(tmp_path, "last_node.py", '''
        from simcluster.sdk import Placement

        class LastNodeFirst(Placement):
            """Idle GPUs of the last node that holds the job."""

            def place(self, job, pool):
                for node in reversed(pool.nodes):
                    if node.free_gpus >= job.gpu_num:
                        return [(node, job.gpu_num)]
                return None
    ''')
    assert resolve_placement(str(path)).__name__ == "LastNodeFirst"
    result = simulate(small_trace(), SimConfig(placement=str(path)))
    assert result.summary["placement_source"]["source"] == "file"


def test_an_exception_in_a_plugin_names_the_policy_the_hook_the_time_and_the_job(tmp_path):
    path = write(tmp_path, "fails.py", '''
        from simcluster.sdk import Policy, start_in_order_until_blocked

        class FailsLate(Policy):
            """Raises at the 5th job."""
            schedule = staticmethod(start_in_order_until_blocked)

            def on_submit(self, job, now):
                if job.index == 5:
                    raise KeyError("no estimate")
    ''')
    with pytest.raises(PluginFailed, match=r"policy FailsLate raised KeyError: 'no estimate' in on_submit at "
                                           r"t=[\d,.]+ s, job \S+ \(.*fails.py line 10\)"):
        simulate(small_trace(), SimConfig(policy=str(path)))
    out = tmp_path / "out"
    done = runner.invoke(app, ["run", "--policy", str(path), "--out", str(out)])
    assert done.exit_code == 1 and "in on_submit" in done.stderr and not out.exists()


def test_a_plugins_decisions_are_checked_before_the_engine_carries_them_out(tmp_path):
    from simcluster.testing import adversarial_traces
    from tests.plugins.broken_policies import PreemptsWaitingJobs

    burst = adversarial_traces()[0][1]  # more jobs at once than the VC holds
    with pytest.raises(PluginFailed, match="preempted job .*which does not run in this VC"):
        simulate(burst, SimConfig(policy=PreemptsWaitingJobs))


def test_policies_name_describes_a_plugin_with_its_settings(tmp_path):
    path = write(tmp_path, "largest.py", LARGEST_FIRST)
    shown = runner.invoke(app, ["policies", str(path), "--json"])
    described = json.loads(shown.stdout)
    assert described["source"] == "file" and described["sha256"]
    assert [s["name"] for s in described["settings"]] == ["bias", "mode"]
    assert "quantum" in described["run_settings_read"]
    text = runner.invoke(app, ["policies", "tiresias"]).stdout
    assert "--quantum" in text and "preemptive" in text
    own = runner.invoke(app, ["policies", "pollux"]).stdout  # a built-in with settings of its own
    assert "true_model" in own and "a [policy] table in --config" in own


def test_the_version_is_printed():
    done = runner.invoke(app, ["--version"])
    assert done.exit_code == 0 and done.stdout.startswith("simcluster ")


def test_a_folder_named_simcluster_in_the_current_directory_does_not_shadow_the_package(tmp_path):
    (tmp_path / "simcluster" / "simcluster").mkdir(parents=True)  # as the folder above a clone named simcluster
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "simcluster.cli", "--version"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("simcluster ")
