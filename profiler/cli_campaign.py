"""``lucid-profile campaign`` and ``lucid-profile plan``: a measurement campaign, run a chunk at a time.

    lucid-profile plan --trace venus_sept/cluster_full_log.csv -o docs/h100-campaign.toml
    lucid-profile campaign docs/h100-campaign.toml --minutes 8      # one chunk; run again to go on

See :mod:`profiler.campaign` (how a chunk runs) and :mod:`profiler.campaign_plan` (the plan).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from profiler.cli_options import (
    DeviceChoice,
    DeviceOpt,
    DryRunOpt,
    RetryOpt,
    SizeOpt,
    ThreadsOpt,
    choose_device,
    need_pytorch,
    open_nvml_or_warn,
)

if TYPE_CHECKING:  # torch loads only when a command runs: --help stays fast
    from profiler.campaign import CampaignSummary, CampaignTables
    from profiler.campaign_plan import CampaignPlan
    from profiler.runner import RunSettings


def campaign(
    plan_file: Annotated[
        Path, typer.Argument(metavar="PLAN.toml", help="The campaign plan (lucid-profile plan writes one).")
    ],
    minutes: Annotated[
        float | None,
        typer.Option("--minutes", min=0.1, help="Start no row that may not end within this many minutes; "
                     "rows already measured stay in the tables. [default: no limit]", show_default=False),
    ] = None,
    max_rows: Annotated[
        int | None,
        typer.Option("--max-rows", min=1, help="Stop after this many rows (solo runs a pair needs included). "
                     "[default: no limit]", show_default=False),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Folder of the tables (single.csv, pair.csv, single_repeats.csv, pair_repeats.csv, "
                     "metadata.json). [default: the plan's out, {gpu} replaced by the GPU type, e.g. h100]",
                     show_default=False),
    ] = None,
    device: DeviceOpt = DeviceChoice.auto,
    size: SizeOpt = None,
    cpu_threads: ThreadsOpt = None,
    retry_failed: RetryOpt = False,
    dry_run: DryRunOpt = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the chunk's summary as one JSON document on stdout, nothing else.")
    ] = False,
) -> None:
    """Measure a campaign plan's missing rows in priority order, in resident workers, for one chunk.

    Rows go to their tables as they are measured (atomically), so a chunk cut off at any moment keeps
    all it measured; running the same command again resumes with the first row still missing.  Each
    chunk is recorded in metadata.json (start, end, rows, device).

    Example: lucid-profile campaign docs/h100-campaign.toml --minutes 8
    """
    need_pytorch()
    from profiler.campaign import (
        TABLE_NAMES,
        Budget,
        CampaignTables,
        gpu_type_name,
        pending_items,
        run_campaign,
    )
    from profiler.campaign_plan import PlanError, read_plan
    from profiler.metadata import describe_environment, record_chunk, resume_conflict
    from profiler.pool import WorkerPool
    from profiler.progress import RichSweepObserver
    from profiler.runner import JobRequest
    from simcluster.cli.common import exit_code, interrupted_by, terminate_as_interrupt
    from simcluster.colocation import TableError
    from simcluster.results import OutputError, check_writable
    from workloads import get_workload

    console = Console(stderr=as_json)
    try:
        plan = read_plan(plan_file, get_workload)
    except PlanError as exc:
        raise typer.BadParameter(str(exc), param_hint="PLAN.toml") from None
    chosen = choose_device(device, [1], dry_run, console)
    settings = plan.run_settings(chosen, size.value if size else ("full" if chosen == "cuda" else "tiny"),
                                 cpu_threads)  # type: ignore[arg-type]
    nvml = open_nvml_or_warn(chosen, console)
    try:
        environment = describe_environment(settings, 1, nvml)
        folder = out or _folder(plan, gpu_type_name(str(environment["device_name"])))
        try:
            check_writable(folder, "--out" if out else "the plan's out")
        except OutputError as exc:
            raise typer.BadParameter(str(exc), param_hint="--out" if out else "PLAN.toml") from None
        for name in TABLE_NAMES.values():
            conflict = resume_conflict(folder / name, environment)
            if conflict:
                raise typer.BadParameter(conflict, param_hint="--out")
        try:
            tables = CampaignTables(folder)
        except TableError as exc:
            raise typer.BadParameter(f"the existing table cannot be resumed: {exc}", param_hint="--out") from None
        pending = pending_items(plan, tables, retry_failed)
        if dry_run:
            _show_plan(console, plan, tables, retry_failed, settings)
            return
        selection = {"command": "campaign", "plan": plan.name, "plan_file": str(plan_file)}
        began, index = time.monotonic(), None
        try:
            with terminate_as_interrupt():  # SIGTERM as Ctrl-C: the workers ended, every row kept
                record = partial(_record_environment, tables, environment, settings, selection)
                record(written=False)
                chunk = _chunk_record(plan, plan_file, environment, minutes, max_rows)
                index = record_chunk(folder, chunk)
                with (WorkerPool(settings, nvml) as pool,
                      RichSweepObserver(console, len(pending), "campaign") as observer):
                    summary = run_campaign(
                        plan, tables, get_workload, settings, pool.run, observer,
                        budget=Budget(minutes, max_rows), retry_failed=retry_failed,
                        held=lambda c: pool.holds(JobRequest(get_workload(c.model), c.batchsize, c.amp, 1)),
                    )  # fmt: skip
                    chunk["workers_started"], chunk["builds"] = pool.started, pool.builds
                record(written=True)
        except KeyboardInterrupt as stop:
            if index is not None:
                record(written=True)
                record_chunk(folder, chunk | _ended(began, tables.added, f"interrupted ({interrupted_by(stop)})"),
                             index)
            console.print(f"\n[yellow]interrupted ({interrupted_by(stop)}).[/] {folder} holds every row measured "
                          "so far; run the same command again to resume.")
            raise typer.Exit(exit_code(stop)) from None
        except OutputError as exc:  # a table or metadata.json that cannot be written: a read-only folder, a full disk
            Console(stderr=True).print(f"[bold red]error:[/] {exc}; the rows measured before are kept",
                                       highlight=False)
            raise typer.Exit(1) from None
    finally:
        if nvml is not None:
            nvml.close()
    record_chunk(folder, chunk | summary.as_dict() | _ended(began, summary.measured, summary.stopped or "plan done"),
                 index)
    if as_json:
        print(json.dumps({"folder": str(folder), **summary.as_dict()}))
    else:
        _show_summary(console, folder, summary)


def make_plan(
    trace: Annotated[
        Path, typer.Option("--trace", help="Job log with model, batchsize and amp columns (venus_sept's "
                           "cluster_full_log.csv), or the folder holding it.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Plan file to write (TOML).")],
    name: Annotated[str, typer.Option("--name", help="The campaign's name.")] = "h100",
    tables: Annotated[
        str, typer.Option("--tables", help="Folder of the tables the plan measures into; {gpu} becomes the GPU type.")
    ] = "traces/profiles/measured/{gpu}",
    batch: Annotated[int, typer.Option("--batch", min=1, help="Batch size of the all-pairs stage.")] = 32,
    repeats: Annotated[int, typer.Option("--repeats", min=2, help="Rounds of the repeatability sample: measurements of each of its jobs alone and pairs.")] = 3,
    sample: Annotated[int, typer.Option("--sample", min=1, help="Pairs in the repeatability sample.")] = 10,
) -> None:
    """Write the campaign plan of issues 33 and 44 for a trace: a repeatability sample (each workload alone and
    some pairs, measured in rounds), all pairs at one batch size, the trace's configurations alone, and pairs
    across configurations, in that order.

    Example: lucid-profile plan --trace ../shared/data/venus_sept -o docs/h100-campaign.toml
    """
    need_pytorch()
    from profiler.campaign_plan import PlanError, issue_plan, plan_items, plan_toml
    from simcluster.atomic import atomic_write
    from workloads import get_workload, workload_names

    log = trace / "cluster_full_log.csv" if trace.is_dir() else trace
    try:
        plan = issue_plan(log, get_workload, workload_names(), name=name, out=tables, batch=batch,
                          repeats=repeats, sample=sample)
    except PlanError as exc:
        raise typer.BadParameter(str(exc), param_hint="--trace") from None
    text = plan_toml(plan)
    atomic_write(out, lambda handle: handle.write(text.encode()))
    console = Console()
    for stage in plan.stages:
        console.print(f"{stage.name}: {len(stage.singles) or len(stage.pairs)}"
                      f"{f' x {stage.repeat}' if stage.repeat else ''}", highlight=False)
    console.print(f"wrote {out}: {len(plan_items(plan))} rows in {len(plan.stages)} stages", highlight=False)


# ------------------------------------------------------------------ helpers
def _folder(plan: CampaignPlan, gpu: str) -> Path:
    try:
        return Path(plan.out.format(gpu=gpu))
    except (KeyError, IndexError, ValueError) as exc:
        raise typer.BadParameter(f"the plan's out {plan.out!r} may hold {{gpu}} and nothing else in braces "
                                 f"({exc})", param_hint="PLAN.toml") from None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _record_environment(tables: CampaignTables, environment: dict[str, Any], settings: RunSettings,
                        selection: dict[str, Any], *, written: bool) -> None:
    """Give each table the environment of the last chunk that wrote rows into it: before a chunk, the tables
    that have no entry yet; after it (or when it is stopped), the tables it wrote.  A table left alone keeps
    the machine it was measured on (the chunk records say when each machine measured what)."""
    from profiler.campaign import TABLE_NAMES
    from profiler.metadata import read_metadata, write_metadata

    for kind, name in TABLE_NAMES.items():
        path = tables.folder / name
        known = name in (read_metadata(path) or {}).get("tables", {})
        if (written and getattr(tables, kind).added) or (not written and not known):
            write_metadata(path, environment, settings, selection)


def _chunk_record(plan: CampaignPlan, plan_file: Path, environment: dict[str, Any], minutes: float | None,
                  max_rows: int | None) -> dict[str, Any]:
    return {"plan": plan.name, "plan_file": str(plan_file), "started": _now(), "ended": None,
            "device_name": environment.get("device_name"), "driver": environment.get("driver"),
            "torch": environment.get("torch"), "minutes": minutes, "max_rows": max_rows,
            **{key: environment[key] for key in ("cpu_model", "cpu_mhz", "cpus_usable", "load_average", "gpus")
               if key in environment}}


def _ended(began: float, measured: int, why: str) -> dict[str, Any]:
    """How a chunk ended: when, after how long, with how many rows measured, and why."""
    return {"ended": _now(), "seconds": round(time.monotonic() - began, 1), "measured": measured, "stopped": why}


def _show_plan(console: Console, plan: CampaignPlan, tables: CampaignTables, retry_failed: bool,
               settings: RunSettings) -> None:
    from profiler.campaign import pending_items
    from profiler.campaign_plan import plan_items
    from profiler.plan import estimate_run, format_duration

    every, pending = plan_items(plan), pending_items(plan, tables, retry_failed)
    view = Table(title=f"campaign {plan.name}: {tables.folder}")
    for column in ("#", "stage", "kind", "rows", "done", "to measure"):
        view.add_column(column, justify="left" if column in ("stage", "kind") else "right")
    for s, stage in enumerate(plan.stages):
        rows = sum(item.stage == s for item in every)
        left = sum(item.stage == s for item in pending)
        view.add_row(str(s + 1), stage.name, stage.kind, str(rows), str(rows - left), str(left))
    console.print(view)
    per_run = estimate_run(settings)
    console.print(f"{len(pending)} row(s) to measure: at most about {format_duration(per_run.at_most_s * len(pending))}"
                  f" on {settings.device} (time limit {settings.measure.time_limit_s:g} s per row, plus start-up)")


def _show_summary(console: Console, folder: Path, summary: CampaignSummary) -> None:
    console.print(f"measured {summary.measured} row(s) ({summary.failed} failed) in {summary.seconds / 60:.1f} min, "
                  f"{summary.rows_per_minute:.1f} rows/min; tables: {folder}", highlight=False)
    if summary.done:
        console.print("[green]the plan is done[/]")
        return
    console.print(f"stopped: {summary.stopped}; left: " + ", ".join(f"{n} {stage}" for stage, n in
                                                                   summary.left.items() if n), highlight=False)
    console.print("run the same command again to go on", highlight=False)
