"""Worker processes kept from one run to the next, so that a pair costs seconds rather than a process start.

A run in fresh processes (:func:`profiler.runner.run_jobs`) pays, every time, for starting Python, importing
torch, creating a CUDA context and building the model: most of the ~25 s a pair took on an H100, for a few
seconds of measurement.  A :class:`WorkerPool` keeps one-GPU workers alive instead
(:func:`profiler.worker.resident_main`): each keeps its CUDA context and the job it built last, so a pair
whose partner changes rebuilds one model, and the campaign orders its pairs to keep one job in place.
Every run is still coordinated exactly as a fresh one (:class:`profiler.runner.Coordination`: both jobs
warmed up, released by one barrier, measured over the same windows), and returns the same
:class:`~profiler.runner.RunOutcome`.

Only the run's own jobs stay on the device while it is measured: a worker the run does not use is ended
first, since its CUDA context would count in the memory NVML reports for the run.  A run that fails (out
of memory, a crash, a worker killed) ends its workers too; the next run starts new ones.  Each worker
answers through a pipe of its own, never a queue shared with the others: a worker killed in the middle of
a message (the kernel's out-of-memory killer does that) then breaks its own pipe only, not the next run's.

>>> from profiler.pool import WorkerPool  # doctest: +SKIP
>>> with WorkerPool(settings) as pool:  # doctest: +SKIP
...     outcome = pool.run([JobRequest(get_workload("ResNet18"), 32, False, 1)])
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait
from types import TracebackType
from typing import Any, Self

import torch.multiprocessing as torch_mp

from profiler.nvml import Nvml
from profiler.runner import (
    POLL_S,
    Coordination,
    JobRequest,
    QuietObserver,
    Ready,
    RunObserver,
    RunOutcome,
    RunSettings,
    sigint_blocked,
    worker_threads,
)
from profiler.worker import ResidentTask, resident_main
from workloads import WorkloadConfig, WorkloadSpec

Held = tuple[WorkloadSpec, WorkloadConfig]
"""What a resident worker has built: its workload and configuration."""


@dataclass
class _Slot:
    """One resident worker: its process, its command queue, its stop event, the pipe it answers
    through (the parent's end), and the job it holds."""

    process: Any
    commands: Any
    stop: Any
    answers: Any
    held: Held | None = None
    silent: bool = False  # its pipe is closed: it died, or said all it will say

    def end(self) -> None:
        if self.process.is_alive():
            self.stop.set()  # a worker measuring stops at its next check, then reads the exit
            self.commands.put(("exit",))
            self.process.join(timeout=5.0)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=5.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5.0)
        self.commands.close()
        self.commands.cancel_join_thread()
        self.answers.close()


