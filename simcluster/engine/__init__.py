"""The engine: replays a trace's jobs on a cluster under a policy, event by event.

Where things are: :mod:`~.simulation` (the run: arrivals, scheduler passes, placing; :class:`Simulation`),
:mod:`~.life` (a job's life: start, interrupt, finish), :mod:`~.causes` (why a run is cut short),
:mod:`~.speed` (how fast a running job goes), :mod:`~.failures` (node failures, the no-progress guard),
:mod:`~.context` (what a policy may do), :mod:`~.events` (the order within an instant) and the kernels
that keep it — :mod:`~.loop` (fast, over SimPy's internals) and :mod:`~.reference` (public SimPy only),
chosen by :mod:`~.kernel`.  docs/architecture.md draws the whole.
"""

from simcluster.engine.causes import Abandoned, Cause, Moved, NodeFailed, Preempted, RateChanged
from simcluster.engine.events import HORIZON, LATE, NORMAL, URGENT
from simcluster.engine.failures import NoProgressError
from simcluster.engine.simulation import RunOutcome, Simulation, SimulationStalled, without_borrowed

__all__ = ["HORIZON", "LATE", "NORMAL", "URGENT", "Abandoned", "Cause", "Moved", "NoProgressError", "NodeFailed",
           "Preempted", "RateChanged", "RunOutcome", "Simulation", "SimulationStalled", "without_borrowed"]
