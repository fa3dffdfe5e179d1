"""`lucid-sim sweep` and `lucid-sim report`: many runs, and comparing them."""

from __future__ import annotations

import signal
import threading
from functools import partial
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from simcluster.cli.common import app, err, exit_code, fail, interrupted_by, out, terminate_as_interrupt
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
                                                       "its values; repeat for several. Tuples: thresholds=a/b. A value of "
                                                       "key=value pairs is one value (faults=mtbf=1d,repair=9h); "
                                                       "separate several with ';'.")] = None,
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
    replicas: Annotated[int, typer.Option(min=0, help="Run every combination on N replicas of its trace made by "
                                          "--perturb (the same replicas for every policy); print each figure's "
                                          "mean with a 95 % interval and the policies' paired differences.")] = 0,
    perturb: Annotated[str | None, typer.Option(help="How replicas are made: bootstrap (resample days; "
                                                "bootstrap:by=user resamples users, bootstrap:block=SECONDS sets the "
                                                "block), jitter (jitter:arrival=SECONDS,sigma=S) or seeds. See "
                                                "docs/uncertainty.md. [default: bootstrap]", show_default=False)
                       ] = None,
    deadlines: Annotated[str | None, typer.Option(help="A,B: every job without a deadline gets submit + U(A, B) × "
                                                  "duration (seeded by each run's seed); summary.json then has "
                                                  "deadline_satisfaction.", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome (every run's row, the notes) as JSON "
                                          "(implies --quiet).")] = False,
) -> None:
    """Run the cross product traces × policies × seeds × --set values (× replicas); one run folder each, plus
    runs.csv (and replicas.csv, differences.csv with --replicas).

    Notes say when a --set key is not read by a policy, and when seeds give identical results.
    """
    from simcluster.config import ConfigError, SimConfig
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

    quiet = quiet or as_json
    try:
        base = resolve_config(preset, config_file)
        if deadlines is not None:
            base = SimConfig.from_settings({"deadlines": deadlines}, "--deadlines", base=base)
    except ConfigError as exc:
        fail(exc)
    specs: list[Any] = []  # (the interrupted sweep's message counts them)
    try:
        specs = build_grid(trace or [str(DEFAULT_TRACE)], split_list(policy, "--policy"), parse_seeds(seed),
                           parse_sets(settings or []), fmt, base=base, vc_config=vc_config, replicas=replicas,
                           perturb=perturb)
        said = {n.text for n in ignored_setting_notes(specs)}
        if not quiet:
            for text in sorted(said):
                err.print(f"[yellow]note:[/] {text}", highlight=False)
        with terminate_as_interrupt(), sweep_display(err, live=live, quiet=quiet) as listener:
            outcome = run_sweep(specs, out_dir, backend=backend, workers=workers, ray_address=ray_address,
                                split_vcs=split_vcs, listener=listener)
    except SweepError as exc:
        fail(exc)
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM: the workers are ended, finished runs kept
        stopped(stop, out_dir, specs, "runs")
    if not quiet:
        print_sweep_outcome(out, outcome, out_dir)
        for text in outcome.notes:
            if text not in said:
                out.print(f"[yellow]note:[/] {text}", highlight=False)
        if outcome.backend_log is not None:
            out.print(f"Ray's own messages: {outcome.backend_log}", highlight=False)
    report_replicas(outcome.rows, out_dir, quiet)
    if as_json:
        from simcluster.results import to_json

        print(to_json({"runs": len(outcome.rows), "ran": outcome.ran, "skipped": outcome.skipped,
                       "failed": outcome.failed, "failed_runs": failed_runs(outcome.rows),
                       "runs_csv": str(outcome.runs_csv), "notes": outcome.notes, "rows": outcome.rows}))
    fail_if_any_failed(outcome.rows, out_dir, "run")


def run_replicas(values: dict[str, Any], config: Any, target: Path, quiet: bool) -> None:
    """``lucid-sim run --replicas N``: the run's trace and settings on N replicas, as a one-configuration sweep."""
    from simcluster.cli.trace_options import LOADER_OPTIONS
    from simcluster.experiments.sweep import SweepError, build_grid, run_sweep
    from simcluster.live import print_sweep_outcome, sweep_display

    options = {name: values.get(name) for name in (*LOADER_OPTIONS, "skip_invalid") if values.get(name)}
    specs: list[Any] = []
    try:
        specs = build_grid([str(values["trace"] or DEFAULT_TRACE)], [config.policy], [config.seed],
                           fmt=values["fmt"], base=config, vc_config=values["vc_config"], replicas=values["replicas"],
                           perturb=values["perturb"], trace_options=options)
        with terminate_as_interrupt(), sweep_display(err, live=False, quiet=quiet) as listener:
            outcome = run_sweep(specs, target, listener=listener)
    except SweepError as exc:
        fail(exc)
    except KeyboardInterrupt as stop:
        stopped(stop, target, specs, "replicas")
    if not quiet:
        print_sweep_outcome(out, outcome, target)
    report_replicas(outcome.rows, target, quiet or values["as_json"])
    if values["as_json"]:
        import json

        from simcluster.experiments.replicas import summarize_rows

        summary = summarize_rows(outcome.rows)
        print(json.dumps({"runs": len(outcome.rows), "failed": outcome.failed,
                          "failed_runs": failed_runs(outcome.rows), "intervals": {
            label: {name: vars(found) for name, found in figures.items()}
            for label, figures in (summary.intervals if summary else {}).items()}}, default=str))
    fail_if_any_failed(outcome.rows, target, "replica")


