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
def policies(
    name: Annotated[str | None, typer.Argument(help="A policy (built-in name, path/to/file.py[:Class], "
                                               "module:Class or installed plug-in) to describe in full: what it "
                                               "does, its capabilities, the settings it reads and its own.",
                                               show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the scheduling policies, one line each, with installed plug-ins and where they come from; or describe
    one.  Every policy runs on every trace and cluster; `run --policy ./my_policy.py` runs your own."""
    _list_or_describe(name, "policy", as_json)


@app.command(rich_help_panel="Reference")
def placements(
    name: Annotated[str | None, typer.Argument(help="A placement to describe in full (name, file.py or "
                                               "module:Class).", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the placements, one line each, with installed plug-ins; or describe one."""
    _list_or_describe(name, "placement", as_json)


def _list_or_describe(name: str | None, kind: Any, as_json: bool) -> None:
    from simcluster.plugins import PluginError

    try:
        if name is not None:
            _describe_plugin(name, kind, as_json)
        else:
            _list_plugins(kind, as_json)
    except PluginError as exc:
        fail(str(exc))


def _list_plugins(kind: Any, as_json: bool) -> None:
    """Built-ins (grouped by family) and the installed plug-ins of ``kind``, each with where it comes from."""
    from simcluster.plugins import _registry, installed, resolve

    registry = _registry(kind)
    described = registry.describe()
    plugins: dict[str, dict[str, str]] = {}
    for ep_name, point in installed(kind).items():
        where = f"{point.dist.name} {point.dist.version}" if point.dist is not None else point.value
        try:
            cls, _ = resolve(ep_name, kind) if ep_name not in registry else (None, None)
            line = _first_line(cls) if cls is not None else f"(shadowed by the built-in {ep_name})"
        except Exception as exc:  # noqa: BLE001 — a broken plug-in is listed with why, not fatal to the listing
            line = f"(cannot be loaded: {exc})"
        plugins[ep_name] = {"description": line, "source": f"entry point {point.value} ({where})"}
    if as_json:
        print(json.dumps({**{n: {"description": d, "source": "built-in"} for n, d in described.items()}, **plugins},
                         indent=2))
        return
    title = "Scheduling policies" if kind == "policy" else "Placements"
    families: dict[str, dict[str, str]] = {}
    for n, d in described.items():
        families.setdefault(getattr(registry.get(n), "family", ""), {})[n] = d
    for family, rows in families.items():
        heading = {"": title, "gavel": "Gavel's policies (OSDI'20): allocations realised in rounds, each VC its own"}
        plugin_table(heading.get(family, f"{title}: {family}"), rows, False)
    if plugins:
        table = Table(title=f"Installed plug-ins ({'simcluster.policies' if kind == 'policy' else 'simcluster.placements'})",
                      title_justify="left")
        for column in ("name", "what it does", "from"):
            table.add_column(column, style="bold cyan" if column == "name" else None)
        for n, row in plugins.items():
            table.add_row(n, row["description"], row["source"])
        out.print(table)
    noun = "policy" if kind == "policy" else "placement"
    out.print(f"[dim]Your own: --{noun} path/to/file.py[:Class] or package.module:Class; `lucid-sim "
              f"{'policies' if kind == 'policy' else 'placements'} NAME` describes one.[/]", highlight=False)


def _first_line(cls: type) -> str:
    return (cls.__doc__ or "").strip().splitlines()[0] if (cls.__doc__ or "").strip() else "(no description)"


def _describe_plugin(spec: str, kind: Any, as_json: bool) -> None:
    """Everything about one plug-in: its description, where it comes from, what it declares, its settings."""
    import inspect

    from simcluster.config import SimConfig, knobs
    from simcluster.plugins import absolute_spec, display_name, resolve
    from simcluster.policies.base import describe_settings

    found, origin = resolve(absolute_spec(spec, kind), kind)
    cls: Any = found  # a policy or a placement class
    doc = inspect.cleandoc(cls.__doc__ or "(no description)")
    info: dict[str, Any] = {"name": display_name(origin.spec, kind), "kind": kind, **origin.as_dict(),
                            "description": doc}
    if kind == "policy":
        from simcluster.scope import settings_read

        defaults = SimConfig()
        common = settings_read(SimConfig(policy="fifo"))  # what every policy reads: not worth listing
        read = sorted(n for n in settings_read(SimConfig(policy=origin.spec)) if n in knobs() and n not in common)
        info["capabilities"] = {flag: getattr(cls, flag) for flag in (
            "preemptive", "shares_gpus", "own_placement", "one_type_per_job", "vc_independent", "default_estimator")}
        info["run_settings_read"] = {n: getattr(defaults, n) for n in read}
        info["settings"] = describe_settings(cls)
    else:
        info["capabilities"] = {"chooses_types": cls.chooses_types, "places_fractions": cls.places_fractions}
    if as_json:
        from simcluster.results import to_json

        print(to_json(info))
        return
    out.print(f"[bold cyan]{info['name']}[/] — {kind} ({origin.source}: {origin.location})", highlight=False)
    if origin.sha256:
        out.print(f"[dim]sha256 {origin.sha256}[/]", highlight=False)
    out.print(doc, highlight=False)
    flags = [k.replace("_", " ") + ("" if v is True else f" = {v}") for k, v in info["capabilities"].items() if v]
    out.print(f"\n[bold]declares:[/] {', '.join(flags) or 'nothing beyond the base class'}", highlight=False)
    if kind == "policy":
        if info["settings"]:
            table = Table(title="Its own settings (--set NAME=VALUE, or a \\[policy] table in --config)",
                          title_justify="left")
            for column in ("name", "type", "default", "what it does"):
                table.add_column(column, style="bold cyan" if column == "name" else None)
            for row in info["settings"]:
                choices = f" ({' | '.join(row['choices'])})" if row["choices"] else ""
                table.add_row(row["name"], row["type"], repr(row["default"]), row["help"] + choices)
            out.print(table)
        else:
            out.print("[bold]own settings:[/] none", highlight=False)
        options = ", ".join("--" + n.replace("_", "-") for n in info["run_settings_read"])
        out.print(f"[bold]run settings it reads[/] (besides those every policy reads): {options or 'none'}",
                  highlight=False)


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
