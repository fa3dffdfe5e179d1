"""Run a campaign plan in chunks: resident workers, every row kept as it is measured, resumed where it stopped.

A GPU may be lent for a few minutes, by chance, and taken back without warning, so a campaign
(:mod:`profiler.campaign_plan`) is run in chunks of ``--minutes`` or ``--max-rows``:

* **Priority**: rows are measured stage by stage, in the plan's order.  Within a stage (within a round
  of a repeat stage) the rows are equally urgent, so the next is the first that reuses a job a worker
  holds built (:func:`next_item`): pairs walk from partner to partner and rebuild one model each.
* **Kept**: each row is written to its table the moment it is known, atomically (a temporary file
  renamed into place), so a campaign killed at any instant leaves tables that load, holding every row
  measured before; ``metadata.json`` records each chunk (start, end, rows, device) as it starts and ends.
* **Resumed**: rows already in the tables are skipped (a pair in either order), failed ones too unless
  ``retry_failed``; the next chunk starts with the first row still missing.
* **Chunks**: a chunk starts no row it does not expect to finish within its minutes (the longest row
  so far, or the plan's time limit plus a start-up before any), and stops after ``max_rows`` rows.

Tables: ``single.csv`` (jobs alone, solo throughputs of the pairs), ``pair.csv``, and the repeat stages'
``single_repeats.csv`` and ``pair_repeats.csv`` (the single and pair tables' columns plus ``repeat``).  A
repeated pair is judged against the solo runs of its own round where its stage measures jobs alone too (so
its speed carries the noise of all three runs), and is never measured again when it seems faster shared
than alone: a repeat stage measures the noise, it does not hide it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profiler.campaign_plan import CampaignPlan, Item, plan_items
from profiler.observe import SweepObserver
from profiler.pair import profile_pair, swap_jobs
from profiler.plan import JobConfig, estimate_run
from profiler.runner import RunSettings
from profiler.single import Resolver, Runner, needs_run, profile_single
from profiler.tables import ResultTable, RoundOfRepeats, SoloTable
from simcluster.colocation import STATUS_OK

TABLE_NAMES = {"single": "single.csv", "pair": "pair.csv", "repeat": "pair_repeats.csv",
               "single_repeat": "single_repeats.csv"}
"""The campaign's tables in its folder, by kind."""

Clock = Callable[[], float]


def gpu_type_name(device_name: str) -> str:
    """The GPU type, as a cluster names it, of a device NVML names: the folder a campaign writes to.

    >>> [gpu_type_name(n) for n in ("NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA GeForce RTX 3090",
    ...                             "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB", "cpu (x86_64)")]
    ['h100', 'h200', 'rtx3090', 'a100', 'v100', 'cpu']
    """
    words = [w for w in re.findall(r"[a-z]+\d*|\d+", device_name.lower()) if w not in ("nvidia", "geforce", "tesla")]
    if not words:
        return "gpu"
    if words[0].isalpha() and len(words) > 1 and words[1].isdigit():
        return words[0] + words[1]  # "rtx 3090"
    return words[0]


@dataclass
class CampaignTables:
    """The campaign's tables in ``folder``, loaded once and appended to row by row."""

    folder: Path
    single: ResultTable = field(init=False)
    pair: ResultTable = field(init=False)
    repeat: ResultTable = field(init=False)
    single_repeat: ResultTable = field(init=False)

    def __post_init__(self) -> None:
        for kind, name in TABLE_NAMES.items():
            setattr(self, kind, ResultTable(self.folder / name, kind))

    @property
    def added(self) -> int:
        """Rows written since they were opened (solo rows a pair needed included)."""
        return self.single.added + self.pair.added + self.repeat.added + self.single_repeat.added

    def status(self, item: Item) -> str | None:
        """``ok``, ``failed`` or None (not measured yet) of the item's row."""
        if item.single is not None:
            if item.repeat:
                return self.single_repeat.status((*item.single.key, item.repeat))
            return self.single.status(item.single.key)
        assert item.pair is not None  # an item holds one or the other
        if item.repeat:
            return self.repeat.pair_status(item.pair, item.repeat)
        return self.pair.pair_status(item.pair)

    def measured_since_opened(self, item: Item) -> bool:
        """Whether the item's row was written since the tables were opened (a job alone that a pair needed)."""
        if item.single is None:
            return False
        if item.repeat:
            return (*item.single.key, item.repeat) in self.single_repeat.added_keys
        return tuple(item.single.key) in self.single.added_keys


@dataclass(frozen=True)
class Budget:
    """How much one chunk may do: minutes of wall time and rows (None: no limit)."""

    minutes: float | None = None
    max_rows: int | None = None


@dataclass
class Chunk:
    """What one chunk has done so far, and whether it may start another row."""

    budget: Budget
    first_row_s: float  # the expected length of a row before any was measured
    clock: Clock = time.monotonic
    started: float = field(init=False)
    rows: int = 0
    items: int = 0
    longest_s: float = 0.0

    def __post_init__(self) -> None:
        self.started = self.clock()

    @property
    def elapsed_s(self) -> float:
        return self.clock() - self.started

    def refuses(self) -> str | None:
        """Why the next row must wait for the next chunk, or None to go on."""
        if self.budget.max_rows is not None and self.rows >= self.budget.max_rows:
            return f"{self.rows} row(s) measured, --max-rows {self.budget.max_rows}"
        if self.budget.minutes is not None:
            expected = self.longest_s if self.items else self.first_row_s
            if self.elapsed_s + expected > 60.0 * self.budget.minutes:
                return (f"{self.elapsed_s / 60:.1f} of --minutes {self.budget.minutes:g} spent; the next row may "
                        f"take {expected:.0f} s")
        return None

    def record(self, seconds: float, rows: int) -> None:
        self.items += 1
        self.rows += rows
        self.longest_s = max(self.longest_s, seconds)


