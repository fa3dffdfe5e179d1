"""Plug-ins registered by name: policies, placements (and later estimators).

A plug-in is one file that decorates its class with ``@REGISTRY.register``;
the CLI's choices and ``lucid-sim policies`` read the registry, so adding a
policy is that file plus one import line in its package's ``__init__``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T", bound=type)


class UnknownPlugin(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0])


class Registry(Generic[T]):
    """Name → class.

    >>> shapes = Registry("shape")
    >>> @shapes.register("square")
    ... class Square:
    ...     '''Four equal sides.'''
    >>> shapes.get("square").name, shapes.describe()["square"]
    ('square', 'Four equal sides.')

    A family whose module is slow to import (Gavel's LPs bring scipy and HiGHS) is registered lazily:
    its names are known at once, its module is imported when one of them is first used.

    >>> shapes.register_lazy("fractions", "fraction")
    >>> "fraction" in shapes, shapes.names()
    (True, ['fraction', 'square'])
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, T] = {}
        self._lazy: dict[str, str] = {}  # name → module that registers it when imported

    def register_lazy(self, module: str, *names: str) -> None:
        """``names`` are registered by ``module``, imported on the first :meth:`get` of one of them."""
        for name in names:
            self._lazy[name] = module

    def register(self, name: str) -> Callable[[T], T]:
        def decorate(cls: T) -> T:
            if name in self._classes:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            cls.name = name  # type: ignore[attr-defined]
            self._classes[name] = cls
            return cls

        return decorate

    def get(self, name: str) -> T:
        if name not in self._classes and name in self._lazy:
            importlib.import_module(self._lazy[name])
        try:
            return self._classes[name]
        except KeyError:
            raise UnknownPlugin(
                f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        """Every name: the lazily registered ones in the order declared, then the others in registration order."""
        return list(dict.fromkeys([*self._lazy, *self._classes]))

    def describe(self) -> dict[str, str]:
        """Name → the first line of the class docstring (imports every lazily registered module)."""
        return {n: (self.get(n).__doc__ or "").strip().splitlines()[0] for n in self.names()}

    def __contains__(self, name: object) -> bool:
        return name in self._classes or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def implements(plugin: object, base: type, hook: str) -> bool:
    """Whether ``plugin`` has a ``hook`` of its own, not ``base``'s no-op default.

    Its class may override the hook, or the plug-in may set one on itself (an option
    that needs it); the engine calls only the hooks that are implemented.

    >>> class Base:
    ...     def on_tick(self): ...
    >>> class Ticker(Base):
    ...     def on_tick(self): return "tick"
    >>> quiet, tuned = Base(), Base()
    >>> tuned.on_tick = lambda: "tock"
    >>> implements(Ticker(), Base, "on_tick"), implements(quiet, Base, "on_tick"), implements(tuned, Base, "on_tick")
    (True, False, True)
    """
    return getattr(getattr(plugin, hook), "__func__", None) is not getattr(base, hook)
