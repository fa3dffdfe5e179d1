"""What every ``lucid-sim`` command shares: the Typer apps, the consoles, errors, tables.

The consoles and how a command fails or is stopped are :mod:`simcluster.cli.exits` (which the help classes of
:mod:`simcluster.cli.help` use too); they are re-exported here, where the commands find them.
"""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.table import Table

from simcluster.cli.exits import (  # noqa: F401  (the commands import them from here)
    Terminated,
    err,
    exit_code,
    fail,
    interrupted_by,
    out,
    terminate_as_interrupt,
)
from simcluster.cli.help import HelpCommand, HelpGroup

CONTEXT = {"help_option_names": ["--help", "-h"]}


class App(typer.Typer):
    """A Typer app whose commands and groups print :mod:`simcluster.cli.help`'s help (whole at 80 columns)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", HelpGroup)
        kwargs.setdefault("context_settings", CONTEXT)
        kwargs.setdefault("no_args_is_help", True)
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("cls") is None:
            kwargs["cls"] = HelpCommand
        return super().command(*args, **kwargs)


app = App(
    help="Trace-driven, event-driven simulator of multi-tenant GPU clusters.\n\n"
    "`lucid-sim --policy NAME ...` with no command means `lucid-sim run --policy NAME ...`.",
    add_completion=False,
    rich_markup_mode="rich",
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"simcluster {version('simcluster')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            print("simcluster (not installed)")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", help="Print simcluster's version and exit.",
                                       is_eager=True, callback=_print_version)) -> None:
    """Trace-driven, event-driven simulator of multi-tenant GPU clusters."""


trace_app = App(help="Make, check and convert traces.")
app.add_typer(trace_app, name="trace")


def plugin_table(title: str, described: dict[str, str], as_json: bool) -> None:
    """Name → one line, as a Rich table or JSON."""
    if as_json:
        print(json.dumps(described, indent=2))
        return
    table = Table(title=title, title_justify="left")
    table.add_column("name", style="bold cyan", no_wrap=True)
    table.add_column("what it does")
    for name, line in described.items():
        table.add_row(name, line)
    out.print(table)
