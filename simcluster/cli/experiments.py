"""`lucid-sim sweep` and `lucid-sim report`: many runs, and comparing them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simcluster.cli.common import app, err, fail, out
from simcluster.paths import DEFAULT_TRACE


@app.command(rich_help_panel="Simulate")
def sweep(
    out_dir: Annotated[Path, typer.Option("--out", help="Sweep folder: runs/<run-id>/ (standard run folders) "
                                          "and runs.csv; re-running with the same folder skips finished runs.")],
    trace: Annotated[list[str] | None, typer.Option(help="Trace folder or CSV, or a synthetic trace "
                                                    "'synth:jobs=200,nodes=8,vcs=2,seed=1'; repeat for several. "
                                                    "Default: the embedded trace.")] = None,
    vc_config: Annotated[Path | None, typer.Option(help="VC config CSV (vc,num: nodes per VC) for every trace "
                                                   "given as a CSV file (or instead of a trace folder's own).",
                                                   show_default=False)] = None,
    policy: Annotated[str, typer.Option(help="Policies, comma-separated (fifo,sjf,srtf).")] = "fifo",
    seed: Annotated[str, typer.Option(help="Seeds, comma-separated (1,2,3).")] = "0",
    settings: Annotated[list[str] | None, typer.Option("--set", help="SETTING=v1,v2: a `lucid-sim run` setting "
                                                       "(SimConfig field, e.g. quantum, placement, node_mtbf) and "
                                                       "its values; repeat for several. Tuples: thresholds=a/b.")] = None,
    backend: Annotated[str, typer.Option(help="local (a process pool) or ray (Ray tasks; needs the ray extra).")] = "local",
    workers: Annotated[int | None, typer.Option(min=1, help="Processes (local) or CPUs of a started Ray instance. "
                                                "Default: every CPU.")] = None,
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster to connect to (auto, ray://host:10001); "
                                                    "default: start a local instance.")] = None,
    split_vcs: Annotated[str, typer.Option(help="Simulate a run's VCs in parallel processes where the policy "
                                           "keeps per-VC state: auto (when runs < workers), always, never.")] = "auto",
    fmt: Annotated[str, typer.Option("--format", help="Table format: csv, parquet.")] = "csv",
    live: Annotated[bool, typer.Option("--live", help="A live table of runs with status and ETA.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display and no summary.")] = False,
    preset: Annotated[str | None, typer.Option(help="Every run starts from this preset (`lucid-sim presets`); "
                                               "--policy, --seed and --set override it.", show_default=False)] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="TOML file of settings every run starts "
                                                     "from (after --preset).", show_default=False)] = None,
) -> None:
    """Run the cross product traces × policies × seeds × --set values; one run folder each, plus runs.csv.

    Notes say when a --set key is not read by a policy, and when seeds give identical results.
    """
    from simcluster.config import ConfigError
    from simcluster.experiments.notes import ignored_setting_notes
    from simcluster.experiments.sweep import (
        SweepError,
        build_grid,
        parse_seeds,
        parse_sets,
        run_sweep,
        split_list,
    )
    from simcluster.live import print_sweep_outcome, sweep_display
    from simcluster.presets import resolve_config

    try:
        base = resolve_config(preset, config_file)
    except ConfigError as exc:
        fail(str(exc))
    try:
        specs = build_grid(trace or [str(DEFAULT_TRACE)], split_list(policy, "--policy"), parse_seeds(seed),
                           parse_sets(settings or []), fmt, base=base, vc_config=vc_config)
        said = {n.text for n in ignored_setting_notes(specs)}
        if not quiet:
            for text in sorted(said):
                err.print(f"[yellow]note:[/] {text}", highlight=False)
        with sweep_display(err, live=live, quiet=quiet) as listener:
            outcome = run_sweep(specs, out_dir, backend=backend, workers=workers, ray_address=ray_address,
                                split_vcs=split_vcs, listener=listener)
    except SweepError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail(f"interrupted: finished runs are kept in {out_dir} (runs.csv lists them); "
              "run the same command again to resume", 130)
    if not quiet:
        print_sweep_outcome(out, outcome, out_dir)
        for text in outcome.notes:
            if text not in said:
                out.print(f"[yellow]note:[/] {text}", highlight=False)
        if outcome.backend_log is not None:
            out.print(f"Ray's own messages: {outcome.backend_log}", highlight=False)
    if outcome.failed:
        raise typer.Exit(1)


@app.command(rich_help_panel="Simulate")
def report(
    folders: Annotated[list[Path], typer.Argument(help="Run folders (summary.json) and/or sweep folders (runs.csv).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Report folder (replaced atomically): comparison.csv, "
                                          "comparison.md, runs.csv, PNG plots, report.html.")],
    baseline: Annotated[str | None, typer.Option(help="A policy to compare with: each configuration's figures "
                                                 "also as the change from that policy's on the same trace.",
                                                 show_default=False)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the table.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace --out even if simcluster did not write "
                                            "it (never a folder holding the runs compared).")] = False,
) -> None:
    """Compare runs: per configuration (trace + settings; seeds aggregated: mean, min–max), per VC and
    overall (CSV, Markdown, HTML), and PNG plots with min–max error bars."""
    from simcluster.experiments.report import ReportError, rich_table, write_report
    from simcluster.results import OutputError, check_output

    try:
        check_output(out_dir, "report", folders, overwrite)
        made = write_report(folders, out_dir, overwrite, baseline=baseline)
    except (ReportError, OutputError) as exc:
        fail(str(exc))
    if not quiet:
        out.print(rich_table(made.table, width=out.width))
        for note in made.notes:
            out.print(f"[yellow]note:[/] {note}", highlight=False)
        out.print(f"wrote {', '.join(made.files)} to [bold]{out_dir}[/]", highlight=False)
