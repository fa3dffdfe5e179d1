"""The generic CSV job-log reader — the Helios/Venus format and every other (Philly, ITP, ``--columns``) —
with validation; files and DataFrames alike.

A trace is a folder holding one job log (``cluster_full_log.csv`` or ``cluster_log.csv`` first,
else the one CSV whose header is a known format; see :mod:`simcluster.traces.files`) and, when the
log has VCs, ``vc_config.csv``; or a CSV file (plus ``--vc-config`` when its config is not beside it);
or a pandas DataFrame with the same columns.  Columns are found by the format
(:mod:`simcluster.traces.columns`; a header naming ``submit_time``, ``gpu_num`` and ``duration`` by
those names is a log of no particular format), fields split at the delimiter the header uses
(:mod:`simcluster.traces.csvfile`), submit times read by one rule (:mod:`simcluster.traces.times`),
durations in ``--duration-unit`` (:mod:`simcluster.traces.units`), and a log without VCs is one VC
sized by ``--nodes``, ``--cluster`` or ``--load`` (:mod:`simcluster.traces.sizing`).  What a Venus log
holds beyond that (workloads, profiles) is read by :mod:`simcluster.traces.venus`.  Rows keep the
file's order for equal submit times (stable sort).

Every problem is reported with the file, the line (the header is line 1) and the field — for a
DataFrame, the row's index label.  With ``skip_invalid`` the offending rows are dropped instead and
counted by reason.  Data that loads but looks misread gets warnings (:mod:`simcluster.traces.doubts`).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from simcluster.cluster_spec import ONE_VC, ClusterSpec
from simcluster.errors import RowProblems, TraceError
from simcluster.job import Job, Workload
from simcluster.traces.columns import (
    CUSTOM,
    KNOWN_FORMATS,
    REQUIRED_FIELDS,
    JobLogFormat,
    closest,
    column_map,
    detect,
    parse_columns,
)
from simcluster.traces.csvfile import describe_delimiter, file_delimiter, numbers, parse_delimiter, read_csv
from simcluster.traces.deadlines import deadline_seconds
from simcluster.traces.doubts import unit_doubts
from simcluster.traces.files import find_job_log
from simcluster.traces.requests import request_columns
from simcluster.traces.sizing import (
    MAX_GPUS,
    check_nodes,
    limit_error,
    nodes_for_load,
    nodes_of_cluster,
    offered_load,
    read_vc_config,
)
from simcluster.traces.stats import load_doubts, vc_gpus_of
from simcluster.traces.tiers import tier_columns
from simcluster.traces.times import MAX_SECONDS, TimeRule, submit_seconds
from simcluster.traces.units import parse_time_format, seconds_per
from simcluster.traces.venus import WORKLOAD, throughput_log_beside, workload_columns

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.throughputs import ThroughputTable

__all__ = ["JobLog", "load_job_log", "trace_from_frame"]


@dataclass
class JobLog:
    """A validated job log: one row per job (seconds from the epoch), the VCs' sizes in nodes, and how it was read.

    A :class:`~simcluster.traces.base.Trace`: what every loader returns.

    >>> trace = trace_from_frame(pd.DataFrame({"submit_time": [0, 60], "gpu_num": [1, 2], "duration": [5, 6]}),
    ...                          nodes=1)
    >>> len(trace), trace.vc_nodes, [job.gpu_num for job in trace.make_jobs()]
    (2, {'cluster': 1}, [1, 2])
    """

    source: str
    frame: pd.DataFrame  # job_id, user, vc, gpu_num, submit_time (s), duration (s), [workload columns]
    vc_nodes: dict[str, int]
    skipped: Counter[str] = field(default_factory=Counter)
    load_cpu_seconds: float = 0.0
    throughput_history: str | None = None  # the cluster's 10-minute submission log beside the trace, if any (lucid)
    format: str = "venus"  # which job-log format it was read as (summary.json's trace_format)
    time_rule: str = ""  # how submit times were read (times.TimeRule.describe)
    epoch: str | None = None  # the wall-clock time of second 0, when known
    sizing: str = ""  # where the VCs' sizes came from
    cluster: ClusterSpec | None = None  # the VCs' nodes by GPU type, when the VC config has a gpu_type column
    delimiter: str = ","  # what split the file's fields
    duration_unit: str = "s"  # what the duration column counted
    columns: dict[str, str | None] = field(default_factory=dict)  # field → the log's column (None: it has none)
    warnings: list[str] = field(default_factory=list)  # where the data looks misread (traces.doubts)
    notes: list[str] = field(default_factory=list)  # what the loader assumed (summary.json's trace_notes)

    heterogeneous: ClassVar[bool] = False  # (the Trace protocol's: jobs run at 1× on every GPU)
    needs_throughputs: ClassVar[bool] = False
    vcs_checked: ClassVar[bool] = True  # every job was checked against its VC's size

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def given_table(self) -> pd.DataFrame:
        """Row i holds job i's own columns (the jobs table copies them as they are)."""
        return self.frame

    def make_jobs(self, throughputs: ThroughputTable | None = None) -> list[Job]:
        """Fresh job objects (a simulation consumes them; a trace can be replayed); a job log needs no table."""
        f = self.frame
        vcs = _distinct(f["vc"])  # one str object per distinct VC and user name
        users = _distinct(f["user"]) if "user" in f else [""] * len(f)
        workloads: list[Workload | None] = [None] * len(f)
        if all(c in f for c in WORKLOAD):  # one Workload per distinct (model, dataset, batchsize, amp)
            key = np.zeros(len(f), np.int64)
            for c in WORKLOAD:  # (each step's key numbers the distinct combinations so far: it stays below rows²)
                codes, uniques = pd.factorize(f[c], use_na_sentinel=False)
                key = pd.factorize(key * len(uniques) + codes)[0]
            first = np.unique(key, return_index=True)[1]  # each combination's first row (key k is the k-th seen)
            made = [Workload(*values) for values in zip(*(f[c].take(first).tolist() for c in WORKLOAD))]
            workloads = list(map(made.__getitem__, key.tolist()))
        # GPU memory per job (MiB) when the trace profiled it, as Venus' does; else the colocation model's
        memory = f["gmem"].fillna(0.0).tolist() if "gmem" in f else [0.0] * len(f)
        # (Job's arguments by position, in its order: index, job_id, vc, gpu_num, submit_time, duration,
        # user, workload, memory; keywords cost a dict per job)
        return list(map(Job, range(len(f)), f["job_id"].tolist(), vcs, f["gpu_num"].tolist(),
                        f["submit_time"].tolist(), f["duration"].tolist(), users, workloads, memory))


