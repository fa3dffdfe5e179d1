"""Loader for the Helios/Venus job-log format, with validation.

A trace is a directory holding ``cluster_full_log.csv`` (or
``cluster_log.csv``) and ``vc_config.csv``, or a CSV file plus a VC config.
Submit times are wall-clock timestamps (counted in seconds from ``epoch``,
2020-04-01 00:00:00 as in the Helios/Lucid simulators) or already integer
seconds.  Rows keep the file's order for equal submit times (stable sort).

Every problem is reported with the file, the line (the header is line 1)
and the field.  With ``skip_invalid`` the offending rows are dropped instead
and counted by reason.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simcluster.cluster_spec import ClusterSpec, vc_config_spec
from simcluster.job import Job, Workload
from simcluster.traces.errors import TraceError

REQUIRED = ("job_id", "vc", "gpu_num", "submit_time", "duration")
WORKLOAD = ("model", "dataset", "batchsize", "amp")
LOG_NAMES = ("cluster_full_log.csv", "cluster_log.csv")
DEFAULT_EPOCH = "2020-04-01 00:00:00"
THROUGHPUT_LOG = "cluster_throughput.csv"  # Helios/Venus' whole-cluster submissions in 10-minute bins
_INT = re.compile(r"^\s*-?\d+\s*$")


@dataclass
class Trace:
    """A validated trace: one row per job, plus the VCs' sizes in nodes."""

    source: str
    frame: pd.DataFrame  # job_id, user, vc, gpu_num, submit_time (s), duration (s), [workload columns]
    vc_nodes: dict[str, int]
    skipped: Counter[str] = field(default_factory=Counter)
    load_cpu_seconds: float = 0.0
    throughput_log: str | None = None  # the cluster's 10-minute submission log beside the trace, if any (lucid)
    cluster: ClusterSpec | None = None  # the VCs' nodes by GPU type, when the VC config has a gpu_type column

    def __len__(self) -> int:
        return len(self.frame)

    def make_jobs(self) -> list[Job]:
        """Fresh job objects (a simulation consumes them; a trace can be replayed)."""
        f = self.frame
        shared: dict[str, str] = {}  # one str object per distinct VC and user name
        vcs = [shared.setdefault(v, v) for v in f["vc"].tolist()]
        users = [shared.setdefault(u, u) for u in f["user"].tolist()] if "user" in f else [""] * len(f)
        workloads: list[Workload | None] = [None] * len(f)
        if all(c in f for c in WORKLOAD):
            interned: dict[tuple, Workload] = {}
            for i, key in enumerate(zip(f["model"], f["dataset"], f["batchsize"], f["amp"])):
                workloads[i] = interned.get(key) or interned.setdefault(key, Workload(*key))
        # GPU memory per job (MiB) when the trace profiled it, as Venus' does; else the colocation model's
        memory = f["gmem"].fillna(0.0).tolist() if "gmem" in f else [0.0] * len(f)
        return [
            Job(index=i, job_id=jid, vc=vc, gpu_num=g, submit_time=s, duration=d, user=u, workload=w, memory=m)
            for i, (jid, vc, g, s, d, u, w, m) in enumerate(
                zip(f["job_id"].tolist(), vcs, f["gpu_num"].tolist(), f["submit_time"].tolist(),
                    f["duration"].tolist(), users, workloads, memory)
            )
        ]


