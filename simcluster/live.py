"""Rich live views: one run (``lucid-sim run --live``) and a sweep (``lucid-sim sweep --live``).

The run view is an :class:`~simcluster.metrics.Observer`.  It never draws from
inside a busy hook: it counts scheduling instants and looks at the wall clock
only every ``check_every`` of them, redrawing when ``1 / refresh_per_second``
has passed.  Drawing happens on the simulation's own thread (no refresh
thread competing for the interpreter), so the run slows by a few percent
at most (``benchmarks/bench_sweep.py`` measures it on venus_sept).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from rich.console import Console, Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from simcluster.config import SimConfig
from simcluster.experiments.sweep import RunSpec, SweepListener, SweepOutcome
from simcluster.job import Job
from simcluster.metrics import Observer
from simcluster.traces import Trace


class ProgressObserver(Observer):
    """Advances a Rich progress bar by the share of the run's events done: arrivals plus completions.

    Arrivals follow the trace's submit times, so their share is the simulated time elapsed weighted by the
    arrival rate; completions cover the drain after the last arrival.  Finished jobs alone mislead: early
    jobs are short, and a month-long trace finishes most of them long before the run's costly part.  The
    task's ``total`` is 1 (the share); its fields say jobs done and the day since the trace's first
    submission.  The bar moves every 0.5 % of the events, so it costs nothing.
    """

    def __init__(self, progress: Progress, task: Any, trace: Trace) -> None:
        self.progress, self.task = progress, task
        self.jobs = len(trace)
        self.start = float(trace.frame["submit_time"].min()) if len(trace) else 0.0
        self.events = 2 * self.jobs
        self.step = max(1, self.events // 200)
        self.submitted = self.done = 0
        self._countdown = self.step

    def on_submit(self, job: Job, now: float) -> None:
        self.submitted += 1
        self._tick(now)

    def on_finish(self, job: Job, now: float) -> None:
        self.done += 1
        self._tick(now)

    def _tick(self, now: float) -> None:
        self._countdown -= 1
        if self._countdown <= 0 or self.done == self.jobs:
            self._countdown = self.step
            self.progress.update(self.task, completed=(self.submitted + self.done) / max(self.events, 1),
                                 jobs=f"{self.done:,}/{self.jobs:,} jobs", day=f"day {(now - self.start) / 86400:,.1f}")


class EtaColumn(ProgressColumn):
    """Time left = time so far × (1 − share done) / share done: the whole run's pace, not the last seconds'.

    Computed when drawn, so while the run is busy without progress (lucid retraining a model) the estimate
    grows instead of running down to zero.  Shown once 1 % is done.
    """

    def render(self, task: Any) -> Text:
        done, elapsed = task.percentage / 100, task.elapsed
        if task.finished:
            return Text("0:00:00", style="progress.remaining")
        if not elapsed or done < 0.01:
            return Text("-:--:--", style="progress.remaining")
        left = int(elapsed * (1 - done) / done)
        return Text(f"{left // 3600}:{left % 3600 // 60:02d}:{left % 60:02d}", style="progress.remaining")


SPARKS = "▁▂▃▄▅▆▇█"
MAX_VC_ROWS = 20


def sparkline(values: Any, width: int = 60) -> str:
    """Values in [0, 1] as block characters, the last ``width`` of them.

    >>> sparkline([0.0, 0.5, 1.0])
    '▁▅█'
    """
    tail = list(values)[-width:]
    return "".join(SPARKS[min(len(SPARKS) - 1, max(0, round(v * (len(SPARKS) - 1))))] for v in tail)


def _duration(seconds: float) -> str:
    if math.isnan(seconds) or seconds < 0:
        return "?"
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"


class LiveRun(Observer):
    """Simulated time, progress per VC, running/pending jobs, busy GPUs, a utilization sparkline, avg JCT.

    Use as a context manager around :func:`simcluster.api.simulate`, passing the object as an observer.
    """

    def __init__(self, trace: Trace, console: Console, title: str = "", gpus_per_node: int = 8,
                 refresh_per_second: float = 4.0, check_every: int = 256) -> None:
        self.console, self.title = console, title
        self.interval = 1.0 / refresh_per_second
        self.check_every = check_every
        counts = trace.frame["vc"].value_counts()
        self.vc_total = {vc: int(counts.get(vc, 0)) for vc in trace.vc_nodes}
        self.vc_done = dict.fromkeys(self.vc_total, 0)
        self.total_jobs = len(trace)
        self.gpus = sum(trace.vc_nodes.values()) * gpus_per_node
        self.start_time = float(trace.frame["submit_time"].min()) if len(trace) else 0.0
        self.now = self.start_time
        self.used = self.running = self.pending = 0
        self.done = 0
        self.jct_sum = 0.0
        self.util = deque[float](maxlen=60)
        self._area = 0.0  # busy GPU-seconds since the last drawing
        self._area_since = self.start_time
        self._countdown = check_every
        self._next_draw = 0.0
        self._wall0 = time.perf_counter()
        self.draws = 0
        self._live = Live(console=console, auto_refresh=False, transient=False, redirect_stdout=False,
                          redirect_stderr=False)

    def __enter__(self) -> Self:
        self._wall0 = time.perf_counter()
        self._next_draw = time.monotonic() + self.interval
        self._live.__enter__()
        self._live.update(self.render(), refresh=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self._draw()
        self._live.__exit__(None, None, None)
        if not self.console.is_terminal:  # a terminal gets its newline from Live itself
            self.console.line()

    # --- hooks: kept to a few operations each -----------------------------------------------------------
    def on_finish(self, job: Job, now: float) -> None:
        self.vc_done[job.vc] += 1
        self.done += 1
        self.jct_sum += now - job.submit_time
        self.now = now
        # the engine samples at scheduling instants; between them (and after the last job) count it here
        self.running = max(0, self.running - 1)
        if self.done == self.total_jobs:
            self.used = self.running = self.pending = 0

    def on_sample(self, now: float, used_gpus: int, shared_gpus: int, running: int, pending: int) -> None:
        self._area += self.used * (now - self.now)
        self.now, self.used, self.running, self.pending = now, used_gpus, running, pending
        self._countdown -= 1
        if self._countdown <= 0:
            self._countdown = self.check_every
            if time.monotonic() >= self._next_draw:
                self._draw()

    # --- drawing -------------------------------------------------------------------------------------------
    def _draw(self) -> None:
        span = self.now - self._area_since
        if span > 0 and self.gpus:
            self.util.append(self._area / (self.gpus * span))
            self._area, self._area_since = 0.0, self.now
        self._live.update(self.render(), refresh=True)
        self._next_draw = time.monotonic() + self.interval
        self.draws += 1

    def render(self) -> Group:
        days = (self.now - self.start_time) / 86400
        avg_jct = self.jct_sum / self.done if self.done else 0.0
        head = Text.assemble(
            (f"{self.title}  " if self.title else "", "bold"),
            f"simulated {days:,.2f} d · wall {_duration(time.perf_counter() - self._wall0)} · ",
            (f"{self.done:,}/{self.total_jobs:,} jobs done", "bold"),
        )
        state = Text.assemble(
            f"running {self.running:,} · pending {self.pending:,} · busy GPUs {self.used:,}/{self.gpus:,} "
            f"({self.used / self.gpus if self.gpus else 0:.0%}) · avg JCT {avg_jct:,.0f} s\nutilization ",
            (sparkline(self.util) or "–", "green"),
        )
        table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
        table.add_column("VC")
        table.add_column("progress", width=30)
        table.add_column("done", justify="right")
        vcs = sorted(self.vc_total, key=lambda v: -self.vc_total[v])[:MAX_VC_ROWS]
        for vc in vcs:
            total = self.vc_total[vc]
            table.add_row(vc, ProgressBar(total=max(total, 1), completed=self.vc_done[vc], width=30),
                          f"{self.vc_done[vc]:,}/{total:,}")
        if len(self.vc_total) > MAX_VC_ROWS:
            table.add_row(f"… {len(self.vc_total) - MAX_VC_ROWS} more", "", "")
        return Group(head, state, table)


class SweepProgress(SweepListener):
    """A progress bar over a sweep's runs (the default display of ``lucid-sim sweep``)."""

    def __init__(self, console: Console, disable: bool = False) -> None:
        self.progress = Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.description}"), TimeElapsedColumn(), TimeRemainingColumn(),
                                 console=console, disable=disable, transient=True)
        self.task = self.progress.add_task("", total=None)
        self.failed = 0

    def __enter__(self) -> Self:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def sweep_started(self, total: int, skipped: int, workers: int, backend: str) -> None:
        self.progress.update(self.task, total=total, completed=skipped,
                             description=f"{backend}, {workers} slots, {skipped} already done")

    def run_finished(self, row: dict[str, Any]) -> None:
        self.failed += row["status"] != "ok"
        self.progress.update(self.task, advance=1, description=f"{self.failed} failed" if self.failed else "")


