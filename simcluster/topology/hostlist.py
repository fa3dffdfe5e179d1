"""Slurm's hostlist expressions (``tux[0-3,7]``, ``node[01-18]``, ``rack[1-2]n[1-4]``) expanded into names.

Expanded as Slurm's own parser does (src/common/hostlist.c): names are separated by commas, spaces or tabs
outside brackets; a bracket holds numbers and ranges ``lo-hi`` separated by commas, each written as wide as
its low end, so ``[01-10]`` keeps its zero padding and ``[1-10]`` has none; several brackets in one name
expand every combination, the last bracket turning fastest; text may follow the last bracket.

>>> expand_hostlist("tux[0-3,7]")
['tux0', 'tux1', 'tux2', 'tux3', 'tux7']
>>> expand_hostlist("node[08-10],login")
['node08', 'node09', 'node10', 'login']
>>> expand_hostlist("a[1-2]b[3-4]")
['a1b3', 'a1b4', 'a2b3', 'a2b4']
"""

from __future__ import annotations

import itertools
import re

from simcluster.topology.arrays import MAX_NODES as MAX_NAMES  # bounded memory, far above any cluster

_TOKEN = re.compile(r"(?:[^\[\],\s]|\[[^\[\]]*\])+")  # one name: text and whole brackets, up to a separator
_BRACKET = re.compile(r"\[([^\[\]]*)\]")


class HostlistError(ValueError):
    """A hostlist expression Slurm would refuse too; the message quotes the expression."""


def expand_hostlist(expression: str) -> list[str]:
    """The names ``expression`` stands for, in its order (a name listed twice comes twice).

    >>> expand_hostlist("n[3-1]")
    Traceback (most recent call last):
    ...
    simcluster.topology.hostlist.HostlistError: range '3-1' in 'n[3-1]' runs backwards
    """
    names: list[str] = []
    position = 0
    for token in _TOKEN.finditer(expression):
        _check_gap(expression, expression[position:token.start()])
        position = token.end()
        choices = _choices(token.group(0))
        count = 1
        for options in choices:
            count *= len(options)
        if len(names) + count > MAX_NAMES:
            raise HostlistError(f"{expression[:80]!r} stands for more than {MAX_NAMES:,} names")
        names.extend("".join(parts) for parts in itertools.product(*choices))
    _check_gap(expression, expression[position:])
    return names


def _check_gap(expression: str, gap: str) -> None:
    """Between names only separators may stand: a stray bracket is a mistake, not part of a name."""
    stray = gap.replace(",", "").strip()
    if stray:
        raise HostlistError(f"unbalanced {stray[0]!r} in {expression[:80]!r}")


def _choices(token: str) -> list[list[str]]:
    """The name as alternating literal parts (one choice each) and brackets (their numbers)."""
    choices: list[list[str]] = []
    position = 0
    for bracket in _BRACKET.finditer(token):
        choices.append([token[position:bracket.start()]])
        choices.append(_numbers(bracket.group(1), token))
        position = bracket.end()
    choices.append([token[position:]])
    return choices


def _numbers(inside: str, token: str) -> list[str]:
    numbers: list[str] = []
    for item in inside.split(","):
        low, dash, high = item.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()) or not low.isascii() or not high.isascii():
            raise HostlistError(f"{item.strip()!r} in {token!r} is not a number or a range such as 0-3")
        start, stop = int(low), int(high) if dash else int(low)
        if stop < start:
            raise HostlistError(f"range {item.strip()!r} in {token!r} runs backwards")
        if len(numbers) + stop - start + 1 > MAX_NAMES:
            raise HostlistError(f"{token[:80]!r} stands for more than {MAX_NAMES:,} names")
        numbers.extend(f"{n:0{len(low)}d}" for n in range(start, stop + 1))
    return numbers
