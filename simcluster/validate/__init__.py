"""``lucid-sim validate``: how far a simulated run is from what a real cluster recorded.

>>> from simcluster.validate import validate  # validate("results/run", "cluster_throughput.csv").figures()

:mod:`~simcluster.validate.record` reads a cluster's record (aggregate bins or a per-job log) as jobs
waiting and GPUs running over time, with Little's law for the average queueing delay;
:mod:`~simcluster.validate.compare` sets a run beside it.
"""

from simcluster.validate.compare import Validation, validate
from simcluster.validate.record import BinRecord, JobRecord, Series, ValidateError, read_record

__all__ = ["BinRecord", "JobRecord", "Series", "ValidateError", "Validation", "read_record", "validate"]