class WorkerPool:
    """Resident one-GPU workers for runs of one or two jobs; a context manager that ends them on exit."""

    def __init__(self, settings: RunSettings, nvml: Nvml | None = None) -> None:
        self.settings = settings
        self.nvml = nvml
        self._context = torch_mp.get_context("spawn")
        self._slots: list[_Slot] = []
        self.runs = 0
        """Runs so far."""
        self.started = 0
        """Worker processes started so far (each costs a process start and a CUDA context)."""
        self.builds = 0
        """Jobs built so far (a job already held by a worker is not built again)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers (for tests that end one the hard way)."""
        return [slot.process.pid for slot in self._slots]

    def holds(self, request: JobRequest) -> bool:
        """Whether a worker holds this job built (a campaign measures the rows that reuse one first)."""
        return any(slot.held == self._held(request) for slot in self._slots if slot.process.is_alive())

    def run(self, requests: Sequence[JobRequest], observer: RunObserver | None = None) -> RunOutcome:
        """Run ``requests`` together on the device and measure them, as :func:`~profiler.runner.run_jobs` does."""
        if not requests:
            raise ValueError("a run needs at least one job")
        if any(r.gpu_num != 1 for r in requests):
            raise ValueError("resident workers run one-GPU jobs; run jobs on several GPUs with run_jobs")
        self.runs += 1
        slots = self._assign([self._held(r) for r in requests])
        run = PooledRun(self, self.runs, slots, requests, self.settings, observer or QuietObserver(), self.nvml)
        return run.run()

    def close(self) -> None:
        """End every worker."""
        for slot in self._slots:
            slot.end()
        self._slots = []

    # ---------------------------------------------------------------- for PooledRun
    def receive(self, run: int, slots: Sequence[_Slot], timeout: float) -> tuple[Any, ...] | None:
        """The next message of ``run`` from ``slots``, or None after ``timeout`` seconds without one;
        messages of earlier runs are dropped."""
        deadline = time.monotonic() + timeout
        while True:
            listening = {slot.answers: slot for slot in slots if not slot.silent}
            left = max(0.0, deadline - time.monotonic())
            if not listening:
                time.sleep(left)
                return None
            for answers in wait(list(listening), timeout=left):
                slot = listening[answers]
                try:
                    sent_in, message = slot.answers.recv()
                except (EOFError, OSError):  # the worker is gone; the run notices its exit code
                    slot.silent = True
                    continue
                if sent_in == run:
                    return tuple(message)
            if time.monotonic() >= deadline:
                return None

    def end(self, slots: Sequence[_Slot]) -> None:
        """End these workers (after a failed run: their state is not to be trusted)."""
        for slot in slots:
            slot.end()
        self._slots = [s for s in self._slots if all(s is not ended for ended in slots)]

    def _held(self, request: JobRequest) -> Held:
        device = "cuda:0" if self.settings.device == "cuda" else "cpu"
        config = WorkloadConfig(batch_size=request.batchsize, amp=request.amp, device=device,
                                size=self.settings.size, seed=self.settings.seed)
        return request.spec, config

    def _assign(self, jobs: Sequence[Held]) -> list[_Slot]:
        """A worker per job: one that holds it built if any, else any other; unused workers are ended."""
        free = [slot for slot in self._slots if slot.process.is_alive()]
        chosen: list[_Slot | None] = [None] * len(jobs)
        for i, job in enumerate(jobs):
            slot = next((s for s in free if s.held == job), None)
            if slot is not None:
                chosen[i] = slot
                free.remove(slot)
        for i in range(len(jobs)):
            if chosen[i] is None:
                chosen[i] = free.pop(0) if free else self._start()
        self.end(free + [s for s in self._slots if not s.process.is_alive()])
        return [slot for slot in chosen if slot is not None]

    def _start(self) -> _Slot:
        device = "cuda:0" if self.settings.device == "cuda" else "cpu"
        commands, stop = self._context.Queue(), self._context.Event()
        answers, answer = self._context.Pipe(duplex=False)
        task = ResidentTask(slot=len(self._slots), device=device, cpu_threads=worker_threads(self.settings))
        process = self._context.Process(target=resident_main, args=(task, commands, answer, stop),
                                        name=f"resident{self.started}", daemon=True)
        with sigint_blocked():
            process.start()
        answer.close()  # the worker's end: closed here, so that its death reads as the end of the pipe
        slot = _Slot(process, commands, stop, answers)
        self._slots.append(slot)
        self.started += 1
        return slot


class PooledRun(Coordination):
    """One run on the pool's workers: the same phases as a fresh run, commands instead of process starts."""

    def __init__(self, pool: WorkerPool, number: int, slots: Sequence[_Slot], requests: Sequence[JobRequest],
                 settings: RunSettings, observer: RunObserver, nvml: Nvml | None) -> None:
        super().__init__(requests, settings, observer, nvml)
        self._pool = pool
        self._number = number
        self._slots = list(slots)
        self._jobs = [pool._held(r) for r in requests]

    def _launch(self) -> None:
        self._observer.on_phase("building and warming up")
        for job, (slot, (spec, config)) in enumerate(zip(self._slots, self._jobs, strict=True)):
            slot.stop.clear()
            if slot.held != (spec, config):
                self._pool.builds += 1
            slot.held = None  # until it says it is ready: a worker that fails mid-build holds nothing
            slot.commands.put(("prepare", self._number, job, spec, config, self._settings.measure.warmup_steps))
            self._processes[(job, 0)] = slot.process

    def _await_ready(self) -> Ready:
        ready = super()._await_ready()
        for slot, job in zip(self._slots, self._jobs, strict=True):
            slot.held = job
        return ready

    def _release(self, origin: float, window_s: float) -> None:
        for job, slot in enumerate(self._slots):
            slot.commands.put(("measure", self._number, job, origin, window_s))

    def _request_stop(self) -> None:
        for slot in self._slots:
            slot.stop.set()

    def _receive(self, timeout: float = POLL_S) -> tuple[Any, ...] | None:
        return self._pool.receive(self._number, self._slots, timeout)

    def _shutdown(self) -> None:
        self._stop_sampler()
        if self.failed:
            self._pool.end(self._slots)
