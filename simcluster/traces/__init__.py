"""Traces: loading and validating job logs, and generating synthetic ones."""

from simcluster.traces.errors import TraceError
from simcluster.traces.formats import load_trace  # Venus logs, Gavel .trace files, openb pod lists
from simcluster.traces.venus import Trace, load_vc_config

__all__ = ["Trace", "TraceError", "load_trace", "load_vc_config"]
