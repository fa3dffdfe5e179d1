"""import-linter contract types of simcluster's own (pyproject.toml's ``contract_types``; ``make lint`` and
``tests/test_layers.py`` run them with the built-in ones).

``acyclic_modules``: no import cycle among the modules of a package that runs, at module or function level
(imports made only for type checking do not run: the configuration's ``exclude_type_checking_imports``).
Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so those count as imported too: a cycle
through a package's ``__init__`` is a cycle.  import-linter's ``acyclic_siblings`` asks more (no cycle among
sibling *packages*, whatever the modules); this asks what Python itself runs into.
"""

from __future__ import annotations

from collections import deque
from itertools import pairwise

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class AcyclicModulesContract(Contract):
    """No module of ``package`` imports, directly or through others, a module that imports it."""

    type_name = "acyclic_modules"

    package = fields.StringField()

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        root = str(self.package)
        modules = sorted(m for m in graph.modules if m == root or m.startswith(root + "."))
        edges = {m: _imported(graph, m, set(modules)) for m in modules}
        cycles = [_shortest_cycle(group[0], set(group), edges) for group in _strongly_connected(modules, edges)]
        found = [[(a, b, _lines(graph, a, b)) for a, b in pairwise(cycle)] for cycle in cycles]
        return ContractCheck(kept=not found, warnings=[], metadata={"cycles": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error(f"{cycle[0][0]} imports itself, through:")
            for importer, imported, lines in cycle:
                where = (f"l. {', '.join(map(str, lines))}" if lines
                         else f"importing a module of {imported} runs its __init__")
                output.print_error(f"-   {importer} -> {imported} ({where})", bold=False)
            output.new_line()


def _imported(graph: grimp.ImportGraph, module: str, known: set[str]) -> set[str]:
    """What importing ``module`` runs of ``known``: the modules it imports and their packages' ``__init__``."""
    found = set()
    for target in graph.find_modules_directly_imported_by(module):
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            package = ".".join(parts[:i])
            if package in known and package != module and not module.startswith(package + "."):
                found.add(package)
    return found


def _strongly_connected(modules: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module (each a set of modules in a cycle)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in modules:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def _shortest_cycle(start: str, group: set[str], edges: dict[str, set[str]]) -> list[str]:
    """The shortest path from ``start`` back to itself within ``group`` (breadth first)."""
    before: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(edges[node]):
            if child == start:
                path = [node]
                while (previous := before[path[-1]]) is not None:
                    path.append(previous)
                return [*reversed(path), start]
            if child in group and child not in before:
                before[child] = node
                queue.append(child)
    return [start, start]


def _lines(graph: grimp.ImportGraph, importer: str, imported: str) -> list[int]:
    return sorted({detail["line_number"] for detail in graph.get_import_details(importer=importer, imported=imported)})
