"""The YAML side of reading Kueue's objects: Kubernetes quantities (:func:`parse_quantity`), the YAML nodes of
a file's documents (:func:`documents`) and a :class:`Field`, one node with its field path and line, so that every
refusal the readers of :mod:`~simcluster.tiers.kueue_yaml` make names the file, line, document and field.  Nothing
here knows Kueue's kinds.

>>> doc = documents("spec:\\n  weight: 500m\\n  levels: [a, b]\\n", "k.yaml")[0]
>>> spec = Field(doc, "", Doc("k.yaml", 1, kind="Cohort", name="org"), 1).child("spec")
>>> spec.child("weight").quantity(), [item.path for item in spec.child("levels").items()]
(0.5, ['spec.levels[0]', 'spec.levels[1]'])
>>> spec.child("weight").int32()
Traceback (most recent call last):
...
simcluster.errors.TraceError: k.yaml, line 2, field 'spec.weight': document 1 (Cohort org): expected a whole number, got '500m'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from simcluster.errors import TraceError

_QUANTITY = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE])?")
_FACTOR = {suffix: Decimal(10) ** power for suffix, power in
           (("", 0), ("n", -9), ("u", -6), ("m", -3), ("k", 3), ("M", 6), ("G", 9), ("T", 12), ("P", 15), ("E", 18))}
_FACTOR.update({suffix: Decimal(1024) ** (i + 1) for i, suffix in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))})
_SCALARS = SafeConstructor()  # builds one scalar node's value (int, float, bool, str, None) as YAML 1.1 reads it


def parse_quantity(value: object, where: str = "quantity") -> float:
    """The number a Kubernetes ``resource.Quantity`` stands for, read as Kubernetes reads it: a number, or a
    string of an optional sign, digits with an optional decimal point and an optional suffix (decimal SI
    ``n u m k M G T P E``, binary ``Ki``…``Ei``, or an exponent ``e3``); ``where`` names it in the ValueError.

    >>> [parse_quantity(v) for v in (8, "8", "1k", "1Ki", "500m", 1.5, "2e3", "+.5", "1E")]
    [8.0, 8.0, 1000.0, 1024.0, 0.5, 1.5, 2000.0, 0.5, 1e+18]
    >>> parse_quantity("8 GPUs", "nominalQuota")
    Traceback (most recent call last):
    ...
    ValueError: nominalQuota must be a Kubernetes quantity such as 8, 500m, 1k, 1Ki or 2e3, got '8 GPUs'
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(  # noqa: TRY004 - one error type for every bad quantity, as callers catch it
            f"{where} must be a Kubernetes quantity (a number, or text such as 500m), got "
                         f"{shown(value)}")
    if isinstance(value, str):
        found = _QUANTITY.fullmatch(value.strip())
        if found is None:
            raise ValueError(f"{where} must be a Kubernetes quantity such as 8, 500m, 1k, 1Ki or 2e3, got {value!r}")
        sign, digits, suffix = found.group(1), found.group(2), found.group(3) or ""
        exponent = suffix[1:] if suffix[:1] in ("e", "E") and len(suffix) > 1 else None
        try:
            factor = Decimal(10) ** int(exponent) if exponent is not None else _FACTOR[suffix]
            number = float(Decimal(digits) * factor)
        except (InvalidOperation, OverflowError, ValueError):
            number = math.inf  # an exponent past any float: refused below
        return _finite(-number if sign == "-" else number, value, where)
    return _finite(float(value) if abs(value) < 1e300 else math.inf, value, where)


def _finite(number: float, value: object, where: str) -> float:
    if not math.isfinite(number):
        raise ValueError(f"{where} must be a finite number, got {shown(value)}")
    return number


# --- where a value is ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    """Where an object is, for errors: file, document (1-based), List item (1-based), kind and name."""

    source: str
    index: int
    item: int | None = None
    kind: str | None = None
    name: str | None = None

    def __str__(self) -> str:
        where = f"document {self.index}" + (f", item {self.item}" if self.item is not None else "")
        what = " ".join(part for part in (self.kind, self.name) if part)
        return f"{where} ({what})" if what else where


