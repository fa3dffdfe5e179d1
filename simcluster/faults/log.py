"""Fault logs: what a fleet's servers did, read from the InfiniteHBD JSON or a plain CSV.

Two formats (docs/failures.md, "Fault logs"):

- **InfiniteHBD JSON** (``fault_trace.json``): a list of events ``{node_id, event_time, event_type,
  fault_type: {Level, Class, Desc}}``, ``event_time`` in *days* since the observation began, ``event_type``
  ``fault_start`` or ``fault_end``.  A ``fault_end`` closes the earliest open ``fault_start`` of the same node
  with the same ``fault_type``.  The file lists only servers that failed: the servers that never did are
  counted by ``servers=`` (default :data:`INFINITEHBD_SERVERS`, the 400 its dataset states).
- **CSV** ``node,start,end[,class][,level][,desc]``: one fault per row, ``start`` and ``end`` in *seconds*
  since the observation began; an empty ``end`` is a fault that never ended.  ``servers=`` defaults to the
  distinct nodes seen (give it when servers that never failed belong to the fleet).  A monitoring export's own
  column names map onto these fields (``columns="node=hostname,start=down_at,end=up_at,class=reason"``), and its
  times may be timestamps: ISO 8601 (``2025-03-01T12:00:00Z``) or Unix epoch seconds (every start at or after
  2000-01-01), read as seconds since the earliest start, which is when the observation is taken to begin
  (noted).

Choices, stated once: unknown fields are errors (a renamed field would otherwise be read as missing);
events out of time order are sorted (stably) and noted; two faults that overlap on one server both count
as faults and are merged into one outage for availability; a fault that never ends is an error unless
``open_faults="span-end"`` (then it lasts to the end of the observation and its repair time is not fitted).
Every error is a :class:`~simcluster.errors.TraceError` naming the file, the event (0-based index in the
JSON list, as ``jq '.[17]'`` counts) or line, and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections import Counter, defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from simcluster.errors import TraceError
from simcluster.limits import check_csv, is_number, shown

DAY = 86_400.0
INFINITEHBD_SERVERS = 400  # the dataset's stated servers (faults/infinitehbd README); its JSON lists only 231
MAX_LOG_BYTES = 1 << 30  # a fault log is read whole: 1 GiB is far above any real one
MAX_FAULTS = 1_000_000  # a year of a 100,000-server fleet each failing monthly; counted before parsing
MAX_SERVERS = 10_000_000
MAX_SPAN_S = 100 * 365 * DAY  # a time beyond a century is a unit mistake, not a log
MAX_NAME = 200  # characters of a node id, level, class or description
OpenFaults = Literal["error", "span-end"]
EVENT_FIELDS = ("node_id", "event_time", "event_type", "fault_type")
TYPE_FIELDS = ("Level", "Class", "Desc")
CSV_FIELDS = ("node", "start", "end", "class", "level", "desc")
ONE_OF = {"ISO 8601 timestamps": "an ISO 8601 timestamp", "Unix epoch seconds": "Unix epoch seconds"}
EPOCH_FROM = 946_684_800.0  # 2000-01-01 in Unix seconds: numbers of a log's starts all beyond it are epoch times


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault of one server: down from ``start_s`` to ``end_s`` (seconds since the observation began).
    ``closed`` is False for a fault that never ended (its ``end_s`` is the end of the observation).
    ``where`` says where it was read (``event 17`` or ``line 5``)."""

    server: int
    start_s: float
    end_s: float
    level: str
    cls: str
    desc: str
    closed: bool = True
    where: str = ""

    @property
    def repair_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def key(self) -> str:
        """The class a fit groups by: ``Level/Class`` (class names repeat across levels), or the class alone."""
        return f"{self.level}/{self.cls}" if self.level else self.cls