def _distinct(column: pd.Series) -> list[str]:
    """The column's values as a list holding one str object per distinct value (a million jobs of ten
    VCs hold ten names, not a million)."""
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    return list(map(list(uniques).__getitem__, codes.tolist()))


@dataclass(frozen=True)
class _Reading:
    """How to read a log: the options every job log takes, checked once."""

    gpus_per_node: int = 8
    skip_invalid: bool = False
    epoch: str | None = None
    columns: dict[str, str] = field(default_factory=dict)
    nodes: int | None = None
    cluster: str | None = None
    load: float | None = None
    sized: bool = True
    duration_unit: str | None = None
    time_format: str | None = None


def load_job_log(
    path: str | Path,
    vc_config: str | Path | None = None,
    *,
    gpus_per_node: int = 8,
    skip_invalid: bool = False,
    epoch: str | None = None,
    columns: str | Mapping[str, str] | None = None,
    nodes: int | None = None,
    cluster: str | None = None,
    load: float | None = None,
    sized: bool = True,
    duration_unit: str | None = None,
    time_format: str | None = None,
    delimiter: str | None = None,
) -> JobLog:
    """Read and validate a CSV job log.

    ``epoch``: time zero (None: the format's default, see :mod:`~simcluster.traces.times`);
    ``columns``: ``field=column`` names for a log of no known format; ``nodes``, ``cluster`` or
    ``load`` size a log without VCs (``cluster`` is ignored for a log with VCs, which the
    heterogeneous engine may still use); ``sized=False`` lets a log without VCs load unsized
    (``vc_nodes`` empty), for ``trace check``.  ``duration_unit`` (s, ms, min, h; None: seconds),
    ``time_format`` (epoch-s, epoch-ms, a strftime pattern; None: the rule) and ``delimiter`` (None:
    the header's) say how to read the numbers.
    """
    t0 = time.process_time()
    reading = _reading(gpus_per_node, skip_invalid, epoch, columns, nodes, cluster, load, sized, duration_unit,
                       time_format)
    sep = parse_delimiter(delimiter)
    log_path = find_job_log(Path(path), reading.columns, sep)
    sep = file_delimiter(log_path, sep)
    raw, lines = _read_log(log_path, sep)
    config = Path(vc_config) if vc_config else log_path.with_name("vc_config.csv")
    trace = _build(log_path, raw, RowProblems(log_path, lines), reading, config, vc_config is not None, sep)
    trace.throughput_history = throughput_log_beside(log_path)
    trace.time_rule, trace.epoch = _time_zero(trace.time_rule, trace.epoch, log_path)
    trace.load_cpu_seconds = time.process_time() - t0
    return trace


