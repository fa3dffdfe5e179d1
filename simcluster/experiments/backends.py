"""Where a sweep's runs execute: a local process pool, or Ray tasks.

Both give the same interface to :func:`simcluster.experiments.sweep.run_sweep`:
``submit`` a picklable function call, ``wait`` for some to finish, take their
``result``, ``close``.  ``slots`` is how many calls the sweep keeps in flight
(the pool's size; for Ray, the cluster's CPUs plus a little slack so no CPU
idles between tasks), so memory stays flat however long the grid.
"""

from __future__ import annotations

import importlib.util
import itertools
import multiprocessing
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

from simcluster.experiments.runs import SweepError, cpu_count

BACKENDS = ("local", "ray")


class Backend(Protocol):
    slots: int

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any: ...
    def wait(self, handles: list[Any], timeout: float) -> list[Any]: ...
    def result(self, handle: Any) -> Any: ...
    def close(self, cancel: bool) -> None: ...


def make_backend(name: str, workers: int | None = None, ray_address: str | None = None,
                 log: Path | None = None) -> Backend:
    """``log``: where the backend's own messages go (Ray's; the local pool has none)."""
    if name == "local":
        return LocalBackend(workers)
    if name == "ray":
        return RayBackend(ray_address, workers, log)
    raise SweepError(f"--backend must be one of {', '.join(BACKENDS)}, got {name!r}")


class LocalBackend:
    """A process pool of ``workers`` processes (default: the CPUs this process may use).

    Workers come from a fork server that imported the simulator once, so a
    worker starts in milliseconds and inherits no threads of the caller's
    (e.g. a live display's).  A worker that dies (killed, out of memory)
    fails the runs it held; the pool is rebuilt for the rest.

    Ctrl-C is the sweep's alone: a terminal sends SIGINT to every process of the foreground group, and a
    worker waiting for its next call would print a traceback of its own, so workers ignore it
    (:func:`_ignore_interrupts`) and the sweep, interrupted, ends them (``close(cancel=True)``).
    """

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise SweepError(f"--workers must be at least 1, got {workers}")
        self.slots = workers or cpu_count()
        self._context: Any
        methods = multiprocessing.get_all_start_methods()
        if "forkserver" in methods:
            self._context = multiprocessing.get_context("forkserver")
            self._context.set_forkserver_preload(["simcluster.experiments.sweep"])
        else:  # Windows
            self._context = multiprocessing.get_context("spawn")
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None or getattr(self._pool, "_broken", False):
            if self._pool is not None:
                _stop_pool(self._pool)
            self._pool = ProcessPoolExecutor(self.slots, mp_context=self._context,
                                             initializer=_ignore_interrupts)
        return self._pool

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        return self._executor().submit(fn, *args)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        done, _ = wait_futures(handles, timeout=timeout, return_when=FIRST_COMPLETED)
        return list(done)

    def result(self, handle: Any) -> Any:
        return handle.result()

    def close(self, cancel: bool) -> None:
        """Wait for the calls in flight, or (``cancel``: interrupted) end them at once — their folders are
        written atomically — and return only when no worker and no thread of the pool is left."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        if cancel:
            _stop_pool(pool)
        else:
            pool.shutdown(wait=True)


def _ignore_interrupts() -> None:
    """A worker's first act: SIGINT ignored (see :class:`LocalBackend`); SIGTERM still ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_pool(pool: ProcessPoolExecutor, patience: float = 10.0) -> None:
    """End ``pool`` now: calls not started cancelled, workers terminated, and its manager thread joined.

    Joined, because at the interpreter's exit :mod:`concurrent.futures` wakes every manager thread still
    registered through a pipe, unlocked, that the thread closes as it ends: a pool left to end on its own
    while the process exits raced that close and once printed ``OSError: [Errno 9] Bad file descriptor``
    after an interrupted sweep.  ``patience``: seconds to wait for each.
    """
    manager = getattr(pool, "_executor_manager_thread", None)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:  # ended before the sweep says so: no run is written after it has stopped
        process.join(patience)
    if manager is not None:
        manager.join(patience)