@dataclass(frozen=True)
class FaultLog:
    """The faults of ``servers`` servers observed for ``span_s`` seconds.  ``names[i]`` is server ``i``'s
    id in the file; servers ``len(names)`` … ``servers - 1`` never failed.  ``notes`` are the documented
    choices this log needed (sorted events, merged overlaps, open faults)."""

    path: str
    format: str
    faults: tuple[Fault, ...]
    names: tuple[str, ...]
    servers: int
    span_s: float
    notes: tuple[str, ...] = field(default=())

    @property
    def span_days(self) -> float:
        return self.span_s / DAY

    def outages(self) -> dict[int, list[tuple[float, float]]]:
        """Each failed server's outages: its faults' intervals, overlapping ones merged, in time order."""
        by_server: dict[int, list[tuple[float, float]]] = defaultdict(list)
        for fault in sorted(self.faults, key=lambda f: (f.server, f.start_s, f.end_s)):
            spans = by_server[fault.server]
            if spans and fault.start_s <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(spans[-1][1], fault.end_s))
            else:
                spans.append((fault.start_s, fault.end_s))
        return dict(by_server)

    def down_server_seconds(self) -> float:
        """Server-seconds down within the observation (overlaps counted once)."""
        return sum(min(end, self.span_s) - start for spans in self.outages().values() for start, end in spans
                   if start < self.span_s)

    def summary(self) -> dict[str, Any]:
        """What ``lucid-sim faults show`` prints."""
        classes = Counter(f.key for f in self.faults)
        exposure = self.servers * self.span_days
        return {"path": self.path, "format": self.format, "servers": self.servers, "servers_failed": len(self.names),
                "span_days": self.span_days, "faults": len(self.faults),
                "faults_per_1000_server_days": 1000 * len(self.faults) / exposure if exposure else None,
                "open_faults": sum(not f.closed for f in self.faults),
                "availability": 1 - self.down_server_seconds() / (self.servers * self.span_s) if self.span_s else None,
                "classes": dict(classes.most_common()), "notes": list(self.notes)}


def read_fault_log(path: str | os.PathLike[str], *, servers: int | None = None, span_s: float | None = None,
                   open_faults: OpenFaults = "error", format: str | None = None,
                   columns: str | Mapping[str, str] | None = None) -> FaultLog:
    """Read a fault log: InfiniteHBD JSON (a JSON list, or ``.json``) or CSV (anything else), or as ``format`` says
    (``infinitehbd`` or ``csv``).  ``servers``: servers observed, those that never failed included (default:
    400 for the InfiniteHBD JSON, the distinct servers seen for a CSV).  ``span_s``: seconds observed
    (default: from 0 to the last event).  ``columns``: a CSV's own column for each field (:func:`column_map`).
    Raises :class:`~simcluster.errors.TraceError`."""
    path = Path(path)
    mapping = column_map(columns, path)
    if format not in (None, "infinitehbd", "csv"):
        raise TraceError(path, f"unknown fault-log format {shown(format)}: infinitehbd or csv")
    if open_faults not in ("error", "span-end"):
        raise TraceError(path, f"open_faults must be 'error' or 'span-end', got {shown(open_faults)}")
    text = _read_text(path)
    kind = format or _format_of(path, text)
    _check_size(path, kind, text)
    if kind == "infinitehbd":
        if mapping:
            raise TraceError(path, "columns name a CSV log's columns; this file is the InfiniteHBD JSON, whose "
                             "fields are fixed")
        raw, names, notes = _parse_infinitehbd(path, text)
        default_servers, servers_note = INFINITEHBD_SERVERS, "the InfiniteHBD dataset's stated 400"
    else:
        raw, names, notes = _parse_csv(path, text, mapping)
        default_servers, servers_note = len(names), "the distinct servers seen"
    return _settle(path, kind, raw, names, notes, servers, span_s, open_faults, default_servers, servers_note)


def _check_size(path: Path, kind: str, text: str) -> None:
    """Refuse a log of more than :data:`MAX_FAULTS` faults before parsing it (a count of its lines or events takes
    a second for a gigabyte; parsing ten million rows took minutes and gigabytes).

    >>> _check_size(Path("log.csv"), "csv", "node,start,end\\n" + "a,1,2\\n" * 3)
    """
    found = text.rstrip("\n").count("\n") if kind == "csv" else text.count('"fault_start"')
    if found > MAX_FAULTS:
        what = "rows after its header" if kind == "csv" else "fault_start events"
        raise TraceError(path, f"has {found:,} {what}, more than the limit of {MAX_FAULTS:,} faults a log may hold "
                         "(docs/running.md, Limits): split it by time or by servers")


