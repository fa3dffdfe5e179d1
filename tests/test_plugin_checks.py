"""check-policy checks every kind of plug-in: a placement file, an elastic policy on traces of jobs with scaling
models; an elastic policy's ``allocate`` may return ``{job: plan}`` as the guide says."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simcluster.api import load_trace, simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.guard import PluginFailed
from simcluster.paths import shared_data_dir
from tests.conftest import make_trace
from tests.conftest import write_source as write

runner = CliRunner()
MINFREE = '''
from simcluster.sdk import IntervalPolicy, plan_of_nodes


class MinFree(IntervalPolicy):
    """Each job one GPU on the node with the most free GPUs, in submission order."""

    name = "minfree"

    def allocate(self, vc, jobs, now):
        free = dict(self.node_gpus(vc))
        plans = {}
        for job in jobs:
            node = max(free, key=lambda n: free[n])
            if free[node] < 1:
                break
            free[node] -= 1
            plans[job] = plan_of_nodes(vc, [node])
        return plans  # {job: plan}, as the guide writes it
'''


def test_check_policy_recognises_a_placement_file_and_checks_it(tmp_path):
    from simcluster.paths import REPO_ROOT

    good = REPO_ROOT / "examples" / "policies" / "packing_placement.py"
    done = runner.invoke(app, ["check-policy", str(good)])
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "defines no policy class" not in done.stdout + done.stderr and "keeps every rule" in done.stdout
    assert "placement packing (with policy fifo)" in " ".join(done.stdout.split())
    greedy = write(tmp_path, "greedy.py", '''
        from simcluster.sdk import Placement

        class Greedy(Placement):
            def place(self, job, pool):
                return [(pool.nodes[0], job.gpu_num)]  # free or not
    ''')
    broken = runner.invoke(app, ["check-policy", str(greedy), "--json"])
    assert broken.exit_code == 1 and '"more-gpus-than-free": false' in broken.stdout


@pytest.fixture
def pollux_workload() -> Path:
    path = shared_data_dir() / "pollux" / "workloads" / "0.5" / "workload-1.csv"
    if not path.is_file():
        pytest.skip(f"reference data not found at {path}")
    return path


def test_an_elastic_plugin_is_checked_on_traces_with_scaling_models_and_on_its_own(tmp_path, pollux_workload):
    path = write(tmp_path, "minfree.py", MINFREE)
    done = runner.invoke(app, ["check-policy", str(path), "--trace", str(pollux_workload), "--json"])
    assert done.exit_code == 0, done.stdout + done.stderr
    assert '"ok": true' in done.stdout and str(pollux_workload) in done.stdout


def test_an_elastic_policy_on_a_trace_without_scaling_models_is_named_once(tmp_path):
    path = write(tmp_path, "minfree.py", MINFREE)
    with pytest.raises(ValueError, match="policy minfree resizes jobs") as caught:
        simulate(make_trace([("a", 1, 0, 10)], {"a": 1}), SimConfig(policy=str(path)))
    assert "policy policy" not in str(caught.value)


def test_allocate_may_return_plans_alone_as_the_guide_says(tmp_path, pollux_workload):
    path = write(tmp_path, "minfree.py", MINFREE)
    summary = simulate(load_trace(pollux_workload), SimConfig(policy=str(path))).summary
    assert summary["jobs"] == 80 and summary["policy"] == "minfree"


def test_an_exception_in_a_hook_called_by_the_thousand_names_it_and_the_line(tmp_path):
    path = write(tmp_path, "counts.py", '''
        from simcluster.sdk import Policy, start_in_order_until_blocked

        class Counts(Policy):
            schedule = staticmethod(start_in_order_until_blocked)

            def on_run_start(self, job, vc):
                if job.index == 3:
                    raise ZeroDivisionError("no room")
    ''')
    trace = make_trace([("a", 8, t, 100) for t in range(6)], {"a": 2})
    with pytest.raises(PluginFailed, match=r"policy Counts raised ZeroDivisionError: no room in on_run_start at "
                                           r"t=[\d,.]+ s, job j3 \(.*counts.py line 9\)"):
        simulate(trace, SimConfig(policy=str(path)))
