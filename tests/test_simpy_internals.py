"""The engine's loop and its inline process start rely on SimPy 4.1's internals (pyproject pins simpy<4.2).

These tests fail first if a SimPy release moves them, and check that the engine's order of events is
SimPy's: the same run through ``env.run`` and ``env.process`` gives the same jobs, to the second.
"""

from __future__ import annotations

import heapq
import inspect

import simpy
from simpy.events import PENDING

from simcluster.engine import JobProcess, started_process


def test_the_internals_the_engine_reads_are_where_it_reads_them() -> None:
    env = simpy.Environment()
    assert isinstance(env._queue, list) and callable(env._eid.__next__)
    step = inspect.getsource(simpy.Environment.step)
    assert "heappop(self._queue)" in step and "callbacks, event.callbacks = event.callbacks, None" in step
    assert simpy.Event._value is PENDING and hasattr(simpy.Process, "_resume")
    resume = inspect.getsource(simpy.Process._resume)  # what JobProcess._resume mirrors, less the end's event
    assert "self._generator.send(event._value)" in resume and "event._defused = True" in resume
    assert "except StopIteration as e:" in resume and "self.env.schedule(self)" in resume


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


def _story(make) -> list:
    """A job-like life under ``make(env, generator)``: interrupted once, waited for by a watcher, plus one that fails."""
    env, log = simpy.Environment(), []

    def life(name: str):
        log.append((env.now, name, "start"))
        try:
            yield env.timeout(10)
        except simpy.Interrupt as why:
            log.append((env.now, name, f"interrupted: {why.cause}"))
            yield env.timeout(1)
        log.append((env.now, name, "end"))
        return name.upper()

    first, second = make(env, life("a")), make(env, life("b"))

    def interrupter():
        yield env.timeout(3)
        first.interrupt("preempted")

    def watcher():
        value = yield second
        log.append((env.now, "watcher", value))

    env.process(interrupter())
    env.process(watcher())
    env.run()
    return log + [(p.is_alive, p.triggered, p.value) for p in (first, second)]


def test_a_job_process_lives_as_simpys_own_and_its_end_costs_no_event() -> None:
    ours = _story(lambda env, gen: started_process(env, gen))
    simpys = _story(lambda env, gen: env.process(gen))
    assert ours == simpys == [
        (0, "a", "start"), (0, "b", "start"), (3, "a", "interrupted: preempted"), (4, "a", "end"), (10, "b", "end"),
        (10, "watcher", "B"), (False, True, "A"), (False, True, "B")]
    env = simpy.Environment()

    def short():
        yield env.timeout(1)

    process = started_process(env, short())
    assert isinstance(process, JobProcess)
    env.step()  # the timeout: the process ends, and no one waits for it
    assert not env._queue and process.processed and process.ok


def test_a_failing_job_process_fails_the_run_as_simpys_own() -> None:
    def broken(env: simpy.Environment):
        yield env.timeout(1)
        raise ValueError("no GPUs for job 7")

    for make in (started_process, lambda env, gen: env.process(gen)):
        env = simpy.Environment()
        make(env, broken(env))
        try:
            env.run()
        except ValueError as error:
            assert str(error) == "no GPUs for job 7"
        else:
            raise AssertionError("the failure was lost")