class RayBackend:
    """Each call is a Ray task (one CPU), submitted by a Ray driver in a child process.

    Ray prints messages of its own on its driver's stdout and stderr: start-up lines, token
    warnings, ``(raylet)`` reports of dead workers and nodes with their state dumps, C++ logs.
    The driver is therefore a child process whose stdout and stderr go to ``log`` (the sweep's
    ``ray.log``), so the console shows only the sweep's progress; the sweep talks to it over a pipe.

    The driver connects to ``address`` (``auto``, ``ray://host:10001``…); to the Ray instance this
    process has started, if any (``ray.init`` before the sweep); or else starts a local instance with
    ``workers`` CPUs and stops it at the end.  The workers write the run folders themselves, so with a
    remote cluster the output folder (and the traces) must be on a file system every node shares.
    """

    def __init__(self, address: str | None = None, workers: int | None = None, log: Path | None = None,
                 start_timeout: float = 300.0) -> None:
        """``start_timeout``: seconds for Ray to start or connect (Ray itself retries an unreachable address
        for minutes)."""
        if importlib.util.find_spec("ray") is None:
            raise SweepError("--backend ray needs Ray: pip install 'simcluster[ray]'")
        ray = sys.modules.get("ray")
        if address is None and ray is not None and ray.is_initialized():
            address = ray.get_runtime_context().gcs_address  # the instance this process runs: join it
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
        self._log = log
        self._conn, child = multiprocessing.Pipe()
        # this process's environment as it is now (ray.init may have added its cluster's token to it): a
        # fork server started earlier would hand the child its own, older one
        self._driver = _context().Process(target=_ray_driver, args=(child, address, workers, log and str(log),
                                                                    dict(os.environ)),
                                          name="simcluster-ray-driver", daemon=True)
        self._driver.start()
        child.close()
        where = f"connect to Ray at {address}" if address else "start a local Ray instance"
        see = f" (Ray's messages: {log})" if log else ""
        try:
            if not self._conn.poll(start_timeout):
                raise SweepError(f"could not {where} in {start_timeout:g} s{see}")
            kind, value = self._conn.recv()
        except (EOFError, OSError):
            kind, value = "failed", "the Ray driver process exited"
        except BaseException:
            self._stop_driver()
            raise
        if kind != "ready":
            self._stop_driver()
            raise SweepError(f"could not {where}: {value}{see}")
        self.slots = max(1, workers or int(value)) + 2
        self._ids = itertools.count()
        self._outstanding: set[int] = set()
        self._results: dict[int, tuple[bool, Any]] = {}

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        handle = next(self._ids)
        self._outstanding.add(handle)
        try:
            self._conn.send(("submit", handle, fn, args))
        except (OSError, EOFError):
            self._driver_gone()
        return handle

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        deadline = time.monotonic() + timeout
        while not any(h in self._results for h in handles):
            left = deadline - time.monotonic()
            if left <= 0 or not self._receive(left):
                break
        while self._receive(0):  # and whatever else has arrived
            pass
        return [h for h in handles if h in self._results]

    def result(self, handle: Any) -> Any:
        ok, value = self._results.pop(handle)
        if ok:
            return value
        raise value

    def close(self, cancel: bool) -> None:
        try:
            self._conn.send(("close", cancel))
        except (OSError, EOFError):
            pass
        self._driver.join(60.0)  # ray.shutdown of a local instance takes a few seconds
        self._stop_driver()

    def _receive(self, timeout: float) -> bool:
        """Take one message from the driver if one comes within ``timeout``; False if none did."""
        try:
            if not self._conn.poll(timeout):
                return False
            _, handle, ok, value = self._conn.recv()
        except (EOFError, OSError):
            self._driver_gone()
            return False
        self._outstanding.discard(handle)
        self._results[handle] = (ok, value)
        return True

    def _driver_gone(self) -> None:
        """The driver process died: every call still out fails (and is recorded so)."""
        where = f"; see {self._log}" if self._log else ""
        for handle in self._outstanding:
            self._results[handle] = (False, RuntimeError(f"the Ray driver process exited{where}"))
        self._outstanding.clear()

    def _stop_driver(self) -> None:
        if self._driver.is_alive():
            self._driver.terminate()
            self._driver.join(5.0)
        self._conn.close()


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _ray_driver(conn: Connection, address: str | None, workers: int | None, log: str | None,
                environ: dict[str, str]) -> None:
    """The child process that runs Ray's driver: submits calls as tasks and sends back their outcomes.

    Messages in: ``("submit", id, fn, args)``, ``("close", cancel)``; out: ``("ready", cpus)`` or
    ``("failed", why)`` once, then ``("done", id, ok, value or exception)`` per call.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweep's to handle; it tells us to close
    os.environ.clear()
    os.environ.update(environ)
    if log is not None:
        _redirect_output(log)
    try:
        import ray

        kwargs: dict[str, Any] = {"address": address, "include_dashboard": False, "log_to_driver": True}
        if address is None and workers:
            kwargs["num_cpus"] = workers
        ray.init(**kwargs)
        conn.send(("ready", int(ray.cluster_resources().get("CPU", 1))))
    except Exception as exc:  # noqa: BLE001 — ConnectionError, RuntimeError, ...: said to the sweep
        traceback.print_exc()
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    remote: dict[Callable[..., Any], Any] = {}
    running: dict[Any, int] = {}  # Ray object ref → call id
    cancel = False
    try:
        while True:
            if not running or conn.poll(0):
                try:
                    message = conn.recv()  # waits here while nothing runs
                except EOFError:  # the sweep is gone
                    cancel = True
                    break
                if message[0] == "close":
                    cancel = message[1]
                    break
                _, call, fn, args = message
                if fn not in remote:
                    remote[fn] = ray.remote(num_cpus=1)(fn)
                running[remote[fn].remote(*args)] = call
                continue
            done, rest = ray.wait(list(running), num_returns=1, timeout=0.05)
            if done and rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                done += more
            for ref in done:
                call = running.pop(ref)
                try:
                    outcome = ("done", call, True, ray.get(ref))
                except Exception as exc:  # noqa: BLE001 — a lost worker or node: the sweep records it
                    outcome = ("done", call, False, _portable(exc))
                try:
                    conn.send(outcome)
                except (TypeError, AttributeError, pickle.PicklingError) as exc:
                    conn.send(("done", call, False, _portable(exc)))
    except (BrokenPipeError, ConnectionError):
        cancel = True
    finally:
        if cancel:
            for ref in running:
                ray.cancel(ref)
        ray.shutdown()


def _redirect_output(log: str) -> None:
    """Send this process's stdout and stderr — Python's and the C++ libraries' alike — to ``log``."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for stream in (1, 2):
        os.dup2(fd, stream)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 — lives as long as the process
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError with its text (Ray's exceptions may not)."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        return RuntimeError(f"{type(exc).__name__}: {exc}")
