"""Faults of a fleet's servers: fault logs (read, fitted, replayed), failure models from parameters, and the
analytic expectation of a checkpointing job's effective training time ratio (ETTR).

Nothing here touches the engine: a failure model gives a cluster's :class:`Outages` (each node's
``(down_at, up_at, class)`` over a horizon, in time order), which an engine replays.  docs/failures.md
describes the formats, the fit's JSON schema, the models and the ETTR formula with its derivation.
"""

from simcluster.faults.ettr import (
    daly_interval,
    ettr,
    expected_wall_time,
    optimal_interval,
    segment_time,
    young_interval,
)
from simcluster.faults.fit import ClassFit, FaultFit, fit_faults, fit_from_dict, fit_log, load_fit
from simcluster.faults.log import INFINITEHBD_SERVERS, Fault, FaultLog, read_fault_log
from simcluster.faults.models import FailureModel, FaultClass, Outage, Outages, RateModel, Repair
from simcluster.faults.replay import LogReplay

__all__ = [
    "INFINITEHBD_SERVERS", "ClassFit", "FailureModel", "Fault", "FaultClass", "FaultFit", "FaultLog", "LogReplay",
    "Outage", "Outages", "RateModel", "Repair", "daly_interval", "ettr", "expected_wall_time", "fit_faults",
    "fit_from_dict", "fit_log", "load_fit", "optimal_interval", "read_fault_log", "segment_time", "young_interval",
]