def _format_of(path: Path, text: str) -> str:
    """A log's format by its content, whatever its name: a JSON list is the InfiniteHBD log, anything else not
    JSON a CSV; a JSON object is refused (a ``fitted.json`` is a model, not a log), so that a file saved without
    its ``.json`` is never read as a CSV whose header is ``{``.

    >>> _format_of(Path("trace"), '  [{"node_id": "n1"}]'), _format_of(Path("log.txt"), "node,start,end")
    ('infinitehbd', 'csv')
    """
    first = text[:4096].lstrip()[:1]
    if first == "{":
        raise TraceError(path, "holds one JSON object, not a fault log: a fitted model (`lucid-sim faults fit "
                         "--out`) is given to --faults as it is; a log is a JSON list of fault_start/fault_end "
                         "events or a CSV node,start,end")
    return "infinitehbd" if first == "[" or path.suffix.lower() == ".json" else "csv"


def _read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise TraceError(path, f"cannot be read: {exc.strerror or exc}") from None
    if not path.is_file():
        raise TraceError(path, "is not a file")
    if size > MAX_LOG_BYTES:
        raise TraceError(path, f"is {size:,} bytes, more than the limit of {MAX_LOG_BYTES:,} for a fault log")
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TraceError(path, f"is not UTF-8 text (byte {exc.start:,}: {data[exc.start:exc.start + 1]!r}); save it "
                         "as UTF-8", line=line) from None


# a fault as parsed, before servers and span are settled: server, start, end (None: open), level, class, desc,
# where
_Raw = tuple[int, float, float | None, str, str, str, str]


def _parse_infinitehbd(path: Path, text: str) -> tuple[list[_Raw], list[str], list[str]]:
    try:
        events = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"is not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    except RecursionError:
        raise TraceError(path, "is not a fault log: JSON nested too deeply") from None
    if not isinstance(events, list):
        raise TraceError(path, f"must be a JSON list of fault_start/fault_end events, got a {type(events).__name__}")
    if len(events) > 2 * MAX_FAULTS:
        raise TraceError(path, f"has {len(events):,} events, more than the limit of {2 * MAX_FAULTS:,}")
    parsed = []
    for index, event in enumerate(events):
        where = f"{path}, event {index}"
        if not isinstance(event, dict):
            raise TraceError(where, f"must be a JSON object with fields {', '.join(EVENT_FIELDS)}, got "
                             f"{shown(event)}")
        for name in event:
            if name not in EVENT_FIELDS:
                raise TraceError(where, f"unknown field (known: {', '.join(EVENT_FIELDS)})", field=str(name)[:MAX_NAME])
        for name in EVENT_FIELDS:
            if name not in event:
                raise TraceError(where, "is missing", field=name)
        node = _name(event["node_id"], where, "node_id", allow_int=True)
        kind = event["event_type"]
        if kind not in ("fault_start", "fault_end"):
            raise TraceError(where, f"must be fault_start or fault_end, got {shown(kind)}", field="event_type")
        seconds = _time(event["event_time"], where, "event_time", scale=DAY, unit="days")
        fault_type = event["fault_type"]
        if not isinstance(fault_type, dict):
            raise TraceError(where, f"must be an object {{Level, Class, Desc}}, got {shown(fault_type)}",
                             field="fault_type")
        for name in fault_type:
            if name not in TYPE_FIELDS:
                raise TraceError(where, f"unknown field (known: {', '.join(TYPE_FIELDS)})",
                                 field=f"fault_type.{str(name)[:MAX_NAME]}")
        level = _name(fault_type.get("Level", ""), where, "fault_type.Level", empty=True)
        cls = _name(fault_type.get("Class"), where, "fault_type.Class")
        desc = _name(fault_type.get("Desc", ""), where, "fault_type.Desc", empty=True)
        parsed.append((seconds, index, node, kind, (level, cls, desc), where))
    notes = []
    if any(parsed[i][0] < parsed[i - 1][0] for i in range(1, len(parsed))):
        parsed.sort(key=lambda p: p[0])  # stable: a start and its end at one instant keep their order
        notes.append("events were not in time order: sorted by event_time")
    servers: dict[str, int] = {}
    open_starts: dict[tuple[int, tuple[str, str, str]], deque[tuple[float, str]]] = defaultdict(deque)
    raw: list[_Raw] = []
    for seconds, _, node, kind, type_, where in parsed:
        server = servers.setdefault(node, len(servers))
        if kind == "fault_start":
            open_starts[(server, type_)].append((seconds, where))
            continue
        waiting = open_starts.get((server, type_))
        if not waiting:
            raise TraceError(where, f"fault_end of node {shown(node)} ({'/'.join(type_)}) closes no earlier "
                             "fault_start of that node with that fault_type", field="event_type")
        start, start_where = waiting.popleft()
        raw.append((server, start, seconds, *type_, start_where))
    for (server, type_), waiting in open_starts.items():
        raw.extend((server, start, None, *type_, where) for start, where in waiting)
    raw.sort(key=lambda r: (r[1], r[0]))
    return raw, list(servers), notes


