"""`lucid-sim reliability`: the ETTR of one job of each size against its checkpoint interval (docs/failures.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from simcluster.cli.common import app, fail, out

if TYPE_CHECKING:
    import pandas as pd

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


def _interval_columns(rows: pd.DataFrame) -> tuple[str, ...]:
    """The table's columns, the rate's interval only where the model's rate was counted from a log."""
    with_rate = bool(rows["ettr_rate_low"].notna().any())
    return ("GPUs", "interval", "ETTR", "mean's CI", "runs' 95 %", *((RATE_COLUMN,) if with_rate else ()),
            "closed form", "interruptions")


@app.command(rich_help_panel="Analyse")
def reliability(
    faults: Annotated[str, typer.Option(help="Failure model, as `lucid-sim run --faults` takes it: a fault log, a "
                                        "fitted.json, or a rate model such as mtbf=30d,repair=4h.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for reliability.csv and reliability.png.")],
    gpus: Annotated[str, typer.Option(help="Job sizes in GPUs, comma-separated (whole nodes).")]
        = "8,64,512,4096,16384",
    checkpoint_interval: Annotated[str, typer.Option(help="Intervals: FROM..TO (--points of them, evenly on a log "
                                                     "scale) or a list, e.g. 5m,30m,1h; each size is also run at "
                                                     "Daly's interval.")] = "5m..4h",
    points: Annotated[int, typer.Option(help="Intervals in a FROM..TO range.")] = 8,
    replicas: Annotated[int, typer.Option(help="Runs per size and interval (seeds 0 … N−1).")] = 20,
    work: Annotated[str, typer.Option(help="Each job's work (s, or with a unit: 2d, 36h).")] = "2d",
    checkpoint_cost: Annotated[str, typer.Option(help="Time without progress per checkpoint (s, or with a unit: "
                                                 "1m).")] = "60",
    restart_cost: Annotated[str, typer.Option(help="Time without progress per restart after a fault (s, or with a "
                                              "unit: 5m).")] = "300",
    spare_nodes: Annotated[int, typer.Option(help="Hot spares beside each job's nodes (0: a fault waits for the "
                                             "repair).")] = 8,
    spare_swap: Annotated[str, typer.Option(help="Time to swap a spare in (s, or with a unit: 10m).")] = "0",
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
                                          "the rows of reliability.csv and the files written) instead of the "
                                          "table.")] = False,
) -> None:
    """Run one job of each size under a fault model at each checkpoint interval, over replicas: its ETTR (the
    mean, the mean's 95 % confidence interval, the middle 95 % of the runs and, for a rate counted from a log,
    the interval with the rate's own uncertainty), the closed form where the model allows, and Daly's interval
    marked; writes reliability.csv and reliability.png."""
    from simcluster.errors import TraceError
    from simcluster.experiments.reliability import reliability_study
    from simcluster.faults.spec import LogReading, offset_of, seconds
    from simcluster.limits import LimitError, number
    from simcluster.settings.reliability import MAX_COST_S

    try:
        number(gpus_per_node, "--gpus-per-node", low=1, high=1024, whole=True)
        study = reliability_study(checked_sizes(gpus, gpus_per_node), checked_intervals(checkpoint_interval, points),
                                  faults, replicas=replicas, work=seconds(work, "--work"),
                                  checkpoint_cost=seconds(checkpoint_cost, "--checkpoint-cost", high=MAX_COST_S),
                                  restart_cost=seconds(restart_cost, "--restart-cost", high=MAX_COST_S),
                                  spare_nodes=spare_nodes,
                                  spare_swap=seconds(spare_swap, "--spare-swap", high=MAX_COST_S),
                                  gpus_per_node=gpus_per_node,
                                  faults_offset=None if faults_offset is None else offset_of(faults_offset),
                                  reading=LogReading(fault_servers or None, open_faults, fault_columns))  # type: ignore[arg-type]
        written = study.write(out_dir)
    except (TraceError, LimitError, ValueError, OSError) as exc:
        fail(exc)
    if as_json:
        from simcluster.results import to_json

        print(to_json({"settings": study.settings, "rows": study.table.to_dict("records"),
                       "written": [str(p) for p in written]}, indent=2))
        return
    from rich.table import Table

    table = Table(title=f"ETTR against checkpoint interval ({replicas} replicas; ★: Daly's interval)")
    columns = _interval_columns(study.table)
    for name in columns:
        table.add_column(name, justify="right")
    for row in study.table.itertuples():
        star = " ★" if row.daly else ""
        rate = (f"{row.ettr_rate_low:.4f}–{row.ettr_rate_high:.4f}",) if RATE_COLUMN in columns else ()
        table.add_row(f"{row.gpus:,}", f"{row.interval_s / 60:.1f} min{star}", f"{row.ettr_mean:.4f}",
                      f"{row.ettr_low:.4f}–{row.ettr_high:.4f}", f"{row.ettr_runs_low:.4f}–{row.ettr_runs_high:.4f}",
                      *rate, "" if row.closed_form != row.closed_form else f"{row.closed_form:.4f}",
                      f"{row.interruptions_mean:.1f}")
    out.print(table)
    for line in _study_notes(study.settings):
        out.print(line)
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
