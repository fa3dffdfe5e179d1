"""What every ``lucid-sim`` command shares: the Typer apps, the consoles, errors, tables."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

CONTEXT = {"help_option_names": ["--help", "-h"]}


class App(typer.Typer):
    """A Typer app whose commands and groups print :mod:`simcluster.cli.help`'s help (whole at 80 columns)."""

    def __init__(self, **kwargs: Any) -> None:
        from simcluster.cli.help import HelpGroup

        kwargs.setdefault("cls", HelpGroup)
        kwargs.setdefault("context_settings", CONTEXT)
        kwargs.setdefault("no_args_is_help", True)
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        from simcluster.cli.help import HelpCommand

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

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


def fail(message: str | Exception, code: int | None = None) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``: by default 2 (bad input), or 1 for an
    exception that is a failed write (:class:`~simcluster.errors.WriteError`: a full disk).  The message is
    printed as written (no markup), any word longer than 200 characters shortened
    (:func:`simcluster.errors.readable`), so that a value quoted from a file stays one readable paragraph."""
    from rich.markup import escape

    from simcluster.errors import WriteError, readable

    if code is None:
        code = 1 if isinstance(message, WriteError) else 2
    err.print(f"[bold red]error:[/] {escape(readable(str(message)))}", highlight=False)
    raise typer.Exit(code)


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``), raised where the main thread is, so that a command stops as Ctrl-C stops it: its
    children ended, nothing half-written; the command then exits with :func:`exit_code` (143)."""


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) in the main thread; a second
    SIGTERM during the clean-up ends the process at once.  Does nothing outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def exit_code(interrupt: BaseException) -> int:
    """The exit status of a command stopped by ``interrupt``: 143 after SIGTERM, 130 after Ctrl-C (128 + the
    signal's number, as a shell reports a process the signal ended)."""
    return 128 + (signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


def interrupted_by(interrupt: BaseException) -> str:
    return "SIGTERM" if isinstance(interrupt, Terminated) else "Ctrl-C"


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