def trace_from_frame(jobs: pd.DataFrame, vc_config: Mapping[str, int] | str | os.PathLike[str] | None = None, *,
                     source: str = "DataFrame", **options: Any) -> JobLog:
    """A trace from a DataFrame with a job log's columns, read as :func:`load_job_log` reads a file (the
    same options, defaults and errors).  ``vc_config``: nodes per VC (``{"vc0": 4}``) or a VC config
    CSV; a frame without a VC column is one VC sized by ``nodes``, ``cluster`` or ``load``.  A problem
    names the frame's row (its index label) and the field.
    """
    t0 = time.process_time()
    reading = _reading(**options)
    raw = pd.DataFrame({str(c).strip(): _as_text(jobs[c].reset_index(drop=True)) for c in jobs.columns})
    if isinstance(vc_config, Mapping):
        given: Mapping[str, int] | Path | None = dict(vc_config)
    else:
        given = Path(vc_config) if vc_config is not None else None
    trace = _build(Path(source), raw, RowProblems(source, jobs.index, unit="row"), reading, given,
                   vc_config is not None, None)
    trace.source = source
    trace.load_cpu_seconds = time.process_time() - t0
    return trace


def _reading(gpus_per_node: int = 8, skip_invalid: bool = False, epoch: str | None = None,
             columns: str | Mapping[str, str] | None = None, nodes: int | None = None, cluster: str | None = None,
             load: float | None = None, sized: bool = True, duration_unit: str | None = None,
             time_format: str | None = None) -> _Reading:
    seconds_per(duration_unit)  # an unknown unit is an error before any work
    return _Reading(gpus_per_node, skip_invalid, epoch, parse_columns(columns), nodes, cluster, load, sized,
                    duration_unit, parse_time_format(time_format))


def _build(where: Path, raw: pd.DataFrame, problems: RowProblems, reading: _Reading,
           vc_config: Path | Mapping[str, int] | None, config_given: bool, sep: str | None) -> JobLog:
    """The trace of a log read as text (``raw``: one row per job, the log's own columns)."""
    header = list(raw.columns)
    fmt = _format_of(where, header, reading.columns, sep)
    mapping = column_map(header, fmt, reading.columns)
    _check_columns(where, header, mapping, reading.columns, sep)
    frame, rule = _validate(raw, mapping, fmt, reading, problems)
    vc_nodes, sizing, typed = _vc_sizes(where, frame, problems, mapping["vc"], vc_config, config_given, reading)
    frame, vc_nodes, skipped = _settle(frame, len(raw), vc_nodes, reading.gpus_per_node, problems, mapping,
                                       reading.skip_invalid)
    doubts = unit_doubts(frame, rule, str(mapping["duration"]), reading.duration_unit)
    doubts += load_doubts(frame, vc_gpus_of(typed.only(vc_nodes) if typed else None, vc_nodes, reading.gpus_per_node))
    return JobLog(str(where), frame, vc_nodes, skipped, 0.0, None, fmt.name, rule.describe(), rule.epoch, sizing,
                 typed.only(vc_nodes) if typed else None, sep or ",", reading.duration_unit or "s", mapping, doubts)


