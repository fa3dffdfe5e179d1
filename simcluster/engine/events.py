"""The order of things within one instant, and the one way the engine makes an event due at a priority.

SimPy orders events by (time, priority, sequence number).  Its own priorities come first: URGENT (a
process's start), NORMAL (a timeout, a run's end, an arrival); then the engine's: LATE (the scheduler's
pass and the policies' timers, after everything else of the instant, so that at time t every job ending
at t has freed its GPUs and every job submitted at t has joined its queue before the policy runs),
AFTER_PASS (an elastic job's epoch end that whole-second rounding moved back to t from just after it:
Pollux's simulator handles it in the interval that begins at t, after its policy ran) and HORIZON (the
``--until`` stop, after that instant's pass).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy

URGENT, NORMAL, LATE, AFTER_PASS, HORIZON = 0, 1, 2, 3, 4


class NoEventsLeft(RuntimeError):
    """The kernel found nothing left to happen before the run's end (the engine reports the stuck jobs)."""


def succeed_at(env: simpy.Environment, event: simpy.Event, delay: float, priority: int) -> None:
    """Schedule ``event`` to succeed ``delay`` seconds from now at ``priority``.

    SimPy's public ``succeed`` fixes NORMAL priority and no delay; this is what SimPy itself does for its
    events of another priority (``env.run(until=t)``'s stop, a process's start): set the outcome, then the
    public ``env.schedule``.

    >>> env = simpy.Environment()
    >>> first, second = env.event(), env.event()
    >>> succeed_at(env, first, 5, LATE); succeed_at(env, second, 5, NORMAL)
    >>> env.run(first); env.now, second.processed
    (5, True)
    """
    event._ok = True
    event._value = None
    env.schedule(event, priority, delay)  # type: ignore[arg-type]  # (SimPy types priorities as EventPriority)


class Due(simpy.Event):
    """An event that succeeds ``delay`` seconds from now at ``priority`` and then calls ``callback``: a fresh event,
    its callback and :func:`succeed_at` in one step (the engine makes one at every start of a run: its end).

    >>> env, seen = simpy.Environment(), []
    >>> late = Due(env, 5, LATE, lambda event: seen.append(("late", env.now)))
    >>> first = Due(env, 5, NORMAL, lambda event: seen.append(("normal", env.now)))
    >>> env.run(late); seen, first.processed
    ([('normal', 5), ('late', 5)], True)
    """

    def __init__(self, env: simpy.Environment, delay: float, priority: int,
                 callback: Callable[[simpy.Event], Any]) -> None:
        self.env = env
        self.callbacks = [callback]
        self._ok = True
        self._value = None
        env.schedule(self, priority, delay)  # type: ignore[arg-type]  # (SimPy types priorities as EventPriority)
