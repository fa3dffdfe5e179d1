"""Topology files, read by one entry point, :func:`read_topology`, which knows a format by its content.

- A CSV table (:func:`parse_csv_topology`): the first column names the nodes, then one column per level
  from the top down: ``node,block,rack``, or Lingjun's ``ip,DSW,PSW,ASW``.
- Slurm's topology.conf (:mod:`~simcluster.topology.slurm`): ``SwitchName=``, ``BlockName=`` lines.
- A Kubernetes node list (:mod:`~simcluster.topology.kubernetes`), JSON or YAML, its levels named by
  ``label_keys``.

Every refusal is a :class:`~simcluster.errors.TraceError` naming the file and, where there is one, the line
(1 = a CSV's header) and the field at fault.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections.abc import Sequence
from pathlib import Path

from simcluster.errors import TraceError
from simcluster.limits import check_csv
from simcluster.topology.arrays import MAX_NODES, NODE, TopologyError
from simcluster.topology.kubernetes import parse_kubernetes_nodes
from simcluster.topology.model import Topology
from simcluster.topology.slurm import parse_slurm_topology

MAX_FILE_BYTES = 4 << 30  # 4 GiB: 131,072 nodes of full kubectl JSON take about one
SNIFFED_BYTES = 65_536  # what is read to know a file's format
SUFFIXES = {".conf": "slurm", ".json": "kubernetes", ".yaml": "kubernetes", ".yml": "kubernetes"}
# a first meaningful line that says the format whatever the suffix
_SLURM_LINE = re.compile(r"\s*(switchname|blockname|blocksizes|ringname)\s*=", re.IGNORECASE)
_KUBERNETES_LINE = re.compile(r"\s*(---|apiVersion\s*:|kind\s*:|items\s*:|metadata\s*:|-\s+\w+\s*:)")


def read_topology(path: str | Path, *, label_keys: Sequence[str] | None = None) -> Topology:
    """The topology in the file ``path``: a CSV table, Slurm's topology.conf or a Kubernetes node list
    (whose levels ``label_keys`` name, top-down: :func:`~simcluster.topology.kubernetes.kueue_topology_levels`
    reads them from a Kueue Topology), known by its first meaningful line, else by its suffix.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "topology.conf"
    >>> _ = path.write_text("SwitchName=s0 Nodes=tux[0-3]\\nSwitchName=s1 Nodes=tux[4-7]\\n")
    >>> read_topology(path).domains("switch1")
    ['s0', 's1']
    """
    path = Path(path)
    if not path.is_file():
        raise TraceError(path, "topology file not found")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise TraceError(path, f"is {size:,} bytes, more than the {MAX_FILE_BYTES:,} a topology file may "
                         "hold")
    with path.open("rb") as handle:
        kind = topology_format(path.name, handle.read(SNIFFED_BYTES))
    if label_keys is not None and kind != "kubernetes":
        raise TraceError(path, "label_keys name the levels of a Kubernetes node list; this file reads as "
                         f"{kind}", field="label_keys")
    if kind == "csv":
        check_csv(path)  # header and line lengths within bounds before it is parsed
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceError(path, f"is not UTF-8 text (byte {exc.start:,})") from None
    except OSError as exc:
        raise TraceError(path, f"cannot be read: {exc.strerror or exc}") from None
    if kind == "slurm":
        return parse_slurm_topology(text, str(path))
    if kind == "kubernetes":
        return parse_kubernetes_nodes(text, label_keys or (), str(path))
    return parse_csv_topology(text, str(path))


def topology_format(name: str, head: bytes) -> str:
    """``"csv"``, ``"slurm"`` or ``"kubernetes"``: what a file named ``name`` that starts with ``head`` is.

    >>> topology_format("x.txt", b"# racks\\nSwitchName=s0 Nodes=a[1-4]\\n")
    'slurm'
    >>> topology_format("t", b'{"items": []}'), topology_format("t.json", b"# a comment?")
    ('kubernetes', 'kubernetes')
    """
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    said = (line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    first = next(said, "")
    if first.lstrip()[:1] in ("{", "["):
        return "kubernetes"
    if _SLURM_LINE.match(first):
        return "slurm"
    if _KUBERNETES_LINE.match(first):
        return "kubernetes"
    suffix = Path(name).suffix.lower()
    return SUFFIXES.get(suffix, "csv")


def parse_csv_topology(text: str, source: str = "topology.csv") -> Topology:
    """The topology of the CSV table ``text``: nodes named in its first column, then one column per level
    from the top down; ``source`` names it in errors.

    >>> parse_csv_topology("ip,DSW,PSW,ASW\\nh1,G6,P10,S14\\nh2,G6,P12,S14\\n").domains("ASW")
    ['G6/P10/S14', 'G6/P12/S14']
    >>> parse_csv_topology("node,block,rack\\nn0,b0,r0\\nn1,b0,\\n", "racks.csv")
    Traceback (most recent call last):
    ...
    simcluster.errors.TraceError: racks.csv, line 3, field 'rack': node 'n1' has no rack: every node needs one
    """
    text = text.lstrip("\ufeff")
    reader = csv.reader(io.StringIO(text))
    try:
        header = [name.strip() for name in next(reader, [])]
        _check_header(header, source)
        rows = list(itertools.islice(reader, MAX_NODES + 1))
    except csv.Error as exc:
        raise TraceError(source, f"not a readable CSV file: {exc}", line=reader.line_num) from None
    if set(map(len, rows)) != {len(header)}:  # blank lines, or a row of another width
        rows = [row for row in rows if _filled(row)]
        short = next((i for i, row in enumerate(rows) if len(row) != len(header)), None)
        if short is not None:
            raise TraceError(source, f"has {len(rows[short])} fields where the header has {len(header)}",
                             line=_line_of(text, short))
    if not rows:
        raise TraceError(source, "has a header and no rows: a topology needs at least one node", line=2,
                         field=header[0])
    if len(rows) > MAX_NODES:
        raise TraceError(source, f"has more than {MAX_NODES:,} rows", line=_line_of(text, MAX_NODES))
    columns = [list(map(str.strip, column)) for column in zip(*rows)]
    try:
        return Topology.from_labels(header[1:], columns[0], columns[1:], source=source)
    except TopologyError as exc:
        if exc.row is None:
            raise TraceError(source, exc.message, line=1, field=exc.level) from None
        first = f" (first on line {_line_of(text, exc.first)})" if exc.first is not None else ""
        raise TraceError(source, exc.message + first, line=_line_of(text, exc.row),
                         field=exc.level or header[0]) from None


def _check_header(header: list[str], source: str) -> None:
    if not header or not header[0]:
        raise TraceError(source, "no header: expected the node column, then one column per level from the "
                         "top down (e.g. node,block,rack)", line=1)
    if len(header) < 2:
        raise TraceError(source, f"no level column: after the node column {header[0]!r} come the levels, one "
                         "column each from the top down (e.g. node,block,rack)", line=1, field=header[0])
    for i, name in enumerate(header):
        if not name:
            raise TraceError(source, f"column {i + 1} has no name", line=1)
        if name in header[:i]:
            raise TraceError(source, f"column {name!r} is named twice (columns {header.index(name) + 1} and "
                             f"{i + 1}): each level has one column", line=1, field=name)
    if NODE in header[1:]:
        raise TraceError(source, f"{NODE!r} is the level of the nodes themselves: name the nodes in the "
                         "first column and the levels above them in the others", line=1, field=NODE)


def _filled(row: list[str]) -> bool:
    """A row that says something: not a blank line."""
    return bool(row) and (len(row) > 1 or bool(row[0].strip()))


def _line_of(text: str, row: int) -> int:
    """The line of data row ``row`` (0 = the first after the header; its last line, should a quoted field
    span several), read again: only an error needs it."""
    reader = csv.reader(io.StringIO(text))
    next(reader, None)
    for index, _ in enumerate(found for found in reader if _filled(found)):
        if index == row:
            return reader.line_num
    return reader.line_num + 1
