"""Run one or more jobs at once on the same device(s) and measure them over the same windows.

The parent process coordinates; each job's ranks are worker processes
(:mod:`profiler.worker`), started for the run (:func:`run_jobs`) or kept from one run
to the next (:mod:`profiler.pool`).  The sequence is the same for a job alone and for a pair:

1. start every worker; each builds its job and warms up, then reports *ready*;
2. once all are ready, open the start barrier with a common origin on the shared
   clock (so all jobs count steps on the same grid of windows);
3. collect windows until the jobs are steady together or the time limit passes
   (:class:`profiler.measure.StopRule`), meanwhile sampling NVML in a thread;
4. tell the workers to stop, collect their peak memory, end the processes.

Any failure -- an exception in a worker (out of memory included), a worker that
dies, a start-up that takes too long -- ends the run with ``ok=False`` and a
one-line reason; it never raises, so a sweep can go on.  Only Ctrl-C propagates,
after the workers are ended.
"""

from __future__ import annotations

import contextlib
import math
import queue
import signal
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch.multiprocessing as torch_mp

from profiler.measure import DEFAULT_CLOCK, MeasureSettings, StopRule, Verdict, window_length
from profiler.nvml import GpuSampler, GpuSummary, Nvml, cuda_device_identity
from profiler.worker import Channel, WorkerTask, worker_main
from workloads import Size, WorkloadConfig, WorkloadSpec

