"""``lucid-profile``: measure the 14 training workloads alone and in pairs on a GPU.

Two steps feed the simulator's colocation model:

  lucid-profile single   each workload x batch size x AMP x GPU count, alone
  lucid-profile pair     pairs of those configurations sharing the same GPU(s)

Tables are written row by row (CSV or Parquet by extension) with a metadata.json
next to them; an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:  # torch and the tables' pandas load only when a command runs: --help stays fast
    from profiler.nvml import Nvml
    from profiler.plan import JobConfig, PairConfig
    from profiler.runner import RunSettings
    from profiler.tables import ResultTable

DEFAULT_OUT_DIR = Path("results/profile")

app = typer.Typer(
    help=__doc__,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class AmpChoice(str, Enum):
    both = "both"
    on = "on"
    off = "off"


class DeviceChoice(str, Enum):
    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


class SizeChoice(str, Enum):
    full = "full"
    tiny = "tiny"


# ------------------------------------------------------------------ shared options
WorkloadOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--workload",
        "-w",
        metavar="MODEL[,MODEL...]",
        help="Workload (trace model name) to profile; repeat or comma-separate. Default: all 14. "
        "See `lucid-profile workloads`.",
        show_default=False,
    ),
]
BatchOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--batch-size",
        "-b",
        metavar="N[,N...]",
        help="Batch size per GPU; repeat or comma-separate. [default: 32,64,128]",
    ),
]
AmpOpt = Annotated[AmpChoice, typer.Option("--amp", help="Mixed precision: on, off, or both.")]
GpusOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--gpus",
        "-g",
        metavar="N[,N...]",
        help="GPUs per job; >1 runs DistributedDataParallel over that many local processes "
        "(on --device cpu: that many gloo processes). Repeat or comma-separate. [default: 1]",
    ),
]
DeviceOpt = Annotated[
    DeviceChoice,
    typer.Option(
        "--device",
        help="cuda: GPUs 0..n-1 (pick them with CUDA_VISIBLE_DEVICES); cpu: the same code path on the CPU "
        "(tiny sizes by default, no utilization columns); auto: cuda if a GPU is visible, else cpu.",
    ),
]
SizeOpt = Annotated[
    SizeChoice | None,
    typer.Option(
        "--size", help="Model/input sizes: full (real shapes) or tiny. [default: full on cuda, tiny on cpu]"
    ),
]
TimeLimitOpt = Annotated[
    float,
    typer.Option(
        "--time-limit", min=0.1, help="Seconds of measurement per run at most (warm-up not counted)."
    ),
]
WindowOpt = Annotated[
    float,
    typer.Option("--window", min=0.01, help="Seconds per measurement window (grown to hold >= 4 steps)."),
]
CvTargetOpt = Annotated[
    float,
    typer.Option(
        "--cv-target", min=1e-6, help="Stop when the latest windows' coefficient of variation is below this."
    ),
]
CvWindowsOpt = Annotated[int, typer.Option("--cv-windows", min=2, help="How many latest windows must agree.")]
WarmupOpt = Annotated[int, typer.Option("--warmup-steps", min=0, help="Training steps before measuring.")]
SampleHzOpt = Annotated[float, typer.Option("--sample-hz", min=5.0, help="NVML samples per second.")]
StartupOpt = Annotated[
    float,
    typer.Option(
        "--startup-timeout", min=1.0, help="Seconds allowed to build and warm up before a run fails."
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of weights and synthetic data.")]
ThreadsOpt = Annotated[
    int | None,
    typer.Option(
        "--cpu-threads", min=1, help="Torch threads per worker. [default: 1 on cpu, torch's choice on cuda]"
    ),
]
RetryOpt = Annotated[
    bool,
    typer.Option(
        "--retry-failed", help="Measure again the configurations recorded as failed (resume skips them)."
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Only list what would run, with an estimated time.")
]


def _need_pytorch() -> None:
    """Stop with the install command when the profiler extra (PyTorch) is missing."""
    import importlib.util

    missing = [m for m in ("torch", "torchvision") if importlib.util.find_spec(m) is None]
    if missing:
        Console(stderr=True).print(f"[bold red]error:[/] lucid-profile needs {' and '.join(missing)}: "
                                   "pip install 'simcluster\\[profiler]'", highlight=False)
        raise typer.Exit(2)


def _split(values: Sequence[str] | None) -> list[str]:
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _positive_ints(values: Sequence[str] | None, default: Sequence[int], option: str) -> list[int]:
    parts = _split(values)
    if not parts:
        return list(default)
    numbers: list[int] = []
    for part in parts:
        if not part.isdigit() or int(part) < 1:
            raise typer.BadParameter(f"{part!r} is not a positive integer", param_hint=option)
        numbers.append(int(part))
    return list(dict.fromkeys(numbers))


def _workloads(values: Sequence[str] | None) -> list[tuple[str, str]]:
    from workloads import all_workloads, get_workload, workload_names

    names = _split(values)
    if not names:
        return [(s.model, s.dataset) for s in all_workloads()]
    unknown = [n for n in names if n not in workload_names()]
    if unknown:
        raise typer.BadParameter(
            f"unknown workload {', '.join(map(repr, unknown))}; valid workloads: {', '.join(workload_names())}",
            param_hint="--workload",
        )
    return [(get_workload(n).model, get_workload(n).dataset) for n in dict.fromkeys(names)]


def _amps(choice: AmpChoice) -> list[bool]:
    return {AmpChoice.both: [True, False], AmpChoice.on: [True], AmpChoice.off: [False]}[choice]


def _table_path(path: Path, option: str) -> Path:
    if path.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise typer.BadParameter(f"{path} must end in .csv or .parquet", param_hint=option)
    return path


def _device(choice: DeviceChoice, gpu_nums: Sequence[int], dry_run: bool, console: Console) -> str:
    import torch

    available = torch.cuda.is_available()
    if choice is DeviceChoice.auto:
        if available:
            return "cuda"
        console.print("[yellow]warning:[/] no CUDA GPU is visible; profiling on the CPU (tiny sizes)")
        return "cpu"
    if choice is DeviceChoice.cuda and not dry_run:
        if not available:
            raise typer.BadParameter(
                "no CUDA GPU is visible; use --device cpu to run on the CPU", param_hint="--device"
            )
        count = torch.cuda.device_count()
        if max(gpu_nums) > count:
            raise typer.BadParameter(
                f"{max(gpu_nums)} GPUs per job asked for, but only {count} visible", param_hint="--gpus"
            )
    return choice.value


def _settings(
    device: str,
    size: SizeChoice | None,
    time_limit: float,
    window: float,
    cv_target: float,
    cv_windows: int,
    warmup_steps: int,
    sample_hz: float,
    startup_timeout: float,
    seed: int,
    cpu_threads: int | None,
) -> RunSettings:
    from profiler.measure import MeasureSettings
    from profiler.runner import RunSettings

    try:
        measure = MeasureSettings(
            warmup_steps=warmup_steps,
            window_s=window,
            cv_windows=cv_windows,
            cv_target=cv_target,
            time_limit_s=time_limit,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    chosen = size.value if size is not None else ("full" if device == "cuda" else "tiny")
    return RunSettings(
        device=device,
        size=chosen,  # type: ignore[arg-type]
        measure=measure,
        sample_hz=sample_hz,
        startup_timeout_s=startup_timeout,
        seed=seed,
        cpu_threads=cpu_threads,
    )


def _open_table(path: Path, kind: str) -> ResultTable:
    from profiler.tables import ResultTable
    from simcluster.colocation import TableError

    try:
        return ResultTable(path, kind)
    except TableError as exc:
        raise typer.BadParameter(f"the existing table cannot be resumed: {exc}", param_hint="--out") from None


def _nvml(device: str, console: Console) -> Nvml | None:
    from profiler.nvml import open_nvml

    if device != "cuda":
        console.print("[yellow]warning:[/] running on the CPU: gpu_util, gmem_util and gmem stay empty (NaN)")
        return None
    nvml, why = open_nvml()
    if nvml is None:
        console.print(f"[yellow]warning:[/] {why}")
    return nvml


def _prepare_run(
    table: Path, settings: RunSettings, gpu_nums: Sequence[int], selection: dict[str, Any], console: Console
) -> Nvml | None:
    from profiler.metadata import describe_environment, resume_conflict, write_metadata

    nvml = _nvml(settings.device, console)
    environment = describe_environment(settings, max(gpu_nums), nvml)
    conflict = resume_conflict(table, environment)
    if conflict:
        raise typer.BadParameter(conflict, param_hint="--out")
    write_metadata(table, environment, settings, selection)
    return nvml


def _print_estimate(console: Console, runs: int, settings: RunSettings) -> None:
    from profiler.plan import TimeEstimate, estimate_run, format_duration

    per_run = estimate_run(settings)
    total = TimeEstimate(per_run.expected_s * runs, per_run.at_most_s * runs)
    console.print(
        f"{runs} run(s) on {settings.device} ({settings.size} sizes): about {format_duration(total.expected_s)} "
        f"if every run steadies quickly, at most about {format_duration(total.at_most_s)} "
        f"(time limit {settings.measure.time_limit_s:g} s per run)"
    )


def _state(status: str | None, retry_failed: bool) -> str:
    from profiler.single import needs_run

    if status is None:
        return "to run"
    if needs_run(status, retry_failed):
        return "failed, will retry"
    return f"done ({status}), skip"


def _interrupted(console: Console, table: ResultTable) -> typer.Exit:
    console.print(
        f"\n[yellow]interrupted.[/] {table.path} holds the {len(table)} row(s) measured so far; "
        "run the same command again to resume."
    )
    return typer.Exit(130)


# ------------------------------------------------------------------ commands
@app.command("workloads")
def list_workloads() -> None:
    """List the registered workloads (model and dataset names as in the trace)."""
    _need_pytorch()
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
    _need_pytorch()
    from profiler.plan import single_plan
    from profiler.progress import RichSweepObserver
    from profiler.single import needs_run, sweep_single
    from workloads import get_workload

    console = Console()
    configs = single_plan(
        _workloads(workload),
        _positive_ints(batch_size, (32, 64, 128), "--batch-size"),
        _amps(amp),
        _positive_ints(gpus, (1,), "--gpus"),
    )
    gpu_nums = sorted({c.gpu_num for c in configs})
    out = _table_path(out, "--out")
    settings = _settings(
        _device(device, gpu_nums, dry_run, console),
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
    table = _open_table(out, "single")
    pending = [c for c in configs if needs_run(table.status(c.key), retry_failed)]
    if dry_run:
        _show_single_plan(console, configs, table, retry_failed)
        _print_estimate(console, len(pending), settings)
        return
    selection = {"command": "single", "configurations": len(configs)}
    nvml = _prepare_run(out, settings, gpu_nums, selection, console)
    try:
        with RichSweepObserver(console, len(pending), "single") as observer:
            summary = sweep_single(configs, table, get_workload, settings, observer, nvml, retry_failed)
    except KeyboardInterrupt:
        raise _interrupted(console, table) from None
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
    _need_pytorch()
    from profiler.metadata import describe_environment, write_metadata
    from profiler.pair import sweep_pairs
    from profiler.plan import pair_plan, single_plan
    from profiler.progress import RichSweepObserver
    from profiler.single import needs_run
    from workloads import get_workload

    console = Console()
    configs = single_plan(
        _workloads(workload),
        _positive_ints(batch_size, (32, 64, 128), "--batch-size"),
        _amps(amp),
        _positive_ints(gpus, (1,), "--gpus"),
    )
    pairs = pair_plan(configs, include_self)
    if not pairs:
        raise typer.BadParameter(
            "no pairs: select two configurations, or allow --include-self", param_hint="--workload"
        )
    gpu_nums = sorted({c.gpu_num for c in configs})
    out = _table_path(out, "--out")
    solo_path = _table_path(single_table or out.with_name(f"single{out.suffix}"), "--single-table")
    if solo_path.resolve() == out.resolve():
        raise typer.BadParameter(
            "the pair table and the single table must be different files", param_hint="--out"
        )
    settings = _settings(
        _device(device, gpu_nums, dry_run, console),
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
    table = _open_table(out, "pair")
    solo_table = _open_table(solo_path, "single")
    pending = [p for p in pairs if needs_run(table.pair_status(p), retry_failed)]
    solos_missing = {c for p in pending for c in (p.first, p.second) if solo_table.status(c.key) is None}
    if dry_run:
        _show_pair_plan(console, pairs, table, retry_failed)
        console.print(f"{len(solos_missing)} solo run(s) missing from {solo_path} will be measured first")
        _print_estimate(console, len(pending) + len(solos_missing), settings)
        return
    selection = {"command": "pair", "pairs": len(pairs), "single_table": str(solo_path)}
    nvml = _prepare_run(out, settings, gpu_nums, selection, console)
    if solos_missing:
        write_metadata(solo_path, describe_environment(settings, max(gpu_nums), nvml), settings, selection)
    try:
        with RichSweepObserver(console, len(pending), "pairs") as observer:
            summary = sweep_pairs(
                pairs, table, solo_table, get_workload, settings, observer, nvml, retry_failed
            )
    except KeyboardInterrupt:
        raise _interrupted(console, table) from None
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
        state = _state(table.status(c.key), retry_failed)
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
        view.add_row(str(i), p.first.label, p.second.label, _state(table.pair_status(p), retry_failed))
    console.print(view)


def main() -> None:
    """Console-script entry point (``lucid-profile``)."""
    app()


if __name__ == "__main__":  # pragma: no cover - `python -m profiler.cli`
    main()
