"""``load_trace`` for every format: CSV job logs (Helios/Venus, Philly, ITP, any log via ``--columns``),
Gavel ``.trace`` files and openb pod lists.

The format is told by the file: a ``.trace`` suffix is Gavel's; a CSV is recognised by its header
(:mod:`simcluster.traces.columns`; ``gpu_milli`` and ``creation_time`` make an openb pod list).  A
folder is read through the one job log it holds: ``cluster_full_log.csv`` (or ``cluster_log.csv``)
when present, else the only file of a known format besides the side files (``vc_config.csv``, the
throughput log, node lists).  Gavel traces and openb pod lists become a
:class:`~simcluster.traces.hetero.HeteroTrace`, whose jobs carry per-GPU-type speeds into
the one engine; job logs become a :class:`~simcluster.traces.venus.Trace`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simcluster.traces.errors import TraceError

LOG_NAMES = ("cluster_full_log.csv", "cluster_log.csv", "openb_pod_list_default.csv")  # a folder's own job log, if named so
SIDE_FILES = ("vc_config.csv", "cluster_throughput.csv", "openb_node_list_gpu_node.csv")
HETERO_FORMATS = ("gavel", "openb")
JOB_LOG_OPTIONS = ("columns", "nodes", "load", "epoch")  # what only CSV job logs take


def read_header(path: Path) -> list[str] | None:
    """The CSV header's column names, or None for a file that is not readable text."""
    try:
        with path.open(newline="") as handle:
            line = handle.readline()
    except (OSError, UnicodeDecodeError):
        return None
    import csv

    return [c.strip() for c in next(csv.reader([line]), [])]


def file_format(path: Path, columns: Mapping[str, str] | None = None) -> str | None:
    """The format of one file ('gavel', 'openb', 'venus', 'philly', 'itp', or 'csv' for a log whose
    columns ``columns`` names), or None when it is not a job log of a supported format."""
    from simcluster.traces.columns import detect

    if path.suffix == ".trace":
        return "gavel"
    header = read_header(path)
    if not header:
        return None
    if "gpu_milli" in header and "creation_time" in header:
        return "openb"
    known = detect(header)
    if known is not None:
        return known.name
    if columns and all(c in header for c in columns.values() if c):
        return "csv"
    return None


def find_job_log(path: Path, columns: Mapping[str, str] | None = None) -> Path:
    """The job log a trace path names: the file itself, or the one job log in a folder."""
    if not path.exists():
        raise TraceError(path, "no such file or directory")
    if not path.is_dir():
        return path
    named = next((path / n for n in LOG_NAMES if (path / n).is_file()), None)
    if named is not None:
        return named
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                   and p.suffix in (".csv", ".trace") and p.name not in SIDE_FILES)
    logs = [p for p in files if file_format(p, columns) is not None]
    if len(logs) == 1:
        return logs[0]
    if not logs:
        seen = ", ".join(p.name for p in files) or "no CSV or .trace files"
        raise TraceError(path, f"the folder holds no job log of a known format ({seen}); name the file, and its "
                         "columns with --columns if its format is not detected")
    raise TraceError(path, f"the folder holds {len(logs)} job logs ({', '.join(p.name for p in logs)}); name one, "
                     f"e.g. --trace {logs[0]}")


def trace_format(path: str | Path, columns: Mapping[str, str] | str | None = None) -> str:
    """The format of the trace a path names (a file, or a folder holding one job log)."""
    from simcluster.traces.columns import parse_columns

    given = parse_columns(columns) if not isinstance(columns, Mapping) else dict(columns)
    log = find_job_log(Path(path), given)
    kind = file_format(log, given)
    if kind is None:
        return "csv" if given else "venus"  # the job-log loader says what is wrong with it
    return kind


def load_trace(path: str | Path, vc_config: str | Path | None = None, **options: Any) -> Any:
    """Load and validate a trace of any supported format (see the module's docstring).

    ``options`` are the job-log loader's (``gpus_per_node``, ``skip_invalid``, ``epoch``, ``columns``,
    ``nodes``, ``cluster``, ``load``, ``sized``: see :func:`simcluster.traces.venus.load_trace`); the
    heterogeneous loaders honour ``skip_invalid`` and, for openb, ``node_list`` (a node-list CSV).
    Options that a format does not take are errors, not silently ignored.
    """
    from simcluster.traces.columns import parse_columns

    kind = trace_format(path, options.get("columns"))
    if kind in HETERO_FORMATS:
        given = [f"--{name.replace('_', '-')}" for name in JOB_LOG_OPTIONS if options.get(name) is not None]
        if vc_config is not None:
            given.insert(0, "--vc-config")
        if given:
            raise TraceError(path, f"{' and '.join(given)} apply to CSV job logs, not to a {kind} trace "
                             "(its cluster comes from --cluster" + (" or its node list)" if kind == "openb" else ")"))
        log = find_job_log(Path(path))
        skip = options.get("skip_invalid", False)
        if kind == "gavel":
            from simcluster.traces.gavel import load_gavel_trace

            return load_gavel_trace(log, skip_invalid=skip)
        from simcluster.traces.openb import load_openb_trace

        return load_openb_trace(log, options.get("node_list"), skip_invalid=skip)
    from simcluster.traces.venus import load_trace as load_job_log

    options.pop("node_list", None)
    options["columns"] = parse_columns(options.get("columns"))
    return load_job_log(path, vc_config, **options)
