"""``lucid-sim check-policy``: the conformance kit (:mod:`simcluster.testing`) on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from simcluster.cli.common import app, err, fail, out


@app.command("check-policy", rich_help_panel="Analyse")
def check_policy(
    spec: Annotated[str, typer.Argument(help="The policy: a built-in name, path/to/file.py[:Class], "
                                        "package.module:Class or an installed plug-in's name.", show_default=False)],
    trace: Annotated[list[Path] | None, typer.Option(help="A trace of yours to run it on too, besides the "
                                                     "adversarial ones (repeat for several).",
                                                     show_default=False)] = None,
    placement: Annotated[str, typer.Option(help="The placement its runs use (a built-in or a plug-in).")]
    = "consolidate",
    policy_set: Annotated[list[str] | None, typer.Option("--set", help="NAME=VALUE: one of the policy's own "
                                                         "settings.", show_default=False,
                                                         metavar="NAME=VALUE")] = None,
    with_policy: Annotated[str, typer.Option(help="When SPEC is a placement: the policy its runs use.")] = "fifo",
    seed: Annotated[int, typer.Option(help="The seed of every run (each trace runs twice with it).")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run a policy on small adversarial traces and say, in words, each rule of the policy contract it breaks.

    Rules: it starts only waiting jobs, once; asks only for free GPUs; preempts only running jobs; changes
    nothing but through the context; keeps a waiting job's queue key (unless it requeues); makes progress while
    jobs wait and GPUs are free; gives the same results for the same seed; finishes every job of a feasible
    trace; raises no exception.  An elastic policy runs on small traces of jobs with scaling models (Pollux's
    applications) instead.  SPEC may be a placement (a file defining one): it is checked under --with-policy.
    Exit status 0 when it keeps them all, 1 when it breaks one.  In a test suite:
    `from simcluster.testing import check_policy`.
    """
    from simcluster.cli.run import parse_policy_set
    from simcluster.config import SimConfig, settings_pairs
    from simcluster.testing import default_traces, policy_problems
    from simcluster.traces import TraceError, load_trace

    try:
        spec, placement = _policy_or_placement(spec, placement, with_policy)
        config = SimConfig(placement=placement, seed=seed, policy_settings=settings_pairs(parse_policy_set(policy_set)))
        traces = default_traces(spec)
        for path in trace or []:
            traces.append((str(path), load_trace(path), None))
        with err.status(f"checking {spec} on {len(traces)} traces…", spinner="dots") if not as_json else _quiet():
            report = policy_problems(spec, traces, config)
    except (TraceError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        from simcluster.results import to_json

        print(to_json(report.as_dict()))
    else:
        table = Table(title=f"{report.policy} on {len(report.traces)} traces ({report.runs} runs)",
                      title_justify="left")
        table.add_column("rule")
        table.add_column("kept", justify="center")
        table.add_column("what happened")
        for rule, text in _rules().items():
            found = [f for f in report.findings if f.rule == rule]
            also = f"; also on {', '.join(f.trace for f in found[1:])}" if len(found) > 1 else ""
            table.add_row(text, "[red]✗[/]" if found else "[green]✓[/]",
                          f"{found[0].message} [dim](trace {found[0].trace}{also})[/]" if found else "")
        out.print(table)
        out.print("[green]keeps every rule[/]" if report.ok else
                  f"[red]breaks {len(report.broken())} rule(s)[/]: {', '.join(report.broken())}", highlight=False)
    if not report.ok:
        raise typer.Exit(1)


def _policy_or_placement(spec: str, placement: str, with_policy: str) -> tuple[str, str]:
    """(policy, placement) to check: ``spec`` is the policy, or — a file or module defining a placement and no
    policy — the placement, run under ``with_policy``."""
    from simcluster.plugins import PluginError, absolute_spec, resolve

    try:
        resolve(absolute_spec(spec), "policy")
        return spec, placement
    except PluginError as exc:
        try:
            resolve(absolute_spec(spec, "placement"), "placement")
        except PluginError:
            raise exc from None
        return with_policy, spec


def _rules() -> dict[str, str]:
    from simcluster.testing import RULES

    return RULES


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
