"""Loader for CSV job logs — the Helios/Venus format and every other (Philly, ITP, ``--columns``) — with validation.

A trace is a folder holding one job log (``cluster_full_log.csv`` or ``cluster_log.csv`` first,
else the one CSV whose header is a known format; see :mod:`simcluster.traces.formats`) and, when the
log has VCs, ``vc_config.csv``; or a CSV file (plus ``--vc-config`` when its config is not beside it).
Columns are found by the format (:mod:`simcluster.traces.columns`), submit times read by one rule
(:mod:`simcluster.traces.times`), and a log without VCs is one VC sized by ``--nodes``, ``--cluster``
or ``--load`` (:mod:`simcluster.traces.sizing`).  Rows keep the file's order for equal submit times
(stable sort).

Every problem is reported with the file, the line (the header is line 1) and the field.  With
``skip_invalid`` the offending rows are dropped instead and counted by reason.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.cluster_spec import ClusterSpec
from simcluster.job import Job, Workload
from simcluster.traces.columns import (
    CUSTOM,
    REQUIRED_FIELDS,
    VENUS_EPOCH,
    JobLogFormat,
    by_name,
    closest,
    column_map,
    detect,
)
from simcluster.traces.columns import parse_columns as parse_column_names
from simcluster.traces.errors import RowProblems, TraceError
from simcluster.traces.sizing import (
    MAX_GPUS,
    ONE_VC,
    check_nodes,
    limit_error,
    load_vc_config,
    nodes_for_load,
    nodes_of_cluster,
    offered_load,
    read_vc_config,
)
from simcluster.traces.times import MAX_SECONDS, TimeRule, submit_seconds

__all__ = ["DEFAULT_EPOCH", "Trace", "load_trace", "load_vc_config", "read_csv"]

REQUIRED = ("job_id", "vc", "gpu_num", "submit_time", "duration")  # the Venus format's own columns
WORKLOAD = ("model", "dataset", "batchsize", "amp")
PROFILE = ("gpu_util", "gmem_util", "gmem", "speed")
LOG_NAMES = ("cluster_full_log.csv", "cluster_log.csv")
DEFAULT_EPOCH = VENUS_EPOCH
THROUGHPUT_LOG = "cluster_throughput.csv"  # Helios/Venus' whole-cluster submissions in 10-minute bins


@dataclass
class Trace:
    """A validated trace: one row per job, plus the VCs' sizes in nodes."""

    source: str
    frame: pd.DataFrame  # job_id, user, vc, gpu_num, submit_time (s), duration (s), [workload columns]
    vc_nodes: dict[str, int]
    skipped: Counter[str] = field(default_factory=Counter)
    load_cpu_seconds: float = 0.0
    throughput_log: str | None = None  # the cluster's 10-minute submission log beside the trace, if any (lucid)
    format: str = "venus"  # which job-log format it was read as (summary.json's trace_format)
    time_rule: str = ""  # how submit times were read (times.TimeRule.describe)
    epoch: str | None = None  # the wall-clock time of second 0, when known
    sizing: str = ""  # where the VCs' sizes came from
    cluster: ClusterSpec | None = None  # the VCs' nodes by GPU type, when the VC config has a gpu_type column

    def __len__(self) -> int:
        return len(self.frame)

    def make_jobs(self) -> list[Job]:
        """Fresh job objects (a simulation consumes them; a trace can be replayed)."""
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


def load_trace(
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
) -> Trace:
    """Read and validate a CSV job log.

    ``epoch``: time zero (None: the format's default, see :mod:`~simcluster.traces.times`);
    ``columns``: ``field=column`` names for a log of no known format; ``nodes``, ``cluster`` or
    ``load`` size a log without VCs (``cluster`` is ignored for a log with VCs, which the
    heterogeneous engine may still use); ``sized=False`` lets a log without VCs load unsized
    (``vc_nodes`` empty), for ``trace check``.
    """
    from simcluster.traces.formats import find_job_log

    t0 = time.process_time()
    given = parse_column_names(columns)
    log_path = find_job_log(Path(path), given)
    raw, lines = _read_log(log_path)
    fmt = _format_of(log_path, list(raw.columns), given)
    mapping = column_map(list(raw.columns), fmt, given)
    _check_columns(log_path, list(raw.columns), mapping, given)

    problems = RowProblems(log_path, lines)
    frame, rule = _validate(raw, mapping, fmt, epoch, problems)
    vc_nodes, sizing, typed = _vc_sizes(log_path, frame, problems, mapping["vc"], vc_config, gpus_per_node,
                                        nodes, cluster, load, sized)
    frame, vc_nodes, skipped = _settle(frame, len(raw), vc_nodes, gpus_per_node, problems, mapping, skip_invalid)
    throughput = log_path.parent / THROUGHPUT_LOG
    return Trace(str(log_path), frame, vc_nodes, skipped, time.process_time() - t0,
                 str(throughput) if throughput.is_file() else None, fmt.name, *_time_zero(rule, log_path), sizing,
                 typed.only(vc_nodes) if typed else None)