def _settle(frame: pd.DataFrame, rows: int, vc_nodes: dict[str, int], gpus_per_node: int, problems: RowProblems,
            mapping: dict[str, str | None], skip_invalid: bool) -> tuple[pd.DataFrame, dict[str, int], Counter[str]]:
    """The valid jobs in submit order (or an error at the first bad row), and the VCs they use."""
    if vc_nodes:
        _check_capacity(frame, vc_nodes, gpus_per_node, problems, mapping["vc"] or "vc", str(mapping["gpu_num"]))
    bad, skipped = problems.settle(skip_invalid)
    if bad:
        frame = frame.drop(index=bad)
    if frame.empty:
        raise TraceError(problems.path, "no valid jobs in the trace" + (f" (all {rows:,} rows invalid: "
                         + ", ".join(f"{n:,} × {why}" for why, n in skipped.most_common()) + ")" if skipped else ""))
    for col in ("gpu_num", "duration", "submit_time"):
        frame[col] = frame[col].astype(np.int64)
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    used = set(frame["vc"].unique())
    return frame, {vc: n for vc, n in vc_nodes.items() if vc in used} or vc_nodes, skipped


def _time_zero(described: str, epoch: str | None, log_path: Path) -> tuple[str, str | None]:
    """The time rule's description and epoch; relative seconds written by ``trace convert`` get their
    wall-clock zero back from the ``conversion.json`` beside them."""
    provenance = log_path.parent / "conversion.json"
    if not described.startswith("relative seconds") or epoch or not provenance.is_file():
        return described, epoch
    try:
        found = json.loads(provenance.read_text()).get("epoch")
    except (OSError, ValueError, AttributeError):
        return described, epoch
    if not isinstance(found, str):
        return described, epoch
    return f"relative seconds, as given (second 0 = {found}, from conversion.json)", found


def _read_log(path: Path, sep: str) -> tuple[pd.DataFrame, np.ndarray]:
    """The log's rows without blank lines, and the file line of each (the header is line 1)."""
    raw = read_csv(path, sep)
    raw.columns = [str(c).strip() for c in raw.columns]
    lines = np.arange(len(raw)) + 2
    if len(raw.columns):
        blank = (raw == "").all(axis=1).to_numpy()
        if blank.any():
            raw, lines = raw[~blank].reset_index(drop=True), lines[~blank]
    if raw.empty:
        raise TraceError(path, "the job log has a header but no jobs", line=1)
    return raw, lines


def _split_at(sep: str | None) -> str:
    """How a header was split, for errors about its columns."""
    return f" (columns split at the {describe_delimiter(sep)}; --delimiter names another)" if sep else ""


def _format_of(path: Path, header: list[str], given: Mapping[str, str], sep: str | None) -> JobLogFormat:
    """The known format the header is, else the generic one when ``--columns`` names the columns or the header
    names the required fields by their own names."""
    fmt = detect(header)
    if fmt is not None:
        return fmt
    if given or all(name in header for name in REQUIRED_FIELDS):
        return CUSTOM
    near = closest(header)
    if near is None:
        known = "; ".join(f"{f.name}: {', '.join(f.identify)}" for f in KNOWN_FORMATS)
        raise TraceError(path, f"not a job log of a known format (columns: {', '.join(header)}){_split_at(sep)}. "
                         f"Known formats and the columns that identify them — {known}. For any other log, name its "
                         "columns: --columns submit_time=COL,gpu_num=COL,duration=COL[,job_id=COL,vc=COL,user=COL]",
                         line=1)
    missing = [c for c in near.identify if c not in header]
    raise TraceError(path, f"missing column(s) {', '.join(missing)} (a {near.name} log has {', '.join(near.identify)}"
                     f"); found: {', '.join(header)}{_split_at(sep)} (--columns FIELD=COLUMN names them; vc= for no "
                     "VCs)", line=1, field=missing[0])


