"""Reference commands (policies, placements, presets) and `lucid-sim explain`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from simcluster.cli.common import app, err, fail, out, plugin_table
from simcluster.paths import DEFAULT_TRACE


@app.command(rich_help_panel="Reference")
def policies(as_json: Annotated[bool, typer.Option("--json", help="Print name → description as JSON.")] = False) -> None:
    """List the scheduling policies, one line each: every policy runs on every trace and cluster."""
    from simcluster.policies import POLICIES
    from simcluster.policies.gavel import RoundPolicy

    described = POLICIES.describe()
    if as_json:
        print(json.dumps(described, indent=2))
        return
    rounds = {n for n in described if issubclass(POLICIES.get(n), RoundPolicy)}
    plugin_table("Scheduling policies", {n: d for n, d in described.items() if n not in rounds}, as_json)
    plugin_table("Gavel's policies (OSDI'20): allocations realised in rounds, each VC its own",
                 {n: d for n, d in described.items() if n in rounds}, as_json)


@app.command(rich_help_panel="Reference")
def placements(as_json: Annotated[bool, typer.Option("--json", help="Print name → description as JSON.")] = False) -> None:
    """List the placements, one line each."""
    from simcluster.placement import PLACEMENTS

    plugin_table("Placements", PLACEMENTS.describe(), as_json)


@app.command(rich_help_panel="Reference")
def presets(as_json: Annotated[bool, typer.Option("--json", help="Print each preset as JSON.")] = False) -> None:
    """List the presets: named settings that reproduce a published simulator (`run --preset NAME`)."""
    from simcluster.presets import presets as shipped

    found = shipped()
    if as_json:
        print(json.dumps({name: {"description": p.description, "reproduces": p.reproduces, "source": p.source,
                                 "settings": dict(p.settings)} for name, p in found.items()}, indent=2))
        return
    table = Table(title="Presets (lucid-sim run --preset NAME; options given with it override it)",
                  title_justify="left")
    table.add_column("name", style="bold cyan", no_wrap=True)
    table.add_column("what it sets up and reproduces")
    table.add_column("source")
    for name, p in found.items():
        settings = ", ".join(f"{k}={v}" for k, v in p.settings.items())
        table.add_row(name, f"{p.description}.\nReproduces {p.reproduces}.\n[dim]{settings}[/]", p.source)
    out.print(table)


@app.command(rich_help_panel="Analyse")
def explain(
    trace: Annotated[Path | None, typer.Option(help="Trace folder or CSV (default: the embedded trace).")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Folder for explain.json, <model>_importances.csv "
                                                    "and <model>_<term>.png. Default: results/explain-<trace>.")] = None,
    colocation: Annotated[str, typer.Option(help="Colocation tables the packing model learns from: 'default', "
                                            "'lucid' (adds accuracy against the authors' labels) or a folder.")] = "default",
    throughput_history: Annotated[Path | None, typer.Option(help="10-minute submission log for the throughput "
                                                            "model (default: cluster_throughput.csv beside the "
                                                            "trace, else the trace's own submissions).")] = None,
    vc_config: Annotated[Path | None, typer.Option(help="VC config CSV, for a trace given as one CSV.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the models' training.")] = 0,
    boosting: Annotated[str, typer.Option(help="How the workload and throughput models boost: fast or interpret "
                                          "(InterpretML's defaults, the former default), as `run --boosting`.")] = "fast",
    as_json: Annotated[bool, typer.Option("--json", help="Print explain.json's content instead of tables.")] = False,
) -> None:
    """Train Lucid's three interpretable models as the `lucid` policy would and show what they learned.

    Packing (colocation tables → sharing score), workload (submission → duration) and throughput
    (past 10-minute bins → next hour's submissions): term importances, shape plots of the top terms,
    and held-out accuracy next to simple baselines.
    """
    from simcluster.config import SimConfig
    from simcluster.models.explain import explain as explain_models
    from simcluster.traces import TraceError, load_trace

    try:
        loaded = load_trace(trace or DEFAULT_TRACE, vc_config)
        config = SimConfig.from_settings(
            {"policy": "lucid", "colocation": colocation, "seed": seed, "boosting": boosting,
             "throughput_history": str(throughput_history) if throughput_history else None}, where="options")
        target = out_dir or Path("results") / f"explain-{(trace or DEFAULT_TRACE).resolve().name.removesuffix('.csv')}"
        with err.status("training the packing, workload and throughput models…"):
            report = explain_models(loaded, config, target)
    except (TraceError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        from simcluster.results import to_json

        print(to_json(report))
        return
    _print_explanation(report, target)


def _print_explanation(report: dict[str, Any], target: Path) -> None:
    lines = {
        "packing": lambda r: (f"held-out accuracy {r['accuracy']:.1%} over {r['configurations']} configurations"
                              + (f"; against the authors' labels {r['accuracy_vs_authors']:.1%} (our labels agree "
                                 f"with theirs on {r['our_labels_vs_authors']:.1%})" if "accuracy_vs_authors" in r
                                 else "")) if "accuracy" in r else r.get("note", ""),
        "workload": lambda r: (f"MAE {r['ebm']['mae']:,.0f} s, median relative error "
                               f"{r['ebm']['median_relative_error']:.1%} on the last {r['test_jobs']:,} jobs; history "
                               f"estimator {r['history']['mae']:,.0f} s / {r['history']['median_relative_error']:.1%}"
                               + (f"; Lucid artifact {r['lucid_artifact']['mae']:,.0f} s / "
                                  f"{r['lucid_artifact']['median_relative_error']:.1%}" if "lucid_artifact" in r
                                  else "")) if "ebm" in r else r.get("note", ""),
        "throughput": lambda r: (f"MAE {r['mae']:.1f} submissions/hour (persistence {r['persistence_mae']:.1f}; mean "
                                 f"{r['mean_submissions_per_hour']:.1f}) over {r['test_bins']:,} forecasts"
                                 if "mae" in r else r.get("note", "")),
    }
    for name, line in lines.items():
        part = report[name]
        table = Table(title=f"{name} model — {line(part)}", title_justify="left")
        table.add_column("term", style="bold cyan")
        table.add_column("importance", justify="right")
        for row in part.get("importances", [])[:8]:
            table.add_row(str(row["term"]), f"{row['importance']:.3f}")
        out.print(table)
    out.print(f"plots and tables in [bold]{target}[/]", highlight=False)