def load_trace(
    path: str | Path,
    vc_config: str | Path | None = None,
    *,
    gpus_per_node: int = 8,
    skip_invalid: bool = False,
    epoch: str = DEFAULT_EPOCH,
) -> Trace:
    t0 = time.process_time()
    log_path, config_path = _locate(Path(path), Path(vc_config) if vc_config else None)
    vc_nodes = load_vc_config(config_path)
    raw = _read_csv(log_path)
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        raise TraceError(log_path, f"missing column(s) {', '.join(missing)}; found: {', '.join(raw.columns)}",
                         line=1, field=missing[0])
    frame, problems = _validate(raw, vc_nodes, gpus_per_node, epoch)
    skipped: Counter[str] = Counter()
    if problems:
        rows = sorted(problems)
        if not skip_invalid:
            first = rows[0]
            fld, msg = problems[first]
            more = f" ({len(rows) - 1} more invalid row(s); --skip-invalid drops them)" if len(rows) > 1 else ""
            raise TraceError(log_path, msg + more, line=first + 2, field=fld)
        skipped = Counter(f"{fld}: {msg.split(':')[0]}" for fld, msg in problems.values())
        frame = frame.drop(index=rows)
    if frame.empty:
        raise TraceError(log_path, "no valid jobs in the trace")
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    used = set(frame["vc"].unique())
    throughput = log_path.parent / THROUGHPUT_LOG
    kept = {vc: n for vc, n in vc_nodes.items() if vc in used} or vc_nodes
    typed = vc_config_spec(config_path, gpus_per_node)
    return Trace(str(log_path), frame, kept, skipped, time.process_time() - t0,
                 str(throughput) if throughput.is_file() else None, typed.only(kept) if typed else None)


def load_vc_config(path: Path) -> dict[str, int]:
    """``vc,num``: nodes per virtual cluster (the first column may be unnamed); with a ``gpu_type`` column a VC
    may list one row per type (its nodes are summed here; :func:`~simcluster.cluster_spec.vc_config_spec`
    reads the types)."""
    raw = _read_csv(path)
    if raw.shape[1] < 2 or "num" not in raw.columns:
        raise TraceError(path, "expected columns 'vc,num' (nodes per virtual cluster)", line=1)
    names = raw.iloc[:, 0] if "vc" not in raw.columns else raw["vc"]
    nodes: dict[str, int] = {}
    for i, (vc, num) in enumerate(zip(names, raw["num"])):
        if not vc:
            raise TraceError(path, "empty VC name", line=i + 2, field="vc")
        if not _INT.match(num) or int(num) <= 0:
            raise TraceError(path, f"node count must be a positive integer, got {num!r}", line=i + 2, field="num")
        if vc in nodes and "gpu_type" not in raw.columns:
            raise TraceError(path, f"VC {vc!r} is listed twice", line=i + 2, field="vc")
        nodes[vc] = nodes.get(vc, 0) + int(num)
    if not nodes:
        raise TraceError(path, "no virtual clusters defined")
    return nodes


def _locate(path: Path, vc_config: Path | None) -> tuple[Path, Path]:
    if not path.exists():
        raise TraceError(path, "no such file or directory")
    if path.is_dir():
        log = next((path / n for n in LOG_NAMES if (path / n).is_file()), None)
        if log is None:
            raise TraceError(path, f"directory has none of {', '.join(LOG_NAMES)}")
        config = vc_config or path / "vc_config.csv"
    else:
        log, config = path, vc_config or path.with_name("vc_config.csv")
    if not config.is_file():
        raise TraceError(config, "VC config not found (give one with --vc-config)")
    return log, config


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TraceError(path, f"not a readable CSV file ({exc})") from exc


