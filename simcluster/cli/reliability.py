"""`lucid-sim reliability`: the ETTR of one job of each size against its checkpoint interval (docs/failures.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simcluster.cli.common import app, fail, out

MAX_SIZES = 200  # job sizes in one study, as --points stops at 200 intervals
# each of a job's nodes is simulated (about 6 kB a node in a run): 131,072 nodes stay near a gigabyte, and at 8
# GPUs a node above a million GPUs, beyond the largest cluster built
MAX_JOB_NODES = 131_072


def checked_sizes(text: str, gpus_per_node: int) -> tuple[int, ...]:
    """``--gpus``: at most :data:`MAX_SIZES` sizes of at most :data:`MAX_JOB_NODES` nodes each, so that a study's
    time and memory stay bounded; :class:`~simcluster.limits.LimitError` naming ``--gpus`` otherwise.

    >>> checked_sizes("8,64", 8)
    (8, 64)
    >>> checked_sizes("10000000", 8)
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --gpus 10,000,000: a job of at most 131,072 nodes (1,048,576 GPUs at --gpus-per-node 8) is simulated node by node, got 1,250,000 nodes
    """
    from simcluster.experiments.reliability import parse_sizes
    from simcluster.limits import LimitError

    count = sum(1 for part in text.split(",") if part.strip())
    if count > MAX_SIZES:
        raise LimitError(f"--gpus: at most {MAX_SIZES} job sizes in one study (as --points stops at 200), got {count:,}")
    sizes = parse_sizes(text, gpus_per_node)
    for size in sizes:
        if size // gpus_per_node > MAX_JOB_NODES:
            raise LimitError(f"--gpus {size:,}: a job of at most {MAX_JOB_NODES:,} nodes ({MAX_JOB_NODES * gpus_per_node:,} "
                             f"GPUs at --gpus-per-node {gpus_per_node}) is simulated node by node, got "
                             f"{size // gpus_per_node:,} nodes")
    return sizes


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
    from simcluster.experiments.reliability import parse_intervals
    from simcluster.limits import LimitError, shown
    from simcluster.settings.reliability import MAX_COST_S

    intervals = parse_intervals(text, points)
    longest = max(intervals)
    if longest > MAX_COST_S:
        raise LimitError(f"--checkpoint-interval {shown(text)}: an interval must be at most {MAX_COST_S / 86_400:g} "
                         f"days ({MAX_COST_S:,.0f} s), as `lucid-sim run` takes it; got "
                         f"{f'{longest:,.0f}' if longest < 1e15 else f'{longest:g}'} s")
    return intervals


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
    from simcluster.experiments.reliability import reliability_study
    from simcluster.faults.spec import seconds
    from simcluster.limits import LimitError, number

    try:
        number(gpus_per_node, "--gpus-per-node", low=1, high=1024, whole=True)
        study = reliability_study(checked_sizes(gpus, gpus_per_node), checked_intervals(checkpoint_interval, points),
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
