"""Node failures, checkpoints, restarts, hot spares and exclusion: the reliability feature's settings
(:mod:`simcluster.features.reliability`; the engine's side is :mod:`simcluster.engine.reliability`)."""

from __future__ import annotations

import math
from typing import Any

from simcluster.settings.fields import ConfigError, Reader, RunView, always, setting, settings_group
from simcluster.settings.tiers import evicts_for_tiers

RELIABILITY = "Failures and checkpoints"  # its panel in `lucid-sim run --help`
MAX_COST_S = 30 * 86_400.0  # a checkpoint, a restart, a swap or a checkpoint interval: at most 30 days
# a node's (or GPU's) mean time between failures: a failure rate of at most one a second (what the fault models
# draw), and at most a million years (beyond it a rate is a unit mistake; --node-mtbf 0 is "never fails")
MIN_MTBF_S, MAX_MTBF_S = 1.0, 1e6 * 365 * 86_400.0


def failing(run: RunView) -> bool:
    """Whether the run's nodes fail: a failure rate (``--node-mtbf``) or a fault model (``--faults``)."""
    return run.config.node_mtbf > 0 or bool(run.config.faults)


WITH_FAILURES = Reader(failing, who="runs with node failures (--node-mtbf > 0 or --faults)")
REPLAYING = Reader(lambda run: bool(run.config.faults), who="runs replaying a fault log (--faults LOG)")


def exclusion_rule(text: Any, where: str = "settings") -> tuple[int, float]:
    """``N/DAYS``: a server is taken out at its N-th fault within DAYS days (N ≥ 1, DAYS > 0), as (N, seconds).

    >>> exclusion_rule("3/7"), exclusion_rule("2/0.5")
    ((3, 604800.0), (2, 43200.0))
    """
    parts = [p.strip() for p in str(text).split("/")]
    try:
        count, days = int(parts[0]), float(parts[1])
        if len(parts) != 2:
            raise ValueError
    except (ValueError, IndexError):
        raise ConfigError(f"{where}: setting 'exclude_after' must be N/DAYS (e.g. 3/7: out at the 3rd fault within "
                          f"7 days), got {text!r}") from None
    if not (1 <= count <= 1_000_000 and math.isfinite(days) and 0 < days <= 36_500):
        raise ConfigError(f"{where}: setting 'exclude_after' needs N ≥ 1 and 0 < DAYS ≤ 36,500, got {text!r}")
    return count, days * 86_400.0


def mtbf_rule(value: Any, where: str = "settings") -> None:
    """``--node-mtbf``: 0 (nodes never fail) or from :data:`MIN_MTBF_S` to :data:`MAX_MTBF_S` seconds; a
    :class:`ConfigError` naming the option and the value as given otherwise.

    >>> mtbf_rule(0), mtbf_rule(86_400)
    (None, None)
    >>> mtbf_rule(0.001, "command line")
    Traceback (most recent call last):
    ...
    simcluster.settings.fields.ConfigError: command line: --node-mtbf must be 0 (nodes never fail) or from 1 to 31,536,000,000,000 seconds (a million years), got 0.001
    """
    if value == 0 or MIN_MTBF_S <= value <= MAX_MTBF_S:
        return
    raise ConfigError(f"{where}: --node-mtbf must be 0 (nodes never fail) or from {MIN_MTBF_S:g} to {MAX_MTBF_S:,.0f} "
                      f"seconds (a million years), got {value!r}")


def may_evict(run: RunView) -> bool:
    """Whether the tiers' evictions may act in the run (whether its trace has preemptible jobs is not known here):
    an evicted job's loss reads the checkpoint interval."""
    return run.config.evict != "off" and run.policy is not None and evicts_for_tiers(run.policy)


