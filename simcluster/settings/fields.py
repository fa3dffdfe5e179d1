"""What a setting is: a dataclass field with its help text, help panel, the values it admits and who reads it.

The bottom floor of the settings: it imports nothing of simcluster, so that every layer (traces, policies, the
engine, the features) may declare or read settings.  :func:`setting` makes a field; :func:`settings_group`
makes a frozen dataclass of them a *group*, the settings of one feature or policy family, shown under one
panel of ``lucid-sim run --help``; :func:`coerce` turns a value from the command line, a TOML file or Python
into the field's type, :func:`check_range` checks it.  Each field also says which runs read it (a
:class:`Reader`), so that a setting a run would ignore is found from the declarations alone
(:mod:`simcluster.scope`).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field
from typing import Any

PROVENANCE = "provenance"  # fields that record where settings came from; no option or --set key sets them
# the policy's own settings (its Settings dataclass): set by --set NAME=VALUE or a config file's [policy] table,
# not by an option of their own
POLICY_SETTINGS = "policy settings"


class ConfigError(ValueError):
    """A setting that does not exist or has a bad value; the message names where it came from."""


@dataclass(frozen=True)
class RunView:
    """What a reader looks at: the policy's class (None: unknown), the settings, whether the trace's jobs have job
    types with per-GPU-type throughputs (a Gavel trace: ``--throughputs`` is read), and the trace's columns (None:
    not known, as in a sweep's check of its keys; a reader then takes the column to be there)."""

    policy: Any  # type[Policy] | None (classes are read by their declared attributes: reads, shares_gpus, ...)
    config: Any  # SimConfig
    job_types: bool = False
    columns: frozenset[str] | None = None

    def has_column(self, name: str) -> bool:
        """Whether the trace has column ``name``, or may have it (its columns not known)."""
        return self.columns is None or name in self.columns


@dataclass(frozen=True)
class Reader:
    """Whether a run reads a setting (``reads``), whether ignoring it is an error, and, for a setting read only
    together with another, who reads it in words (``who``: for the message; else the policies that read it)."""

    reads: Callable[[RunView], bool]
    error: bool = False
    who: str | None = None


def always(run: RunView) -> bool:
    return True


def declared(name: str) -> Reader:
    """Read where the policy declares it reads ``name`` (``Policy.reads``): a policy family's own settings."""
    return Reader(lambda run: run.policy is not None and name in run.policy.reads)


def policy_is(test: Callable[[Any], bool]) -> Callable[[RunView], bool]:
    """Read where the run's policy class passes ``test`` (e.g. it shares GPUs)."""
    return lambda run: run.policy is not None and test(run.policy)


def setting(default: Any, help: str, panel: str | None = None, *, min: float | None = None,
            max: float | None = None, above: float | None = None, choices: tuple[str, ...] = (),
            cli: str | None = None, words: tuple[str, ...] = (), reads: Reader | None = None,
            parse: Callable[[Any, str], Any] | None = None, time: bool = False) -> Any:
    """A settings field: its default, help text, help panel and the values it admits.

    ``min``/``max`` are inclusive bounds, ``above`` an exclusive lower bound, ``choices`` the only strings
    allowed, ``cli`` the option's name when it is not ``--field-name``, ``words`` the words a number field
    also takes in place of a number (``--checkpoint-interval young-daly``), ``reads`` which runs read it (default:
    its group's rule), ``parse`` a function ``(value, where)`` that reads a value of a form of its own (``N/DAYS``)
    and raises :class:`ConfigError` for a bad one, ``time`` that the number is seconds and may be written with
    units (``30m``, ``1h30m``, ``54d``: :func:`simcluster.limits.duration`).  ``panel`` defaults to its group's
    (:func:`settings_group`).
    """
    meta = {"help": help, "panel": panel, "min": min, "max": max, "above": above, "choices": choices, "cli": cli,
            "words": words, "reads": reads, "parse": parse, "time": time}
    return field(default=default, metadata=meta)


def settings_group(panel: str, reads: Callable[[str], Reader] | Reader = Reader(always)) -> Callable[[type], type]:
    """Make a class of :func:`setting` fields a frozen dataclass, the settings of one feature or policy family:
    its fields are shown under ``panel`` in ``--help`` (unless a field names its own) and read by the runs
    ``reads`` says (a :class:`Reader`, or a function of the field's name giving one; unless a field has its own).

    >>> @settings_group("Example")
    ... class ExampleSettings:
    ...     speed: float = setting(1.0, "How fast.", min=0)
    >>> names_of(ExampleSettings), dataclasses.fields(ExampleSettings)[0].metadata["panel"]
    (('speed',), 'Example')
    """

    def make(cls: type) -> type:
        group = dataclass(frozen=True)(cls)
        for f in dataclasses.fields(group):
            meta = dict(f.metadata)
            meta["panel"] = meta.get("panel") or panel
            if meta.get("reads") is None:
                meta["reads"] = reads(f.name) if callable(reads) and not isinstance(reads, Reader) else reads
            f.metadata = types.MappingProxyType(meta)
        return group

    return make


