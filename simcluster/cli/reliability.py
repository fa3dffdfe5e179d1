"""`lucid-sim reliability`: the ETTR of one job of each size against its checkpoint interval (docs/failures.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simcluster.cli.common import app, fail, out


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
    checkpoint_cost: Annotated[float, typer.Option(help="Seconds without progress per checkpoint.")] = 60.0,
    restart_cost: Annotated[float, typer.Option(help="Seconds without progress per restart after a fault.")] = 300.0,
    spare_nodes: Annotated[int, typer.Option(help="Hot spares beside each job's nodes (0: a fault waits for the "
                                             "repair).")] = 8,
    spare_swap: Annotated[float, typer.Option(help="Seconds to swap a spare in.")] = 0.0,
    gpus_per_node: Annotated[int, typer.Option(help="GPUs per node.")] = 8,
    faults_offset: Annotated[float, typer.Option(help="A replayed log starts this many seconds into the log.")] = 0.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the study as one JSON document (its settings, "
                                          "the rows of reliability.csv and the files written) instead of the "
                                          "table.")] = False,
) -> None:
    """Run one job of each size under a fault model at each checkpoint interval, over replicas: its ETTR (mean and
    95 % interval), the closed form where the model allows, and Daly's interval marked; writes reliability.csv
    and reliability.png."""
    from simcluster.errors import TraceError
    from simcluster.experiments.reliability import parse_intervals, parse_sizes, reliability_study
    from simcluster.faults.spec import seconds
    from simcluster.limits import LimitError, number

    try:
        number(gpus_per_node, "--gpus-per-node", low=1, high=1024, whole=True)
        study = reliability_study(parse_sizes(gpus, gpus_per_node), parse_intervals(checkpoint_interval, points),
                                  faults, replicas=replicas, work=seconds(work, "--work"),
                                  checkpoint_cost=checkpoint_cost, restart_cost=restart_cost, spare_nodes=spare_nodes,
                                  spare_swap=spare_swap, gpus_per_node=gpus_per_node, faults_offset=faults_offset)
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
    for name in ("GPUs", "interval", "ETTR", "95 % interval", "closed form", "interruptions"):
        table.add_column(name, justify="right")
    for row in study.table.itertuples():
        star = " ★" if row.daly else ""
        table.add_row(f"{row.gpus:,}", f"{row.interval_s / 60:.1f} min{star}", f"{row.ettr_mean:.4f}",
                      f"{row.ettr_low:.4f}–{row.ettr_high:.4f}",
                      "" if row.closed_form != row.closed_form else f"{row.closed_form:.4f}",
                      f"{row.interruptions_mean:.1f}")
    out.print(table)
    out.print("wrote " + ", ".join(str(p) for p in written))
