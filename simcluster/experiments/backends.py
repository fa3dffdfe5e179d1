"""Where a sweep's runs execute: a local process pool, or Ray tasks.

Both give the same interface to :func:`simcluster.experiments.sweep.run_sweep`:
``submit`` a picklable function call, ``wait`` for some to finish, take their
``result``, ``close``.  ``slots`` is how many calls the sweep keeps in flight
(the pool's size; for Ray, the cluster's CPUs plus a little slack so no CPU
idles between tasks), so memory stays flat however long the grid.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any, Protocol

from simcluster.experiments.sweep import SweepError, cpu_count

BACKENDS = ("local", "ray")


class Backend(Protocol):
    slots: int

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any: ...
    def wait(self, handles: list[Any], timeout: float) -> list[Any]: ...
    def result(self, handle: Any) -> Any: ...
    def close(self, cancel: bool) -> None: ...


def make_backend(name: str, workers: int | None = None, ray_address: str | None = None) -> Backend:
    if name == "local":
        return LocalBackend(workers)
    if name == "ray":
        return RayBackend(ray_address, workers)
    raise SweepError(f"--backend must be one of {', '.join(BACKENDS)}, got {name!r}")


class LocalBackend:
    """A process pool of ``workers`` processes (default: the CPUs this process may use).

    Workers come from a fork server that imported the simulator once, so a
    worker starts in milliseconds and inherits no threads of the caller's
    (e.g. a live display's).  A worker that dies (killed, out of memory)
    fails the runs it held; the pool is rebuilt for the rest.
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
                self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = ProcessPoolExecutor(self.slots, mp_context=self._context)
        return self._pool

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        return self._executor().submit(fn, *args)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        done, _ = wait_futures(handles, timeout=timeout, return_when=FIRST_COMPLETED)
        return list(done)

    def result(self, handle: Any) -> Any:
        return handle.result()

    def close(self, cancel: bool) -> None:
        if self._pool is None:
            return
        if cancel:  # interrupted: do not wait for runs in progress (their folders are written atomically)
            for process in list(getattr(self._pool, "_processes", {}).values()):
                process.terminate()
        self._pool.shutdown(wait=not cancel, cancel_futures=cancel)
        self._pool = None


class RayBackend:
    """Each call is a Ray task (one CPU).  Connects to ``address`` (``auto``, ``ray://host:10001``…),
    or, when none is given and Ray is not initialised yet, starts a local instance and stops it at the end.

    The workers write the run folders themselves, so with a remote cluster the
    output folder (and the traces) must be on a file system every node shares.
    """

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise SweepError("--backend ray needs Ray: pip install 'simcluster[ray]'") from None
        self._ray = ray
        self._owned = False
        if not ray.is_initialized():
            try:
                kwargs: dict[str, Any] = {"address": address, "include_dashboard": False,
                                          "log_to_driver": False, "configure_logging": False}
                if address is None and workers:
                    kwargs["num_cpus"] = workers
                ray.init(**kwargs)
            except Exception as exc:  # ConnectionError, RuntimeError, ...
                where = f"connect to Ray at {address}" if address else "start a local Ray instance"
                raise SweepError(f"could not {where}: {exc}") from exc
            self._owned = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.slots = max(1, workers or cpus) + 2
        self._remote: dict[Callable[..., Any], Any] = {}
        self._in_flight: set[Any] = set()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self._ray.remote(num_cpus=1)(fn)
        handle = remote.remote(*args)
        self._in_flight.add(handle)
        return handle

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        done, rest = self._ray.wait(handles, num_returns=1, timeout=timeout)
        if done and rest:  # and whatever else is ready now, without waiting
            more, _ = self._ray.wait(rest, num_returns=len(rest), timeout=0)
            done += more
        self._in_flight.difference_update(done)
        return list(done)

    def result(self, handle: Any) -> Any:
        return self._ray.get(handle)

    def close(self, cancel: bool) -> None:
        if cancel:  # interrupted: a cluster we only connected to should not go on with our runs
            for handle in self._in_flight:
                self._ray.cancel(handle)
        self._in_flight.clear()
        if self._owned:
            self._ray.shutdown()
