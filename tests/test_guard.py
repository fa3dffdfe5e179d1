"""Every run guards a plug-in: a policy that writes to its views, loops for ever, never starts anything, raises,
or gives keys or a report the engine cannot use ends `lucid-sim run` with a message naming the policy, the hook,
the simulated time and the line of its file — never a traceback, a hang, or a wrong figure with exit code 0."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.guard import PluginFailed
from tests.conftest import make_trace

runner = CliRunner()

# (vc, gpu_num, submit_time, duration): more than the 16 GPUs at once, so that jobs wait
ROWS = [("a", 8, 0, 300), ("a", 8, 0, 200), ("a", 16, 10, 100), ("a", 4, 20, 50), ("a", 2, 30, 400),
        ("a", 1, 5000, 10), ("a", 4, 9000, 60)]


HEADER = "from simcluster.sdk import Policy, start_in_order_until_blocked\n\n\n"


def trace_folder(tmp_path: Path, rows=ROWS) -> Path:
    folder = tmp_path / "trace"
    folder.mkdir()
    lines = ["job_id,user,vc,gpu_num,submit_time,duration"]
    lines += [f"j{i},u{i % 2},{vc},{g},{t},{d}" for i, (vc, g, t, d) in enumerate(rows)]
    (folder / "cluster_log.csv").write_text("\n".join(lines) + "\n")
    (folder / "vc_config.csv").write_text("vc,num\na,2\n")
    return folder


def plugin(tmp_path: Path, name: str, body: str) -> tuple[Path, int]:
    """The policy file, and the line marked ``# <-`` in it (what the message must point at)."""
    text = textwrap.dedent(body)
    text = text if "import " in text else HEADER + text
    path = tmp_path / name
    path.write_text(text)
    marked = [i for i, line in enumerate(text.splitlines(), 1) if "# <-" in line]
    return path, marked[0] if marked else 0


