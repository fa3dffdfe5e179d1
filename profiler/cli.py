"""``lucid-profile``: measure the 14 training workloads alone and in pairs on a GPU.

Two steps feed the simulator's colocation model:

  lucid-profile single   each workload x batch size x AMP x GPU count, alone
  lucid-profile pair     pairs of those configurations sharing the same GPU(s)

On a GPU lent for minutes, measure both from a plan, in chunks, in priority order:

  lucid-profile campaign PLAN.toml --minutes 8   (lucid-profile plan writes one)

How repeatable the measurements are (a plan's repeat stage):

  lucid-profile noise FOLDER

Tables are written row by row (CSV or Parquet by extension) with a metadata.json
next to them; an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from profiler.cli_campaign import campaign, make_plan
from profiler.cli_options import (
    AmpChoice,
    AmpOpt,
    BatchOpt,
    CvTargetOpt,
    CvWindowsOpt,
    DeviceChoice,
    DeviceOpt,
    DryRunOpt,
    GpusOpt,
    RetryOpt,
    SampleHzOpt,
    SeedOpt,
    SizeOpt,
    StartupOpt,
    ThreadsOpt,
    TimeLimitOpt,
    WarmupOpt,
    WindowOpt,
    WorkloadOpt,
    amp_settings,
    choose_device,
    chosen_workloads,
    interrupted,
    need_pytorch,
    open_table,
    positive_ints,
    prepare_run,
    print_estimate,
    row_state,
    run_settings,
    table_path,
)
from simcluster.cli.common import terminate_as_interrupt

if TYPE_CHECKING:  # torch and the tables' pandas load only when a command runs: --help stays fast
    from profiler.plan import JobConfig, PairConfig
    from profiler.tables import ResultTable

DEFAULT_OUT_DIR = Path("results/profile")

class _App(typer.Typer):
    """Commands whose number options are finite (``--time-limit nan`` is an error, not an endless row), and
    which SIGTERM stops as Ctrl-C does (:class:`simcluster.cli.help.CheckedCommand`)."""

    def command(self, *args: Any, **kwargs: Any) -> Any:
        from simcluster.cli.help import CheckedCommand

        kwargs.setdefault("cls", CheckedCommand)
        return super().command(*args, **kwargs)


app = _App(
    help=__doc__,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# ------------------------------------------------------------------ commands
@app.command("workloads")
def list_workloads() -> None:
    """List the registered workloads (model and dataset names as in the trace)."""
    need_pytorch()
    from workloads import all_workloads

    table = Table(title="lucid-profile workloads")
    for column in ("model", "dataset", "what it trains"):
        table.add_column(column)
    for spec in all_workloads():
        table.add_row(spec.model, spec.dataset, spec.summary)
    Console().print(table)


@app.command()
def single(
    workload: WorkloadOpt = None,
    batch_size: BatchOpt = None,
    amp: AmpOpt = AmpChoice.both,
    gpus: GpusOpt = None,
    device: DeviceOpt = DeviceChoice.auto,
    size: SizeOpt = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Single-job table to write (.csv or .parquet); resumed if it exists."
        ),
    ] = DEFAULT_OUT_DIR / "single.csv",
    time_limit: TimeLimitOpt = 60.0,
    window: WindowOpt = 1.0,
    cv_target: CvTargetOpt = 0.02,
    cv_windows: CvWindowsOpt = 5,
    warmup_steps: WarmupOpt = 10,
    sample_hz: SampleHzOpt = 10.0,
    startup_timeout: StartupOpt = 600.0,
    seed: SeedOpt = 0,
    cpu_threads: ThreadsOpt = None,
    retry_failed: RetryOpt = False,
    dry_run: DryRunOpt = False,
) -> None:
    """Measure each workload configuration alone: throughput, GPU utilization, memory.

    Every selected workload x batch size x AMP x GPU count is run in fresh worker
    processes: warm-up, then windows until the throughput is steady (coefficient of
    variation of the latest windows under --cv-target) or --time-limit passes.
    A run that fails (out of memory, crash) is recorded with status=failed and the
    sweep goes on.  Rows already in --out are skipped, so rerunning resumes.

    Example: lucid-profile single -w ResNet18,BERT -b 32 --amp off --device cpu --time-limit 5
    """
    need_pytorch()
    from profiler.plan import single_plan
    from profiler.progress import RichSweepObserver
    from profiler.single import needs_run, sweep_single
    from workloads import get_workload

    console = Console()
    configs = single_plan(
        chosen_workloads(workload),
        positive_ints(batch_size, (32, 64, 128), "--batch-size"),
        amp_settings(amp),
        positive_ints(gpus, (1,), "--gpus"),
    )
    gpu_nums = sorted({c.gpu_num for c in configs})
    out = table_path(out, "--out")
    settings = run_settings(
        choose_device(device, gpu_nums, dry_run, console),
        size,
        time_limit,
        window,
        cv_target,
        cv_windows,
        warmup_steps,
        sample_hz,
        startup_timeout,
        seed,
        cpu_threads,
    )
    table = open_table(out, "single")
    pending = [c for c in configs if needs_run(table.status(c.key), retry_failed)]
    if dry_run:
        _show_single_plan(console, configs, table, retry_failed)
        print_estimate(console, len(pending), settings)
        return
    selection = {"command": "single", "configurations": len(configs)}
    nvml = prepare_run(out, settings, gpu_nums, selection, console)
    try:
        with terminate_as_interrupt(), RichSweepObserver(console, len(pending), "single") as observer:
            summary = sweep_single(configs, table, get_workload, settings, observer, nvml, retry_failed)
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: the workers are ended, every row kept
        raise interrupted(console, table, stop) from None
    finally:
        if nvml is not None:
            nvml.close()
    console.print(
        f"measured {summary.measured} ({summary.failed} failed), skipped {summary.skipped}; table: {out}"
    )


@app.command()
def pair(
    workload: WorkloadOpt = None,
    batch_size: BatchOpt = None,
    amp: AmpOpt = AmpChoice.both,
    gpus: GpusOpt = None,
    device: DeviceOpt = DeviceChoice.auto,
    size: SizeOpt = None,
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Pair table to write (.csv or .parquet); resumed if it exists."),
    ] = DEFAULT_OUT_DIR / "pair.csv",
    single_table: Annotated[
        Path | None,
        typer.Option(
            "--single-table",
            help="Single-job table with the solo throughputs; missing ones are measured into it first. "
            "[default: single.csv (or .parquet) next to --out]",
            show_default=False,
        ),
    ] = None,
    include_self: Annotated[
        bool,
        typer.Option(
            "--include-self/--no-include-self", help="Also pair each configuration with a copy of itself."
        ),
    ] = True,
    time_limit: TimeLimitOpt = 60.0,
    window: WindowOpt = 1.0,
    cv_target: CvTargetOpt = 0.02,
    cv_windows: CvWindowsOpt = 5,
    warmup_steps: WarmupOpt = 10,
    sample_hz: SampleHzOpt = 10.0,
    startup_timeout: StartupOpt = 600.0,
    seed: SeedOpt = 0,
    cpu_threads: ThreadsOpt = None,
    retry_failed: RetryOpt = False,
    dry_run: DryRunOpt = False,
) -> None:
    """Measure pairs of configurations sharing the same GPU(s): each job's normalized speed.

    The configurations are the selected workload x batch size x AMP x GPU count;
    every unordered pair with equal GPU counts is run as two separate jobs started
    together (a start barrier), measured over the same windows until both are
    steady or --time-limit passes.  speed = shared throughput / solo throughput
    (1.0 = no slowdown); solo throughputs come from --single-table, measured first
    when missing.  gpu_util, gmem_util and gmem are for the GPU(s) holding both.

    Example: lucid-profile pair -w ResNet18,LSTM -b 32 --amp off --no-include-self
    """
    need_pytorch()
    from profiler.metadata import describe_environment, write_metadata
    from profiler.pair import sweep_pairs
    from profiler.plan import pair_plan, single_plan
    from profiler.progress import RichSweepObserver
    from profiler.single import needs_run
    from workloads import get_workload

    console = Console()
    configs = single_plan(
        chosen_workloads(workload),
        positive_ints(batch_size, (32, 64, 128), "--batch-size"),
        amp_settings(amp),
        positive_ints(gpus, (1,), "--gpus"),
    )
    pairs = pair_plan(configs, include_self)
    if not pairs:
        raise typer.BadParameter(
            "no pairs: select two configurations, or allow --include-self", param_hint="--workload"
        )
    gpu_nums = sorted({c.gpu_num for c in configs})
    out = table_path(out, "--out")
    solo_path = table_path(single_table or out.with_name(f"single{out.suffix}"), "--single-table")
    if solo_path.resolve() == out.resolve():
        raise typer.BadParameter(
            "the pair table and the single table must be different files", param_hint="--out"
        )
    settings = run_settings(
        choose_device(device, gpu_nums, dry_run, console),
        size,
        time_limit,
        window,
        cv_target,
        cv_windows,
        warmup_steps,
        sample_hz,
        startup_timeout,
        seed,
        cpu_threads,
    )
    table = open_table(out, "pair")
    solo_table = open_table(solo_path, "single")
    pending = [p for p in pairs if needs_run(table.pair_status(p), retry_failed)]
    solos_missing = {c for p in pending for c in (p.first, p.second) if solo_table.status(c.key) is None}
    if dry_run:
        _show_pair_plan(console, pairs, table, retry_failed)
        console.print(f"{len(solos_missing)} solo run(s) missing from {solo_path} will be measured first")
        print_estimate(console, len(pending) + len(solos_missing), settings)
        return
    selection = {"command": "pair", "pairs": len(pairs), "single_table": str(solo_path)}
    nvml = prepare_run(out, settings, gpu_nums, selection, console)
    if solos_missing:
        write_metadata(solo_path, describe_environment(settings, max(gpu_nums), nvml), settings, selection)
    try:
        with terminate_as_interrupt(), RichSweepObserver(console, len(pending), "pairs") as observer:
            summary = sweep_pairs(
                pairs, table, solo_table, get_workload, settings, observer, nvml, retry_failed
            )
    except KeyboardInterrupt as stop:
        raise interrupted(console, table, stop) from None
    finally:
        if nvml is not None:
            nvml.close()
    console.print(
        f"measured {summary.measured} pair(s) ({summary.failed} failed), skipped {summary.skipped}; "
        f"table: {out}; solo throughputs: {solo_path}"
    )


def _show_single_plan(
    console: Console, configs: Sequence[JobConfig], table: ResultTable, retry_failed: bool
) -> None:
    view = Table(title=f"lucid-profile single: plan for {table.path}")
    for column in ("#", "model", "dataset", "batch", "amp", "gpus", "state"):
        view.add_column(column)
    for i, c in enumerate(configs, 1):
        state = row_state(table.status(c.key), retry_failed)
        view.add_row(
            str(i), c.model, c.dataset, str(c.batchsize), "on" if c.amp else "off", str(c.gpu_num), state
        )
    console.print(view)


def _show_pair_plan(
    console: Console, pairs: Sequence[PairConfig], table: ResultTable, retry_failed: bool
) -> None:
    view = Table(title=f"lucid-profile pair: plan for {table.path}")
    for column in ("#", "job 1", "job 2", "state"):
        view.add_column(column)
    for i, p in enumerate(pairs, 1):
        view.add_row(str(i), p.first.label, p.second.label, row_state(table.pair_status(p), retry_failed))
    console.print(view)


app.command("campaign")(campaign)
app.command("plan")(make_plan)


@app.command("noise")
def noise(
    folder: Annotated[Path, typer.Argument(help="A campaign's folder: its single_repeats.csv and pair_repeats.csv, "
                                                "compared with its single.csv and pair.csv where present.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")] = False,
) -> None:
    """How repeatable the measurements are: each job's solo-throughput CV and each pair's speed spread over
    a repeat stage's rounds, and how far the repeats lie from the main tables (often another machine).

    The mean absolute difference of pair speeds is the noise floor a slowdown model's MAE is judged
    against.  Example: lucid-profile noise traces/profiles/measured/h100
    """
    import json
    import math

    from profiler.noise import read_noise
    from simcluster.colocation import TableError

    try:
        report = read_noise(folder)
    except (FileNotFoundError, TableError) as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(1) from None

    def clean(value: Any) -> Any:
        return None if isinstance(value, float) and math.isnan(value) else value

    if as_json:
        print(json.dumps({
            "folder": str(folder), "summary": {k: clean(v) for k, v in report.summary.items()},
            "solo": [{k: clean(v) for k, v in r.items()} for r in report.solo.to_dict("records")],
            "pairs": [{k: clean(v) for k, v in r.items()} for r in report.pairs.to_dict("records")],
        }))
        return
    console = Console()

    def number(value: float, digits: int = 3) -> str:
        return "—" if math.isnan(value) else f"{value:.{digits}f}"

    solo = Table(title=f"Jobs alone, {folder}")
    for column in ("job", "rounds", "mean it/s", "CV", "table it/s", "ratio"):
        solo.add_column(column, justify="left" if column == "job" else "right")
    for r in report.solo.itertuples():
        amp = " amp" if r.amp else ""
        solo.add_row(f"{r.model} bs{r.batchsize}{amp}", str(r.rounds), number(r.mean_iters_per_s, 1), number(r.cv),
                     number(r.table_iters_per_s, 1), number(r.ratio))
    pairs = Table(title="Pairs (speed = shared ÷ alone, each round against its own solo runs)")
    for column in ("pair", "rounds", "speeds", "sd", "table speeds", "difference"):
        pairs.add_column(column, justify="left" if column == "pair" else "right")
    for r in report.pairs.itertuples():
        pairs.add_row(f"{r.job1} + {r.job2}", str(r.rounds), f"{number(r.mean_speed1)} / {number(r.mean_speed2)}",
                      f"{number(r.sd_speed1)} / {number(r.sd_speed2)}",
                      f"{number(r.table_speed1)} / {number(r.table_speed2)}", f"{number(r.diff1)} / {number(r.diff2)}")
    console.print(solo, pairs)
    s = report.summary
    console.print(f"{s['rounds']} round(s). Within the machine: median solo CV {number(s['solo_cv_median'])}, median "
                  f"pair-speed sd {number(s['pair_speed_sd_median'])} (— needs 2 rounds). Against the main tables: "
                  f"median solo ratio {number(s['solo_ratio_to_table_median'])}, pair speeds' mean absolute "
                  f"difference {number(s['pair_speed_mae_to_table'])} over {s['pair_speeds_compared']} speeds.")


def main() -> None:
    """Console-script entry point (``lucid-profile``)."""
    app()


if __name__ == "__main__":  # pragma: no cover - `python -m profiler.cli`
    main()
