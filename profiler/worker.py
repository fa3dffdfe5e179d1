"""One training process of a profiled job: build, warm up, wait for the start, step, report.

A job on ``gpu_num`` devices is ``gpu_num`` of these processes joined by
DistributedDataParallel (NCCL on GPUs, gloo on the CPU), as torchrun would start
them.  Rank 0 speaks for the job: it reports its windows to the coordinating
parent and passes the parent's stop signal on to the other ranks, which follow
it through a collective so that every rank stops after the same step.

A *resident* worker (:func:`resident_main`, for :mod:`profiler.pool`) is the same
process kept for many runs of one-GPU jobs: it keeps its CUDA context, cuDNN's
autotuning and the job it built last, and takes its next job from a queue of
commands, so that a run costs a warm-up rather than a process start and a build.

Each process ignores Ctrl-C: the parent catches it and ends the workers, so an
interrupted sweep prints one message instead of a traceback per process.
"""

from __future__ import annotations

import gc
import math
import multiprocessing as mp
import os
import queue
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from profiler.measure import MeasureSettings, Window, run_windows, warm_up
from workloads import WorkloadConfig, WorkloadSpec, no_wrap

MIB = 1024 * 1024
CHECK_PERIOD_S = 0.05
"""How often a rank asks whether to stop, in seconds of training."""
COLLECTIVE_TIMEOUT = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class WorkerTask:
    """Everything one worker process needs; pickled into the process."""

    job: int
    rank: int
    world: int
    spec: WorkloadSpec
    config: WorkloadConfig
    measure: MeasureSettings
    port: int | None
    cpu_threads: int | None


@dataclass(slots=True)
class Channel:
    """The parent's side of the conversation, shared by all workers of a run."""

    messages: Any  # multiprocessing Queue of the tuples below
    start: Any  # Event: every worker is ready, measure from ``origin``
    stop: Any  # Event: stop stepping (or give up before starting)
    origin: Any  # Value('d'): time of the first window on the shared clock
    window_s: Any  # Value('d'): window length chosen by the parent


# Messages, as plain tuples (picklable, cheap):
#   ("ready", job, rank, seconds_per_step, gpu_uuid or None)
#   ("window", job, Window)
#   ("final", job, torch_peak_mib, steps)
#   ("failed", job, rank, reason)
# A resident worker sends each through its own pipe as (run, message), run being the number of the
# run it belongs to, and takes these commands:
#   ("prepare", run, job, spec, config, warmup_steps)  build (unless held already), warm up, answer "ready"
#   ("measure", run, job, origin, window_s)             step until its stop event is set, answer "final"
#   ("exit",)


def describe_failure(exc: BaseException) -> str:
    """A one-line reason for the table's error column."""
    if isinstance(exc, torch.OutOfMemoryError):
        kind = "out of memory"
    else:
        kind = type(exc).__name__
    text = " ".join(str(exc).split())
    return f"{kind}: {text}"[:300] if text else kind


def _parent_alive() -> bool:
    parent = mp.parent_process()
    return parent is None or parent.is_alive()


def _device_uuid(device: torch.device) -> str | None:
    if device.type != "cuda":
        return None
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return str(uuid) if uuid is not None else None


def _ddp_wrapper(device: torch.device) -> Callable[[nn.Module], nn.Module]:
    def wrap(module: nn.Module) -> nn.Module:
        device_ids = [device.index] if device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(module, device_ids=device_ids)

    return wrap


def _rank_zero_decides(decide: Callable[[], bool], device: torch.device) -> Callable[[], bool]:
    """Every rank gets rank 0's answer, so all ranks leave the loop after the same step."""
    flag = torch.zeros(1, dtype=torch.int32, device=device)

    def agreed() -> bool:
        flag.fill_(1 if dist.get_rank() == 0 and decide() else 0)
        dist.broadcast(flag, src=0)
        return bool(flag.item())

    return agreed