def run_fails(tmp_path: Path, path: Path, *words: str) -> str:
    """``lucid-sim run`` of the policy ends with exit code 1, writes nothing, and says ``words``."""
    out = tmp_path / "out"
    done = runner.invoke(app, ["run", "--trace", str(trace_folder(tmp_path)), "--policy", str(path),
                               "--out", str(out), "-q"])
    message = " ".join(done.stderr.split())
    assert done.exit_code == 1, (done.exit_code, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and not out.exists()
    for word in words:
        assert word in message, (word, message)
    assert re.search(r"t=[\d,.]+ s", message), message
    return message


def test_a_policy_that_writes_to_a_job_view_fails_at_once_naming_the_hook_and_line(tmp_path):
    path, line = plugin(tmp_path, "bigger.py", '''
        class Bigger(Policy):
            name = "bigger"

            def schedule(self, vc, ctx):
                for job in vc.pending:
                    job.gpu_num = 8  # <-
                start_in_order_until_blocked(vc, ctx)
    ''')
    message = run_fails(tmp_path, path, "policy bigger", "gpu_num", "read-only", "in schedule", f"{path} line {line}")
    assert re.search(r"job j\d", message)


def test_a_view_kept_from_an_earlier_hook_cannot_be_written_later(tmp_path):
    path, line = plugin(tmp_path, "keeps.py", '''
        class Keeps(Policy):
            def __init__(self, config=None):
                super().__init__(config)
                self.seen = []

            def on_submit(self, job, now):
                self.seen.append(job)

            def schedule(self, vc, ctx):
                for job in self.seen:
                    job.work_left = 1  # <-
                start_in_order_until_blocked(vc, ctx)
    ''')
    run_fails(tmp_path, path, "policy Keeps", "work_left", "in schedule", f"{path} line {line}")


def test_setattr_on_a_node_is_refused_too(tmp_path):
    path, line = plugin(tmp_path, "nodes.py", '''
        class Nodes(Policy):
            def schedule(self, vc, ctx):
                setattr(vc.nodes[0], "up", False)  # <-
                start_in_order_until_blocked(vc, ctx)
    ''')
    run_fails(tmp_path, path, "policy Nodes", "up of", "in schedule", f"{path} line {line}")


def test_a_policy_that_sets_timers_for_ever_without_starting_anything_is_stopped(tmp_path):
    path, line = plugin(tmp_path, "later.py", '''
        class Later(Policy):
            def schedule(self, vc, ctx):
                ctx.wake_at(ctx.now + 60)  # <-
    ''')
    run_fails(tmp_path, path, "policy Later", "started nothing", "would never end", "in schedule",
              f"{path} line {line}")


def test_a_policy_that_asks_for_the_same_instant_for_ever_is_stopped(tmp_path):
    path, line = plugin(tmp_path, "spin.py", '''
        class Spin(Policy):
            def schedule(self, vc, ctx):
                ctx.wake_at(ctx.now)  # <-
    ''')
    run_fails(tmp_path, path, "policy Spin", "10,001 times", "same instant", "in schedule", f"{path} line {line}")


def test_a_policy_that_never_starts_anything_ends_the_run_with_what_waited(tmp_path):
    path, line = plugin(tmp_path, "idle.py", '''
        class Idle(Policy):
            def schedule(self, vc, ctx):  # <-
                pass
    ''')
    run_fails(tmp_path, path, "policy Idle", "waited in VC a with 16 GPUs free", "set no timer", "in schedule",
              f"{path} line {line}")


def test_an_exception_in_init_names_the_policy_and_line(tmp_path):
    path, line = plugin(tmp_path, "init.py", '''
        class NeedsAModel(Policy):
            def __init__(self, config=None):
                super().__init__(config)
                raise FileNotFoundError("model.pt")  # <-

            schedule = staticmethod(start_in_order_until_blocked)
    ''')
    run_fails(tmp_path, path, "policy NeedsAModel raised FileNotFoundError", "in __init__", f"{path} line {line}")


def test_a_report_that_json_cannot_hold_is_said_not_a_traceback(tmp_path):
    path, line = plugin(tmp_path, "report.py", '''
        class Reports(Policy):
            schedule = staticmethod(start_in_order_until_blocked)

            def report(self):  # <-
                return {"model": object()}
    ''')
    run_fails(tmp_path, path, "policy Reports", "'model'", "from report()", "in report", f"{path} line {line}")


@pytest.mark.parametrize("key", ["None", "float('nan')", "(job.gpu_num, None)"])
def test_a_key_that_cannot_order_the_queue_is_said_with_the_hook(tmp_path, key):
    path, line = plugin(tmp_path, "key.py", f'''
        class BadKey(Policy):
            def pending_key(self, job):  # <-
                return {key} if job.index == 2 else (job.gpu_num, job.index)

            schedule = staticmethod(start_in_order_until_blocked)
    ''')
    run_fails(tmp_path, path, "policy BadKey", "queue key of job j2", "in pending_key", f"{path} line {line}")


def test_keys_of_two_kinds_are_said_with_the_hook(tmp_path):
    path, line = plugin(tmp_path, "kinds.py", '''
        class Kinds(Policy):
            def pending_key(self, job):  # <-
                return "late" if job.index == 3 else job.duration

            schedule = staticmethod(start_in_order_until_blocked)
    ''')
    run_fails(tmp_path, path, "policy Kinds", "does not compare", "in pending_key", f"{path} line {line}")


def test_a_decision_the_engine_cannot_carry_out_names_the_hook_and_line(tmp_path):
    path, line = plugin(tmp_path, "twice.py", '''
        class Twice(Policy):
            def schedule(self, vc, ctx):
                job = vc.pending.first()
                if job is not None and ctx.try_start(job):
                    ctx.try_start(job)  # <-
    ''')
    run_fails(tmp_path, path, "policy Twice started job", "which is not waiting", "in schedule",
              f"{path} line {line}")


def test_a_plugin_without_a_name_is_called_by_its_class(tmp_path):
    path, _ = plugin(tmp_path, "route.py", '''
        class Router(Policy):
            schedule = staticmethod(start_in_order_until_blocked)

            def on_submit(self, job, now):  # <-
                return "nowhere"
    ''')
    message = run_fails(tmp_path, path, "policy Router routed job", "'nowhere'")
    assert "policy ?" not in message


FORGETS = HEADER + '''
class Forgets(Policy):
    """Starts jobs only when one arrives: after a job ends, the GPUs idle until the next arrival."""

    def __init__(self, config=None):
        super().__init__(config)
        self.arrived = False

    def on_submit(self, job, now):
        self.arrived = True

    def schedule(self, vc, ctx):
        if self.arrived:
            self.arrived = False
            start_in_order_until_blocked(vc, ctx)
'''


def test_gpus_left_idle_with_no_timer_set_are_warned_of_once_with_the_longest_stretch(tmp_path):
    path, _ = plugin(tmp_path, "forgets.py", FORGETS + "# <-\n")
    out = tmp_path / "out"
    done = runner.invoke(app, ["run", "--trace", str(trace_folder(tmp_path)), "--policy", str(path),
                               "--out", str(out)])
    said = " ".join((done.stdout + done.stderr).split())
    assert done.exit_code == 0, done.stderr
    assert said.count("did the policy forget `wake_at`?") == 1
    assert re.search(r"the longest from t=[\d,]+ s to t=[\d,]+ s", said)


def test_a_policy_that_waits_for_gpus_to_be_freed_is_not_warned_of(tmp_path):
    path, _ = plugin(tmp_path, "fifo.py", '''
        class PlainFifo(Policy):
            schedule = staticmethod(start_in_order_until_blocked)  # <-
    ''')
    result = simulate(make_trace(ROWS, {"a": 2}), SimConfig(policy=str(path)))
    assert not any("wake_at" in w for w in result.summary["warnings"])


def test_the_guard_changes_nothing_of_a_correct_policys_schedule():
    from simcluster.paths import REPO_ROOT

    trace = make_trace(ROWS * 3, {"a": 2})
    built_in = simulate(trace, SimConfig(policy="srtf")).jobs
    plugged = simulate(trace, SimConfig(policy=str(REPO_ROOT / "examples" / "policies" / "srtf_kept.py"))).jobs
    assert built_in[["start_time", "end_time"]].equals(plugged[["start_time", "end_time"]])


def test_a_stalled_run_of_a_builtin_policy_under_a_plugin_placement_is_a_message(tmp_path):
    path, _ = plugin(tmp_path, "nowhere.py", '''
        from simcluster.sdk import Placement

        class Nowhere(Placement):
            def place(self, job, pool):  # <-
                return None
    ''')
    with pytest.raises(PluginFailed, match=r"placement Nowhere stopped the run: at t=[\d,]+ s, job j0 .* GPUs free"):
        simulate(make_trace(ROWS, {"a": 2}), SimConfig(placement=str(path)))
    out = tmp_path / "out"
    done = runner.invoke(app, ["run", "--trace", str(trace_folder(tmp_path)), "--placement", str(path),
                               "--out", str(out), "-q"])
    assert done.exit_code == 1 and "placement Nowhere stopped the run" in done.stderr and not out.exists()


def test_outside_a_run_a_plugins_code_may_write_as_it_likes(tmp_path):
    from simcluster.job import Job
    from simcluster.plugins import resolve_policy

    path, _ = plugin(tmp_path, "helper.py", '''
        def shrink(job):
            job.gpu_num = 1  # <-
            return job

        class Helper(Policy):
            schedule = staticmethod(start_in_order_until_blocked)
    ''')
    module = __import__(resolve_policy(str(path)).__module__)
    job = Job(index=0, job_id="x", vc="a", gpu_num=8, submit_time=0, duration=1)
    assert module.shrink(job).gpu_num == 1


# --- the write check however the policy is loaded: module:Class, an entry point, a class given in Python ----

WRITES = '''
from simcluster.sdk import Policy, start_in_order_until_blocked


def grow(job):
    job.gpu_num = 8  # <- helper


class Bigger(Policy):
    name = "{name}"

    def schedule(self, vc, ctx):
        for job in vc.pending:
            {body}
        start_in_order_until_blocked(vc, ctx)
'''


def importable(tmp_path: Path, monkeypatch, package: str, name: str, body: str = "job.gpu_num = 8  # <-",
               entry_point: str | None = None) -> tuple[Path, int]:
    """A package ``package`` on sys.path whose module ``policies`` defines the writing policy ``name`` (and an
    installed distribution registering it as ``entry_point``); the module's file and the marked line."""
    from tests.conftest import write_source

    site = tmp_path / "site"
    write_source(site / package, "__init__.py", "")
    text = WRITES.format(name=name, body=body)
    path = write_source(site / package, "policies.py", text)
    if entry_point is not None:
        dist = site / f"{package}-0.1.dist-info"
        write_source(dist, "METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
        write_source(dist, "entry_points.txt", f"[simcluster.policies]\n{entry_point} = {package}.policies:Bigger\n")
    monkeypatch.syspath_prepend(str(site))
    marked = [i for i, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith("# <-")]
    return path, marked[0] if marked else 0


def test_a_module_class_policy_that_writes_to_a_view_fails_as_a_file_does(tmp_path, monkeypatch):
    path, line = importable(tmp_path, monkeypatch, "writes_mod", "bigger-mod")
    message = run_fails(tmp_path, "writes_mod.policies:Bigger", "policy bigger-mod", "gpu_num", "read-only",
                        "in schedule", f"{path} line {line}")
    assert re.search(r"job j\d", message)


def test_an_installed_entry_point_that_writes_to_a_view_fails_as_a_file_does(tmp_path, monkeypatch):
    path, line = importable(tmp_path, monkeypatch, "writes_ep", "bigger-ep", entry_point="bigger-ep")
    run_fails(tmp_path, "bigger-ep", "policy bigger-ep", "gpu_num", "read-only", "in schedule",
              f"{path} line {line}")


def test_a_class_given_in_python_is_checked_and_so_is_a_helper_of_its_module(tmp_path, monkeypatch):
    import importlib

    path, _ = importable(tmp_path, monkeypatch, "writes_cls", "bigger-cls", body="grow(job)")
    module = importlib.import_module("writes_cls.policies")
    helper = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "# <- helper" in text)
    with pytest.raises(PluginFailed, match=rf"policy bigger-cls wrote gpu_num of job j\d, a read-only view .* in "
                                           rf"schedule at t=[\d,.]+ s \({re.escape(str(path))} line {helper}\)"):
        simulate(make_trace(ROWS, {"a": 2}), SimConfig(policy=module.Bigger))
    from simcluster.job import Job  # outside a run the module's code writes as it likes

    job = Job(index=0, job_id="x", vc="a", gpu_num=1, submit_time=0, duration=1)
    module.grow(job)
    assert job.gpu_num == 8


def test_a_subclass_in_a_file_of_a_base_from_a_module_is_checked_in_both(tmp_path, monkeypatch):
    path, line = importable(tmp_path, monkeypatch, "writes_base", "bigger-base")
    child, _ = plugin(tmp_path, "child.py", '''
        from writes_base.policies import Bigger

        class Child(Bigger):
            name = "child"
    ''')
    run_fails(tmp_path, child, "policy child", "gpu_num", "read-only", "in schedule", f"{path} line {line}")


def test_a_correct_module_policy_runs_as_the_same_file_does(tmp_path, monkeypatch):
    from simcluster.paths import REPO_ROOT
    from tests.conftest import write_source

    source = (REPO_ROOT / "examples" / "policies" / "srtf_kept.py").read_text()
    write_source(tmp_path / "site" / "kept_mod", "__init__.py", "")
    path = write_source(tmp_path / "site" / "kept_mod", "srtf_kept.py", source)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    trace = make_trace(ROWS * 3, {"a": 2})
    by_file = simulate(trace, SimConfig(policy=str(path))).jobs
    by_module = simulate(trace, SimConfig(policy="kept_mod.srtf_kept:SrtfKept")).jobs
    assert by_file[["start_time", "end_time"]].equals(by_module[["start_time", "end_time"]])


def test_pythons_own_modules_in_a_policys_classes_are_never_recompiled():
    import abc

    from simcluster.views import route_writes

    before = abc.abstractmethod.__code__, abc.ABCMeta.__instancecheck__.__code__
    assert route_writes(type("Mixed", (abc.ABC,), {"__module__": "abc"})) == []
    assert (abc.abstractmethod.__code__, abc.ABCMeta.__instancecheck__.__code__) == before
