"""The tables a run reads, loaded in one place and handed to the engine.

Two tables time jobs beyond their trace: the throughput table (jobs' speeds per GPU type, and in pairs,
for traces of job types: Gavel's) and the colocation model (the speeds of jobs sharing GPUs, for the
policies that share them).  :func:`load_tables` loads what a run needs and nothing else; the engine
takes them as given (:class:`~simcluster.engine.Simulation`'s ``throughputs`` and ``colocation``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from simcluster.colocation.loader import ColocationModel, load_colocation_model
from simcluster.config import SimConfig
from simcluster.throughputs import ThroughputTable, load_throughputs
from simcluster.traces.base import Trace


@dataclass(frozen=True)
class RunTables:
    """What :func:`load_tables` found a run needs, and the CPU seconds their loading took."""

    throughputs: ThroughputTable | None = None
    colocation: ColocationModel | None = None
    load_cpu_seconds: float = 0.0


def load_tables(trace: Trace | None, config: SimConfig, shares_gpus: bool, throughputs: ThroughputTable | None = None,
                colocation: ColocationModel | None = None, gpu_types: Sequence[str] = ()) -> RunTables:
    """The throughput table ``trace``'s jobs need (``config.throughputs``; none without a trace) and, when the
    policy ``shares_gpus``, the colocation model ``config.colocation`` names for a cluster of ``gpu_types`` (the
    default model follows the GPU type: :func:`~simcluster.colocation.loader.load_colocation_model`);
    ``throughputs`` and ``colocation`` given win.

    >>> from simcluster.traces.synth import SynthSpec, synthesize
    >>> tables = load_tables(synthesize(SynthSpec(jobs=5)), SimConfig(), shares_gpus=False)
    >>> tables.throughputs, tables.colocation
    (None, None)
    """
    t0, loaded = time.process_time(), False
    if throughputs is None and trace is not None and trace.needs_throughputs:
        throughputs, loaded = load_throughputs(config.throughputs), True
    if shares_gpus and colocation is None:
        colocation, loaded = load_colocation_model(config.colocation, gpu_types), True
    return RunTables(throughputs, colocation if shares_gpus else None, time.process_time() - t0 if loaded else 0.0)
