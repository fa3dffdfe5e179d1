"""Traces: loading and validating job logs, and generating synthetic ones.

The floors, bottom up: :mod:`~simcluster.traces.columns`, :mod:`~simcluster.traces.units` and
:mod:`~simcluster.traces.csvfile` (what a log's columns, numbers and text are);
:mod:`~simcluster.traces.times`, :mod:`~simcluster.traces.doubts`, :mod:`~simcluster.traces.sizing`
and :mod:`~simcluster.traces.files`; the formats (:mod:`~simcluster.traces.venus`,
:mod:`~simcluster.traces.gavel`, :mod:`~simcluster.traces.openb`, and for elastic jobs
:mod:`~simcluster.traces.pollux`, :mod:`~simcluster.traces.elasticflow` and
:mod:`~simcluster.traces.deadlines`); the generic reader
(:mod:`~simcluster.traces.joblog`); :mod:`~simcluster.traces.formats`, which picks the reader.  Every
reader returns a :class:`~simcluster.traces.base.Trace`.
"""

from simcluster.errors import TraceError
from simcluster.traces.base import Trace  # what every loader returns (a protocol)
from simcluster.traces.formats import load_trace  # Venus logs, Gavel .trace files, openb pod lists
from simcluster.traces.joblog import JobLog
from simcluster.traces.sizing import load_vc_config

__all__ = ["JobLog", "Trace", "TraceError", "load_trace", "load_vc_config"]
