"""``lucid-profile single``: each job configuration alone, one row per configuration."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from profiler.nvml import Nvml
from profiler.observe import SweepObserver
from profiler.plan import JobConfig
from profiler.runner import JobRequest, RunObserver, RunOutcome, RunSettings, run_jobs
from profiler.tables import ResultTable, Row, single_row
from simcluster.colocation import STATUS_OK
from workloads import WorkloadSpec

Resolver = Callable[[str], WorkloadSpec]
"""Finds the workload of a model name (the registry's ``get_workload``; tests pass their own)."""
Runner = Callable[[Sequence[JobRequest], RunObserver], RunOutcome]
"""Runs jobs together and measures them: in fresh processes (:func:`fresh_runner`) or on a
:class:`~profiler.pool.WorkerPool`'s resident workers (its ``run``)."""


def fresh_runner(settings: RunSettings, nvml: Nvml | None) -> Runner:
    """Each run in worker processes of its own (:func:`~profiler.runner.run_jobs`)."""
    return lambda requests, observer: run_jobs(requests, settings, observer, nvml)


@dataclass(frozen=True, slots=True)
class SweepSummary:
    measured: int
    failed: int
    skipped: int


def needs_run(status: str | None, retry_failed: bool) -> bool:
    """Resume rule: run what is missing, and what failed only when asked to retry."""
    return status is None or (status != STATUS_OK and retry_failed)


def profile_single(
    config: JobConfig,
    resolve: Resolver,
    settings: RunSettings,
    observer: SweepObserver,
    nvml: Nvml | None,
    *,
    runner: Runner | None = None,
) -> Row:
    """Measure one configuration alone and return its table row (failed runs included)."""
    request = JobRequest(resolve(config.model), config.batchsize, config.amp, config.gpu_num)
    run = runner or fresh_runner(settings, nvml)
    return single_row(config, run([request], observer))


def sweep_single(
    configs: Sequence[JobConfig],
    table: ResultTable,
    resolve: Resolver,
    settings: RunSettings,
    observer: SweepObserver,
    nvml: Nvml | None = None,
    retry_failed: bool = False,
    *,
    runner: Runner | None = None,
) -> SweepSummary:
    """Measure every configuration not yet in ``table``, writing each row as soon as it is known."""
    measured = failed = skipped = 0
    for config in configs:
        status = table.status(config.key)
        if not needs_run(status, retry_failed):
            skipped += 1
            observer.on_config_skipped(config.label, f"already in the table ({status})")
            continue
        observer.on_config_start(config.label)
        row = profile_single(config, resolve, settings, observer, nvml, runner=runner)
        table.add(row)
        observer.on_config_end(config.label, row)
        measured += 1
        failed += row["status"] != STATUS_OK
    return SweepSummary(measured, failed, skipped)