def trace_from_frame(jobs: pd.DataFrame, vc_nodes: dict[str, int], *, gpus_per_node: int = 8,
                     skip_invalid: bool = False, epoch: str | None = None, source: str = "DataFrame") -> Trace:
    """A trace from a DataFrame with the Venus job log's columns, checked as :func:`load_trace` checks a file.

    ``vc_nodes``: nodes per VC.  A problem names the frame's row (its index label) and the field.
    """
    t0 = time.process_time()
    raw = pd.DataFrame({str(c): _as_text(jobs[c].reset_index(drop=True)) for c in jobs.columns})
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        raise TraceError(source, f"missing column(s) {', '.join(missing)}; found: {', '.join(map(str, raw.columns))}",
                         field=missing[0])
    fmt = by_name("venus")
    mapping = column_map(list(raw.columns), fmt, {})
    problems = RowProblems(source, jobs.index, unit="row")
    frame, rule = _validate(raw, mapping, fmt, epoch, problems)
    frame, vc_nodes, skipped = _settle(frame, len(raw), dict(vc_nodes), gpus_per_node, problems, mapping,
                                       skip_invalid)
    return Trace(source, frame, vc_nodes, skipped, time.process_time() - t0, None, fmt.name, rule.describe(),
                 rule.epoch, f"{len(vc_nodes)} VCs given with the frame")


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


def _time_zero(rule: TimeRule, log_path: Path) -> tuple[str, str | None]:
    """The time rule's description and epoch; relative seconds written by ``trace convert`` get their
    wall-clock zero back from the ``conversion.json`` beside them."""
    provenance = log_path.parent / "conversion.json"
    if rule.kind != "seconds" or rule.epoch or not provenance.is_file():
        return rule.describe(), rule.epoch
    try:
        epoch = json.loads(provenance.read_text()).get("epoch")
    except (OSError, ValueError, AttributeError):
        return rule.describe(), rule.epoch
    if not isinstance(epoch, str):
        return rule.describe(), rule.epoch
    return f"relative seconds, as given (second 0 = {epoch}, from conversion.json)", epoch


def read_csv(path: Path) -> pd.DataFrame:
    """Every field as text ("" where empty), blank lines kept (so rows map to file lines)."""
    if not path.is_file():
        raise TraceError(path, "no such file")
    plain = _read_plain_csv(path)
    if plain is not None:
        return plain
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True, skip_blank_lines=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TraceError(path, f"not a readable CSV file ({exc})") from exc


def _read_plain_csv(path: Path) -> pd.DataFrame | None:
    """What :func:`read_csv` reads, by Arrow's CSV reader (on a million rows about a sixth of pandas' CPU
    time), for a plain file: UTF-8 without a byte-order mark, no quotes, a header of distinct non-empty
    names, every row as long as the header and no field starting with a space (blank lines are rows of
    empty fields, as pandas reads them).  None for any other file, which pandas reads (and whose problems
    it reports).  One thread: on a shared machine Arrow's threads cost twice the CPU for the same work.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pa_csv

    data = path.read_bytes()
    end = data.find(b"\n")
    if end <= 0 or data.startswith(b"\xef\xbb\xbf") or b'"' in data:
        return None
    try:
        names = data[:end].decode().rstrip("\r").split(",")
    except UnicodeDecodeError:
        return None
    if not all(names) or len(set(names)) < len(names) or any(n != n.lstrip(" ") for n in names):
        return None
    as_text = pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.large_string()))  # (pandas' own string type)
    try:
        table = pa_csv.read_csv(pa.py_buffer(data), read_options=pa_csv.ReadOptions(use_threads=False),
                                parse_options=pa_csv.ParseOptions(quote_char=False, ignore_empty_lines=False),
                                convert_options=as_text)
    except (pa.ArrowException, ValueError):
        return None
    columns = table.columns
    if table.column_names != names or any(pc.any(pc.starts_with(c, " ")).as_py() for c in columns):
        return None
    text = pd.StringDtype("pyarrow", na_value=np.nan)  # pandas' "str", what read_csv(dtype=str) gives
    return pd.DataFrame({name: pd.arrays.ArrowStringArray(column, dtype=text)
                         for name, column in zip(names, columns, strict=True)})


def _read_log(path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """The log's rows without blank lines, and the file line of each (the header is line 1)."""
    raw = read_csv(path)
    raw.columns = [str(c).strip() for c in raw.columns]
    lines = np.arange(len(raw)) + 2
    if len(raw.columns):
        blank = (raw == "").all(axis=1).to_numpy()
        if blank.any():
            raw, lines = raw[~blank].reset_index(drop=True), lines[~blank]
    if raw.empty:
        raise TraceError(path, "the job log has a header but no jobs", line=1)
    return raw, lines


