"""``--help`` for every ``lucid-sim`` command: option panels that stay whole and readable at any width.

Typer's own Rich help puts names, negative flags, types and help in five table columns; at 80 columns
the help column of a panel with one long flag shrinks to a few words and long names or values are cut
with "…".  Here each option is two columns: its names and metavar, and its help, wrapped by us.  A name
too long for its column gets a line of its own with the help below, and a word too long for a line is
folded, never cut, so every name and every word of help appears whole.  Help texts are plain text
(```code``` marked by backticks is highlighted), so ``runs/<run-id>/`` is shown as written.

Commands get this help by being made with :class:`HelpCommand` (groups: :class:`HelpGroup`);
:class:`simcluster.cli.common.App` does that for every command.
"""

from __future__ import annotations

import inspect
import math
import re
import typing
from pathlib import Path
from typing import Any

import typer
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from simcluster.cli.exits import Terminated, exit_code, fail, terminate_as_interrupt

OPTIONS, ARGUMENTS, COMMANDS = "Options", "Arguments", "Commands"
NAME_STYLE, METAVAR_STYLE, CODE_STYLE = "bold cyan", "yellow", "bold"
DIM = "dim"
_TYPE_METAVARS = {"integer": "INT", "integer range": "INT", "float": "NUMBER", "float range": "NUMBER",
                  "text": "TEXT", "path": "PATH", "filename": "FILE", "directory": "DIR", "uuid": "UUID",
                  "datetime": "TIME"}
_ANNOTATION_METAVARS = {int: "INT", float: "NUMBER", str: "TEXT", Path: "PATH", bool: ""}
_OPTION_RE = re.compile(r"(?<![\w/-])--?[A-Za-z][\w-]*")


class CheckedCommand(TyperCommand):
    """A Typer command whose number options are finite, and which SIGTERM stops as Ctrl-C does.

    Click's float type reads ``nan`` and ``inf`` as numbers, and a range (``min=0``) lets NaN through (no
    comparison with it is true), so every float option is checked here, once the command line is parsed and
    before the command runs.  While it runs, SIGTERM raises :class:`~simcluster.cli.exits.Terminated` (a
    KeyboardInterrupt) where the command is, so that it cleans up as after Ctrl-C; a command that does not
    say more itself then ends with ``error: interrupted (SIGTERM)`` and exit status 143.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        check_finite(ctx, self.params)
        return rest

    def invoke(self, ctx: Any) -> Any:
        try:
            with terminate_as_interrupt():
                return super().invoke(ctx)
        except Terminated as stop:
            fail("interrupted (SIGTERM)", exit_code(stop))


def check_finite(ctx: Any, params: list[Any]) -> None:
    """``typer.BadParameter`` for the first float option whose value (or one of whose values) is NaN or an
    infinity."""
    for param in params:
        value = ctx.params.get(param.name)
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            raise typer.BadParameter(f"must be a finite number, got {value!r}", ctx=ctx, param=param)


class HelpCommand(CheckedCommand):
    """A Typer command whose ``--help`` is :func:`print_help`'s, whose number options are finite and which
    SIGTERM stops as Ctrl-C (:class:`CheckedCommand`), and whose output errors (a folder that may not be written, a write that failed
    on a read-only folder or a full disk) end it with one paragraph, never a traceback."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        print_help(self, ctx)

    def invoke(self, ctx: Any) -> Any:
        from simcluster.errors import OutputError

        try:
            return super().invoke(ctx)
        except OutputError as exc:  # a command that did not say it itself
            fail(exc)


class HelpGroup(TyperGroup):
    """A Typer group whose ``--help`` is :func:`print_help`'s."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        print_help(self, ctx)


def print_help(command: Any, ctx: Any, console: Console | None = None) -> None:
    """Usage, description, then a panel per help panel: arguments, options, commands."""
    console = console or Console(highlight=False)
    width = console.width
    console.print()
    usage = Text.assemble(("Usage: ", "yellow"), (" ".join([ctx.command_path, *usage_pieces(command, ctx)]),
                                                  "bold"))
    console.print(Text(" ").append_text(usage))
    description = inspect.cleandoc(command.help or "").partition("\f")[0]
    if description:
        console.print()
        for i, paragraph in enumerate(p for p in description.split("\n\n") if p.strip()):
            if i:
                console.print()
            console.print(_indent(styled(" ".join(paragraph.split()), "" if i == 0 else DIM), width, 1))
    console.print()
    for title, rows in panels(command, ctx).items():
        console.print(Panel(Group(*layout(rows, width - 4)), title=title, title_align="left",
                            border_style=DIM, padding=(0, 1)))


def usage_pieces(command: Any, ctx: Any) -> list[str]:
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    pieces = ["[OPTIONS]"] if any(p.param_type_name == "option" for p in params) else []
    for p in params:
        if p.param_type_name == "argument":
            name = (p.metavar or p.name or "ARG").upper() + ("..." if p.nargs == -1 else "")
            pieces.append(name if p.required else f"[{name}]")
    if isinstance(command, TyperGroup):
        pieces += ["COMMAND", "[ARGS]..."]
    return pieces


Row = tuple[Text, tuple[Text, Text]]  # names, (help, [default; range])


def panels(command: Any, ctx: Any) -> dict[str, list[Row]]:
    """Panel title → rows of (names, help): arguments first, the panels in order, plain options last."""
    found: dict[str, list[Row]] = {ARGUMENTS: []}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        default_panel = ARGUMENTS if param.param_type_name == "argument" else OPTIONS
        title = getattr(param, "rich_help_panel", None) or default_panel
        found.setdefault(title, []).append((names_of(param, ctx), help_of(param, ctx)))
    if isinstance(command, TyperGroup):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            title = getattr(sub, "rich_help_panel", None) or COMMANDS
            summary = inspect.cleandoc(sub.help or "").split("\n\n")[0]
            found.setdefault(title, []).append((Text(name, NAME_STYLE), (styled(" ".join(summary.split())), Text())))
    plain = found.pop(OPTIONS, [])
    if plain:
        found[OPTIONS] = plain
    return {title: rows for title, rows in found.items() if rows}


def names_of(param: Any, ctx: Any) -> Text:
    """``--name / --no-name, -n METAVAR`` (long names first)."""
    if param.param_type_name == "argument":
        return Text((param.metavar or param.name).upper() + ("..." if param.nargs == -1 else ""), NAME_STYLE)
    opts = sorted(param.opts, key=lambda o: not o.startswith("--"))
    text = Text(", ".join(opts), NAME_STYLE)
    if param.secondary_opts:
        text.append(" / ").append(", ".join(param.secondary_opts), NAME_STYLE)
    metavar = metavar_of(param)
    if metavar:
        text.append(" ").append(metavar, METAVAR_STYLE)
    return text


def metavar_of(param: Any) -> str:
    """What the option takes: its own metavar, its choices, or its type's name (nothing for a flag)."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    if param.metavar:
        return str(param.metavar)
    described = getattr(param, "type_descriptor", None)  # Typer ≥ 0.16 keeps the annotation
    if described is not None:
        if described.choices:
            return "|".join(str(getattr(c, "value", c)) for c in described.choices)
        kind = described.annotation
        if described.is_list:
            kind = (typing.get_args(kind) or (str,))[0]
        if described.is_path:
            return "PATH"
        return _ANNOTATION_METAVARS.get(kind, "VALUE")
    kind = param.type  # older Typer: a Click type
    if getattr(kind, "choices", None):
        return "|".join(str(getattr(c, "value", c)) for c in kind.choices)
    return _TYPE_METAVARS.get(getattr(kind, "name", ""), "VALUE")


