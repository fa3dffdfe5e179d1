"""The fast kernel: SimPy's own event loop, inlined, with the engine's plain calls kept out of its queue.

The only module that reads SimPy's internals (``Environment._queue``, ``_eid``, ``_now``, an event's
``_ok``/``_value``/``_defused``); ``tests/test_kernels.py`` checks that by grep.  A scheduler pass, an
arrival or a policy's timer would each be an event with one callback that only calls the engine;
here each takes the place such an event would have in SimPy's queue — (time, priority, the next
sequence number), as ``Environment.schedule`` would give it — in a heap beside the queue, and the loop
runs whichever of the two comes first: SimPy's order, without making and stepping those events.

At import a probe runs a few events and calls through this loop and checks that they come out in
SimPy's order; where they do not (a SimPy release that moved its internals) :data:`UNUSABLE` says why
and the engine falls back to :mod:`~simcluster.engine.reference`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from heapq import heappop, heappush
from operator import attrgetter

import simpy

from simcluster.engine.events import LATE, NORMAL, URGENT, NoEventsLeft, succeed_at


class FastKernel:
    """SimPy's ``env.run(until=stop)`` as ``Environment.step`` does it, plus a heap of plain calls.

    >>> kernel = FastKernel(simpy.Environment())
    >>> seen = []
    >>> kernel.call_at(5, lambda: seen.append(kernel.clock()))
    >>> stop = kernel.env.timeout(9)
    >>> kernel.run(stop); seen, kernel.clock()
    ([5], 9)
    """

    name = "fast"

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        # (time, priority, SimPy sequence number, call): never tied with an event on all three
        self._calls: list[tuple[float, int, int, Callable[[], None]]] = []
        self.clock: Callable[[], float] = partial(attrgetter("_now"), env)  # C calls only: read at every event

    def call_at(self, delay: float, call: Callable[[], None], priority: int = NORMAL) -> None:
        env = self.env
        heappush(self._calls, (env._now + delay, priority, next(env._eid), call))  # type: ignore[attr-defined]

    def run(self, stop: simpy.Event) -> None:
        env = self.env
        queue, calls = env._queue, self._calls  # type: ignore[attr-defined]
        stopped: list[simpy.Event] = []
        stop.callbacks.append(stopped.append)  # type: ignore[union-attr]
        while not stopped:
            if queue and (not calls or queue[0] < calls[0]):  # type: ignore[operator]
                env._now, _, _, event = heappop(queue)  # type: ignore[attr-defined]
                callbacks, event.callbacks = event.callbacks, None  # type: ignore[assignment]  # processed, as SimPy marks it
                for callback in callbacks:
                    callback(event)
                if not event._ok and not hasattr(event, "_defused"):  # a process failed and no one handled it
                    exc = type(event._value)(*event._value.args)
                    exc.__cause__ = event._value
                    raise exc
            elif not calls:
                raise NoEventsLeft(f"no scheduled events left but {stop} was not triggered")
            else:
                env._now, _, _, call = heappop(calls)  # type: ignore[attr-defined]
                call()
        if not stop._ok:
            raise stop._value


def _probe() -> str | None:
    """None if events and calls run through :class:`FastKernel` in SimPy's order here; else what went wrong."""
    try:
        env = simpy.Environment(initial_time=5)
        if not isinstance(env._queue, list):  # type: ignore[attr-defined]
            return "Environment._queue is no longer a list"
        kernel, seen = FastKernel(env), []

        def note(what: str) -> Callable[..., None]:
            def noted(*_event: object) -> None:
                seen.append((what, kernel.clock()))
            return noted

        late = env.event()
        late.callbacks.append(note("late event"))
        succeed_at(env, late, 1, LATE)
        env.timeout(1).callbacks.append(note("timeout"))
        kernel.call_at(1, note("call"))
        kernel.call_at(0, note("urgent call"), URGENT)
        stop = env.timeout(2)
        kernel.run(stop)
        expected = [("urgent call", 5), ("timeout", 6), ("call", 6), ("late event", 6)]
        if seen != expected or kernel.clock() != 7 or stop.callbacks is not None:
            return f"a probe ran in another order than SimPy's: {seen}"
    except Exception as exc:  # noqa: BLE001  # whatever moved, the reference kernel takes over
        return f"{type(exc).__name__}: {exc}"
    return None


UNUSABLE: str | None = _probe()  # why the fast loop cannot run with this SimPy (None: it can)