class LiveSweep(SweepListener):
    """A table of the sweep's runs: running ones with elapsed time and ETA, the latest finished, counts."""

    RECENT = 8

    def __init__(self, console: Console, refresh_per_second: float = 4.0) -> None:
        self.console = console
        self.total = self.skipped = self.ok = self.failed = 0
        self.slots, self.backend = 1, ""
        self.running: dict[str, tuple[RunSpec, float]] = {}
        self.recent: deque[dict[str, Any]] = deque(maxlen=self.RECENT)
        self.walls: dict[str, list[float]] = {}  # trace → wall seconds of its finished runs
        self.t0 = time.perf_counter()
        self.live = Live(console=console, auto_refresh=True, refresh_per_second=refresh_per_second,
                         get_renderable=self.render, transient=False)

    def __enter__(self) -> Self:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.refresh()
        self.live.__exit__(None, None, None)

    def sweep_started(self, total: int, skipped: int, workers: int, backend: str) -> None:
        self.total, self.skipped, self.slots, self.backend = total, skipped, workers, backend
        self.t0 = time.perf_counter()

    def run_started(self, spec: RunSpec) -> None:
        self.running[spec.run_id] = (spec, time.perf_counter())

    def run_finished(self, row: dict[str, Any]) -> None:
        _, started = self.running.pop(row["run_id"], (None, time.perf_counter()))
        row = {**row, "_elapsed": time.perf_counter() - started}
        if row["status"] == "ok":
            self.ok += 1
            self.walls.setdefault(row["trace"], []).append(row["_elapsed"])
        else:
            self.failed += 1
        self.recent.append(row)

    def _expected(self, trace: str) -> float:
        walls = list(self.walls.get(trace, ())) or [w for ws in list(self.walls.values()) for w in list(ws)]
        return sum(walls) / len(walls) if walls else float("nan")

    def eta(self) -> float:
        left = self.total - self.skipped - self.ok - self.failed
        done = self.ok + self.failed
        if not done:
            return float("nan")
        rate = done / (time.perf_counter() - self.t0)
        return left / rate if rate > 0 else float("nan")

    def render(self) -> Group:
        head = Text.assemble(
            ("sweep ", "bold"), f"{self.backend}, {self.slots} slots · ",
            (f"{self.ok + self.skipped:,}/{self.total:,} done", "bold green"),
            f" ({self.skipped:,} from before) · ",
            (f"{self.failed:,} failed", "bold red" if self.failed else ""),
            f" · {len(self.running)} running · elapsed {_duration(time.perf_counter() - self.t0)}"
            f" · ETA {_duration(self.eta())}",
        )
        table = Table(box=None, header_style="bold", pad_edge=False)
        for col in ("run", "status", "time", "ETA", "avg JCT (s)", "note"):
            table.add_column(col, justify="left" if col in ("run", "status", "note") else "right")
        now = time.perf_counter()
        for run_id, (spec, started) in list(self.running.items())[: max(self.slots, 8)]:
            elapsed = now - started
            left = self._expected(spec.trace_name) - elapsed
            table.add_row(run_id, Text("running", "yellow"), _duration(elapsed),
                          _duration(left), "", "")
        for row in reversed(list(self.recent)):  # copies: the sweep's thread adds while this one draws
            ok = row["status"] == "ok"
            table.add_row(row["run_id"], Text(row["status"], "green" if ok else "red"), _duration(row["_elapsed"]),
                          "", f"{row['avg_jct']:,.0f}" if ok and row.get("avg_jct") is not None else "",
                          "" if ok else str(row["error"])[:80])
        return Group(head, table)


