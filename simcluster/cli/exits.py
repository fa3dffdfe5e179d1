"""How a ``lucid-sim`` command talks and ends: its consoles, ``error:`` lines and exit codes, and SIGTERM stopping
it as Ctrl-C does.  The floor of the CLI: the commands (through :mod:`simcluster.cli.common`) and the help
classes (:mod:`simcluster.cli.help`) use it, and it imports neither."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.console import Console

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
