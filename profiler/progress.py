"""A Rich display of a sweep: a progress bar with ETA and a live line of the current run."""

from __future__ import annotations

import math
from types import TracebackType
from typing import Any, Self

from rich.console import Console, Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from simcluster.colocation import STATUS_OK


def _number(value: float, digits: int = 1) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


class RichSweepObserver:
    """Shows which configuration runs, how far the sweep is, and the latest throughput."""

    def __init__(self, console: Console, total: int, title: str) -> None:
        self._console = console
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
        )
        self._task = self._progress.add_task(title, total=total)
        self._live_line = Text("")
        self._live = Live(Group(self._progress, self._live_line), console=console, refresh_per_second=4)
        self._label = ""
        self._phase = ""
        self._rates: dict[int, str] = {}
        self._util = math.nan

    def __enter__(self) -> Self:
        self._live.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._live_line.plain = ""  # the bar stays; the line about a finished run goes
        self._live.__exit__(kind, error, trace)

    def _refresh(self) -> None:
        rates = "  ".join(self._rates[j] for j in sorted(self._rates))
        util = f"  GPU {_number(self._util, 0)}%" if not math.isnan(self._util) else ""
        self._live_line.plain = f"  {self._label}: {self._phase}{'  ' + rates if rates else ''}{util}"

    # RunObserver
    def on_phase(self, text: str) -> None:
        self._phase = text
        self._rates.clear()
        self._util = math.nan
        self._refresh()

    def on_window(self, job: int, iters_per_s: float, samples_per_s: float, gpu_util: float) -> None:
        prefix = f"job{job + 1} " if job or len(self._rates) > 1 else ""
        self._rates[job] = f"{prefix}{iters_per_s:.2f} it/s ({samples_per_s:.0f} samples/s)"
        self._util = gpu_util
        self._refresh()

    def on_warning(self, text: str) -> None:
        self._console.print(f"[yellow]warning:[/] {text}")

    # SweepObserver
    def on_config_start(self, label: str) -> None:
        self._label = label
        self._phase = "starting"
        self._rates.clear()
        self._refresh()

    def on_config_end(self, label: str, row: dict[str, Any]) -> None:
        if row["status"] == STATUS_OK:
            if "speed1" in row:
                detail = f"speed {row['speed1']:.3f} / {row['speed2']:.3f}"
            else:
                detail = f"{row['iters_per_s']:.2f} it/s, {row['samples_per_s']:.1f} samples/s"
            self._console.print(f"[green]ok[/]     {label}: {detail}")
        else:
            self._console.print(f"[red]failed[/] {label}: {row['error']}")
        if " (alone)" not in label:
            self._progress.advance(self._task)

    def on_config_skipped(self, label: str, reason: str) -> None:
        pass  # the bar counts only what this run measures, so its ETA is honest