START_LEAD_S = 0.05
"""Gap between opening the start barrier and the first window, so every worker is stepping."""
POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class RunSettings:
    """How jobs are run and measured (shared by ``single`` and ``pair``)."""

    device: str = field(default="cuda", metadata={"help": "'cuda' (GPUs 0..n-1) or 'cpu' (same code path)"})
    size: Size = field(default="full", metadata={"help": "'full' real shapes, 'tiny' for quick CPU runs"})
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    sample_hz: float = field(default=10.0, metadata={"help": "NVML samples per second"})
    startup_timeout_s: float = field(
        default=600.0, metadata={"help": "seconds allowed to build and warm up before a job counts as failed"}
    )
    seed: int = field(default=0, metadata={"help": "seed of weights and synthetic data"})
    cpu_threads: int | None = field(
        default=None,
        metadata={"help": "torch threads per worker; default: 1 on the CPU, torch's own choice on GPUs"},
    )

    def __post_init__(self) -> None:
        if self.device not in ("cuda", "cpu"):
            raise ValueError(f"device must be 'cuda' or 'cpu', got {self.device!r}")
        for name, most in (("sample_hz", 1000.0), ("startup_timeout_s", 86400.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most:
                raise ValueError(f"{name} must be a number above 0 and at most {most:g}, got {value!r}")


@dataclass(frozen=True, slots=True)
class JobRequest:
    """One job to run: a workload and its configuration."""

    spec: WorkloadSpec
    batchsize: int
    amp: bool
    gpu_num: int


@dataclass(frozen=True, slots=True)
class JobMeasurement:
    iters_per_s: float
    torch_peak_mem: float


@dataclass(frozen=True, slots=True)
class RunOutcome:
    ok: bool
    error: str
    jobs: tuple[JobMeasurement, ...]
    gpu: GpuSummary
    verdict: Verdict | None = None

    @classmethod
    def failed(cls, error: str, jobs: int) -> RunOutcome:
        nothing = JobMeasurement(math.nan, math.nan)
        return cls(False, error, (nothing,) * jobs, GpuSummary.unavailable())


class RunObserver(Protocol):
    """What a live display learns about a run in progress."""

    def on_phase(self, text: str) -> None: ...

    def on_window(self, job: int, iters_per_s: float, samples_per_s: float, gpu_util: float) -> None: ...

    def on_warning(self, text: str) -> None: ...


class _Failure(Exception):
    """A run that cannot go on; the message is the reason recorded in the table."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        hint = " (killed; the kernel's out-of-memory killer does this)" if name == "SIGKILL" else ""
        return f"exited on signal {name}{hint}"
    return f"exited with code {code}"


Ready = dict[tuple[int, int], tuple[float, str | None]]
"""(job, rank) -> (seconds per warm-up step, GPU UUID or None)."""


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """Start workers with Ctrl-C blocked: they inherit the mask and never see it.

    The parent handles Ctrl-C and ends them; a worker interrupted while still
    importing torch would only print a long traceback.  A Ctrl-C that arrives
    meanwhile reaches the parent as soon as the mask is lifted.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def worker_threads(settings: RunSettings) -> int | None:
    """Torch threads per worker: as asked, else 1 on the CPU and torch's own choice on GPUs."""
    if settings.cpu_threads is None and settings.device == "cpu":
        # Tiny models gain nothing from more threads, and on a busy machine a thread that
        # waits for a descheduled sibling makes steps a hundred times slower.
        return 1
    return settings.cpu_threads


def _slowest_step(ready: Ready) -> float:
    """The slowest job's seconds per step; NaN when no job warmed up (``warmup_steps=0``)."""
    times = [seconds for seconds, _ in ready.values() if not math.isnan(seconds)]
    return max(times) if times else math.nan


class Coordination:
    """One coordinated run of ``requests`` together: the phases, whoever the workers are.

    Subclasses say how workers are started (:meth:`_launch`), released at the barrier
    (:meth:`_release`), told to stop (:meth:`_request_stop`) and heard (:meth:`_receive`),
    and what is left of them afterwards (:meth:`_shutdown`); ``_processes`` maps each
    (job, rank) to its process, so that a dead one is noticed.
    """

    def __init__(
        self,
        requests: Sequence[JobRequest],
        settings: RunSettings,
        observer: RunObserver,
        nvml: Nvml | None,
    ) -> None:
        self._requests = list(requests)
        self._settings = settings
        self._observer = observer
        self._nvml = nvml
        self._clock = DEFAULT_CLOCK  # the workers' clock: windows are placed on it
        self._processes: dict[tuple[int, int], Any] = {}
        self._sampler: GpuSampler | None = None
        self._stopping = False
        self._origin = 0.0
        self.failed = False

    # ---------------------------------------------------------------- what subclasses provide
    def _launch(self) -> None:
        raise NotImplementedError

    def _release(self, origin: float, window_s: float) -> None:
        """Open the start barrier: every worker measures on the grid of ``origin`` and ``window_s``."""
        raise NotImplementedError

    def _request_stop(self) -> None:
        raise NotImplementedError

    def _receive(self, timeout: float) -> tuple[Any, ...] | None:
        """The next message of this run, or None after ``timeout`` seconds without one."""
        raise NotImplementedError

    def _shutdown(self) -> None:
        self._stop_sampler()

    # ---------------------------------------------------------------- phases
    def run(self) -> RunOutcome:
        try:
            self._launch()
            ready = self._await_ready()
            window_s = window_length(self._settings.measure, _slowest_step(ready))
            self._sampler = self._make_sampler(ready).start()
            verdict = self._measure(window_s)
            peaks = self._collect_finals(ready)
            gpu = self._gpu_summary(verdict, window_s)
            jobs = tuple(JobMeasurement(verdict.iters_per_s[j], peaks[j]) for j in range(len(self._requests)))
            if not verdict.measured:
                raise _Failure(
                    f"no measurement window completed within the time limit of "
                    f"{self._settings.measure.time_limit_s:g} s (a step takes about {_slowest_step(ready):.3g} s); "
                    "raise --time-limit"
                )
            return RunOutcome(True, "", jobs, gpu, verdict)
        except _Failure as failure:
            self.failed = True
            return RunOutcome.failed(str(failure), len(self._requests))
        except BaseException:
            self.failed = True
            raise
        finally:
            self._shutdown()

    def _await_ready(self) -> Ready:
        self._observer.on_phase("building and warming up")
        ready: Ready = {}
        deadline = self._clock() + self._settings.startup_timeout_s
        while len(ready) < len(self._processes):
            message = self._next_message(deadline, "build and warm up")
            if message[0] == "ready":
                _, job, rank, seconds_per_step, uuid = message
                ready[(job, rank)] = (seconds_per_step, uuid)
        return ready

    def _measure(self, window_s: float) -> Verdict:
        measure = self._settings.measure
        origin = self._origin = self._clock() + START_LEAD_S
        self._release(origin, window_s)
        self._observer.on_phase("measuring")
        rule = StopRule(measure, origin, jobs=len(self._requests))
        while True:
            verdict = rule.verdict(self._clock())
            if verdict is not None:
                self._stopping = True
                self._request_stop()
                return verdict
            message = self._next_message(None, "measure", timeout=POLL_S)
            if message and message[0] == "window":
                _, job, window = message
                rule.add(job, window)
                request = self._requests[job]
                samples = window.iters_per_s * request.batchsize * request.gpu_num
                util = self._sampler.latest_gpu_util() if self._sampler else math.nan
                self._observer.on_window(job, window.iters_per_s, samples, util)

    def _collect_finals(self, ready: Ready) -> list[float]:
        # A worker stops at its next check (within a step or two), so allow that on top of a grace.
        slowest = _slowest_step(ready)
        deadline = self._clock() + 60.0 + 2 * (0.0 if math.isnan(slowest) else slowest)
        peaks: dict[int, float] = {}
        while len(peaks) < len(self._requests):
            message = self._next_message(deadline, "stop")
            if message[0] == "final":
                _, job, peak, _steps = message
                peaks[job] = peak
        return [peaks[j] for j in range(len(self._requests))]

    def _gpu_summary(self, verdict: Verdict, window_s: float) -> GpuSummary:
        if self._sampler is None or not verdict.measured:
            return GpuSummary.unavailable()
        return self._sampler.summary(
            self._origin + verdict.start_index * window_s, self._origin + verdict.end_index * window_s
        )

    def _make_sampler(self, ready: Ready) -> GpuSampler:
        if self._settings.device != "cuda" or self._nvml is None:
            return GpuSampler(None, [])
        # Rank r of every job runs on cuda:r; any of them can tell us that GPU's UUID.
        uuid_of_rank = {rank: uuid for (_job, rank), (_, uuid) in ready.items()}
        devices = [cuda_device_identity(rank, uuid_of_rank[rank]) for rank in sorted(uuid_of_rank)]
        return GpuSampler(self._nvml, devices, hz=self._settings.sample_hz, clock=self._clock)

    # ---------------------------------------------------------------- plumbing
    def _next_message(self, deadline: float | None, phase: str, timeout: float = POLL_S) -> tuple[Any, ...]:
        """The next message; raises _Failure for a failed or dead worker or a passed deadline.

        With ``deadline=None`` it returns ``()`` after ``timeout`` without a message.
        """
        while True:
            message = self._receive(timeout)
            if message is not None:
                if message[0] == "failed":
                    _, job, rank, reason = message
                    raise _Failure(self._blame(job, rank, reason))
                return message
            self._check_alive()
            if deadline is None:
                return ()
            if self._clock() > deadline:
                raise _Failure(f"workers did not {phase} within the allowed time")

    def _check_alive(self) -> None:
        """Fail on a worker that died (after the stop signal, only an unclean exit counts)."""
        for (job, rank), process in self._processes.items():
            code = process.exitcode
            if code is None or (self._stopping and code == 0):
                continue
            # It may have said why just before exiting; give that message a moment to arrive (a moment
            # only: a partner still stepping keeps sending windows).
            deadline = self._clock() + 1.0
            while (left := deadline - self._clock()) > 0 and (message := self._receive(left)) is not None:
                if message[0] == "failed":
                    raise _Failure(self._blame(message[1], message[2], message[3]))
            raise _Failure(self._blame(job, rank, f"worker process {_exit_reason(code)}"))

    def _blame(self, job: int, rank: int, reason: str) -> str:
        request = self._requests[job]
        who = request.spec.model if len(self._requests) == 1 else f"job {job + 1} ({request.spec.model})"
        if request.gpu_num > 1:
            who += f" rank {rank}"
        return f"{who}: {reason}"

    def _stop_sampler(self) -> None:
        if self._sampler is not None:
            self._sampler.stop()
            if self._sampler.error:
                self._observer.on_warning(self._sampler.error)
            self._sampler = None


class FreshRun(Coordination):
    """A run in worker processes started for it and ended after it: nothing outlives the run."""

    def __init__(
        self,
        requests: Sequence[JobRequest],
        settings: RunSettings,
        observer: RunObserver,
        nvml: Nvml | None,
    ) -> None:
        super().__init__(requests, settings, observer, nvml)
        self._context = torch_mp.get_context("spawn")
        self._channel = Channel(
            messages=self._context.Queue(),
            start=self._context.Event(),
            stop=self._context.Event(),
            origin=self._context.Value("d", 0.0),
            window_s=self._context.Value("d", 0.0),
        )

    def _launch(self) -> None:
        threads = worker_threads(self._settings)
        self._observer.on_phase("starting workers")
        for job, request in enumerate(self._requests):
            port = free_port() if request.gpu_num > 1 else None
            for rank in range(request.gpu_num):
                device = f"cuda:{rank}" if self._settings.device == "cuda" else "cpu"
                task = WorkerTask(
                    job=job,
                    rank=rank,
                    world=request.gpu_num,
                    spec=request.spec,
                    config=WorkloadConfig(
                        batch_size=request.batchsize,
                        amp=request.amp,
                        device=device,
                        size=self._settings.size,
                        # Each rank its own data, as a sampler would shard it (DDP copies rank 0's weights).
                        seed=self._settings.seed + rank,
                    ),
                    measure=self._settings.measure,
                    port=port,
                    cpu_threads=threads,
                )
                process = self._context.Process(
                    target=worker_main, args=(task, self._channel), name=f"job{job}-rank{rank}", daemon=True
                )
                with sigint_blocked():
                    process.start()
                self._processes[(job, rank)] = process

    def _release(self, origin: float, window_s: float) -> None:
        self._channel.origin.value = origin
        self._channel.window_s.value = window_s
        self._channel.start.set()

    def _request_stop(self) -> None:
        self._channel.stop.set()

    def _receive(self, timeout: float) -> tuple[Any, ...] | None:
        try:
            return self._channel.messages.get(timeout=timeout)  # type: ignore[no-any-return]
        except queue.Empty:
            return None

    def _shutdown(self) -> None:
        self._stop_sampler()
        self._channel.stop.set()
        self._channel.start.set()  # release workers still waiting to start, so they exit
        deadline = time.monotonic() + 10.0
        for process in self._processes.values():
            process.join(timeout=max(0.0, deadline - time.monotonic()))
        for process in self._processes.values():
            if process.is_alive():
                process.terminate()
        for process in self._processes.values():
            process.join(timeout=5.0)
            if process.is_alive():
                process.kill()
                process.join(timeout=5.0)
        self._channel.messages.close()
        self._channel.messages.cancel_join_thread()


class QuietObserver:
    """A RunObserver that shows nothing."""

    def on_phase(self, text: str) -> None:
        pass

    def on_window(self, job: int, iters_per_s: float, samples_per_s: float, gpu_util: float) -> None:
        pass

    def on_warning(self, text: str) -> None:
        pass


def run_jobs(
    requests: Sequence[JobRequest],
    settings: RunSettings,
    observer: RunObserver | None = None,
    nvml: Nvml | None = None,
) -> RunOutcome:
    """Run ``requests`` together on the same device(s) and measure each over the same windows."""
    if not requests:
        raise ValueError("run_jobs needs at least one job")
    return FreshRun(requests, settings, observer or QuietObserver(), nvml).run()