def failed_runs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs of a sweep that failed, each with its error (``--json``'s ``failed_runs``).

    >>> failed_runs([{"run_id": "a", "status": "ok", "error": ""}, {"run_id": "b", "status": "failed", "error": "E"}])
    [{'run_id': 'b', 'error': 'E'}]
    """
    return [{"run_id": row["run_id"], "error": row["error"]} for row in rows if row["status"] != "ok"]


def fail_if_any_failed(rows: list[dict[str, Any]], folder: Path, what: str) -> None:
    """A sweep whose runs did not all succeed ends with exit code 1 and a line saying how many failed, even
    quiet or with ``--json`` (the line goes to stderr: stdout keeps its one JSON document)."""
    failed = failed_runs(rows)
    if failed:
        fail(f"{len(failed)} of {len(rows)} {what}(s) failed ({failed[0]['run_id']}"
             f"{f' and {len(failed) - 1} more' if len(failed) > 1 else ''}); runs.csv in {folder} gives each one's "
             f"error, {folder / 'failed'} the whole of it (a traceback, or the settings refused)", 1)


def stopped(stop: KeyboardInterrupt, folder: Path, specs: list[Any], what: str) -> NoReturn:
    """An interrupted sweep's last words: what finished (runs.csv, flushed as the sweep stopped), where it is,
    how to resume; exit code 130 after Ctrl-C, 143 after SIGTERM.  No traceback."""
    from simcluster.experiments.sweep import read_runs

    if threading.current_thread() is threading.main_thread():  # ending: another Ctrl-C would cut these words short
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    ours = {spec.run_id for spec in specs}
    if not ours:
        fail(f"interrupted ({interrupted_by(stop)}) before the sweep started: nothing was run", exit_code(stop))
    try:
        runs = read_runs(folder / "runs.csv")
        statuses = [status for run_id, status in zip(runs["run_id"], runs["status"]) if run_id in ours]
    except (OSError, ValueError, KeyError):  # none written yet (stopped while checking the traces), or unreadable
        statuses = []
    ok, failed = statuses.count("ok"), len(statuses) - statuses.count("ok")
    told = f"{ok} of {len(ours)} finished" + (f", {failed} failed" if failed else "")
    fail(f"interrupted ({interrupted_by(stop)}): finished {what} are kept in {folder} (runs.csv lists them: "
         f"{told}); run the same command again to resume", exit_code(stop))


def report_replicas(rows: list[dict], folder: Path, quiet: bool) -> None:
    """With replicas: replicas.csv and differences.csv beside runs.csv, and the intervals and verdicts printed."""
    from rich.table import Table

    from simcluster.atomic import atomic_write
    from simcluster.experiments.replicas import FEWEST, summarize_rows

    summary = summarize_rows(rows)
    if summary is None:
        return
    for name, frame in (("replicas.csv", summary.frame()), ("differences.csv", summary.differences_frame())):
        atomic_write(folder / name, partial(_write, frame.to_csv(index=False).encode()))
    if quiet:
        return
    table = Table(title=f"Over replicas ({summary.perturbation}): mean, 95 % interval", title_justify="left")
    table.add_column("configuration", style="bold")
    ettr = any("ettr_mean" in figures for figures in summary.intervals.values())  # runs given a reliability option
    for name in ("avg JCT (s)", "p99 JCT (s)", "avg queue (s)", "util", *(("ETTR mean", "ETTR GPU-wtd") if ettr else ()),
                 "n"):
        table.add_column(name, justify="right")
    for label, figures in summary.intervals.items():
        cells = [_with_interval(figures[name]) for name in ("avg_jct", "p99_jct", "avg_queue")]
        util = figures["gpu_utilization"]
        cells.append(f"{util.mean:.1%} [{util.low:.1%}, {util.high:.1%}]")
        if ettr:
            cells += [f"{f.mean:.3f} [{f.low:.3f}, {f.high:.3f}]" if f.n else "" for f in
                      (figures.get("ettr_mean"), figures.get("ettr_gpu_weighted")) if f is not None]
        table.add_row(label, *cells, str(figures["avg_jct"].n))
    out.print(table)
    for *_, text in summary.differences:
        out.print(text, highlight=False)
    if min(f["avg_jct"].n for f in summary.intervals.values()) < FEWEST:
        out.print(f"[yellow]note:[/] fewer than {FEWEST} replicas: the 95 % intervals are rough", highlight=False)


def _write(data: bytes, handle: Any) -> None:
    handle.write(data)


def _with_interval(found: Any) -> str:
    return f"{found.mean:,.0f} [{found.low:,.0f}, {found.high:,.0f}]"


@app.command(rich_help_panel="Simulate")
def report(
    folders: Annotated[list[Path], typer.Argument(help="Run folders (summary.json) and/or sweep folders (runs.csv).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Report folder (replaced atomically): comparison.csv, "
                                          "comparison.md, runs.csv, PNG plots, report.html.")],
    baseline: Annotated[str | None, typer.Option(help="A policy to compare with (a name, or a plug-in's file or "
                                                 "module:Class, as --policy takes): each configuration's figures "
                                                 "also as the change from that policy's on the same trace.",
                                                 show_default=False)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the table.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace --out even if simcluster did not write "
                                            "it (never a folder holding the runs compared).")] = False,
    replicas: Annotated[int, typer.Option(min=0, help="Intervals for runs that are not replicas: resample each "
                                          "run's days N times, the schedule held fixed (runs from `sweep "
                                          "--replicas` get theirs without this).")] = 0,
    perturb: Annotated[str | None, typer.Option(help="With --replicas: bootstrap (days) or "
                                                "bootstrap:block=SECONDS. [default: bootstrap]", show_default=False)
                       ] = None,
    seed: Annotated[int, typer.Option(help="With --replicas: the seed of the resampling.")] = 0,
    gantt_window: Annotated[str | None, typer.Option(help="Stretch of time the Gantt charts show, START:END from "
                                                     "the first submission (e.g. 0:6h, 2d:3d); default: the whole "
                                                     "run, or its start when it has many jobs.",
                                                     show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison table and the files written as JSON "
                                          "(implies --quiet).")] = False,
    allow_missing: Annotated[bool, typer.Option("--allow-missing", help="Report a sweep without the runs its "
                                                "runs.csv lists whose folders are gone or cut short (the notes "
                                                "name them); without it they are an error.")] = False,
    metrics: Annotated[list[str] | None, typer.Option("--metrics", help="Figures whose paired differences (with a "
                                                      "95 % interval and a verdict) runs with replicas get, comma-"
                                                      "separated (avg_jct,p99_jct,max_queue,queue_over_4h,…). "
                                                      "[default: avg/p50/p99 JCT, avg/p99/max queue, bounded "
                                                      "slowdown, utilization, share waiting > each --wait-bound]",
                                                      show_default=False)] = None,
    wait_bound: Annotated[list[str] | None, typer.Option("--wait-bound", help="A wait (3600, 90m, 4h, 1d) whose "
                                                         "share of jobs waiting longer is a figure "
                                                         "(queue_over_4h); repeat for several. [default: those the "
                                                         "runs recorded, else 4h]", show_default=False)] = None,
) -> None:
    """Compare runs: per configuration (trace + settings; seeds aggregated: mean, min–max; replicas: mean and
    95 % interval), per VC and overall (CSV, Markdown, HTML), PNG plots, and an interactive page (report.html)
    with a Gantt chart of each run that recorded its placements (run --placements)."""
    from simcluster.experiments.pictures import parse_window
    from simcluster.experiments.report import ReportError, rich_table, write_report
    from simcluster.results import OutputError, check_output

    try:
        check_output(out_dir, "report", folders, overwrite)
        from simcluster.metrics.tail import parse_seconds

        # --baseline takes the same specs as --policy: write_report resolves them as the API's callers get them
        made = write_report(folders, out_dir, overwrite, baseline=baseline, replicas=replicas, perturb=perturb,
                            seed=seed, gantt_window=parse_window(gantt_window) if gantt_window else None,
                            allow_missing=allow_missing,
                            metrics=[m.strip() for text in metrics for m in text.split(",") if m.strip()]
                            if metrics else None,
                            wait_bounds=[parse_seconds(text) for text in wait_bound] if wait_bound else None)
    except (ReportError, OutputError, ValueError) as exc:
        fail(exc)
    if as_json:
        from simcluster.results import to_json

        print(to_json({"folder": str(out_dir), "files": made.files, "notes": made.notes,
                       "comparison": made.table.to_dict(orient="records")}))
    elif not quiet:
        out.print(rich_table(made.table, width=out.width))
        for note in made.notes:
            out.print(f"[yellow]note:[/] {note}", highlight=False)
        out.print(f"wrote {', '.join(made.files)} to [bold]{out_dir}[/]", highlight=False)