def _prepare_device(device: torch.device, cpu_threads: int | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True
    else:
        # Denormals make some CPU kernels a hundred times slower once weights drift small.
        torch.set_flush_denormal(True)
    if cpu_threads is not None:
        torch.set_num_threads(cpu_threads)


def _prepare_process(task: WorkerTask, device: torch.device) -> None:
    _prepare_device(device, task.cpu_threads)
    torch.manual_seed(task.config.seed)  # dropout and other draws outside the workload's own generators
    if task.world > 1:
        dist.init_process_group(
            backend="nccl" if device.type == "cuda" else "gloo",
            init_method=f"tcp://127.0.0.1:{task.port}",
            rank=task.rank,
            world_size=task.world,
            timeout=COLLECTIVE_TIMEOUT,
        )


def _check_every(seconds_per_step: float, device: torch.device, distributed: bool) -> int:
    every = 1 if math.isnan(seconds_per_step) else max(1, min(1000, round(CHECK_PERIOD_S / seconds_per_step)))
    if not distributed:
        return every
    agreed = torch.tensor([every], dtype=torch.int64, device=device)
    dist.broadcast(agreed, src=0)
    return int(agreed.item())


def _wait_for_start(channel: Channel) -> bool:
    """True to measure, False when the parent gave up (another worker failed, or it died)."""
    while not channel.start.wait(timeout=1.0):
        if not _parent_alive():
            return False
    return not channel.stop.is_set()


def _peak_memory_mib(device: torch.device, distributed: bool) -> float:
    if device.type != "cuda":
        return math.nan  # PyTorch keeps no allocation peak for the CPU
    peak = torch.tensor([torch.cuda.max_memory_allocated(device) / MIB], device=device)
    if distributed:
        dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    return float(peak.item())


def worker_main(task: WorkerTask, channel: Channel) -> None:
    """Entry point of a worker process (``spawn`` start method)."""
    device = torch.device(task.config.device)
    distributed = task.world > 1
    try:
        _prepare_process(task, device)
        job = task.spec.build(task.config, _ddp_wrapper(device) if distributed else no_wrap)
        seconds_per_step = warm_up(job.step, task.measure.warmup_steps)
        check_every = _check_every(seconds_per_step, device, distributed)
        channel.messages.put(("ready", task.job, task.rank, seconds_per_step, _device_uuid(device)))
        if not _wait_for_start(channel):
            return

        def report(window: Window) -> None:
            if task.rank == 0:
                channel.messages.put(("window", task.job, window))

        def stop_requested() -> bool:
            return channel.stop.is_set() or not _parent_alive()

        should_stop = _rank_zero_decides(stop_requested, device) if distributed else stop_requested
        steps = run_windows(
            job.step,
            origin=channel.origin.value,
            window_s=channel.window_s.value,
            on_window=report,
            should_stop=should_stop,
            check_every=check_every,
        )
        peak = _peak_memory_mib(device, distributed)
        if task.rank == 0:
            channel.messages.put(("final", task.job, peak, steps))
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a row, whatever it is
        channel.messages.put(("failed", task.job, task.rank, describe_failure(exc)))
        if os.environ.get("LUCID_PROFILE_TRACEBACK"):
            traceback.print_exc()
        raise SystemExit(1) from None
    finally:
        if distributed and dist.is_initialized():
            dist.destroy_process_group()


@dataclass(frozen=True, slots=True)
class ResidentTask:
    """What a resident worker needs for its whole life: its slot in the pool, its device and threads."""

    slot: int
    device: str
    cpu_threads: int | None


def _next_command(commands: Any) -> tuple[Any, ...] | None:
    """The parent's next command; None once the parent is gone (the worker then ends)."""
    while True:
        try:
            return commands.get(timeout=1.0)  # type: ignore[no-any-return]
        except queue.Empty:
            if not _parent_alive():
                return None


def _free_memory(device: torch.device) -> None:
    """Give the memory of a dropped job back to the driver, so that the next run's figures are its own."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _answer(answers: Any, message: tuple[Any, ...]) -> None:
    """Send ``message`` to the parent; a parent gone (killed, or ended by SIGTERM) ends this worker quietly,
    without the BrokenPipeError traceback nobody is left to read."""
    try:
        answers.send(message)
    except (BrokenPipeError, EOFError, OSError):
        raise SystemExit(0) from None


def resident_main(task: ResidentTask, commands: Any, answers: Any, stop: Any) -> None:
    """Entry point of a resident worker process (``spawn``): serve commands until told to exit."""
    device = torch.device(task.device)
    _prepare_device(device, task.cpu_threads)
    held: tuple[WorkloadSpec, WorkloadConfig] | None = None
    job: Any = None
    seconds_per_step = math.nan
    while (command := _next_command(commands)) is not None and command[0] != "exit":
        run, index = command[1], command[2]
        try:
            if command[0] == "prepare":
                _, _, _, spec, config, warmup_steps = command
                if held != (spec, config):
                    held = job = None
                    _free_memory(device)
                    torch.manual_seed(config.seed)  # as a fresh worker: draws outside the workload's generators
                    job = spec.build(config, no_wrap)
                    held = (spec, config)
                if device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats(device)
                seconds_per_step = warm_up(job.step, warmup_steps)
                _answer(answers, (run, ("ready", index, 0, seconds_per_step, _device_uuid(device))))
            elif command[0] == "measure":
                _, _, _, origin, window_s = command

                def report(window: Window, run: int = run, index: int = index) -> None:
                    _answer(answers, (run, ("window", index, window)))

                steps = run_windows(
                    job.step,
                    origin=origin,
                    window_s=window_s,
                    on_window=report,
                    should_stop=lambda: stop.is_set() or not _parent_alive(),
                    check_every=_check_every(seconds_per_step, device, distributed=False),
                )
                _answer(answers, (run, ("final", index, _peak_memory_mib(device, distributed=False), steps)))
        except SystemExit:  # the parent is gone (_answer): nothing to report, nobody to report it to
            raise
        except BaseException as exc:  # noqa: BLE001 - a failed job becomes a row; the pool starts a new worker
            _answer(answers, (run, ("failed", index, 0, describe_failure(exc))))
            if os.environ.get("LUCID_PROFILE_TRACEBACK"):
                traceback.print_exc()
            raise SystemExit(1) from None
