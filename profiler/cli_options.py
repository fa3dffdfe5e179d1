"""What the ``lucid-profile`` commands share: their options, and the checks and set-up behind them.

Kept apart from the commands (:mod:`profiler.cli`, :mod:`profiler.cli_campaign`) so that each command
module imports this one and none imports another.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

if TYPE_CHECKING:  # torch and the tables' pandas load only when a command runs: --help stays fast
    from profiler.nvml import Nvml
    from profiler.runner import RunSettings
    from profiler.tables import ResultTable


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


def need_pytorch() -> None:
    """Stop with the install command when the profiler extra (PyTorch) is missing."""
    import importlib.util

    missing = [m for m in ("torch", "torchvision") if importlib.util.find_spec(m) is None]
    if missing:
        Console(stderr=True).print(f"[bold red]error:[/] lucid-profile needs {' and '.join(missing)}: "
                                   "pip install 'simcluster\\[profiler]'", highlight=False)
        raise typer.Exit(2)


def split_values(values: Sequence[str] | None) -> list[str]:
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def positive_ints(values: Sequence[str] | None, default: Sequence[int], option: str) -> list[int]:
    parts = split_values(values)
    if not parts:
        return list(default)
    numbers: list[int] = []
    for part in parts:
        if not part.isdigit() or int(part) < 1:
            raise typer.BadParameter(f"{part!r} is not a positive integer", param_hint=option)
        numbers.append(int(part))
    return list(dict.fromkeys(numbers))


def chosen_workloads(values: Sequence[str] | None) -> list[tuple[str, str]]:
    from workloads import all_workloads, get_workload, workload_names

    names = split_values(values)
    if not names:
        return [(s.model, s.dataset) for s in all_workloads()]
    unknown = [n for n in names if n not in workload_names()]
    if unknown:
        raise typer.BadParameter(
            f"unknown workload {', '.join(map(repr, unknown))}; valid workloads: {', '.join(workload_names())}",
            param_hint="--workload",
        )
    return [(get_workload(n).model, get_workload(n).dataset) for n in dict.fromkeys(names)]


def amp_settings(choice: AmpChoice) -> list[bool]:
    return {AmpChoice.both: [True, False], AmpChoice.on: [True], AmpChoice.off: [False]}[choice]


def table_path(path: Path, option: str) -> Path:
    if path.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise typer.BadParameter(f"{path} must end in .csv or .parquet", param_hint=option)
    return path


def choose_device(choice: DeviceChoice, gpu_nums: Sequence[int], dry_run: bool, console: Console) -> str:
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


def run_settings(
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
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def open_table(path: Path, kind: str) -> ResultTable:
    from profiler.tables import ResultTable
    from simcluster.colocation import TableError

    try:
        return ResultTable(path, kind)
    except TableError as exc:
        raise typer.BadParameter(f"the existing table cannot be resumed: {exc}", param_hint="--out") from None


def open_nvml_or_warn(device: str, console: Console) -> Nvml | None:
    from profiler.nvml import open_nvml

    if device != "cuda":
        console.print("[yellow]warning:[/] running on the CPU: gpu_util, gmem_util and gmem stay empty (NaN)")
        return None
    nvml, why = open_nvml()
    if nvml is None:
        console.print(f"[yellow]warning:[/] {why}")
    return nvml


def prepare_run(
    table: Path, settings: RunSettings, gpu_nums: Sequence[int], selection: dict[str, Any], console: Console
) -> Nvml | None:
    from profiler.metadata import describe_environment, resume_conflict, write_metadata

    nvml = open_nvml_or_warn(settings.device, console)
    environment = describe_environment(settings, max(gpu_nums), nvml)
    conflict = resume_conflict(table, environment)
    if conflict:
        raise typer.BadParameter(conflict, param_hint="--out")
    write_metadata(table, environment, settings, selection)
    return nvml


def print_estimate(console: Console, runs: int, settings: RunSettings) -> None:
    from profiler.plan import TimeEstimate, estimate_run, format_duration

    per_run = estimate_run(settings)
    total = TimeEstimate(per_run.expected_s * runs, per_run.at_most_s * runs)
    console.print(
        f"{runs} run(s) on {settings.device} ({settings.size} sizes): about {format_duration(total.expected_s)} "
        f"if every run steadies quickly, at most about {format_duration(total.at_most_s)} "
        f"(time limit {settings.measure.time_limit_s:g} s per run)"
    )


def row_state(status: str | None, retry_failed: bool) -> str:
    from profiler.single import needs_run

    if status is None:
        return "to run"
    if needs_run(status, retry_failed):
        return "failed, will retry"
    return f"done ({status}), skip"


def interrupted(console: Console, table: ResultTable, stop: BaseException | None = None) -> typer.Exit:
    """Say what an interrupted sweep kept; the exit status: 130 after Ctrl-C, 143 after SIGTERM."""
    from simcluster.cli.common import exit_code, interrupted_by

    why = f" ({interrupted_by(stop)})" if stop is not None else ""
    console.print(
        f"\n[yellow]interrupted{why}.[/] {table.path} holds the {len(table)} row(s) measured so far; "
        "run the same command again to resume."
    )
    return typer.Exit(exit_code(stop) if stop is not None else 130)