def _format_of(path: Path, header: list[str], given: Mapping[str, str]) -> JobLogFormat:
    """The known format the header is, else the generic one when ``--columns`` names the columns."""
    fmt = detect(header)
    if fmt is not None or given:
        return fmt or CUSTOM
    near = closest(header)
    if near is None:
        raise _unknown_format(path, header)
    missing = [c for c in near.identify if c not in header]
    raise TraceError(path, f"missing column(s) {', '.join(missing)} (a {near.name} log has {', '.join(near.identify)}"
                     f"); found: {', '.join(header)} (--columns FIELD=COLUMN names them; vc= for no VCs)",
                     line=1, field=missing[0])


def _unknown_format(path: Path, header: list[str]) -> TraceError:
    from simcluster.traces.columns import KNOWN_FORMATS

    known = "; ".join(f"{f.name}: {', '.join(f.identify)}" for f in KNOWN_FORMATS)
    return TraceError(path, f"not a job log of a known format (columns: {', '.join(header)}). Known formats and "
                      f"the columns that identify them — {known}. For any other log, name its columns: "
                      "--columns submit_time=COL,gpu_num=COL,duration=COL[,job_id=COL,vc=COL,user=COL]", line=1)


def _check_columns(path: Path, header: list[str], mapping: dict[str, str | None], given: Mapping[str, str]) -> None:
    for name, column in given.items():
        if column and column not in header:
            raise TraceError(path, f"--columns names column {column!r} for {name}, but the header has: "
                             f"{', '.join(header)}", line=1, field=column)
    missing = [name for name in REQUIRED_FIELDS if mapping[name] is None]
    if missing:
        raise TraceError(path, f"missing column(s) {', '.join(missing)}; found: {', '.join(header)} "
                         "(--columns FIELD=COLUMN names them)", line=1, field=missing[0])


def numbers(text: pd.Series, exact_ints: bool = False) -> pd.Series:
    """``pd.to_numeric(text, errors="coerce")``, fast for a column of plain numbers.

    Arrow casts such a column to floats in one C++ pass (on a million rows about ten times faster than
    pandas' parser).  It accepts a subset of what pandas does (no blanks, no surrounding spaces), with
    the same values, so a column it refuses goes to pandas, which coerces the bad values to NaN.
    ``exact_ints``: the caller keeps integers, so floats beyond 2**53 (where pandas keeps an exact
    int64) go to pandas too.

    >>> numbers(pd.Series(["8", "1e3", "0.5"])).tolist(), numbers(pd.Series(["8", "x", ""])).isna().tolist()
    ([8.0, 1000.0, 0.5], [False, True, True])
    """
    import pyarrow as pa  # (pandas' own string columns are Arrow arrays already)
    import pyarrow.compute as pc

    try:
        values = pc.cast(pa.array(text), pa.float64()).to_numpy(zero_copy_only=False) + 0.0  # (+0.0: "-0" is 0)
    except (pa.ArrowException, TypeError, ValueError):  # (not plain numbers, or not something Arrow reads)
        return pd.to_numeric(text, errors="coerce")
    if exact_ints and len(values) and not np.nanmax(np.abs(values), initial=0.0) < 2**53:
        return pd.to_numeric(text, errors="coerce")
    return pd.Series(values, index=text.index)


