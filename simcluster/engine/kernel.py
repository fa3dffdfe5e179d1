"""The kernel: what runs a simulation's events in SimPy's order, and which of the two does it.

Two kernels keep the same order — SimPy's (time, priority, sequence number) — and give identical runs
(``tests/test_kernels.py`` holds them equal on every policy family, with node failures and GPU sharing):

- ``fast`` (:mod:`~simcluster.engine.loop`): SimPy's own ``Environment.step`` inlined, with the engine's
  plain calls (arrivals, scheduler passes, policies' timers) kept in a heap beside SimPy's queue instead
  of becoming events.  It reads SimPy's internals, so it runs only where a probe at import finds them
  where it expects (:data:`~simcluster.engine.loop.UNUSABLE`).
- ``reference`` (:mod:`~simcluster.engine.reference`): public SimPy only (``env.run``, an event per call
  at the same priority).  Slower, and the fallback when the probe fails: the run's summary says so.

>>> kernel, note = make_kernel(simpy.Environment(), "reference")
>>> kernel.name, note
('reference', '')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import simpy

from simcluster.engine import loop, reference


class Kernel(Protocol):
    """What the engine asks of a kernel: a clock, calls at a time and priority, and the loop."""

    name: str
    env: simpy.Environment
    clock: Callable[[], float]  # the simulated time now

    def call_at(self, delay: float, call: Callable[[], None], priority: int = ...) -> None:
        """Call ``call`` ``delay`` seconds from now, where an event scheduled now at ``priority`` would run."""

    def run(self, stop: simpy.Event) -> None:
        """Run until ``stop`` has been processed; :class:`~simcluster.engine.events.NoEventsLeft` if nothing is
        left to happen before."""


def make_kernel(env: simpy.Environment, wanted: str | None = None) -> tuple[Kernel, str]:
    """The kernel for ``env`` (``wanted``: "fast", "reference" or None for the fast one where it can run), and a
    note for the run's summary when the fast one was wanted but cannot run here (else "")."""
    if wanted not in (None, "fast", "reference"):
        raise ValueError(f"unknown kernel {wanted!r}; choose fast or reference")
    if wanted == "reference":
        return reference.ReferenceKernel(env), ""
    if loop.UNUSABLE is None:
        return loop.FastKernel(env), ""
    why = f"the fast loop cannot run with SimPy {simpy.__version__}: {loop.UNUSABLE}"
    if wanted == "fast":
        raise ValueError(why)
    return reference.ReferenceKernel(env), f"{why}; the reference kernel ran (the same results, slower)"