def _validate(raw: pd.DataFrame, vc_nodes: dict[str, int], gpus_per_node: int,
              epoch: str) -> tuple[pd.DataFrame, dict[int, tuple[str, str]]]:
    """Typed columns, and {row: (field, problem)} for the first problem of each bad row."""
    problems: dict[int, tuple[str, str]] = {}

    def flag(mask: pd.Series | np.ndarray, fld: str, describe) -> None:
        for row in np.flatnonzero(np.asarray(mask)):
            problems.setdefault(int(row), (fld, describe(int(row))))

    out = pd.DataFrame({"job_id": raw["job_id"], "vc": raw["vc"]})
    out["user"] = raw.get("user", "")
    flag(raw["job_id"] == "", "job_id", lambda r: "empty job id")
    flag(raw["job_id"].duplicated(), "job_id", lambda r: f"duplicate job id {raw['job_id'][r]!r}")

    for col, lowest in (("gpu_num", 1), ("duration", 0)):
        num = pd.to_numeric(raw[col], errors="coerce")
        flag(num.isna(), col, lambda r, c=col: f"not a number: {raw[c][r]!r}")
        flag(num.notna() & (num != num.round()), col, lambda r, c=col: f"not an integer: {raw[c][r]!r}")
        flag(num.notna() & (num < lowest), col,
             lambda r, c=col, lo=lowest: f"must be {'positive' if lo else 'non-negative'}, got {raw[c][r]}")
        out[col] = num.fillna(0).astype(np.int64)

    out["submit_time"] = _submit_seconds(raw["submit_time"], epoch, flag)

    known = raw["vc"].isin(list(vc_nodes))
    flag(~known, "vc", lambda r: f"VC {raw['vc'][r]!r} is not in the VC config")
    capacity = raw["vc"].map({vc: n * gpus_per_node for vc, n in vc_nodes.items()}).fillna(0)
    flag(known & (out["gpu_num"] > capacity), "gpu_num",
         lambda r: f"job asks for {out['gpu_num'][r]} GPUs but VC {raw['vc'][r]!r} has {int(capacity[r])}")

    if all(c in raw for c in WORKLOAD):
        out["model"], out["dataset"] = raw["model"], raw["dataset"]
        for col in ("batchsize", "amp"):
            num = pd.to_numeric(raw[col], errors="coerce")
            flag(num.isna() & (raw["model"] != ""), col, lambda r, c=col: f"not a number: {raw[c][r]!r}")
            out[col] = num.fillna(0).astype(np.int64)
    for col in ("gpu_util", "gmem_util", "gmem", "speed"):
        if col in raw:
            out[col] = pd.to_numeric(raw[col], errors="coerce")
    return out, problems


def _submit_seconds(col: pd.Series, epoch: str, flag) -> pd.Series:
    if col.str.fullmatch(r"\s*-?\d+\s*").all():
        return col.astype(np.int64)
    stamps = pd.to_datetime(col, format="%Y-%m-%d %H:%M:%S", errors="coerce")
    retry = stamps.isna() & (col != "")
    if retry.any():
        stamps[retry] = pd.to_datetime(col[retry], format="ISO8601", errors="coerce")
    flag(stamps.isna(), "submit_time", lambda r: f"unparsable time {col[r]!r}")
    seconds = (stamps - pd.Timestamp(epoch)) // pd.Timedelta(seconds=1)
    return seconds.fillna(0).astype(np.int64)


def trace_from_frame(jobs: pd.DataFrame, vc_nodes: dict[str, int], *, gpus_per_node: int = 8,
                     skip_invalid: bool = False, epoch: str = DEFAULT_EPOCH, source: str = "DataFrame") -> Trace:
    """A trace from a DataFrame with the job log's columns, checked as :func:`load_trace` checks a file.

    ``vc_nodes``: nodes per VC.  A problem names the frame's row (its index label) and the field.
    """
    t0 = time.process_time()
    raw = pd.DataFrame({str(c): _as_text(jobs[c].reset_index(drop=True)) for c in jobs.columns})
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        raise TraceError(source, f"missing column(s) {', '.join(missing)}; found: {', '.join(map(str, raw.columns))}",
                         field=missing[0])
    frame, problems = _validate(raw, dict(vc_nodes), gpus_per_node, epoch)
    skipped: Counter[str] = Counter()
    if problems:
        rows = sorted(problems)
        if not skip_invalid:
            fld, msg = problems[rows[0]]
            more = f" ({len(rows) - 1} more invalid row(s); skip_invalid=True drops them)" if len(rows) > 1 else ""
            raise TraceError(f"{source} row {jobs.index[rows[0]]!r}", msg + more, field=fld)
        skipped = Counter(f"{fld}: {msg.split(':')[0]}" for fld, msg in problems.values())
        frame = frame.drop(index=rows)
    if frame.empty:
        raise TraceError(source, "no valid jobs in the trace")
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    return Trace(source, frame, dict(vc_nodes), skipped, time.process_time() - t0)


def _as_text(column: pd.Series) -> pd.Series:
    """A column as the text a CSV file would hold: whole floats without ".0", missing values empty."""
    text = column.astype(str)
    if pd.api.types.is_float_dtype(column):
        whole = column.notna() & (column == column.round()) & (column.abs() < 2**53)
        text[whole] = column[whole].astype(np.int64).astype(str)
    text[column.isna().to_numpy()] = ""
    return text
