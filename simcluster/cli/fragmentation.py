"""``lucid-sim fragmentation``: FGD's evaluation of GPU placements on an openb trace (no time; see
:mod:`simcluster.fragmentation`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simcluster.cli.common import app, err, fail, out


@app.command(rich_help_panel="Simulate")
def fragmentation(
    trace: Annotated[Path, typer.Option(help="An openb pod list (openb_pod_list_*.csv), or a folder holding "
                                        "openb_pod_list_default.csv; its node list is read from beside it.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder (replaced atomically): fragmentation.csv, "
                                          "summary.csv, summary.json, unallocated.png.")],
    placement: Annotated[str, typer.Option(help="Placements, comma-separated, or all: random-fit (also: random), "
                                           "dotprod, gpu-clustering, gpu-packing, bestfit, fgd.")] = "all",
    seeds: Annotated[str, typer.Option(help="Seeds: a range 42-51 and/or a list 1,2,3 (FGD's published runs: "
                                       "42-51); at most 10,000.")] = "42-51",
    inflate: Annotated[float, typer.Option(help="GPU demand that arrives, as a multiple of the cluster's GPUs "
                                           "(pods drawn again from the trace until it is reached); above 0, at "
                                           "most 10.")] = 1.3,
    node_list: Annotated[Path | None, typer.Option(help="Node list CSV (sn,cpu_milli,memory_mib,gpu,model). "
                                                   "Default: openb_node_list_gpu_node.csv beside the pods.",
                                                   show_default=False)] = None,
    at: Annotated[int, typer.Option(help="The arrived level (% of GPUs) the table shows.", min=0, max=200)] = 100,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no table.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary at --at as JSON (implies --quiet).")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace --out even if simcluster did not write it.")]
    = False,
) -> None:
    """Place the pods of an openb trace one after another, as FGD's simulator does (none leaves), under
    each placement and seed; report unallocated GPUs and fragmentation as the arrived demand grows.

    Example: `lucid-sim fragmentation --trace ../shared/data/alibaba_openb --placement fgd,bestfit
    --seeds 42-51 --out results/frag`
    """
    import json

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    from simcluster.fragmentation import fragmentation_study, parse_placements, parse_seeds, write_study
    from simcluster.limits import MAX_INFLATE, number
    from simcluster.paths import resolve_data
    from simcluster.results import OutputError, check_output
    from simcluster.traces.errors import TraceError

    try:  # every option before any work
        placements, seed_list = parse_placements(placement), parse_seeds(seeds)
        number(inflate, "--inflate", above=0, high=MAX_INFLATE)
        check_output(out_dir, "fragmentation", [resolve_data(trace)], overwrite)
    except (ValueError, OutputError) as exc:
        fail(exc)
    quiet = quiet or as_json
    progress = Progress(TextColumn("[bold]fragmentation"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                        TextColumn("{task.description}"), console=err, disable=quiet, transient=True)
    with progress:
        task = progress.add_task("", total=len(placements) * len(seed_list))

        def advance(name: str, seed: int) -> None:
            progress.update(task, advance=1, description=f"{name} seed {seed}")

        try:
            result = fragmentation_study(trace, placements, seed_list, inflate, node_list, on_run=advance)
        except (TraceError, ValueError) as exc:
            fail(exc)
    try:
        write_study(result, out_dir, overwrite)
    except OutputError as exc:
        fail(exc)
    summary = result.at(at)
    if as_json:
        print(json.dumps({"arrived_pct": at, "cpu_seconds": round(result.cpu_seconds, 2),
                          "placements": summary.reset_index().to_dict(orient="records")}, indent=2))
        return
    if quiet:
        return
    table = Table(title=f"At {at} % of the GPUs arrived ({len(seed_list)} seed(s); median, min–max)",
                  title_justify="left")
    table.add_column("placement", no_wrap=True)
    for column in ("unallocated GPU %", "min–max", "frag % of GPUs", "frag % of idle", "rank"):
        table.add_column(column, justify="right")
    for name, row in summary.iterrows():
        table.add_row(str(name), f"{row.unallocated_median:.2f}", f"{row.unallocated_min:.2f}–{row.unallocated_max:.2f}",
                      f"{row.frag_pct_of_capacity_median:.2f}", f"{row.frag_pct_of_idle_median:.2f}", str(int(row['rank'])))
    out.print(table)
    out.print(f"{len(placements) * len(seed_list)} runs in {result.cpu_seconds:.1f} CPU-s; wrote "
              f"fragmentation.csv, summary.csv, summary.json and unallocated.png to [bold]{out_dir}[/]", highlight=False)