def _whole_numbers(raw: pd.Series, fld: str, lowest: int, highest: float, unit: str,
                   problems: RowProblems) -> pd.Series:
    text = raw.astype(str).str.strip()
    num = numbers(text)
    values = num.to_numpy(dtype=float, na_value=np.nan)
    finite = np.isfinite(values)
    problems.flag(num.isna(), fld, "not a number", lambda r: f"not a number: {raw.iloc[r]!r}")
    problems.flag(~finite, fld, "not a finite number", lambda r: f"not a finite number: {raw.iloc[r]!r}")
    problems.flag(finite & (values != np.floor(values)), fld, "not an integer",
                  lambda r: f"not an integer: {raw.iloc[r]!r}")
    problems.flag(finite & (values < lowest), fld, "too small",
                  lambda r: f"must be {'positive' if lowest else 'non-negative'}, got {text.iloc[r]}")
    problems.flag(finite & (values > highest), fld, "beyond the bound",
                  lambda r: f"{text.iloc[r]} is beyond the bound of {highest:,.0f} {unit}"
                  + (" (31.7 years)" if unit == "s" else " (simcluster.traces.sizing.MAX_GPUS)"))
    return pd.Series(np.where(finite & (values >= lowest) & (values <= highest), values, 0.0), index=raw.index)


def _validate(raw: pd.DataFrame, mapping: dict[str, str | None], fmt: JobLogFormat, epoch: str | None,
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
    out["duration"] = _whole_numbers(raw[duration], duration, 0, MAX_SECONDS, "s", problems)
    seconds, rule = submit_seconds(raw[mapping["submit_time"]], epoch, fmt.default_epoch,
                                   _renamed(problems, "submit_time", mapping["submit_time"]))
    out["submit_time"] = np.nan_to_num(seconds, nan=0.0)

    if all(c in raw for c in WORKLOAD):
        out["model"], out["dataset"] = raw["model"], raw["dataset"]
        for col in ("batchsize", "amp"):
            num = numbers(raw[col], exact_ints=True)
            ok = num.notna() & np.isfinite(num.to_numpy(dtype=float, na_value=np.nan))
            problems.flag(~ok & (raw["model"] != ""), col, "not a number", _not_a_number(raw[col]))
            out[col] = num.where(ok, 0).astype(np.int64)
    for col in PROFILE:
        if col in raw:
            out[col] = pd.to_numeric(raw[col], errors="coerce")
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


def _not_a_number(text: pd.Series) -> Callable[[int], str]:
    return lambda r: f"not a number: {text.iloc[r]!r}"


def _renamed(problems: RowProblems, canonical: str, column: str | None) -> Callable[..., None]:
    """``problems.flag`` that reports the log's own column name for a canonical field."""
    def flag(mask: Any, fld: str, reason: str, describe: Callable[[int], str]) -> None:
        problems.flag(mask, column if fld == canonical and column else fld, reason, describe)
    return flag


def _vc_sizes(path: Path, frame: pd.DataFrame, problems: RowProblems, vc_column: str | None,
              vc_config: str | Path | None, gpus_per_node: int, nodes: int | None, cluster: str | None,
              load: float | None, sized: bool) -> tuple[dict[str, int], str, ClusterSpec | None]:
    """VC → nodes, a sentence saying where the sizes came from, and the VCs' nodes by GPU type when the VC
    config has a gpu_type column."""
    chosen = [name for name, v in (("--nodes", nodes), ("--load", load)) if v is not None]
    if vc_column:
        if chosen:
            raise TraceError(path, f"{' and '.join(chosen)} size a job log without VCs; this one has VCs (column "
                             f"{vc_column!r}) sized by its VC config (--columns vc= runs every job in one VC)")
        config = Path(vc_config) if vc_config else path.with_name("vc_config.csv")
        if not config.is_file():
            raise TraceError(config, "VC config not found (give one with --vc-config; or --columns vc= to run every "
                             "job in one VC sized by --nodes, --cluster or --load)")
        vcs, typed = read_vc_config(config, gpus_per_node)
        return vcs, f"{len(vcs)} VCs from {config.name} ({sum(vcs.values()):,} nodes × {gpus_per_node} GPUs)", typed
    if vc_config:
        raise TraceError(path, "the job log has no VC column, so --vc-config does not apply: it is one VC; size it "
                         "with --nodes, --cluster or --load")
    if cluster is not None:
        chosen.append("--cluster")
    if len(chosen) > 1:
        raise ValueError(f"give one of --nodes, --cluster and --load, not {' and '.join(chosen)}")
    if not chosen:
        if sized:
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