def column_map(columns: str | Mapping[str, str] | None, path: Path | str = "--fault-columns") -> dict[str, str]:
    """A CSV log's own column for each field it maps (``node=hostname,start=down_at,end=up_at,class=reason``, or a
    mapping), lower-cased as headers are read; a field not among :data:`CSV_FIELDS`, a field or a column given
    twice, or an empty name is refused naming ``path``.

    >>> column_map("node=hostname, start=Down_At ,end=up_at")
    {'node': 'hostname', 'start': 'down_at', 'end': 'up_at'}
    """
    if columns is None or columns == "":
        return {}
    pairs = (list(columns.items()) if isinstance(columns, Mapping)
             else [part.partition("=")[::2] for part in str(columns).split(",") if part.strip()])
    found: dict[str, str] = {}
    for field_name, column in pairs:
        field_name, column = str(field_name).strip().lower(), str(column).strip().lower()
        if field_name not in CSV_FIELDS or not column:
            raise TraceError(path, f"columns: {shown(field_name + '=' + column)} must be FIELD=COLUMN with FIELD one "
                             f"of {', '.join(CSV_FIELDS)}, e.g. node=hostname,start=down_at,end=up_at,class=reason")
        if field_name in found or column in found.values():
            raise TraceError(path, f"columns: {shown(field_name if field_name in found else column)} is given twice")
        found[field_name] = column
    return found


