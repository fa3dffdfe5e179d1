"""Live views: what they show, and that they draw rarely."""

from __future__ import annotations

import io

from rich.console import Console
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.experiments.sweep import build_grid
from simcluster.live import LiveRun, LiveSweep, sparkline
from simcluster.traces.synth import SynthSpec, save_trace, synthesize


def console() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=120)


def test_the_run_view_counts_every_job_per_vc_and_the_avg_jct():
    trace = synthesize(SynthSpec(jobs=400, nodes=8, vcs=3, seed=5))
    screen = console()
    with LiveRun(trace, screen, title="srtf") as view:
        result = simulate(trace, SimConfig(policy="srtf"), [view])
    assert view.done == 400 and view.vc_done == view.vc_total
    assert abs(view.jct_sum / view.done - result.summary["avg_jct"]) < 1e-6
    text = screen.file.getvalue()
    assert "400/400 jobs done" in text and "busy GPUs" in text and "avg JCT" in text
    for vc in trace.vc_nodes:
        assert vc in text


def test_the_run_view_draws_at_most_a_few_times_a_second():
    trace = synthesize(SynthSpec(jobs=3000, nodes=16, vcs=4, seed=6))
    with LiveRun(trace, console(), refresh_per_second=4, check_every=64) as view:
        simulate(trace, SimConfig(policy="fifo"), [view])
        wall = view.draws
    import time
    elapsed = time.perf_counter() - view._wall0
    assert wall <= 2 + 4 * elapsed + 1


def test_a_sparkline_maps_zero_to_one_onto_eight_blocks():
    assert sparkline([0, 0.5, 1, 1.5, -1]) == "▁▅██▁"
    assert len(sparkline([0.3] * 100, width=60)) == 60


def test_the_sweep_view_lists_running_and_finished_runs_with_an_eta():
    specs = build_grid(["synth:jobs=10,nodes=2,vcs=1,seed=1"], ["fifo", "sjf", "srtf"], [0])
    view = LiveSweep(console())
    view.sweep_started(total=3, skipped=0, workers=2, backend="local")
    for spec in specs:
        view.run_started(spec)
    view.run_finished({**specs[0].row(), "status": "ok", "error": "", "avg_jct": 123.0})
    view.run_finished({**specs[1].row(), "status": "failed", "error": "ValueError: boom", "avg_jct": None})
    screen = console()
    screen.print(view.render())
    text = screen.file.getvalue()
    assert "1/3 done" in text and "1 failed" in text and "1 running" in text and "ETA" in text
    assert specs[2].run_id in text and "running" in text and "boom" in text and "123" in text


def test_run_live_from_the_command_line(tmp_path):
    trace = save_trace(synthesize(SynthSpec(jobs=200, nodes=4, vcs=2, seed=2)), tmp_path / "trace")
    result = CliRunner().invoke(app, ["run", "--trace", str(trace), "--live", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "summary.json").is_file()


def test_sweep_live_from_the_command_line(tmp_path):
    result = CliRunner().invoke(app, ["sweep", "--trace", "synth:jobs=50,nodes=2,vcs=2,seed=1", "--policy",
                                      "fifo,sjf", "--live", "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert "2 run(s)" in result.output


def test_the_run_views_last_frame_has_every_job_done_and_none_running():
    trace = synthesize(SynthSpec(jobs=300, nodes=4, vcs=2, seed=3))
    screen = console()
    with LiveRun(trace, screen) as view:
        simulate(trace, SimConfig(policy="sjf"), [view])
    last = view.render()
    frame = Console(file=io.StringIO(), width=120)
    frame.print(last)
    text = frame.file.getvalue()
    assert "300/300 jobs done" in text and "running 0 · pending 0 · busy GPUs 0/" in text


def test_the_progress_bar_counts_days_since_the_trace_starts_and_ends_full():
    from rich.progress import Progress

    from simcluster.live import ProgressObserver

    trace = synthesize(SynthSpec(jobs=500, nodes=8, vcs=2, seed=4))
    trace.frame["submit_time"] += 150 * 86400.0  # a trace that starts 150 days after its epoch
    progress = Progress(disable=True)
    task = progress.add_task("", total=1.0, jobs="", day="")
    bar = ProgressObserver(progress, task, trace)
    simulate(trace, SimConfig(policy="fifo"), [bar])
    fields = progress.tasks[0].fields
    span_days = (trace.frame["submit_time"].max() - trace.frame["submit_time"].min()) / 86400
    assert progress.tasks[0].completed == 1.0 and fields["jobs"] == "500/500 jobs"
    assert 0 < float(fields["day"].removeprefix("day ")) < span_days + 30


def test_the_eta_is_the_whole_runs_pace_and_waits_for_one_percent():
    from types import SimpleNamespace

    from simcluster.live import EtaColumn

    def task(done: float, elapsed: float):
        return SimpleNamespace(percentage=100 * done, elapsed=elapsed, finished=done >= 1)

    assert EtaColumn().render(task(0.25, 6.0)).plain == "0:00:18"
    assert EtaColumn().render(task(0.005, 6.0)).plain == "-:--:--"
    assert EtaColumn().render(task(1.0, 30.0)).plain == "0:00:00"