def names_of(group: type) -> tuple[str, ...]:
    """The names of a settings group's fields, in order (what a policy declares it reads: ``Policy.reads``)."""
    return tuple(f.name for f in dataclasses.fields(group))


def default_of(f: Field) -> Any:
    return f.default if f.default is not MISSING else None


def base_type(f: Field) -> type:
    """int, float, bool, str or tuple: the kind of value the field holds (Optional removed)."""
    kind: Any = f.type
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    return typing.get_origin(kind) or kind  # tuple[float, ...] → tuple


def coerce(f: Field, value: Any, where: str = "settings") -> Any:
    """``value`` (typed, as TOML gives it, or text, as a command line gives it) as field ``f``'s type."""
    kind, optional = base_type(f), default_of(f) is None

    def bad(expected: str) -> ConfigError:
        return ConfigError(f"{where}: setting {f.name!r} must be {expected}, got {value!r}")

    if optional and (value is None or (isinstance(value, str) and value.strip().lower() in ("", "none"))):
        return None
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _BOOLS:
            return _BOOLS[value.strip().lower()]
        raise bad("true or false")
    if kind is int:
        if isinstance(value, bool):
            raise bad("an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise bad("an integer")
    if kind is float:
        words = f.metadata.get("words") or ()
        if words and isinstance(value, str) and value.strip().lower() in words:
            return value.strip().lower()
        if f.metadata.get("time") and isinstance(value, str):
            from simcluster.limits import LimitError, duration, is_number  # (here: not at --help)

            if is_number(value):
                return _number(value, bad)
            try:
                return duration(value, "")
            except LimitError:
                raise bad(" or ".join(("a time (seconds, or with units: 30m, 1h30m, 54d)", *words))) from None
        if words and isinstance(value, str):
            try:
                float(value.strip())
            except ValueError:
                raise bad(f"a number of seconds or {' or '.join(words)}") from None
        return _number(value, bad)
    if kind is tuple:
        items = value
        if isinstance(value, str):
            items = [v for v in value.replace("/", ",").split(",") if v.strip()]
        if not isinstance(items, (list, tuple)) or not items:
            raise bad("numbers separated by commas")
        numbers = tuple(_number(v, bad) for v in items)
        size = len(default_of(f) or ())
        fixed = typing.get_args(f.type) and Ellipsis not in typing.get_args(f.type)
        if fixed and len(numbers) != size:
            raise bad(f"{size} numbers")
        return numbers
    if isinstance(value, str):
        return value
    raise bad("text")


def _number(value: Any, bad: Any) -> float:
    if isinstance(value, bool):
        raise bad("a number")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise bad("a number") from None
    if not math.isfinite(number):
        raise bad("a finite number")
    return number


def check_range(f: Field, value: Any, where: str) -> None:
    """Raise :class:`ConfigError` for a value outside what field ``f`` admits (its choices, bounds, its form)."""
    meta = f.metadata
    if value is None:
        return
    if meta.get("parse") is not None:
        meta["parse"](value, where)
    if meta.get("choices") and value not in meta["choices"]:
        raise ConfigError(f"{where}: setting {f.name!r} must be one of {', '.join(meta['choices'])}, got {value!r}")
    numbers = value if isinstance(value, tuple) else (value,) if isinstance(value, (int, float)) else ()
    for number in numbers:
        if meta.get("min") is not None and number < meta["min"]:
            raise ConfigError(f"{where}: setting {f.name!r} must be at least {meta['min']:g}, got {value!r}")
        if meta.get("max") is not None and number > meta["max"]:
            raise ConfigError(f"{where}: setting {f.name!r} must be at most {meta['max']:g}, got {value!r}")
        if meta.get("above") is not None and number <= meta["above"]:
            raise ConfigError(f"{where}: setting {f.name!r} must be greater than {meta['above']:g}, got {value!r}")


def did_you_mean(key: str, names: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(key, list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else f"; valid settings: {', '.join(names)}"


_BOOLS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}