@dataclass
class CampaignSummary:
    """What a chunk measured and what the plan still holds."""

    measured: int = 0  # rows written (items and the solo runs they needed)
    failed: int = 0  # items recorded as failed
    skipped: int = 0  # items already in the tables
    seconds: float = 0.0
    stopped: str = ""  # why the chunk ended before the plan did ("" when the plan is done)
    left: dict[str, int] = field(default_factory=dict)  # stage name -> items still to measure

    @property
    def done(self) -> bool:
        return not any(self.left.values())

    @property
    def rows_per_minute(self) -> float:
        return 60.0 * self.measured / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"measured": self.measured, "failed": self.failed, "skipped": self.skipped,
                "seconds": round(self.seconds, 1), "rows_per_minute": round(self.rows_per_minute, 2),
                "stopped": self.stopped, "done": self.done, "left": self.left}


def pending_items(plan: CampaignPlan, tables: CampaignTables, retry_failed: bool = False) -> list[Item]:
    """The plan's rows still to measure, in priority order."""
    return [item for item in plan_items(plan) if needs_run(tables.status(item), retry_failed)]


def next_item(pending: Sequence[Item], held: Callable[[JobConfig], bool]) -> Item:
    """The first pending row of the most urgent round that reuses a job a worker holds, else its first."""
    urgent = pending[0].round
    for item in pending:
        if item.round != urgent:
            break
        if any(held(config) for config in item.configs):
            return item
    return pending[0]


def run_campaign(
    plan: CampaignPlan,
    tables: CampaignTables,
    resolve: Resolver,
    settings: RunSettings,
    runner: Runner,
    observer: SweepObserver,
    *,
    budget: Budget = Budget(),
    held: Callable[[JobConfig], bool] = lambda config: False,
    retry_failed: bool = False,
    clock: Clock = time.monotonic,
) -> CampaignSummary:
    """Measure ``plan``'s missing rows into ``tables`` until done or ``budget`` is spent.

    ``runner`` runs the jobs (a :class:`~profiler.pool.WorkerPool`'s ``run``, on ``settings``); ``held``
    says whether a worker holds a job built (the pool's ``holds``): rows that reuse one go first.
    """
    chunk = Chunk(budget, estimate_run(settings).at_most_s, clock)
    pending = pending_items(plan, tables, retry_failed)
    summary = CampaignSummary(skipped=len(plan_items(plan)) - len(pending))
    retry_solo = {c for item in pending for c in item.configs} if retry_failed else None
    while pending:
        why = chunk.refuses()
        if why:
            summary.stopped = why
            break
        item = next_item(pending, held)
        pending.remove(item)
        if tables.measured_since_opened(item):
            continue  # measured already in this chunk, as a pair's solo run
        began, rows_before = clock(), tables.added
        solo_rounds = bool(item.repeat and plan.stages[item.stage].singles)
        status = _measure(item, tables, resolve, settings, observer, runner, retry_solo, solo_rounds)
        chunk.record(clock() - began, tables.added - rows_before)
        summary.failed += status != STATUS_OK
    summary.measured = tables.added
    summary.seconds = chunk.elapsed_s
    left = {stage.name: 0 for stage in plan.stages}
    for item in pending:
        left[plan.stages[item.stage].name] += 1
    summary.left = left
    return summary


def _measure(item: Item, tables: CampaignTables, resolve: Resolver, settings: RunSettings, observer: SweepObserver,
             runner: Runner, retry_solo: set[JobConfig] | None, solo_rounds: bool = False) -> str:
    """Measure one row, write it, and return its status.  ``solo_rounds``: a repeated pair is judged against
    the solo runs of its round (in the single repeat table) rather than the single table."""
    if item.single is not None:
        observer.on_config_start(item.label)
        row = profile_single(item.single, resolve, settings, observer, None, runner=runner)
        if item.repeat:
            tables.single_repeat.add(row | {"repeat": item.repeat})
        else:
            tables.single.add(row)
    else:
        assert item.pair is not None  # an item holds one or the other
        solo: SoloTable = RoundOfRepeats(tables.single_repeat, item.repeat) if solo_rounds and item.repeat \
            else tables.single
        row = profile_pair(item.pair, solo, resolve, settings, observer, None, retry_solo,
                           remeasure=not item.repeat, runner=runner)
        table = tables.repeat if item.repeat else tables.pair
        more = () if item.repeat is None else (item.repeat,)
        if table.status(item.pair.key + more) is None and table.pair_status(item.pair, item.repeat) is not None:
            row = swap_jobs(row)  # a retried pair stored the other way round: replace that row
        table.add(row | ({"repeat": item.repeat} if item.repeat else {}))
    observer.on_config_end(item.label, row)
    return str(row["status"])
