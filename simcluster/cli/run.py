"""``lucid-sim run``: simulate one trace under one configuration and write a results folder.

Its options are the trace options, the output options, ``--preset``/``--config`` and one option per
:class:`~simcluster.config.SimConfig` field (:mod:`simcluster.cli.options`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from simcluster.cli.common import app, err, exit_code, fail, interrupted_by, out, terminate_as_interrupt
from simcluster.cli.options import (
    config_parameters,
    config_source_parameters,
    parameter,
    settings_from,
    with_parameters,
)
from simcluster.cli.trace_options import load_trace_from, print_trace_warnings, trace_parameters
from simcluster.config import POLICY, TIRESIAS, ConfigError, SimConfig, knobs
from simcluster.paths import DEFAULT_TRACE

if TYPE_CHECKING:
    from simcluster.run import ResolvedSettings

OUTPUT = "Output"
FORMATS = ("csv", "parquet")


def output_parameters() -> list[Any]:
    return [
        parameter("out_dir", Annotated[Path | None, typer.Option(
            "--out", help="Results folder (written atomically). Default: results/TRACE-POLICY-PLACEMENT, plus a "
            "short hash of the other settings that differ from the defaults.", rich_help_panel=OUTPUT,
            show_default=False)]),
        parameter("fmt", Annotated[str, typer.Option(
            "--format", help=f"Table format: {', '.join(FORMATS)}.", rich_help_panel=OUTPUT)], "csv"),
        parameter("quiet", Annotated[bool, typer.Option(
            "--quiet", "-q", help="No progress bar and no table.", rich_help_panel=OUTPUT)], False),
        parameter("as_json", Annotated[bool, typer.Option(
            "--json", help="Print the summary as JSON (implies --quiet).", rich_help_panel=OUTPUT)], False),
        parameter("live", Annotated[bool, typer.Option(
            "--live", help="A live view: simulated time, progress per VC, running/pending jobs, busy GPUs, "
            "utilization sparkline, avg JCT.", rich_help_panel=OUTPUT)], False),
        parameter("overwrite", Annotated[bool, typer.Option(
            "--overwrite", help="Replace the --out folder even if simcluster did not write it (never the "
            "trace's folder, the current one or one above it).", rich_help_panel=OUTPUT)], False),
        parameter("placements", Annotated[bool, typer.Option(
            "--placements", help="Also write placements.csv: which GPUs of which node each job held, from when to "
            "when (the report's Gantt chart of the run).", rich_help_panel=OUTPUT)], False),
        parameter("dry_run", Annotated[bool, typer.Option(
            "--dry-run", help="Check the settings, the trace and --out, print what would run and where; "
            "simulate and write nothing.", rich_help_panel=OUTPUT)], False),
        parameter("wait_bound", Annotated[list[str] | None, typer.Option(
            "--wait-bound", help="A wait (3600, 90m, 4h, 1d) whose share of jobs waiting longer is a figure "
            "(queue_over_4h in summary.json, users.csv and the table); repeat for several. [default: 4h]",
            rich_help_panel=OUTPUT, show_default=False)], None),
    ]


def queues_parameter() -> Any:
    return parameter("queues", Annotated[int | None, typer.Option(
        min=1, help="tiresias: number of priority queues K (thresholds 18000·2^i GPU-s unless --thresholds).",
        rich_help_panel=TIRESIAS, show_default=False)])


def queue_thresholds(queues: int | None, thresholds: Any) -> tuple[float, ...] | None:
    """``--queues K`` alone → K-1 thresholds 18000·2^i; with ``--thresholds``, their count must match."""
    if queues is None:
        return None
    if thresholds is None:
        return tuple(18000.0 * 2**i for i in range(queues - 1))
    values = SimConfig.from_settings({"thresholds": thresholds}, "command line").thresholds
    if len(values) != queues - 1:
        raise ConfigError(f"--queues {queues} needs {queues - 1} thresholds, got {len(values)}")
    return values


def check_thresholds(config: SimConfig) -> None:
    values = config.thresholds
    if list(values) != sorted(set(values)) or values[0] <= 0:
        raise ConfigError(f"setting 'thresholds' must be positive and increasing, got {values!r}")


def set_parameter() -> Any:
    return parameter("policy_set", Annotated[list[str] | None, typer.Option(
        "--set", help="NAME=VALUE: one of the policy's own settings (`lucid-sim policies NAME` lists them); "
        "repeat for several.", rich_help_panel=POLICY, show_default=False, metavar="NAME=VALUE")])


def parse_policy_set(items: list[str] | None) -> dict[str, str]:
    """``["threshold=3600", …]`` → {"threshold": "3600"}: values as given; the policy's Settings type them."""
    found: dict[str, str] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--set {item!r}: expected NAME=VALUE")
        if name.strip() in found:
            raise ConfigError(f"--set {name.strip()}: given twice")
        found[name.strip()] = value.strip()
    return found