@dataclass(frozen=True)
class Field:
    """A YAML node of one object with its field path and line, so that any refusal says where it is.  A
    missing field is a Field whose node is None, at its parent's line."""

    node: yaml.Node | None
    path: str
    doc: Doc
    line: int

    def refuse(self, message: str) -> TraceError:
        return TraceError(self.doc.source, f"{self.doc}: {message}", line=self.line, field=self.path or None)

    @property
    def missing(self) -> bool:
        return self.node is None or self.node.tag == "tag:yaml.org,2002:null"

    def at(self, node: yaml.Node | None, path: str) -> Field:
        return Field(node, path, self.doc, node.start_mark.line + 1 if node is not None else self.line)

    def mapping(self) -> dict[str, Field]:
        """The fields of a map (none where missing); a list or a value where a map belongs is refused."""
        if self.missing:
            return {}
        if not isinstance(self.node, yaml.MappingNode):
            raise self.refuse(f"expected a map (key: value), got {kind_of(self.node)}")
        fields: dict[str, Field] = {}
        for key, value in self.node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise self.at(key, self.path).refuse("a key must be text")
            if key.value in fields:
                raise self.at(key, self._join(key.value)).refuse(f"key {key.value!r} appears twice")
            fields[key.value] = self.at(value, self._join(key.value))
        return fields

    def child(self, key: str) -> Field:
        return self.mapping().get(key) or self.at(None, self._join(key))

    def items(self) -> list[Field]:
        """The entries of a list (none where missing)."""
        if self.missing:
            return []
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.refuse(f"expected a list, got {kind_of(self.node)}")
        return [self.at(node, f"{self.path}[{i}]") for i, node in enumerate(self.node.value)]

    def value(self) -> Any:
        """A single value (None where missing); a map or a list is refused."""
        if self.missing:
            return None
        if not isinstance(self.node, yaml.ScalarNode):
            raise self.refuse(f"expected a single value, got {kind_of(self.node)}")
        try:
            return _SCALARS.construct_object(self.node)
        except ConstructorError as exc:
            raise self.refuse(f"cannot read this value: {exc.problem}") from None

    def text(self, required: str | None = None) -> str | None:
        """A text field, stripped (None where missing or blank, unless ``required`` says why it may not be)."""
        value = self.value()
        if value is not None and not isinstance(value, str):
            raise self.refuse(f"expected text, got {shown(value)}")
        if value is None or not value.strip():
            if required:
                raise self.refuse(required)
            return None
        return value.strip()

    def quantity(self) -> float:
        try:
            return parse_quantity(self.value(), self.path.rsplit(".", 1)[-1])
        except ValueError as exc:
            raise self.refuse(str(exc)) from None

    def int32(self) -> int | None:
        value = self.value()
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.refuse(f"expected a whole number, got {shown(value)}")
        if value is not None and not -(2**31) <= value < 2**31:
            raise self.refuse(f"must fit in 32 bits (±2,147,483,647), got {value:,}")
        return value

    def choice(self, allowed: Sequence[str], default: str) -> str:
        value = self.text()
        if value is not None and value not in allowed:
            raise self.refuse(f"{value!r} is not one of {', '.join(allowed)}")
        return default if value is None else value

    def _join(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key


def kind_of(node: yaml.Node | None) -> str:
    """What a refusal says it found where something else belongs: a map, a list, a value or nothing."""
    if isinstance(node, yaml.MappingNode):
        return "a map"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return shown(node.value) if isinstance(node, yaml.ScalarNode) else "nothing"


def shown(value: object) -> str:
    """A value as a refusal quotes it: as YAML spells booleans, Python's repr otherwise.

    >>> shown(True), shown("8 GPUs"), shown([1])
    ('true', "'8 GPUs'", 'a list')
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float, str)) or value is None:
        return repr(value)
    return f"a {type(value).__name__}"


def documents(text: str, source: str) -> list[yaml.Node | None]:
    """The YAML nodes of ``text``'s documents (JSON is YAML too); a syntax error is refused at its line."""
    try:
        return list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or exc
        raise TraceError(source, f"not YAML or JSON: {problem}",
                         line=mark.line + 1 if mark is not None else None) from None