def help_of(param: Any, ctx: Any) -> tuple[Text, Text]:
    """The help text, and what the reader needs besides: the default, the range, whether it is required."""
    text = styled(" ".join((getattr(param, "help", None) or "").split()))
    extras = []
    default = default_text(param, ctx)
    if default:
        extras.append(f"default: {default}")
    span = range_text(param)
    if span:
        extras.append(span)
    if param.required:
        extras.append("required")
    return text, Text(f"[{'; '.join(extras)}]", DIM) if extras else Text()


def default_text(param: Any, ctx: Any) -> str:
    """The default as the user would type it, or "" where showing one would mislead or say nothing."""
    show = getattr(param, "show_default", None)
    if isinstance(show, str):
        return show
    if show is False or (show is None and not ctx.show_default and param.param_type_name == "argument"):
        return ""
    value = param.default
    if callable(value) or value is None or value == ():
        return ""
    if getattr(param, "is_flag", False):
        if not value:
            return ""  # a flag is off unless given
        return next((o for o in param.opts if o.startswith("--")), param.opts[0])
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(getattr(value, "value", value))


def range_text(param: Any) -> str:
    """The values a number option admits, e.g. "≥ 1" (from Typer's ``min``/``max`` or a Click range)."""
    bounds = param if hasattr(param, "min") else getattr(param, "type", None)
    low, high = getattr(bounds, "min", None), getattr(bounds, "max", None)
    if low is None and high is None:
        return ""
    low_sign = ">" if getattr(bounds, "min_open", False) else "≥"
    high_sign = "<" if getattr(bounds, "max_open", False) else "≤"
    if high is None:
        return f"{low_sign} {low:g}"
    if low is None:
        return f"{high_sign} {high:g}"
    return f"{low:g} to {high:g}"


def styled(text: str, style: str = "") -> Text:
    """Plain text with `code` in bold (backticks dropped) and option names highlighted."""
    out = Text(style=style)
    for i, part in enumerate(text.split("`")):
        out.append(part, CODE_STYLE if i % 2 else "")
    out.highlight_regex(_OPTION_RE, NAME_STYLE)
    return out


def layout(rows: list[Row], width: int) -> list[RenderableType]:
    """Rows of (names, help) in two columns within ``width``: a name that does not fit its column gets a
    line of its own; help is wrapped (a word longer than a line is folded, never cut), and the bracketed
    default stays in one piece."""
    column = min(max((len(names) for names, _ in rows), default=0), max(12, int(width * 0.38)))
    help_width = max(20, width - column - 2)
    console = Console(width=help_width, highlight=False)
    lines: list[RenderableType] = []
    for names, (text, extras) in rows:
        wrapped = list(text.wrap(console, help_width, overflow="fold")) if text else []
        if extras:
            if wrapped and len(wrapped[-1]) + 1 + len(extras) <= help_width:
                wrapped[-1] = Text.assemble(wrapped[-1], " ", extras)
            else:
                wrapped += list(extras.wrap(console, help_width, overflow="fold"))
        if len(names) > column:
            lines += list(names.wrap(console, width, overflow="fold"))
            first = 0
        else:
            first_line = wrapped[0] if wrapped else Text()
            lines.append(Text.assemble(names, " " * (column - len(names) + 2), first_line))
            first = 1
        lines += [Text.assemble(" " * (column + 2), line) for line in wrapped[first:]]
    return lines


def _indent(text: Text, width: int, by: int) -> Group:
    console = Console(width=width - by, highlight=False)
    return Group(*(Text.assemble(" " * by, line) for line in text.wrap(console, width - by, overflow="fold")))
