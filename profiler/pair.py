"""``lucid-profile pair``: two jobs started together on the same GPU(s).

Both jobs run as separate processes, released by the same start barrier and
measured over the same windows.  Each job's normalized speed is its shared
throughput divided by its throughput alone, taken from the single table -- and
measured first, into that table, when it is not there yet.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from profiler.nvml import Nvml
from profiler.observe import SweepObserver
from profiler.plan import JobConfig, PairConfig
from profiler.runner import JobRequest, RunSettings
from profiler.single import Resolver, Runner, SweepSummary, fresh_runner, needs_run, profile_single
from profiler.tables import ResultTable, Row, SoloTable, pair_row, pair_speeds, speed_problem
from simcluster.colocation import STATUS_OK


def solo_throughput(
    config: JobConfig,
    single_table: SoloTable,
    resolve: Resolver,
    settings: RunSettings,
    observer: SweepObserver,
    nvml: Nvml | None,
    retry: set[JobConfig] | None = None,
    *,
    runner: Runner | None = None,
) -> tuple[float, str]:
    """The configuration's iterations/s alone, measuring it first if the table lacks it.

    A failed solo row is measured again only if ``config`` is in ``retry`` (then
    removed from it, so a sweep retries each solo once).  Returns ``(nan, reason)``
    when the solo run failed.
    """
    status = single_table.status(config.key)
    if status is None or (status != STATUS_OK and retry is not None and config in retry):
        if retry is not None:
            retry.discard(config)
        observer.on_config_start(f"{config.label} (alone)")
        measured = profile_single(config, resolve, settings, observer, nvml, runner=runner)
        single_table.add(measured)
        observer.on_config_end(f"{config.label} (alone)", measured)
    row = single_table.row(config.key)
    if row is None:
        raise RuntimeError(f"{single_table.path}: row of {config.label} vanished after it was written")
    if row["status"] != STATUS_OK:
        return math.nan, f"solo run of {config.label} failed: {row['error']}"
    return float(row["iters_per_s"]), ""


def profile_pair(
    pair: PairConfig,
    single_table: SoloTable,
    resolve: Resolver,
    settings: RunSettings,
    observer: SweepObserver,
    nvml: Nvml | None = None,
    retry_solo: set[JobConfig] | None = None,
    remeasure: bool = True,
    *,
    runner: Runner | None = None,
) -> Row:
    """Measure a pair sharing the GPU(s) and return its table row (failed runs included).

    Solo throughputs come from ``single_table``; missing ones are measured first
    (see :func:`solo_throughput` for ``retry_solo``).  A pair that seems faster
    shared than alone (:data:`~simcluster.doubts.SUSPECT_SPEED`) had a solo run
    measured too slow: both solo runs and the pair are measured again once
    (``remeasure``), and a pair still too fast is recorded failed, with why.
    """
    run = runner or fresh_runner(settings, nvml)
    solos = [
        solo_throughput(config, single_table, resolve, settings, observer, nvml, retry_solo, runner=run)
        for config in (pair.first, pair.second)
    ]
    solo = (solos[0][0], solos[1][0])
    errors = [error for _, error in solos if error]
    if errors:
        return pair_row(pair, None, solo, error="; ".join(errors))
    observer.on_config_start(pair.label)
    requests = [
        JobRequest(resolve(c.model), c.batchsize, c.amp, c.gpu_num) for c in (pair.first, pair.second)
    ]
    outcome = run(requests, observer)
    if remeasure and outcome.ok and speed_problem(pair_speeds(outcome, solo)):
        for config in (pair.first, pair.second):
            label = f"{config.label} (alone, again: the pair ran faster shared than alone)"
            observer.on_config_start(label)
            measured = profile_single(config, resolve, settings, observer, nvml, runner=run)
            single_table.add(measured)
            observer.on_config_end(label, measured)
        return profile_pair(pair, single_table, resolve, settings, observer, nvml, remeasure=False, runner=run)
    return pair_row(pair, outcome, solo)


def sweep_pairs(
    pairs: Sequence[PairConfig],
    pair_table: ResultTable,
    single_table: ResultTable,
    resolve: Resolver,
    settings: RunSettings,
    observer: SweepObserver,
    nvml: Nvml | None = None,
    retry_failed: bool = False,
    *,
    runner: Runner | None = None,
) -> SweepSummary:
    """Measure every pair not yet in ``pair_table`` (either order), row by row."""
    measured = failed = skipped = 0
    retry_solo = {c for p in pairs for c in (p.first, p.second)} if retry_failed else None
    for pair in pairs:
        status = pair_table.pair_status(pair)
        if not needs_run(status, retry_failed):
            skipped += 1
            observer.on_config_skipped(pair.label, f"already in the table ({status})")
            continue
        row = profile_pair(pair, single_table, resolve, settings, observer, nvml, retry_solo, runner=runner)
        if status is not None and pair_table.status(pair.key) is None:
            row = swap_jobs(row)  # a retried pair stored the other way round: replace that row
        pair_table.add(row)
        observer.on_config_end(pair.label, row)
        measured += 1
        failed += row["status"] != STATUS_OK
    return SweepSummary(measured, failed, skipped)


def swap_jobs(row: Row) -> Row:
    """The same measurement with the two jobs' columns exchanged."""
    swapped = dict(row)
    for field in ("model", "dataset", "batchsize", "amp", "gpu_num", "iters_per_s", "speed"):
        swapped[f"{field}1"], swapped[f"{field}2"] = row[f"{field}2"], row[f"{field}1"]
    return swapped
