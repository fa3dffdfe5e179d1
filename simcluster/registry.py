"""Plug-ins registered by name: policies, placements (and later estimators).

A plug-in is one file that decorates its class with ``@REGISTRY.register``;
the CLI's choices and ``lucid-sim policies`` read the registry, so adding a
policy is that file plus one import line in its package's ``__init__``.
"""

from __future__ import annotations

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
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def decorate(cls: T) -> T:
            if name in self._classes:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            cls.name = name  # type: ignore[attr-defined]
            self._classes[name] = cls
            return cls

        return decorate

    def get(self, name: str) -> T:
        try:
            return self._classes[name]
        except KeyError:
            raise UnknownPlugin(
                f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        return list(self._classes)

    def describe(self) -> dict[str, str]:
        """Name → the first line of the class docstring."""
        return {n: (c.__doc__ or "").strip().splitlines()[0] for n, c in self._classes.items()}

    def __iter__(self) -> Iterator[str]:
        return iter(self._classes)
