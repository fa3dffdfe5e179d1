"""The reference kernel: public SimPy only — every call an event at its priority, and ``env.run``.

What the fast loop (:mod:`~simcluster.engine.loop`) must equal, event for event: a call made at time t
for ``delay`` at ``priority`` is an event scheduled at that moment with that priority, so it takes the
same sequence number the fast loop gives the call, and SimPy's own ``env.run`` orders it.  It is the
fallback where the fast loop's probe fails, and the kernel to read to learn the engine's order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import simpy

from simcluster.engine.events import NORMAL, NoEventsLeft, succeed_at


class ReferenceKernel:
    """The engine's calls as SimPy events; ``env.run(until=stop)`` runs them.

    >>> kernel = ReferenceKernel(simpy.Environment())
    >>> seen = []
    >>> kernel.call_at(5, lambda: seen.append(kernel.clock()))
    >>> kernel.run(kernel.env.timeout(9)); seen, kernel.clock()
    ([5], 9)
    """

    name = "reference"

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.clock: Callable[[], float] = partial(getattr, env, "now")

    def call_at(self, delay: float, call: Callable[[], None], priority: int = NORMAL) -> None:
        event = simpy.Event(self.env)
        event.callbacks.append(lambda _event: call())
        succeed_at(self.env, event, delay, priority)

    def run(self, stop: simpy.Event) -> None:
        env = self.env
        try:
            env.run(until=stop)
        except RuntimeError as exc:  # SimPy's "no scheduled events left", or something the run itself raised
            if stop.triggered or env.peek() != math.inf or not str(exc).startswith("No scheduled events left"):
                raise
            raise NoEventsLeft(str(exc)) from exc