def _check_columns(path: Path, header: list[str], mapping: dict[str, str | None], given: Mapping[str, str],
                   sep: str | None) -> None:
    for name, column in given.items():
        if column and column not in header:
            raise TraceError(path, f"--columns names column {column!r} for {name}, but the header has: "
                             f"{', '.join(header)}{_split_at(sep)}", line=1, field=column)
    missing = [name for name in REQUIRED_FIELDS if mapping[name] is None]
    if missing:
        raise TraceError(path, f"missing column(s) {', '.join(missing)}; found: {', '.join(header)}{_split_at(sep)} "
                         "(--columns FIELD=COLUMN names them)", line=1, field=missing[0])


def _whole_numbers(raw: pd.Series, fld: str, lowest: int, highest: float, unit: str, problems: RowProblems,
                   scale: float = 1.0) -> pd.Series:
    """Whole numbers in ``[lowest, highest]`` (bad rows flagged; 0 in their place).  ``scale`` ≠ 1: the values
    are in another unit, may have fractions, and become the nearest whole number once scaled."""
    text = raw.astype(str).str.strip()
    num = numbers(text)
    values = num.to_numpy(dtype=float, na_value=np.nan)
    finite = np.isfinite(values)
    problems.flag(num.isna(), fld, "not a number", lambda r: f"not a number: {raw.iloc[r]!r}")
    problems.flag(~finite, fld, "not a finite number", lambda r: f"not a finite number: {raw.iloc[r]!r}")
    if scale != 1.0:
        values = np.rint(values * scale)
    else:
        hint = " (durations are whole seconds; --duration-unit ms, min or h reads other units)" if unit == "s" else ""
        problems.flag(finite & (values != np.floor(values)), fld, "not an integer",
                      lambda r: f"not an integer: {raw.iloc[r]!r}{hint}")
    problems.flag(finite & (values < lowest), fld, "too small",
                  lambda r: f"must be {'positive' if lowest else 'non-negative'}, got {text.iloc[r]}")
    problems.flag(finite & (values > highest), fld, "beyond the bound",
                  lambda r: f"{text.iloc[r]} is beyond the bound of {highest:,.0f} {unit}"
                  + (" (31.7 years)" if unit == "s" else " (simcluster.traces.sizing.MAX_GPUS)"))
    return pd.Series(np.where(finite & (values >= lowest) & (values <= highest), values, 0.0), index=raw.index)


def _validate(raw: pd.DataFrame, mapping: dict[str, str | None], fmt: JobLogFormat, reading: _Reading,
              problems: RowProblems) -> tuple[pd.DataFrame, TimeRule]:
    """Typed canonical columns (values of bad rows are placeholders), with every row problem flagged."""
    lines = problems.lines
    out = pd.DataFrame(index=raw.index)
    if mapping["job_id"]:
        ids = raw[mapping["job_id"]].str.strip()
        problems.flag(ids == "", mapping["job_id"], "empty job id", lambda r: "empty job id")
        problems.flag(_repeated(ids) & (ids != ""), mapping["job_id"], "duplicate job id",
                      lambda r: f"duplicate job id {ids.iloc[r]!r}")
        out["job_id"] = ids
    else:  # no ids: a job is its line (fmt.notes say so)
        out["job_id"] = lines.astype(str)
    out["vc"] = raw[mapping["vc"]].str.strip() if mapping["vc"] else ONE_VC
    if mapping["vc"]:
        problems.flag(out["vc"] == "", mapping["vc"], "empty VC", lambda r: "empty VC name")
    out["user"] = raw[mapping["user"]] if mapping["user"] else ""

    gpus, duration = str(mapping["gpu_num"]), str(mapping["duration"])  # required: _check_columns saw them
    out["gpu_num"] = _whole_numbers(raw[gpus], gpus, 1, MAX_GPUS, "GPUs", problems)
    out["duration"] = _whole_numbers(raw[duration], duration, 0, MAX_SECONDS, "s", problems,
                                     seconds_per(reading.duration_unit))
    seconds, rule = submit_seconds(raw[mapping["submit_time"]], reading.epoch, fmt.default_epoch,
                                   _renamed(problems, "submit_time", mapping["submit_time"]), reading.time_format)
    out["submit_time"] = np.nan_to_num(seconds, nan=0.0)
    if "deadline" in raw.columns:  # absolute, on the log's clock: kept at its distance from the submit time
        out["deadline"] = deadline_seconds(problems.path, raw["deadline"].astype(str), raw[mapping["submit_time"]],
                                           out["submit_time"].to_numpy(float), lines)
    for name, column in workload_columns(raw, problems.flag).items():
        out[name] = column
    for name, column in request_columns(raw, out["gpu_num"], problems.flag).items():  # (a topology's requests)
        out[name] = column
    for name, column in tier_columns(raw, problems.flag).items():  # (priorities and Kueue's queues)
        out[name] = column
    return out, rule