@settings_group(RELIABILITY, reads=Reader(always))
class ReliabilityOptions:
    node_mtbf: float = setting(0.0, "Mean seconds between failures of a node; 0 = nodes never fail.", min=0,
                               parse=mtbf_rule, time=True)
    node_repair: float = setting(3600.0, "Seconds a failed node is down before it is repaired.", min=0,
                                 reads=Reader(lambda run: run.config.node_mtbf > 0,
                                              who="runs with node failures (--node-mtbf > 0)"), time=True)
    checkpoint_interval: float | str = setting(
        0.0, "Seconds of progress between periodic checkpoints; a failure loses the work since the last one "
        "(0 = only preemptions checkpoint); young-daly: each job at the Young/Daly interval of the failure rate its "
        "nodes see and --checkpoint-cost.", min=0, max=MAX_COST_S, words=("young-daly",),
        reads=Reader(lambda run: failing(run) or run.config.checkpoint_cost > 0 or may_evict(run),
                     who="runs with node failures (--node-mtbf > 0 or --faults), --checkpoint-cost, or evictions of "
                         "preemptible jobs (a policy that orders by tier, docs/tiers.md)"),
        time=True,
    )
    faults: str | None = setting(
        None, "Failure model: a fault log (InfiniteHBD JSON, or CSV node,start,end[,class]) replayed onto the "
        "nodes (seeded by --seed), a fitted.json of `lucid-sim faults fit`, or a rate model such as "
        "mtbf=30d,repair=4h (also shape=K for Weibull times, per=gpu; times in s, m, h or d). Instead of "
        "--node-mtbf.",
    )
    faults_offset: float | str = setting(
        0.0, "A replayed fault log starts this many seconds into the log at the run's first submission, wrapping "
        "around its end; random: an offset drawn from --seed (uniform over the log's span), so that each seed "
        "replays its own stretch of the log.", min=0, words=("random",),
        reads=REPLAYING,
        time=True,
    )
    fault_servers: int = setting(
        0, "Servers the --faults log observed, those that never failed included (as `lucid-sim faults fit "
        "--servers`); 0: the log's own count (400 for the InfiniteHBD JSON; for a CSV the servers in it, which are "
        "only the failing ones: a warning says so).", min=0, max=10_000_000, reads=REPLAYING,
    )
    open_faults: str = setting(
        "error", "A fault of the --faults log that never ends: error, or span-end (down to the end of the "
        "observation).", choices=("error", "span-end"), reads=REPLAYING,
    )
    fault_columns: str | None = setting(
        None, "The --faults CSV log's own column names as FIELD=COLUMN,… (fields node, start, end, class, level, "
        "desc), e.g. node=hostname, start=down_at, end=up_at, class=reason; its times may be seconds, ISO 8601 "
        "timestamps or Unix epoch seconds.", reads=REPLAYING,
    )
    checkpoint_cost: float = setting(
        0.0, "Seconds without progress at every periodic checkpoint and at every preemption (which checkpoints).",
        min=0, max=MAX_COST_S,
        reads=Reader(lambda run: run.config.checkpoint_interval != 0 or (run.policy is not None
                                                                           and run.policy.preemptive),
                     who="runs with periodic checkpoints (--checkpoint-interval) or a preemptive policy"),
        time=True,
    )
    restart_cost: float = setting(
        0.0, "Seconds without progress at every restart after a failure (re-initialisation, loading the "
        "checkpoint), on the GPUs the job restarts on.", min=0, max=MAX_COST_S,
        reads=WITH_FAILURES,
        time=True,
    )
    spare_nodes: int = setting(
        0, "Hot spare nodes beside the cluster, held out of scheduling: a failed node of a running job is swapped "
        "for one (after --spare-swap) instead of requeueing the job; a repaired node becomes a spare.",
        min=0, max=1_000_000,
        reads=WITH_FAILURES,
    )
    spare_swap: float = setting(
        0.0, "Seconds to swap a spare in for a failed node (the job holds its GPUs, without progress).", min=0,
        max=MAX_COST_S,
        reads=Reader(lambda run: run.config.spare_nodes > 0, who="runs with spares (--spare-nodes)"),
        time=True,
    )
    exclude_after: str | None = setting(
        None, "N/DAYS: take a server out for good at its N-th fault within DAYS days (reported in summary.json).",
        reads=WITH_FAILURES, parse=exclusion_rule,
    )
    replace_failed_nodes: bool = setting(
        True, "On a cluster with a topology, under a topology-aware placement: the pods a running job had on a "
        "failed node move at once to free nodes of its domain at its required level (any free nodes for a job "
        "without one) and it restarts there, as Kueue's TASFailedNodeReplacement (on by default since Kueue "
        "v0.14); where none is free it is requeued. A ready spare (--spare-nodes) comes first.",
        reads=Reader(lambda run: bool(run.config.topology) and failing(run),
                     who="runs with a topology (--topology) and node failures (--node-mtbf > 0 or --faults)"),
    )
    restart_limit: int = setting(
        50, "No-progress guard: a job evicted by node failures this many times in a row without its checkpointed "
        "progress advancing triggers --on-no-progress (0 = no guard).", min=0,
        reads=WITH_FAILURES,
    )
    on_no_progress: str = setting(
        "stop", "What the no-progress guard does: stop (end the run with an error naming the job) or abandon "
        "(take the job out; it is reported unfinished).", choices=("stop", "abandon"),
        reads=WITH_FAILURES,
    )


def reliability_mode(config: Any) -> bool:
    """Whether any option of failures by model, checkpoint and restart costs, spares or exclusion is given, or
    failed nodes may be replaced from their domain (a topology and ``--node-mtbf``: the reliability figures count
    the replacements)."""
    return bool(config.faults or config.checkpoint_cost or config.restart_cost or config.spare_nodes
                or config.exclude_after or config.checkpoint_interval == "young-daly"
                or (config.topology and config.node_mtbf > 0 and config.replace_failed_nodes))


def check_reliability(config: Any, where: str = "settings", model_given: bool = False) -> None:
    """Settings that do not go together, as a ValueError naming the options (``model_given``: a failure model
    came with the run, not from ``--faults``)."""
    failing = bool(config.faults) or config.node_mtbf > 0 or model_given
    if config.faults and config.node_mtbf > 0:
        raise ValueError(f"{where}: give --faults or --node-mtbf, not both (--faults mtbf=SECONDS,repair=SECONDS is "
                         "--node-mtbf's model)")
    if config.checkpoint_interval == "young-daly":
        if not config.checkpoint_cost:
            raise ValueError(f"{where}: --checkpoint-interval young-daly needs --checkpoint-cost > 0 (the interval "
                             "grows as the square root of the checkpoint's cost)")
        if not failing:
            raise ValueError(f"{where}: --checkpoint-interval young-daly needs a failure rate: give --faults or "
                             "--node-mtbf")
    if (config.spare_nodes or config.exclude_after) and not failing:
        raise ValueError(f"{where}: --spare-nodes and --exclude-after need failures: give --faults or --node-mtbf")
    if config.faults_offset and not config.faults:
        raise ValueError(f"{where}: --faults-offset applies to a replayed fault log: give --faults LOG")
