"""``load_trace`` for every format: CSV job logs (Helios/Venus, Philly, ITP, any log via ``--columns``),
Gavel ``.trace`` files, openb pod lists, and the elastic-job traces (Pollux's workloads, ElasticFlow's ITP
traces with deadlines: :mod:`simcluster.traces.pollux`, :mod:`simcluster.traces.elasticflow`).

The format is told by the file (:mod:`simcluster.traces.files`).  Gavel traces and openb pod lists
become a :class:`~simcluster.traces.hetero.HeteroTrace`, whose jobs carry per-GPU-type speeds into
the one engine; job logs become a :class:`~simcluster.traces.joblog.JobLog`: both are a
:class:`~simcluster.traces.base.Trace`, which is all a run reads.  A trace named by a path
that does not exist here is looked up in the shared data (:func:`simcluster.paths.resolve_data`), so
``venus_sept`` names the same trace in every command and in the Python API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simcluster.errors import TraceError
from simcluster.paths import resolve_data, shared_data_dir
from simcluster.traces.base import Trace
from simcluster.traces.columns import parse_columns
from simcluster.traces.csvfile import parse_delimiter, release_arrow_memory
from simcluster.traces.files import find_job_log, trace_format
from simcluster.traces.gavel import load_gavel_trace
from simcluster.traces.joblog import load_job_log
from simcluster.traces.openb import load_openb_trace

HETERO_FORMATS = ("gavel", "openb")
ELASTIC_FORMATS = ("pollux", "elasticflow")  # their cluster is the paper's (or --nodes / --cluster)
# what only CSV job logs take (the heterogeneous formats fix their own columns, units and delimiter)
JOB_LOG_OPTIONS = ("columns", "nodes", "load", "epoch", "duration_unit", "time_format", "delimiter")


def load_trace(path: str | Path, vc_config: str | Path | None = None, **options: Any) -> Trace:
    """Load and validate a trace of any supported format (see the module's docstring).

    ``options`` are the job-log loader's (``gpus_per_node``, ``skip_invalid``, ``epoch``, ``columns``,
    ``nodes``, ``cluster``, ``load``, ``sized``, ``duration_unit``, ``time_format``, ``delimiter``: see
    :func:`simcluster.traces.joblog.load_job_log`); the heterogeneous loaders honour ``skip_invalid`` and,
    for openb, ``node_list`` (a node-list CSV).  Options that a format does not take are errors, not
    silently ignored.
    """
    try:
        return _load(path, vc_config, options)
    finally:
        release_arrow_memory()  # what Arrow's reader held while parsing, back to the system before the run


def _load(path: str | Path, vc_config: str | Path | None, options: dict[str, Any]) -> Trace:
    path = resolve_data(path)
    if not path.exists():
        raise TraceError(path, f"no such file or directory (nor in the shared data, {shared_data_dir()}: "
                         "SIMCLUSTER_DATA says where that is)")
    kind = trace_format(path, options.get("columns"), parse_delimiter(options.get("delimiter")))
    if kind in HETERO_FORMATS:
        given = [f"--{name.replace('_', '-')}" for name in JOB_LOG_OPTIONS if options.get(name) is not None]
        if vc_config is not None:
            given.insert(0, "--vc-config")
        if given:
            raise TraceError(path, f"{' and '.join(given)} apply to CSV job logs, not to a {kind} trace "
                             "(its cluster comes from --cluster" + (" or its node list)" if kind == "openb" else ")"))
        log = find_job_log(path)
        skip = options.get("skip_invalid", False)
        if kind == "gavel":
            return load_gavel_trace(log, skip_invalid=skip)
        return load_openb_trace(log, options.get("node_list"), skip_invalid=skip)
    if kind in ELASTIC_FORMATS:
        return _load_elastic(path, kind, vc_config, options)
    options.pop("node_list", None)
    options["columns"] = parse_columns(options.get("columns"))
    return load_job_log(path, vc_config, **options)


def _load_elastic(path: Path, kind: str, vc_config: str | Path | None, options: dict[str, Any]) -> Any:
    """A Pollux workload or an ElasticFlow trace: columns, units and cluster are the format's own."""
    given = [f"--{name.replace('_', '-')}" for name in JOB_LOG_OPTIONS
             if name != "nodes" and options.get(name) is not None]
    if vc_config is not None:
        given.insert(0, "--vc-config")
    if options.get("skip_invalid"):
        given.append("--skip-invalid")
    if given:
        raise TraceError(path, f"{' and '.join(given)} do not apply to a {kind} trace (its columns and units are "
                         "the format's; its cluster is the paper's, or --nodes / --cluster)")
    log = find_job_log(path)
    nodes = options.get("nodes")
    if kind == "pollux":  # (imported here: the scaling models need scipy, which other traces do not)
        from simcluster.traces.pollux import NODES, load_pollux_trace
        return load_pollux_trace(log, nodes=nodes or NODES)
    from simcluster.traces.elasticflow import load_elasticflow_trace
    return load_elasticflow_trace(log, nodes=nodes)