def _repeated(values: pd.Series) -> np.ndarray:
    """``values.duplicated()`` (each value seen before), from codes: hashing Arrow text is several times faster.

    >>> _repeated(pd.Series(["a", "b", "a", "a"])).tolist()
    [False, False, True, True]
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    repeated = np.ones(len(values), bool)
    if len(uniques) == len(values):
        return ~repeated
    repeated[np.unique(codes, return_index=True)[1]] = False
    return repeated


def _renamed(problems: RowProblems, canonical: str, column: str | None) -> Callable[..., None]:
    """``problems.flag`` that reports the log's own column name for a canonical field."""
    def flag(mask: Any, fld: str, reason: str, describe: Callable[[int], str]) -> None:
        problems.flag(mask, column if fld == canonical and column else fld, reason, describe)
    return flag


def _vc_sizes(path: Path, frame: pd.DataFrame, problems: RowProblems, vc_column: str | None,
              vc_config: Path | Mapping[str, int] | None, config_given: bool,
              reading: _Reading) -> tuple[dict[str, int], str, ClusterSpec | None]:
    """VC → nodes, a sentence saying where the sizes came from, and the VCs' nodes by GPU type when the VC
    config has a gpu_type column.  ``vc_config``: the config's path (given, or where it would be beside the
    log), or nodes per VC given with a DataFrame."""
    gpus_per_node, nodes, cluster, load = reading.gpus_per_node, reading.nodes, reading.cluster, reading.load
    chosen = [name for name, v in (("--nodes", nodes), ("--load", load)) if v is not None]
    if vc_column:
        if chosen:
            raise TraceError(path, f"{' and '.join(chosen)} size a job log without VCs; this one has VCs (column "
                             f"{vc_column!r}) sized by its VC config (--columns vc= runs every job in one VC)")
        if isinstance(vc_config, Mapping):
            sizes = {str(vc): check_nodes(int(n), gpus_per_node, f"VC {vc!r}") for vc, n in vc_config.items()}
            return sizes, f"{len(sizes)} VCs given with the frame ({sum(sizes.values()):,} nodes × {gpus_per_node} GPUs)", None
        if vc_config is None or not vc_config.is_file():
            raise TraceError(vc_config or path, "VC config not found (give one with --vc-config; or --columns vc= to "
                             "run every job in one VC sized by --nodes, --cluster or --load)")
        vcs, typed = read_vc_config(vc_config, gpus_per_node)
        return vcs, f"{len(vcs)} VCs from {vc_config.name} ({sum(vcs.values()):,} nodes × {gpus_per_node} GPUs)", typed
    if config_given:
        raise TraceError(path, "the job log has no VC column, so --vc-config does not apply: it is one VC; size it "
                         "with --nodes, --cluster or --load")
    if cluster is not None:
        chosen.append("--cluster")
    if len(chosen) > 1:
        raise ValueError(f"give one of --nodes, --cluster and --load, not {' and '.join(chosen)}")
    if not chosen:
        if reading.sized:
            raise TraceError(path, "the job log has no VCs, so it runs as one VC whose size you choose: --nodes N "
                             f"(× --gpus-per-node, now {gpus_per_node}), --cluster TYPE:GPUS (e.g. v100:512) or --load "
                             "X (the nodes for offered load X; `lucid-sim trace check` shows the load per size)")
        return {}, "one VC, not sized (--nodes, --cluster or --load)", None
    if nodes is not None:
        count = check_nodes(int(nodes), gpus_per_node, "--nodes")
        return {ONE_VC: count}, f"one VC of {count:,} nodes × {gpus_per_node} GPUs (--nodes)", None
    if cluster is not None:
        count = check_nodes(nodes_of_cluster(cluster, gpus_per_node), gpus_per_node, "--cluster")
        return {ONE_VC: count}, f"one VC of {count:,} nodes × {gpus_per_node} GPUs (--cluster {cluster})", None
    assert load is not None
    if not load > 0:
        raise ValueError(f"--load must be positive, got {load}")
    good = np.ones(len(frame), bool)
    good[list(problems.found)] = False
    f = frame[good]
    span = float(f["submit_time"].max() - f["submit_time"].min()) if len(f) else 0.0
    gpu_seconds = float((f["gpu_num"] * f["duration"]).sum())
    if span <= 0 or gpu_seconds <= 0:
        raise TraceError(path, f"--load needs jobs submitted over a span of time and asking for GPU time; the valid "
                         f"jobs span {span:g} s and ask {gpu_seconds:g} GPU-seconds: give --nodes")
    largest = int(f["gpu_num"].max())
    count = nodes_for_load(gpu_seconds, span, load, gpus_per_node, largest)
    if count * gpus_per_node > MAX_GPUS:
        raise limit_error(path, count * gpus_per_node, f"--load {load:g} ({count:,} nodes × {gpus_per_node} GPUs) would")
    actual = offered_load(gpu_seconds, count * gpus_per_node, span) or 0.0
    text = f"one VC of {count:,} nodes × {gpus_per_node} GPUs: --load {load:g} gives offered load {actual:.3f}"
    if count * gpus_per_node > gpu_seconds / (load * span) + gpus_per_node:
        text += f" (the largest job, {largest:,} GPUs, needs {count:,} nodes)"
    return {ONE_VC: count}, text, None