@contextmanager
def live_run(trace: Trace, config: SimConfig, console: Console, enabled: bool = True) -> Iterator[list[Observer]]:
    """``with live_run(...) as observers: simulate(trace, config, observers)``: the live view, or nothing."""
    if not enabled:
        yield []
        return
    with LiveRun(trace, console, title=f"{config.policy}/{config.placement}",
                 gpus_per_node=config.gpus_per_node) as view:
        yield [view]


@contextmanager
def sweep_display(console: Console, live: bool = False, quiet: bool = False) -> Iterator[SweepListener]:
    """The sweep's display: the live table, a progress bar, or (quiet) nothing."""
    if quiet:
        yield SweepListener()
    elif live:
        with LiveSweep(console) as view:
            yield view
    else:
        with SweepProgress(console) as bar:
            yield bar


def print_sweep_outcome(console: Console, outcome: SweepOutcome, out: Path) -> None:
    """Counts, wall time, the failures (first few), and where runs.csv is."""
    console.print(f"{outcome.ran} run(s) in {outcome.wall_seconds:,.1f} s, {outcome.skipped} already done, "
                  f"[bold red]{outcome.failed} failed[/]" if outcome.failed else
                  f"{outcome.ran} run(s) in {outcome.wall_seconds:,.1f} s, {outcome.skipped} already done, 0 failed",
                  highlight=False)
    failed = [r for r in outcome.rows if r["status"] != "ok"]
    for row in failed[:5]:
        console.print(f"  [red]failed[/] {row['run_id']}: {row['error']}", highlight=False)
    if len(failed) > 5:
        console.print(f"  … and {len(failed) - 5} more (see runs.csv)", highlight=False)
    console.print(f"runs.csv and run folders in [bold]{out}[/]", highlight=False)