def _parse_csv(path: Path, text: str, mapping: Mapping[str, str] | None = None
               ) -> tuple[list[_Raw], list[str], list[str]]:
    """The faults of a CSV log, its servers' names in order of appearance, and the notes its reading needed;
    ``mapping``: the file's own column for each field (other columns are then ignored, and noted)."""
    check_csv(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise TraceError(path, f"is empty: a fault log's CSV starts with the header {','.join(CSV_FIELDS[:3])}"
                         "[,class][,level][,desc]") from None
    except csv.Error as exc:
        raise TraceError(path, f"is not a CSV table: {exc}", line=1) from None
    column, notes = _header_columns(path, [name.strip().lower() for name in header], mapping or {})
    width = len(header)
    servers: dict[str, int] = {}
    rows: list[tuple[int, str, str, str, dict[str, str]]] = []  # line, node, start, end, names
    try:
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != width:
                raise TraceError(path, f"has {len(row)} fields, the header {width}", line=line)
            if len(rows) >= MAX_FAULTS:
                raise TraceError(path, f"has more than the limit of {MAX_FAULTS:,} faults", line=line)
            node = _name(row[column["node"]], str(path), "node", line=line)
            names = {n: row[column[n]].strip() if n in column else "" for n in ("level", "class", "desc")}
            for n, value in names.items():
                if len(value) > MAX_NAME:
                    raise TraceError(path, f"is longer than {MAX_NAME} characters", line=line, field=n)
            rows.append((line, node, row[column["start"]].strip(), row[column["end"]].strip(), names))
    except csv.Error as exc:
        raise TraceError(path, f"is not a CSV table: {exc}", line=reader.line_num) from None
    times = _log_times(path, rows, notes)
    raw: list[_Raw] = []
    last = -math.inf
    for (line, node, _, _, names), (start, end) in zip(rows, times, strict=True):
        if end is not None and end < start:
            raise TraceError(path, f"ends before it starts (start {start:g} s, end {end:g} s)", line=line,
                             field="end")
        if start < last and "rows were not in time order: sorted by start" not in notes:
            notes.append("rows were not in time order: sorted by start")
        last = start
        server = servers.setdefault(node, len(servers))
        raw.append((server, start, end, names["level"], names["class"] or "unclassified", names["desc"],
                    f"line {line}"))
    raw.sort(key=lambda r: (r[1], r[0]))
    return raw, list(servers), notes


def _header_columns(path: Path, header: list[str], mapping: Mapping[str, str]) -> tuple[dict[str, int], list[str]]:
    """Each field's index in ``header`` (the file's own names where ``mapping`` gives them), and a note of the
    columns a mapping left unread; a header that lacks a field, names an unknown column (without a mapping:
    a renamed field would be read as missing) or names one twice is refused."""
    if len(set(header)) < len(header):
        twice = next(name for i, name in enumerate(header) if name in header[:i])
        raise TraceError(path, f"column {twice!r} is named twice (columns {header.index(twice) + 1} and "
                               f"{header.index(twice, header.index(twice) + 1) + 1})", line=1)
    wanted = {field_name: mapping.get(field_name, field_name) for field_name in CSV_FIELDS}
    if not mapping:
        for name in header:
            if name not in CSV_FIELDS:
                raise TraceError(path, f"unknown column (known: {', '.join(CSV_FIELDS)}; start and end in seconds, "
                                 "or timestamps; another log's own names: --fault-columns node=hostname,...)",
                                 line=1, field=name[:MAX_NAME])
    for field_name in CSV_FIELDS[:3]:
        if wanted[field_name] not in header:
            given = f" (column {shown(wanted[field_name])} by the column mapping)" if field_name in mapping else ""
            raise TraceError(path, f"the header lacks this column{given} (node,start,end[,class] with times in "
                             "seconds or timestamps)", line=1, field=wanted[field_name] if given else field_name)
    for field_name, name in mapping.items():
        if name not in header:
            raise TraceError(path, f"the header lacks column {shown(name)}, which the column mapping names for "
                             f"{field_name}", line=1, field=name[:MAX_NAME])
    column = {field_name: header.index(name) for field_name, name in wanted.items() if name in header}
    unread = [name for name in header if name not in wanted.values()]
    notes = [f"columns not read (the mapping names no field for them): {', '.join(unread[:10])}"] if unread else []
    return column, notes


def _log_times(path: Path, rows: list[tuple[int, str, str, str, dict[str, str]]], notes: list[str]
               ) -> list[tuple[float, float | None]]:
    """Each row's (start, end or None) in seconds since the observation began: numbers of seconds as they are;
    ISO 8601 timestamps, or Unix epoch seconds (every start at or after 2000-01-01), as seconds since the earliest
    start (noted).  Errors name the line and field."""
    starts = [row[2] for row in rows]
    if all(is_number(text) or not text for text in starts):  # (a blank start is refused as a number of seconds)
        numbers = [_time(text, str(path), "start", line=line) for line, _, text, _, _ in rows]
        if numbers and min(numbers) >= EPOCH_FROM:
            return _relative(path, rows, _epoch, notes, "Unix epoch seconds")
        return [(start, None if end == "" else _time(end, str(path), "end", line=line))
                for start, (line, _, _, end, _) in zip(numbers, rows, strict=True)]
    return _relative(path, rows, _iso, notes, "ISO 8601 timestamps")


def _epoch(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError
    return value


def _iso(text: str) -> float:
    """Seconds since the Unix epoch of an ISO 8601 timestamp; one without a zone is taken as UTC."""
    moment = datetime.fromisoformat(text)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _relative(path: Path, rows: list[tuple[int, str, str, str, dict[str, str]]], read: Any, notes: list[str],
              kind: str) -> list[tuple[float, float | None]]:
    """The rows' times read by ``read`` (to epoch seconds), as seconds since the earliest start."""
    def moment(text: str, line: int, field_name: str) -> float:
        try:
            return float(read(text))
        except (ValueError, OverflowError, OSError):
            raise TraceError(path, f"must be {ONE_OF[kind]} like the rest of the log's times (or seconds since "
                             f"the observation began, in every row), got {shown(text)}", line=line,
                             field=field_name) from None

    absolute = [(moment(start, line, "start"), None if end == "" else moment(end, line, "end"))
                for line, _, start, end, _ in rows]
    origin = min(start for start, _ in absolute)
    notes.append(f"times are {kind}: seconds since the earliest start "
                 f"({datetime.fromtimestamp(origin, UTC).isoformat().replace('+00:00', 'Z')}), taken as "
                 "the observation's beginning")
    relative = []
    for (line, *_), (start, end) in zip(rows, absolute, strict=True):
        for value, field_name in ((start, "start"), (end, "end")):
            if value is not None and value - origin > MAX_SPAN_S:
                raise TraceError(path, "is more than a century after the log's earliest start", line=line,
                                 field=field_name)
        relative.append((start - origin, None if end is None else end - origin))
    return relative


def _settle(path: Path, kind: str, raw: list[_Raw], names: list[str], notes: list[str], servers: int | None,
            span_s: float | None, open_faults: OpenFaults, default_servers: int, servers_note: str) -> FaultLog:
    if not raw:
        raise TraceError(path, "holds no faults")
    last = max(max(r[1], r[2] if r[2] is not None else r[1]) for r in raw)
    if span_s is None:
        span = last
        notes.append(f"observed span: 0 to the last event ({span / DAY:,.2f} days)")
    else:
        span = float(span_s)
        if not math.isfinite(span) or span <= 0 or span > MAX_SPAN_S:
            raise TraceError(path, f"the observed span must be a positive number of seconds up to {MAX_SPAN_S:,.0f}, "
                             f"got {shown(span_s)}")
        if span < last:
            raise TraceError(path, f"the observed span ({span:,.0f} s) ends before the last event ({last:,.0f} s)")
    if span <= 0:
        raise TraceError(path, "every event is at time 0: no span observed (give span_s / --span-days)")
    if servers is None:
        count = max(default_servers, 1)
        if count < len(names):
            raise TraceError(path, f"{len(names):,} servers failed, more than {servers_note} ({count:,}): give "
                             "servers= / --servers with the number observed")
        notes.append(f"servers: {count:,} ({servers_note}; {len(names):,} failed)")
    else:
        if isinstance(servers, bool) or not isinstance(servers, int) or not 1 <= servers <= MAX_SERVERS:
            raise TraceError(path, f"servers must be a whole number from 1 to {MAX_SERVERS:,}, got {shown(servers)}")
        if servers < len(names):
            raise TraceError(path, f"servers={servers:,} is fewer than the {len(names):,} servers that failed")
        count = servers
    faults = []
    for server, start, end, level, cls, desc, where in raw:
        if end is None:
            if open_faults == "error":
                raise TraceError(f"{path}, {where}", f"server {shown(names[server])}'s fault ({cls}) never ends: a "
                                 "server that never recovers (open_faults='span-end' / --open-faults span-end keeps "
                                 "it down to the end of the observation)",
                                 field="event_type" if kind == "infinitehbd" else "end")
            faults.append(Fault(server, start, span, level, cls, desc, closed=False, where=where))
        else:
            faults.append(Fault(server, start, end, level, cls, desc, where=where))
    open_count = sum(not f.closed for f in faults)
    if open_count:
        notes.append(f"{open_count} fault(s) never end: down to the end of the observation, repair not fitted")
    log = FaultLog(str(path), kind, tuple(faults), tuple(names), count, span, ())
    overlaps = len(faults) - sum(len(spans) for spans in log.outages().values())
    if overlaps:
        notes.append(f"{overlaps} fault(s) overlap an earlier one on the same server: each counts as a fault, "
                     "their outages merge into one for availability")
    return FaultLog(str(path), kind, tuple(faults), tuple(names), count, span, tuple(notes))


def _name(value: Any, where: str, field_name: str, *, allow_int: bool = False, empty: bool = False,
          line: int | None = None) -> str:
    if allow_int and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise TraceError(where, f"must be a string, got {shown(value)}", line=line, field=field_name)
    value = value.strip()
    if not value and not empty:
        raise TraceError(where, "is empty", line=line, field=field_name)
    if len(value) > MAX_NAME:
        raise TraceError(where, f"is longer than {MAX_NAME} characters: {shown(value)}", line=line, field=field_name)
    return value


def _time(value: Any, where: str, field_name: str, *, scale: float = 1.0, unit: str = "seconds",
          line: int | None = None) -> float:
    """A time of the log in seconds: ``value`` (in ``unit``, ``scale`` seconds each), finite, from 0 to a century."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TraceError(where, f"must be a number of {unit}, got {shown(value)}", line=line, field=field_name)
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise TraceError(where, f"must be a number of {unit}, got {shown(value)}", line=line, field=field_name) from None
    if not math.isfinite(number):
        raise TraceError(where, f"must be a finite number of {unit}, got {shown(value)}", line=line, field=field_name)
    if number < 0:
        raise TraceError(where, f"must be non-negative ({unit} since the observation began), got {shown(value)}",
                         line=line, field=field_name)
    seconds = number * scale
    if seconds > MAX_SPAN_S:
        raise TraceError(where, f"{shown(value)} {unit} is beyond a century: a unit mistake? (this format's times "
                         f"are in {unit})", line=line, field=field_name)
    return seconds