def config_from(ctx: typer.Context, values: dict[str, Any], exclude: tuple[str, ...] = ()) -> ResolvedSettings:
    """The run's settings: defaults < --preset < --config < the options given on the command line, with the
    plug-ins they name loaded and the policy's own settings checked."""
    from simcluster.presets import resolve_config

    settings: dict[str, Any] = settings_from(ctx, values, [n for n in knobs() if n not in exclude])
    thresholds = queue_thresholds(values.get("queues"), settings.get("thresholds"))
    if thresholds is not None:
        settings["thresholds"] = thresholds
    own = parse_policy_set(values.get("policy_set"))
    config = resolve_config(values.get("preset"), values.get("config_file"), settings, policy_settings=own)
    check_thresholds(config)
    return check_plugins(config)


def check_plugins(config: SimConfig) -> ResolvedSettings:
    """Unknown policy, placement or estimator: an error listing the choices; the settings with their plug-ins
    resolved (specs made absolute, the policy's own settings typed: :func:`~simcluster.run.resolve_settings`)."""
    from simcluster.estimators import ESTIMATORS
    from simcluster.run import resolve_settings

    settled = resolve_settings(config)
    if config.estimator != "auto":
        ESTIMATORS.get(config.estimator)
    return settled


def default_folder(trace: Path, settled: ResolvedSettings) -> Path:
    """``results/TRACE-POLICY-PLACEMENT``, plus a hash of every other setting that is not the default,
    so that runs differing in any option never share a folder."""
    name = trace.resolve().name.removesuffix(".csv").removesuffix(".trace")
    config, defaults = settled.config, SimConfig().as_dict()
    changed = {k: v for k, v in config.as_dict().items()
               if k not in ("policy", "placement", "config_file") and v != defaults[k]}
    policy, placement = settled.policy.name, settled.placement.name
    if policy != config.policy or placement != config.placement:  # a plug-in: its spec tells folders apart
        changed["plugins"] = [config.policy, config.placement]
    folder = f"{name}-{policy}-{placement}"
    if changed:
        folder += "-" + hashlib.sha1(json.dumps(changed, sort_keys=True, default=str).encode()).hexdigest()[:6]
    return Path("results") / folder


def replica_parameters() -> list[Any]:
    """``--replicas N`` and ``--perturb``: the run on N perturbed copies of its trace (a sweep folder at --out)."""
    return [
        parameter("replicas", Annotated[int, typer.Option(
            min=0, help="Run on N replicas of the trace made by --perturb instead of once; --out becomes a sweep "
            "folder, and each figure is printed with its 95 % interval.", rich_help_panel=OUTPUT)], 0),
        parameter("perturb", Annotated[str | None, typer.Option(
            help="How replicas are made: bootstrap (days; bootstrap:by=user), jitter (jitter:arrival=S,sigma=X) "
            "or seeds. See docs/uncertainty.md. [default: bootstrap]", rich_help_panel=OUTPUT,
            show_default=False)], None),
    ]


RUN_PARAMETERS = [*trace_parameters(), *config_source_parameters(), *config_parameters(), set_parameter(),
                  queues_parameter(),
                  *output_parameters(), *replica_parameters()]


