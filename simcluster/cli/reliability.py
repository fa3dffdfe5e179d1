"""`lucid-sim reliability`: the ETTR and wall-clock of one job of each size against its checkpoint interval, spares,
swap time and exclusion rule (docs/failures.md, docs/planning.md)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from simcluster.cli.common import app, fail, out

if TYPE_CHECKING:
    import pandas as pd

    from simcluster.experiments.reliability import ReliabilityStudy

RATE_COLUMN = "with rate's CI"  # the interval with the fitted rate's own uncertainty, where a log gave the rate


def checked_sizes(text: str, gpus_per_node: int) -> tuple[int, ...]:
    """``--gpus``: at most :data:`~simcluster.experiments.reliability.MAX_SIZES` sizes of at most
    :data:`~simcluster.experiments.reliability.MAX_JOB_NODES` nodes each, so that a study's time and memory stay
    bounded (the API, :func:`~simcluster.experiments.reliability.reliability_study`, refuses the same);
    :class:`~simcluster.limits.LimitError` naming ``--gpus`` otherwise.

    >>> checked_sizes("8,64", 8)
    (8, 64)
    >>> checked_sizes("10000000", 8)
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --gpus 10,000,000: a job of at most 131,072 nodes (1,048,576 GPUs at --gpus-per-node 8) is simulated node by node, got 1,250,000 nodes
    """
    from simcluster.experiments.reliability import parse_sizes

    return parse_sizes(text, gpus_per_node)


def checked_intervals(text: str, points: int) -> tuple[float, ...]:
    """``--checkpoint-interval``: each interval at most 30 days, the cap ``lucid-sim run`` puts on it
    (:data:`~simcluster.settings.reliability.MAX_COST_S`); :class:`~simcluster.limits.LimitError` naming the
    option and the value as given otherwise.

    >>> checked_intervals("30m,1h", 8)
    (1800.0, 3600.0)
    >>> checked_intervals("10000d", 8)
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --checkpoint-interval '10000d': an interval must be at most 30 days (2,592,000 s), as `lucid-sim run` takes it; got 864,000,000 s
    """
    from simcluster.experiments.reliability import check_intervals, parse_intervals

    return check_intervals(parse_intervals(text, points), given=text)


def checked_axes(spare_nodes: str, spare_swap: str, exclude_after: str) -> tuple[tuple, tuple, tuple]:
    """``--spare-nodes`` (counts or shares: ``0,8,16``, ``2%,5%``), ``--spare-swap`` (times: ``0,10m``) and
    ``--exclude-after`` (``N/DAYS`` or ``none``): each a list, every combination a row of the study;
    :class:`~simcluster.limits.LimitError` naming the option otherwise.

    >>> checked_axes("0,2%", "0,10m", "none,3/7")
    ((0, '2%'), (0.0, 600.0), (None, '3/7'))
    >>> checked_axes("-1", "0", "none")
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --spare-nodes must be at least 0, got '-1'
    """
    from simcluster.experiments.reliability import parse_exclusions, parse_spares, parse_swaps

    return parse_spares(spare_nodes), parse_swaps(spare_swap), parse_exclusions(exclude_after)


AXIS_COLUMNS = {"_spares": "spares", "_swap": "swap", "_exclusion": "exclusion"}  # the study's keyed axes


def _columns(rows: pd.DataFrame, axes: list[str]) -> tuple[str, ...]:
    """The table's columns: the axes that vary, the rate's interval only where the model's rate was counted
    from a log, the runs that never finished only where some did."""
    with_rate = bool(rows["ettr_rate_low"].notna().any())
    stuck = bool((rows["unfinished_runs"] > 0).any())
    return ("GPUs", *(AXIS_COLUMNS[a] for a in axes), "interval", "ETTR", "mean's CI", "runs' 95 %",
            *((RATE_COLUMN,) if with_rate else ()), "wall days", "closed form", "interruptions",
            *(("never finished",) if stuck else ()))


def _closed_cell(value: float, why: str, reasons: dict[str, str]) -> str:
    """The closed form, or a letter for why it does not apply (the letters are explained under the table)."""
    if not math.isnan(value):
        return f"{value:.4f}"
    letter = reasons.setdefault(why, chr(ord("a") + len(reasons)))
    return f"n/a ({letter})"


def _span(low: float, high: float) -> str:
    return "" if math.isnan(low) else f"{low:.4f}–{high:.4f}"


def _wall(days: float) -> str:
    return f"{days:.2f}" if math.isfinite(days) else "never"


def print_study(study: ReliabilityStudy, replicas: int) -> None:
    """The study's table, the closed form's gaps, its answer per size and its notes, on the terminal."""
    from rich.markup import escape
    from rich.table import Table

    from simcluster.experiments.reliability import answers, keyed_table, time_words, varying

    rows = keyed_table(study.table)
    axes = varying(rows)
    columns = _columns(rows, axes)
    table = Table(title=f"ETTR and wall-clock against checkpoint interval ({replicas} replicas; ★: Daly's interval)")
    for name in columns:
        table.add_column(name, justify="right")
    reasons: dict[str, str] = {}
    for _, row in rows.iterrows():
        star = " ★" if row["daly"] else ""
        rate = (_span(row["ettr_rate_low"], row["ettr_rate_high"]),) if RATE_COLUMN in columns else ()
        stuck = (f"{row['unfinished_runs']} of {row['replicas']}",) if "never finished" in columns else ()
        table.add_row(f"{row['gpus']:,}", *(str(row[a]) for a in axes), time_words(row["interval_s"]) + star,
                      f"{row['ettr_mean']:.4f}", f"{row['ettr_low']:.4f}–{row['ettr_high']:.4f}",
                      f"{row['ettr_runs_low']:.4f}–{row['ettr_runs_high']:.4f}", *rate, _wall(row["wall_days_mean"]),
                      _closed_cell(row["closed_form"], row["closed_form_why"], reasons),
                      f"{row['interruptions_mean']:.1f}", *stuck)
    out.print(table)
    for why, letter in reasons.items():
        out.print(f"closed form n/a ({letter}): {why}", highlight=False)
    for answer in answers(study.table):
        out.print(f"[bold]{answer.gpus:,} GPUs:[/] {escape(answer.headline)}", highlight=False)
        for line in answer.details:
            out.print(f"  - {escape(line)}", highlight=False)
    for line in _study_notes(study.settings):
        out.print(line)


@app.command(rich_help_panel="Analyse")
def reliability(
    faults: Annotated[str, typer.Option(help="Failure model, as `lucid-sim run --faults` takes it: a fault log, a "
                                        "fitted.json, or a rate model such as mtbf=30d,repair=4h.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for reliability.csv, reliability.html (the answer "
                                          "first), reliability.png and, with several spares values, "
                                          "reliability_spares.png.")],
    gpus: Annotated[str, typer.Option(help="Job sizes in GPUs, comma-separated (whole nodes).")]
        = "8,64,512,4096,16384",
    checkpoint_interval: Annotated[str, typer.Option(help="Intervals: FROM..TO (--points of them, evenly on a log "
                                                     "scale) or a list, e.g. 5m,30m,1h; each size is also run at "
                                                     "Daly's interval.")] = "5m..4h",
    points: Annotated[int, typer.Option(help="Intervals in a FROM..TO range.")] = 8,
    replicas: Annotated[int, typer.Option(help="Runs per row (seeds 0 … N−1).")] = 20,
    work: Annotated[str, typer.Option(help="Each job's work (s, or with a unit: 2d, 36h).")] = "2d",
    checkpoint_cost: Annotated[str, typer.Option(help="Time without progress per checkpoint (s, or with a unit: "
                                                 "1m).")] = "60",
    restart_cost: Annotated[str, typer.Option(help="Time without progress per restart after a fault (s, or with a "
                                              "unit: 5m).")] = "300",
    spare_nodes: Annotated[str, typer.Option(help="Hot spares beside each job's nodes: a count, a share of the "
                                             "job's nodes (2%: ⌈0.02 × nodes⌉), or a list of them, each run "
                                             "(0,8,16; 0,2%,5%); 0: a fault waits for the repair.")] = "8",
    spare_swap: Annotated[str, typer.Option(help="Time to swap a spare in (s, or with a unit: 10m), or a list of "
                                            "them, each run (0,10m).")] = "0",
    exclude_after: Annotated[str, typer.Option(help="N/DAYS: take a server out for good at its N-th fault within "
                                               "DAYS days (as `lucid-sim run --exclude-after`); none; or a list "
                                               "of them, each run (none,3/7).")] = "none",
    gpus_per_node: Annotated[int, typer.Option(help="GPUs per node.")] = 8,
    faults_offset: Annotated[str | None, typer.Option(help="Where a replayed log starts: random (the default for a "
                                                      "log: each replica its own offset, drawn from its seed) or a "
                                                      "time into the log for every replica (s, or 90d).",
                                                      show_default=False)] = None,
    fault_servers: Annotated[int, typer.Option(min=0, help="Servers the --faults log observed, those that never "
                                               "failed included (0: the log's own count; a CSV's are only its "
                                               "failing servers).")] = 0,
    open_faults: Annotated[str, typer.Option(help="A fault of the log that never ends: error, or span-end.")]
        = "error",
    fault_columns: Annotated[str | None, typer.Option(help="The --faults CSV log's own column names, as `lucid-sim "
                                                      "faults fit --columns` takes them.", show_default=False)]
        = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the study as one JSON document (its settings, "
                                          "the rows of reliability.csv, the answer per size and the files "
                                          "written) instead of the table.")] = False,
) -> None:
    """Run one job of each size under a fault model at each checkpoint interval and each combination of spares,
    swap time and exclusion rule, over replicas: its ETTR (the mean, the mean's 95 % confidence interval, the
    middle 95 % of the runs and, for a rate counted from a log, the interval with the rate's own uncertainty) and
    its wall-clock in days, the closed form where it applies, and Daly's interval marked; writes reliability.csv,
    reliability.html (the answer first) and the pictures."""
    from simcluster.errors import TraceError
    from simcluster.experiments.reliability import reliability_study
    from simcluster.faults.spec import LogReading, offset_of, seconds
    from simcluster.limits import LimitError, number
    from simcluster.settings.reliability import MAX_COST_S

    try:
        number(gpus_per_node, "--gpus-per-node", low=1, high=1024, whole=True)
        spares, swaps, exclusions = checked_axes(spare_nodes, spare_swap, exclude_after)
        study = reliability_study(checked_sizes(gpus, gpus_per_node), checked_intervals(checkpoint_interval, points),
                                  faults, replicas=replicas, work=seconds(work, "--work"),
                                  checkpoint_cost=seconds(checkpoint_cost, "--checkpoint-cost", high=MAX_COST_S),
                                  restart_cost=seconds(restart_cost, "--restart-cost", high=MAX_COST_S),
                                  spare_nodes=spares, spare_swap=swaps, exclude_after=exclusions,
                                  gpus_per_node=gpus_per_node,
                                  faults_offset=None if faults_offset is None else offset_of(faults_offset),
                                  reading=LogReading(fault_servers or None, open_faults, fault_columns))  # type: ignore[arg-type]
        written = study.write(out_dir, page=True)
    except (TraceError, LimitError, ValueError, OSError) as exc:
        fail(exc)
    if as_json:
        from simcluster.experiments.reliability import answers
        from simcluster.results import to_json

        said = [{"gpus": a.gpus, "nodes": a.nodes, "headline": a.headline, "details": list(a.details)}
                for a in answers(study.table)]
        print(to_json({"settings": study.settings, "rows": study.table.to_dict("records"), "answer": said,
                       "written": [str(p) for p in written]}, indent=2))
        return
    print_study(study, replicas)
    out.print("wrote " + ", ".join(str(p) for p in written))


def _study_notes(settings: dict[str, object]) -> list[str]:
    """What the intervals are, the offsets into a replayed log and the rate's interval, in words."""
    notes = [("mean's CI: the 95 % confidence interval of the mean, mean ± Student's t · sd / √replicas; runs' 95 %: "
              "the middle 95 % of the runs, the 2.5th–97.5th percentile of the replicas' ETTRs (what sweep and "
              "report call the 95 % interval over replicas)")]
    offsets = settings.get("offsets_days")
    if isinstance(offsets, list) and offsets:
        how = "drawn from each seed" if settings.get("faults_offset") == "random" else "as given"
        notes.append(f"offsets into the log ({how}), days: " + ", ".join(f"{o:.1f}" for o in offsets))
    rate = settings.get("node_rate_interval_per_day")
    if isinstance(rate, list):
        notes.append(f"rate counted from {settings['rate_faults']:,} faults in "
                     f"{float(settings['rate_exposure_server_days']):,.0f} server-days up: 95 % interval "  # type: ignore[arg-type]
                     f"{rate[0]:.4g}–{rate[1]:.4g} per node-day (exact Poisson), carried into the ETTR "
                     f"to first order (with rate's CI)")
    return notes
