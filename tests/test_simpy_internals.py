"""The engine's loop and its inline process start rely on SimPy 4.1's internals (pyproject pins simpy<4.2).

These tests fail first if a SimPy release moves them, and check that the engine's order of events is
SimPy's: the same run through ``env.run`` and ``env.process`` gives the same jobs, to the second.
"""

from __future__ import annotations

import heapq
import inspect

import simpy
from simpy.events import PENDING

from simcluster.engine import started_process


def test_the_internals_the_engine_reads_are_where_it_reads_them() -> None:
    env = simpy.Environment()
    assert isinstance(env._queue, list) and callable(env._eid.__next__)
    step = inspect.getsource(simpy.Environment.step)
    assert "heappop(self._queue)" in step and "callbacks, event.callbacks = event.callbacks, None" in step
    assert simpy.Event._value is PENDING and hasattr(simpy.Process, "_resume")


def test_a_process_started_inline_lives_as_one_started_by_simpy() -> None:
    def life(env: simpy.Environment, log: list, name: str):
        log.append((env.now, name, "start"))
        try:
            yield env.timeout(10)
            log.append((env.now, name, "end"))
        except simpy.Interrupt as why:
            log.append((env.now, name, f"interrupted: {why.cause}"))
            yield env.timeout(1)
            log.append((env.now, name, "end"))

    def story(inline: bool) -> list:
        env, log = simpy.Environment(), []
        first = started_process(env, life(env, log, "a")) if inline else env.process(life(env, log, "a"))
        env.process(life(env, log, "b"))

        def interrupter():
            yield env.timeout(3)
            first.interrupt("preempted")

        env.process(interrupter())
        env.run()
        return log + [first.is_alive, first.triggered]

    assert story(inline=True) == story(inline=False) == [
        (0, "a", "start"), (0, "b", "start"), (3, "a", "interrupted: preempted"), (4, "a", "end"), (10, "b", "end"),
        False, True]


def test_the_event_queue_orders_by_time_priority_then_id() -> None:
    env = simpy.Environment()
    env.schedule(simpy.Event(env), 1, 5)
    env.schedule(simpy.Event(env), 0, 5)
    times = [heapq.heappop(env._queue)[:2] for _ in range(2)]
    assert times == [(5, 0), (5, 1)]