@app.command(rich_help_panel="Simulate")
@with_parameters(RUN_PARAMETERS)
def run(ctx: typer.Context, **values: Any) -> None:
    """Simulate a trace and write jobs, timeline and summary to a results folder.

    Settings apply in this order: defaults, `--preset`, `--config FILE.toml`, the options given here.
    """
    from simcluster.registry import UnknownPlugin
    from simcluster.results import check_output
    from simcluster.run import resolve_run
    from simcluster.traces import TraceError

    fmt, quiet, live = values["fmt"], values["quiet"] or values["as_json"], values["live"]
    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if values["perturb"] is not None or values["replicas"]:  # the replicas' settings, before any work
        from simcluster.experiments.replicas import PerturbationError, parse_perturbation
        from simcluster.limits import MAX_REPLICAS

        try:
            parse_perturbation(values["perturb"] or "bootstrap")
        except PerturbationError as exc:
            fail(str(exc))
        if not values["replicas"]:
            fail(f"--perturb needs --replicas N (N ≥ 1): without replicas --perturb {values['perturb']} perturbs "
                 "nothing")
        if values["replicas"] > MAX_REPLICAS:
            fail(f"--replicas must be at most {MAX_REPLICAS:,} (200 already steady a 95 % interval's ends), got "
                 f"{values['replicas']:,}")
    try:
        from simcluster.metrics.tail import parse_seconds

        wait_bounds = [parse_seconds(text) for text in values["wait_bound"] or []]
    except ValueError as exc:
        fail(str(exc))
    trace = values["trace"] or DEFAULT_TRACE
    try:
        settled = config_from(ctx, values)
    except (UnknownPlugin, ValueError) as exc:  # (PluginError and ConfigError are ValueErrors)
        fail(str(exc))
    config = settled.config
    target = values["out_dir"] or default_folder(trace, settled)
    inputs = run_inputs(values, config)
    try:  # before any work: a run that cannot be written is not worth simulating
        check_output(target, "run", inputs, values["overwrite"])
        loaded = load_trace_from(values, config)
        resolved = resolve_run(loaded, settled)  # the cluster, the tables, the failure model: loaded once, here
    except (TraceError, UnknownPlugin, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    warnings = list(resolved.warnings)
    if not quiet:
        print_trace_warnings(loaded)
    if values["replicas"] and not values["dry_run"]:
        from simcluster.cli.experiments import run_replicas

        if wait_bounds and not quiet:  # (each replica's summary has the default bound; a report computes others)
            err.print(f"[yellow]note:[/] the replicas' summaries give the share waiting > 4h; for --wait-bound "
                      f"{' '.join(values['wait_bound'])} run lucid-sim report {target} --wait-bound …", highlight=False)
        run_replicas(values, config, target, quiet)
        return
    if values["dry_run"]:
        print_plan(loaded, config, resolved, target, fmt)
        return
    if not quiet:
        if loaded.skipped:
            err.print(f"[yellow]skipped {sum(loaded.skipped.values())} invalid row(s):[/] "
                      + "; ".join(f"{n} × {why}" for why, n in loaded.skipped.most_common()))
        print_warnings(warnings)
    from simcluster.metrics.placements import Placements
    from simcluster.results import OutputError, to_json, write_run

    where = Placements() if values["placements"] else None
    try:
        with terminate_as_interrupt():
            result = simulate_with_progress(loaded, resolved, quiet=quiet, live=live,
                                            observers=[where] if where else [])
            tables = result.tables() | ({"placements": where.frame()} if where else {})
            if wait_bounds:  # (the figures of the default bound replaced by those of the bounds given)
                from simcluster.metrics.fairness import users_table
                from simcluster.metrics.tail import with_wait_bounds

                result.summary = with_wait_bounds(result.summary, result.jobs, wait_bounds)
                tables["users"] = users_table(result.jobs, wait_bounds)
            write_run(target, tables, result.summary, fmt, inputs=inputs, overwrite=values["overwrite"])
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: the folder is written whole or not at all
        fail(f"interrupted ({interrupted_by(stop)}): nothing was written to {target}", exit_code(stop))
    except OutputError as exc:  # a read-only folder, a full disk: nothing was written
        fail(exc)
    if values["as_json"]:
        print(to_json(result.summary))
    elif not quiet:
        from simcluster.cli.summary import print_summary

        print_summary(result.summary, target, shown=warnings)


def run_inputs(values: dict[str, Any], config: SimConfig) -> list[Path]:
    """Every file or folder the run reads: the trace, the VC config, and any setting that names a path
    (a config file, estimates, colocation tables...).  ``--out`` may hold none of them."""
    given = [values["trace"] or DEFAULT_TRACE, values["vc_config"], *config.as_dict().values()]
    return [Path(v) for v in given if isinstance(v, (str, Path)) and str(v) and Path(v).exists()]


def print_warnings(warnings: list[str]) -> None:
    from simcluster.cli.summary import print_warnings as show

    show(warnings, err)


def print_plan(loaded: Any, config: SimConfig, resolved: Any, target: Path, fmt: str) -> None:
    """``--dry-run``: the trace, the cluster, the settings given that differ from the defaults (``config``, before
    the run's resolution adds what it finds beside the trace), where results go."""
    from simcluster.results import read_marker

    spec, defaults = resolved.cluster, SimConfig()
    changed = {k: v for k, v in config.as_dict().items()
               if k in knobs() and k not in ("policy", "placement") and v != getattr(defaults, k)}
    placement = resolved.policy.cls.own_placement or config.placement
    out.print(f"would simulate [bold]{loaded.source}[/] ({len(loaded):,} jobs) with {config.policy}/"
              f"{placement} on {spec.describe()} ({spec.total_gpus:,} GPUs)", highlight=False)
    if config.preset:
        out.print(f"  preset {config.preset}", highlight=False)
    for name, value in changed.items():
        out.print(f"  {name} = {value!r}", highlight=False)
    if not changed:
        out.print("  every other setting at its default", highlight=False)
    replaces = target.exists() and any(target.iterdir())
    what = " (replacing the run there)" if replaces and read_marker(target) else (
        " (replacing what is there: --overwrite)" if replaces else "")
    out.print(f"and write jobs.{fmt}, timeline.{fmt} and summary.json to [bold]{target}[/]{what}; "
              "nothing was simulated or written (--dry-run)", highlight=False)
    print_warnings(list(resolved.warnings))


def simulate_with_progress(loaded: Any, resolved: Any, quiet: bool, live: bool, observers: list[Any] | None = None
                           ) -> Any:
    """Run the simulation of a resolved run under a progress bar with ETA (or the live view, or nothing)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from simcluster.api import simulate_resolved
    from simcluster.engine import SimulationStalled
    from simcluster.guard import PluginFailed
    from simcluster.live import EtaColumn, ProgressObserver, live_run
    from simcluster.traces import TraceError

    with Progress(TextColumn("[bold]{task.fields[label]}"), BarColumn(), TextColumn("{task.fields[jobs]}"),
                  TextColumn("{task.fields[day]}"), TimeElapsedColumn(), EtaColumn(), console=err,
                  disable=quiet or live, transient=True) as progress:
        config = resolved.config
        task = progress.add_task("", total=1.0, label=f"{config.policy}/{config.placement}",
                                 jobs=f"0/{len(loaded):,} jobs", day="day 0")
        try:
            with live_run(loaded, config, err, enabled=live and not quiet) as watchers:
                return simulate_resolved(resolved, [ProgressObserver(progress, task, loaded), *watchers,
                                                    *(observers or [])])
        except (TraceError, ValueError, FileNotFoundError) as exc:  # e.g. an estimates file that lacks a job
            fail(str(exc))
        except (PluginFailed, SimulationStalled) as exc:  # a plug-in raised, or took a decision the engine cannot
            fail(str(exc), 1)                              # carry out; or nothing was left to happen
