"""Command-line options made from :class:`~simcluster.config.SimConfig`, so a new setting is one field.

Every field becomes ``--field-name`` (help text, help panel and default from the field).  Only the
options the user gave on the command line override a preset or a config file: :func:`settings_from`
asks Click where each value came from.  ``--preset`` and ``--config`` choose those.

>>> params = config_parameters(exclude={"policy"})
>>> [p.name for p in params][:3]
['placement', 'seed', 'until']
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Annotated, Any

import typer

from simcluster.config import POLICY, base_type, default_of, knobs

OptionValue = int | float | bool | str | None
_TYPES: dict[type, Any] = {bool: bool, int: int, float: float, str: str | None, tuple: str}


def _cli_default(value: Any) -> Any:
    """The option's default as Click shows it (a tuple as the comma-separated text the option takes)."""
    if isinstance(value, tuple):
        return ",".join(f"{v:g}" for v in value)
    return value


def config_parameters(exclude: Collection[str] = ()) -> list[inspect.Parameter]:
    """One keyword parameter per SimConfig field (but ``exclude``), with the field's default."""
    params = []
    for name, f in knobs().items():
        if name in exclude:
            continue
        kind, meta = base_type(f), f.metadata
        flag = meta["cli"] or "--" + name.replace("_", "-")
        names = [f"{flag}/--no-{flag[2:]}"] if kind is bool else [flag]
        metavar = {int: "INT", float: "NUMBER", tuple: "N,N…", str: "TEXT"}.get(kind)
        if meta["choices"]:
            metavar = "|".join(meta["choices"])
        callback = None
        if meta.get("words") or meta.get("time"):  # a number, a time or a word: the option takes text, coerce() reads it
            kind, metavar = str, "|".join(("TIME" if meta.get("time") else "NUMBER", *meta["words"]))
            callback = _read_as(f)
        default = default_of(f)
        option = typer.Option(*names, help=meta["help"], rich_help_panel=meta["panel"],
                              show_default=default is not None, metavar=metavar, callback=callback)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=_cli_default(default),
                                        annotation=Annotated[_TYPES[str if default is None else kind], option]))
    return params


def _read_as(f: Any) -> Callable[[Any], Any]:
    """A Click callback reading an option's text as its setting reads it (``30m``, ``young-daly``), so that a bad
    value is refused naming the option, as Click refuses a bad number."""
    from simcluster.settings.fields import ConfigError, coerce

    def read(value: Any) -> Any:
        if not isinstance(value, str):
            return value  # (the default, not given)
        try:
            return coerce(f, value)
        except ConfigError as exc:
            text = str(exc)
            raise typer.BadParameter(text[text.find("must be"):] if "must be" in text else text) from None

    return read


def config_source_parameters() -> list[inspect.Parameter]:
    """``--preset NAME`` and ``--config FILE``."""
    preset = typer.Option(help="Start from a named preset (`lucid-sim presets` lists them); other options "
                          "override it.", rich_help_panel=POLICY, show_default=False)
    config = typer.Option("--config", help="TOML file of settings (option names with _, e.g. quantum = 30; "
                          "preset = NAME builds on a preset); options given here override it.",
                          rich_help_panel=POLICY, show_default=False)
    return [inspect.Parameter("preset", inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation=Annotated[str | None, preset]),
            inspect.Parameter("config_file", inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation=Annotated[Path | None, config])]


def settings_from(ctx: typer.Context, values: dict[str, Any], names: Iterable[str]) -> dict[str, OptionValue]:
    """The values of the config options ``names`` that the user gave (not defaults)."""
    given = {}
    for name in names:
        source = ctx.get_parameter_source(name)
        # by name: Typer may carry its own copy of Click, whose ParameterSource is another enum
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            given[name] = values[name]
    return given


def with_parameters(params: list[inspect.Parameter]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a ``def command(ctx, **values)`` function the signature ``params`` (after ``ctx``, the Typer
    context) so that Typer sees them as options."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        ctx = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
        func.__signature__ = inspect.Signature([ctx, *params])  # type: ignore[attr-defined]
        func.__annotations__ = {p.name: p.annotation for p in [ctx, *params]}
        return func

    return decorate


def parameter(name: str, annotation: Any, default: Any = None) -> inspect.Parameter:
    """A keyword parameter for :func:`with_parameters` (``annotation``: ``Annotated[T, typer.Option(...)]``)."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
