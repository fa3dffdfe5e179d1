"""Which file of a trace path is the job log, and which format it is.

The format is told by the file: a ``.trace`` suffix is Gavel's; a CSV is recognised by its header
(:mod:`simcluster.traces.columns`; ``gpu_milli`` and ``creation_time`` make an openb pod list; Pollux's
workload columns a Pollux trace; ``num_iteration``, ``model_name`` and ``deadline`` beside an ITP log's
columns an ElasticFlow trace).  A
folder is read through the one job log it holds: ``cluster_full_log.csv`` (or ``cluster_log.csv``)
when present, else the only file of a known format besides the side files (``vc_config.csv``, the
throughput log, node lists).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from simcluster.errors import TraceError
from simcluster.traces.columns import detect, parse_columns
from simcluster.traces.csvfile import read_header
from simcluster.traces.elastic_formats import looks_like_elasticflow, looks_like_pollux

LOG_NAMES = ("cluster_full_log.csv", "cluster_log.csv", "openb_pod_list_default.csv")  # a folder's own job log, if named so
SIDE_FILES = ("vc_config.csv", "cluster_throughput.csv", "openb_node_list_gpu_node.csv")


def file_format(path: Path, columns: Mapping[str, str] | None = None, delimiter: str | None = None) -> str | None:
    """The format of one file ('gavel', 'openb', 'pollux', 'elasticflow', 'venus', 'philly', 'itp', or 'csv'
    for a log whose columns ``columns`` names), or None when it is not a job log of a supported format."""
    if path.suffix == ".trace":
        return "gavel"
    header = read_header(path, delimiter)
    if not header:
        return None
    if "gpu_milli" in header and "creation_time" in header:
        return "openb"
    if looks_like_pollux(header):
        return "pollux"
    if looks_like_elasticflow(header):
        return "elasticflow"
    known = detect(header)
    if known is not None:
        return known.name
    if columns and all(c in header for c in columns.values() if c):
        return "csv"
    return None


def find_job_log(path: Path, columns: Mapping[str, str] | None = None, delimiter: str | None = None) -> Path:
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
    logs = [p for p in files if file_format(p, columns, delimiter) is not None]
    if len(logs) == 1:
        return logs[0]
    if not logs:
        seen = ", ".join(p.name for p in files) or "no CSV or .trace files"
        raise TraceError(path, f"the folder holds no job log of a known format ({seen}); name the file, and its "
                         "columns with --columns if its format is not detected")
    raise TraceError(path, f"the folder holds {len(logs)} job logs ({', '.join(p.name for p in logs)}); name one, "
                     f"e.g. --trace {logs[0]}")


def trace_format(path: str | Path, columns: Mapping[str, str] | str | None = None, delimiter: str | None = None) -> str:
    """The format of the trace a path names (a file, or a folder holding one job log)."""
    given = dict(columns) if isinstance(columns, Mapping) else parse_columns(columns)
    log = find_job_log(Path(path), given, delimiter)
    kind = file_format(log, given, delimiter)
    if kind is None:
        return "csv" if given else "venus"  # the job-log loader says what is wrong with it
    return kind