def _check_capacity(frame: pd.DataFrame, vc_nodes: dict[str, int], gpus_per_node: int, problems: RowProblems,
                    vc_column: str, gpu_column: str) -> None:
    vcs = frame["vc"]
    known = vcs.isin(list(vc_nodes)) | (vcs == "")
    problems.flag(~known, vc_column, "VC not in the VC config", lambda r: f"VC {vcs.iloc[r]!r} is not in the VC config")
    codes, names = pd.factorize(vcs)  # (a lookup per distinct VC, not per job: Series.map goes value by value)
    per_vc = np.array([vc_nodes.get(vc, 0) * gpus_per_node for vc in names] + [0], dtype=np.int64)
    capacity = per_vc[codes]  # (code -1, a missing value, takes the trailing 0)
    gpus = frame["gpu_num"].to_numpy()
    problems.flag(known.to_numpy() & (vcs != "").to_numpy() & (gpus > capacity), gpu_column, "more GPUs than its VC has",
                  lambda r: f"job asks for {int(gpus[r])} GPUs but VC {vcs.iloc[r]!r} has {int(capacity[r])}")


def _as_text(column: pd.Series) -> pd.Series:
    """A column as the text a CSV file would hold: whole floats without ".0", missing values empty."""
    text = column.astype(str)
    if pd.api.types.is_float_dtype(column):
        whole = column.notna() & (column == column.round()) & (column.abs() < 2**53)
        text[whole] = column[whole].astype(np.int64).astype(str)
    text[column.isna().to_numpy()] = ""
    return text
