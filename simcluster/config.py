"""Simulation settings: one dataclass, every field with the help text and the help panel the CLI shows.

The command line, config files (``--config FILE.toml``), presets (``--preset NAME``) and sweeps
(``--set key=v1,v2``) all set these same fields by name; :func:`coerce` is the one place that turns
a value from any of them into the field's type, and :meth:`SimConfig.check` the one place that
checks ranges, so every entry point reports a bad value the same way.
"""

from __future__ import annotations

import difflib
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from functools import cache
from typing import Any

# Help panels of `lucid-sim run --help`, in the order they are shown
POLICY, CLUSTER, FAILURES, TIRESIAS, ESTIMATES, SHARING, LUCID, HETERO, ELASTIC = (
    "Policy", "Cluster", "Failures and preemption", "Policy: tiresias", "Policy: qssf and lucid estimates",
    "Sharing", "Policy: lucid", "Heterogeneous (Gavel)", "Elastic jobs and deadlines",
)
MAX_COST_S = 30 * 86_400.0  # a checkpoint, a restart, a swap or a checkpoint interval: at most 30 days
PROVENANCE = "provenance"  # fields that record where settings came from; no option or --set key sets them
# the policy's own settings (its Settings dataclass): set by --set NAME=VALUE or a config file's [policy] table,
# not by an option of their own
POLICY_SETTINGS = "policy settings"


def setting(default: Any, help: str, panel: str = POLICY, *, min: float | None = None, max: float | None = None,
            above: float | None = None, choices: tuple[str, ...] = (), cli: str | None = None,
            words: tuple[str, ...] = ()) -> Any:
    """A field of :class:`SimConfig`: its default, help text, help panel and the values it admits.

    ``min``/``max`` are inclusive bounds, ``above`` an exclusive lower bound, ``choices`` the only strings
    allowed, ``cli`` the option's name when it is not ``--field-name``, ``words`` the words a number field
    also takes in place of a number (``--checkpoint-interval young-daly``).
    """
    meta = {"help": help, "panel": panel, "min": min, "max": max, "above": above, "choices": choices, "cli": cli,
            "words": words}
    return field(default=default, metadata=meta)


class ConfigError(ValueError):
    """A setting that does not exist or has a bad value; the message names where it came from."""


@dataclass(frozen=True)
class SimConfig:
    """Every setting of ``lucid-sim run``, by its option's name with ``_`` (``--node-mtbf`` is ``node_mtbf``).

    >>> config = SimConfig(policy="tiresias", quantum=60)
    >>> config.policy, config.quantum, config.gpus_per_node
    ('tiresias', 60, 8)
    """

    policy: str = setting(
        "fifo", "Scheduling policy: a built-in name (see `lucid-sim policies`), path/to/file.py[:Class], "
        "package.module:Class, or a name an installed package registers (entry point simcluster.policies).")
    placement: str = setting(
        "consolidate", "Placement: a built-in name (see `lucid-sim placements`), path/to/file.py[:Class], "
        "package.module:Class, or an entry point of simcluster.placements.")
    seed: int = setting(0, "Seed for every random choice (placement, failures, learners).")
    until: float = setting(
        0.0, "Simulated-time horizon: stop the run this many seconds after the first submission and report the "
        "jobs not finished by then (0 = run until every job finishes).", POLICY, min=0,
    )
    gpus_per_node: int = setting(8, "GPUs in every node.", CLUSTER, min=1)
    spread_penalty: float = setting(
        0.0, "Network-locality cost: a job whose GPUs span k > 1 nodes runs at speed 1/(1 + penalty) (0 = off, "
        "as the published simulators).", CLUSTER, min=0,
    )
    node_mtbf: float = setting(0.0, "Mean seconds between failures of a node; 0 = nodes never fail.", FAILURES, min=0)
    node_repair: float = setting(3600.0, "Seconds a failed node is down before it is repaired.", FAILURES, min=0)
    checkpoint_interval: float | str = setting(
        0.0, "Seconds of progress between periodic checkpoints; a failure loses the work since the last one "
        "(0 = only preemptions checkpoint); young-daly: each job at the Young/Daly interval of the failure rate its "
        "nodes see and --checkpoint-cost.", FAILURES, min=0, max=MAX_COST_S, words=("young-daly",),
    )
    faults: str | None = setting(
        None, "Failure model: a fault log (InfiniteHBD JSON, or CSV node,start,end[,class]) replayed onto the "
        "nodes (seeded by --seed), a fitted.json of `lucid-sim faults fit`, or a rate model such as "
        "mtbf=30d,repair=4h (also shape=K for Weibull times, per=gpu; times in s, m, h or d). Instead of "
        "--node-mtbf.",
        FAILURES,
    )
    faults_offset: float = setting(
        0.0, "A replayed fault log starts this many seconds into the log at the run's first submission.",
        FAILURES, min=0,
    )
    checkpoint_cost: float = setting(
        0.0, "Seconds without progress at every periodic checkpoint and at every preemption (which checkpoints).",
        FAILURES, min=0, max=MAX_COST_S,
    )
    restart_cost: float = setting(
        0.0, "Seconds without progress at every restart after a failure (re-initialisation, loading the "
        "checkpoint), on the GPUs the job restarts on.", FAILURES, min=0, max=MAX_COST_S,
    )
    spare_nodes: int = setting(
        0, "Hot spare nodes beside the cluster, held out of scheduling: a failed node of a running job is swapped "
        "for one (after --spare-swap) instead of requeueing the job; a repaired node becomes a spare.",
        FAILURES, min=0, max=1_000_000,
    )
    spare_swap: float = setting(
        0.0, "Seconds to swap a spare in for a failed node (the job holds its GPUs, without progress).",
        FAILURES, min=0, max=MAX_COST_S,
    )
    exclude_after: str | None = setting(
        None, "N/DAYS: take a server out for good at its N-th fault within DAYS days (reported in summary.json).",
        FAILURES,
    )
    restart_limit: int = setting(
        50, "No-progress guard: a job evicted by node failures this many times in a row without its checkpointed "
        "progress advancing triggers --on-no-progress (0 = no guard).", FAILURES, min=0,
    )
    on_no_progress: str = setting(
        "stop", "What the no-progress guard does: stop (end the run with an error naming the job) or abandon "
        "(take the job out; it is reported unfinished).", FAILURES, choices=("stop", "abandon"),
    )
    preempt_overhead_small: float = setting(
        40.0, "Checkpoint/restore seconds charged per preemption, jobs of ≤ 8 GPUs.", FAILURES, min=0)
    preempt_overhead_large: float = setting(
        60.0, "Checkpoint/restore seconds charged per preemption, jobs of > 8 GPUs.", FAILURES, min=0)

    # tiresias
    quantum: float = setting(60.0, "Seconds between scheduling decisions of quantum-based policies (tiresias).",
                             TIRESIAS, above=0)
    thresholds: tuple[float, ...] = setting(
        (18000.0,), "Attained-service thresholds (GPU-seconds) between tiresias' priority queues, comma-separated; "
        "K queues need K-1.", TIRESIAS,
    )
    promote_knob: float = setting(
        0.0, "Tiresias' starvation guard: a job waiting longer than knob × its last run goes to the top queue "
        "(0: off).", TIRESIAS, min=0,
    )
    # estimate-driven policies (qssf, lucid)
    estimator: str = setting(
        "auto", "Duration estimator: oracle, history, file or ebm; auto = the policy's own (qssf: oracle, "
        "lucid: ebm).", ESTIMATES,
    )
    estimates: str | None = setting(None, "CSV of job_id,priority (estimated duration, s) for --estimator file "
                                    "(a relative path not found here is looked up beside the trace).", ESTIMATES)
    retrain_interval: float = setting(7 * 86400.0, "Seconds of simulated time between re-trainings of learned "
                                      "estimators.", ESTIMATES, above=0)
    retrain_growth: float = setting(
        0.25, "A learned model retrains at its interval only if what it learns from grew by this fraction since its "
        "last training (0: at every interval): the ebm estimator's finished jobs, and the bins of lucid's forecaster "
        "when it learns from the trace's own submissions; keeps a long trace's trainings few.",
        ESTIMATES, min=0,
    )
    boosting: str = setting(
        "fast", "How the learned duration and throughput models (ebm estimator, lucid's forecaster) boost: fast "
        "(1 bag, learning rate 0.1, 64 bins, early stop: ~1/40 of the CPU, the same or a lower MAE) or interpret "
        "(InterpretML's defaults with 2 outer bags: the former default).", ESTIMATES, choices=("fast", "interpret"),
    )
    negative_estimates: float | None = setting(
        None, "An estimate below 0 in --estimates is replaced by this many seconds (the Lucid artifact: 1000); "
        "unset: used as it is.", ESTIMATES,
    )
    tie_order: str | None = setting(
        None, "CSV with a job_id column (e.g. an artifact's per-job log): jobs of equal priority are taken in the "
        "order they appear there, not in the trace's (the artifacts' unstable sort reorders jobs of one second).",
        ESTIMATES,
    )

    # GPU sharing
    colocation: str = setting(
        "default", "Colocation model: 'default' (on a cluster of one GPU type that we measured, e.g. --cluster "
        "h100:64: the measurement where it has the pair, else the calibrated model refitted to it; otherwise "
        "'calibrated': fitted to Lucid's public RTX 3090 measurements), 'default@GPU' (the same for a named GPU type, "
        "e.g. default@h100, on any cluster), 'analytic' (unfitted), 'lucid' (the public RTX 3090 table from the "
        "shared data), 'h100' (our profiler's H100 table alone, in traces/profiles/measured/), or a folder with "
        "single.csv and pair.csv (or parameters.json).",
        SHARING,
    )
    gpu_memory: float = setting(24576.0, "MiB of memory per GPU; jobs share a GPU only while their memory fits.",
                                SHARING, above=0)
    max_jobs_per_gpu: int = setting(2, "Most jobs one GPU may hold when a policy shares GPUs.", SHARING, min=1)

    # heterogeneous clusters (GPU types) and Gavel's round policies (simcluster/policies/gavel)
    cluster: str | None = setting(
        None, "Cluster of GPU types, one VC: GPU counts per type, e.g. 'v100:4,p100:4,k80:4' (optionally "
        "TYPE:COUNT:MEMORY_MIB), or a node-list CSV (sn,...,gpu,model as openb's); every policy runs on it, and a "
        "trace's VCs are merged into it (with a warning). Default: the trace's own.", HETERO,
    )
    round_seconds: float = setting(360.0, "Round length (s) of the round-based mechanism.", HETERO, above=0,
                                   cli="--round")
    throughputs: str | None = setting(
        None, "Throughput table: Gavel's simulation_throughputs.json or a folder with single.csv/pair.csv carrying "
        "a gpu_type column. Default: the shared data's Gavel table.", HETERO,
    )
    realloc_interval: float = setting(
        0.0, "Least seconds between allocation recomputations (0: whenever the job set changed; Gavel's simulator "
        "uses 1920).", HETERO, min=0,
    )
    midround_release: bool = setting(
        True, "A job finishing mid-round frees its GPUs at once for waiting jobs, and arrivals take idle GPUs at "
        "once (--no-midround-release: as Gavel, they wait for the next round).", HETERO,
    )
    new_jobs_wait: bool = setting(
        False, "Jobs that arrive between reallocations get no GPUs until the next one (Gavel's simulator); by "
        "default they take the GPUs the allocation leaves idle.", HETERO,
    )
    reset_rule: str = setting(
        "interval", "When reallocations may happen: 'interval' (at least --realloc-interval apart) or 'gavel' "
        "(Gavel's simulator: a reset at time 0 does not start the interval; when no job runs, time jumps to the "
        "next arrival, and a reset is forced once none remain).", HETERO, choices=("interval", "gavel"),
    )
    pair_share_on_finish: str = setting(
        "partner", "When one job of a pair finishes before the next reallocation, the pair's share of the GPUs goes "
        "to its partner ('partner') or lapses ('drop', Gavel's simulator: the partner keeps only its own share).",
        HETERO, choices=("partner", "drop"),
    )
    type_order: str = setting(
        "aware", "Order in which each round fills the GPU types: 'aware' (heterogeneity-agnostic policies in a "
        "seeded random order, the others fastest first) or 'gavel' (Gavel's simulator decides by the policy's "
        "name, so gandiva, a packing policy, is filled fastest first too).", HETERO, choices=("aware", "gavel"),
    )
    lp_solution: str = setting(
        "vertex", "Which of equally good LP solutions a policy takes: 'vertex' (HiGHS simplex, ties broken towards "
        "more total normalised throughput) or 'central' (an interior point of the optimal set, no tie-break, as "
        "Gavel's ECOS returns).", HETERO, choices=("vertex", "central"),
    )
    makespan_search: str = setting(
        "exact", "min_total_duration: 'exact' (one LP in 1/makespan) or 'bisection' (Gavel: bisection on the "
        "makespan over feasibility problems, stopping within 5 %; the allocation is a central feasible point).",
        HETERO, choices=("exact", "bisection"),
    )
    gandiva_pairing: str = setting(
        "helpful", "gandiva: 'helpful' (random pairs of jobs that can share, kept only when sharing helps) or 'gavel' "
        "(Gavel's simulator: random pairs of equal scale factor, untested, split at a later reallocation when the "
        "sum over GPU types of paired ÷ solo throughput is below 1 — pairs that cannot share at all sit idle until "
        "then).", HETERO, choices=("helpful", "gavel"),
    )

    # lucid
    profiler_nodes: int = setting(2, "Nodes in the profiling partition (beside the VCs); 0 = no profiling.",
                                  LUCID, min=0)
    profile_seconds: float = setting(200.0, "Seconds a new job runs on the profiling partition at most (the "
                                     "authors' Venus setting).", LUCID, above=0)
    profiler_factor: float = setting(0.5, "Jobs asking for more than factor × the partition's GPUs skip profiling.",
                                     LUCID, above=0)
    profiler_from_vcs: str | None = setting(
        None, "VCs that each give one node to the profiling partition, comma-separated (one per --profiler-nodes; "
        "the artifact on Venus: vc8Gr,vcefl); unset: the partition comes beside the VCs.", LUCID,
    )
    profiler_queue_limit: int = setting(
        10, "A new job that finds more than this many jobs waiting for the profiling partition goes to its VC "
        "unprofiled (so it never pairs); 0 = no limit (the artifact borrows a node when more than 10 wait).",
        LUCID, min=0,
    )
    profiler_mode: str = setting(
        "move", "move: a job is profiled, then moves to its VC with the progress it made; short-only: as the "
        "artifact's two passes, only jobs done within the window (by true duration) run there, the others go "
        "to their VC at once.", LUCID, choices=("move", "short-only"),
    )
    backfill_while_sharing: bool = setting(
        True, "While sharing is on, every waiting job that can start (paired or alone) starts; off, or while "
        "sharing is off, starts stop at the first job that cannot.", LUCID,
    )
    lucid_sharing: str = setting(
        "adaptive", "When jobs may pair on GPUs: adaptive (only while the forecast load is high), always or never.",
        LUCID, choices=("adaptive", "always", "never"),
    )
    share_load_quantile: float = setting(
        0.5, "Adaptive sharing, quantile rule: pair jobs while the forecast of next hour's GPU-job submissions is at "
        "least this quantile of the hourly submissions the forecaster was trained on.", LUCID, min=0, max=1,
    )
    share_rule: str = setting(
        "rate", "Adaptive sharing's test of the forecast: rate (above --share-min-rate, the artifact's rule) or "
        "quantile (at least --share-load-quantile of the hourly submissions trained on).", LUCID,
        choices=("rate", "quantile"),
    )
    share_min_rate: float = setting(
        2.0, "Adaptive sharing, rate rule: pair jobs only while the forecast GPU-job submissions per 10 minutes "
        "over the next hour exceed this (the artifact: 2).", LUCID, min=0,
    )
    throughput_history: str | None = setting(
        None, "CSV of 10-minute submission bins (time, submit_gpu_job) to train the throughput forecaster on (its "
        "bins before the trace starts); default: cluster_throughput.csv beside the trace, else the trace's own "
        "earlier bins, retrained daily.", LUCID,
    )
    pair_priority_ratio: float = setting(
        2.0, "A waiting job may pair with a running one only if its priority is at most this × the partner's.",
        LUCID, min=0,
    )
    max_score_sum: int = setting(2, "Most the two jobs' sharing scores (0 good … 2 bad) may sum to.", LUCID, min=0)
    pair_choice: str = setting(
        "best", "Which eligible running job a waiting job pairs with: best (lowest score sum, then trace order) or "
        "first (the earliest started, as the artifact).", LUCID, choices=("best", "first"),
    )
    sharing_labels: str | None = setting(
        None, "CSV of sharing scores (model,dataset,batchsize,amp,label; e.g. the authors' single_data.csv) used "
        "instead of the packing model ('lucid': the authors' file in the shared data); a job whose workload it "
        "lacks never pairs.", LUCID,
    )
    packing_thresholds: tuple[float, float] = setting(
        (0.85, 0.95), "A configuration whose mean speed when sharing is below the first is labelled 2 (shares "
        "badly), below the second 1, else 0.", LUCID,
    )

    # elastic jobs (simcluster/elastic, docs/elastic.md) and deadlines
    deadlines: str | None = setting(
        None, "Give every job without a deadline one drawn as submit + U(A, B) × duration, seeded by --seed (the "
        "ElasticFlow authors' rule), e.g. 0.5,1.5; a trace's own deadline column is always read. summary.json then "
        "has deadline_satisfaction.", ELASTIC,
    )
    restart_delay: float = setting(
        30.0, "Seconds an elastic job makes no progress after it starts and after each change of its GPUs (Pollux: "
        "30); a policy may charge its own instead (ElasticFlow's overhead model).", ELASTIC, min=0,
    )
    schedule_interval: float = setting(
        60.0, "Seconds between the re-allocations of the interval-driven elastic policies (pollux, optimus, "
        "tiresias-pollux; Pollux: 60).", ELASTIC, above=0,
    )
    arrivals_wait: bool = setting(
        False, "Interval-driven elastic policies decide only at the ends of intervals (multiples of "
        "--schedule-interval): an arrival waits for the next one and GPUs a job frees stay idle until then, as in "
        "Pollux's simulator. By default they also decide at once when a job arrives or finishes.", ELASTIC,
    )
    progress_rounding: str = setting(
        "exact", "When an elastic job's epoch ends (its speed changes; the last one's end is its finish): at the "
        "exact time, or rounded to a whole second (seconds: Pollux's simulator).", ELASTIC,
        choices=("exact", "seconds"),
    )

    # the policy's own settings, as (name, value) pairs sorted by name; the policy's Settings dataclass says
    # which exist and checks them (simcluster.policies.base.policy_settings)
    policy_settings: tuple[tuple[str, Any], ...] = setting(
        (), "The policy's own settings (`lucid-sim policies NAME` lists them): --set NAME=VALUE, or a [policy] "
        "table in a config file.", POLICY_SETTINGS)

    # where these settings came from (recorded in summary.json; set by --preset/--config, not a knob)
    preset: str | None = setting(None, "The preset the settings started from.", PROVENANCE)
    config_file: str | None = setting(None, "The config file the settings were read from.", PROVENANCE)

    def __post_init__(self) -> None:
        # a class given by the Python API is known by the spec that loads it again in another process
        for name, kind in (("policy", "policy"), ("placement", "placement")):
            if isinstance(getattr(self, name), type):
                from simcluster.plugins import spec_of

                object.__setattr__(self, name, spec_of(getattr(self, name), kind))  # type: ignore[arg-type]
        given = self.policy_settings
        if not isinstance(given, tuple) or any(not isinstance(p, tuple) for p in given):
            object.__setattr__(self, "policy_settings", settings_pairs(given))

    def preemption_overhead(self, gpu_num: int) -> float:
        return self.preempt_overhead_small if gpu_num <= 8 else self.preempt_overhead_large

    def as_dict(self) -> dict[str, Any]:
        """Every field by name; the policy's own settings as a mapping (as summary.json and TOML write them)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["policy_settings"] = dict(self.policy_settings)
        return values

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], where: str = "settings",
                      base: SimConfig | None = None) -> SimConfig:
        """``base`` (or the defaults) with ``settings`` (field name → value of any accepted form) applied.

        >>> SimConfig.from_settings({"policy": "srtf", "thresholds": "3600,7200"}).thresholds
        (3600.0, 7200.0)
        >>> SimConfig.from_settings({"quantm": 30}, "run.toml")
        Traceback (most recent call last):
        ...
        simcluster.config.ConfigError: run.toml: unknown setting 'quantm' (did you mean 'quantum'?)
        """
        by_name = knobs()
        values = {}
        for key, value in settings.items():
            if key == "policy_settings":
                values[key] = settings_pairs(value, where)
                continue
            if key not in by_name:
                raise ConfigError(f"{where}: unknown setting {key!r}{_did_you_mean(key, by_name)}")
            values[key] = coerce(by_name[key], value, where)
        made = cls(**{**(base.as_dict() if base else {}), **values})
        made.check(where, only=values)
        return made

    def check(self, where: str = "settings", only: Mapping[str, Any] | None = None) -> None:
        """Raise :class:`ConfigError` for a value outside the range its field admits."""
        for name, f in config_fields().items():
            if only is not None and name not in only:
                continue
            _check_range(f, getattr(self, name), where)
        if self.deadlines is not None and (only is None or "deadlines" in only):
            deadline_range(self.deadlines, where)
        if self.exclude_after is not None and (only is None or "exclude_after" in only):
            exclusion_rule(self.exclude_after, where)


def knobs() -> dict[str, Field]:
    """The fields a user sets by name, each an option of `lucid-sim run` (every field but the provenance ones and
    the policy's own settings)."""
    return {name: f for name, f in config_fields().items() if f.metadata["panel"] not in (PROVENANCE, POLICY_SETTINGS)}


def panel_fields(panel: str) -> frozenset[str]:
    """The settings of one help panel, e.g. tiresias' (what a policy declares it reads: ``Policy.reads``)."""
    return frozenset(name for name, f in config_fields().items() if f.metadata["panel"] == panel)


def settings_pairs(given: Any, where: str = "settings") -> tuple[tuple[str, Any], ...]:
    """A policy's own settings as (name, value) pairs sorted by name, from a mapping or pairs.

    >>> settings_pairs({"threshold": 60, "queues": 2})
    (('queues', 2), ('threshold', 60))
    """
    if given is None:
        return ()
    if isinstance(given, Mapping):
        pairs = list(given.items())
    else:
        try:
            pairs = [(str(name), value) for name, value in given]
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: the policy's settings must be a table of name = value, got {given!r}") from None
    return tuple(sorted((str(name), value) for name, value in pairs))


@cache
def config_fields() -> dict[str, Field]:
    """Field name → dataclass field, with ``type`` resolved to a real type."""
    hints = typing.get_type_hints(SimConfig)
    out = {}
    for f in fields(SimConfig):
        f.type = hints[f.name]
        out[f.name] = f
    return out


def default_of(f: Field) -> Any:
    return f.default if f.default is not MISSING else None


def base_type(f: Field) -> type:
    """int, float, bool, str or tuple: the kind of value the field holds (Optional removed)."""
    kind: Any = f.type
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    return typing.get_origin(kind) or kind  # tuple[float, ...] → tuple


def coerce(f: Field, value: Any, where: str = "settings") -> Any:
    """``value`` (typed, as TOML gives it, or text, as a command line gives it) as field ``f``'s type."""
    kind, optional = base_type(f), default_of(f) is None

    def bad(expected: str) -> ConfigError:
        return ConfigError(f"{where}: setting {f.name!r} must be {expected}, got {value!r}")

    if optional and (value is None or (isinstance(value, str) and value.strip().lower() in ("", "none"))):
        return None
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _BOOLS:
            return _BOOLS[value.strip().lower()]
        raise bad("true or false")
    if kind is int:
        if isinstance(value, bool):
            raise bad("an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise bad("an integer")
    if kind is float:
        words = f.metadata.get("words") or ()
        if words and isinstance(value, str) and value.strip().lower() in words:
            return value.strip().lower()
        if words and isinstance(value, str):
            try:
                float(value.strip())
            except ValueError:
                raise bad(f"a number of seconds or {' or '.join(words)}") from None
        return _number(value, bad)
    if kind is tuple:
        items = value
        if isinstance(value, str):
            items = [v for v in value.replace("/", ",").split(",") if v.strip()]
        if not isinstance(items, (list, tuple)) or not items:
            raise bad("numbers separated by commas")
        numbers = tuple(_number(v, bad) for v in items)
        size = len(default_of(f) or ())
        fixed = typing.get_args(f.type) and Ellipsis not in typing.get_args(f.type)
        if fixed and len(numbers) != size:
            raise bad(f"{size} numbers")
        return numbers
    if isinstance(value, str):
        return value
    raise bad("text")


def _number(value: Any, bad: Any) -> float:
    if isinstance(value, bool):
        raise bad("a number")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise bad("a number") from None
    if not math.isfinite(number):
        raise bad("a finite number")
    return number


def _check_range(f: Field, value: Any, where: str) -> None:
    meta = f.metadata
    if value is None:
        return
    if meta.get("choices") and value not in meta["choices"]:
        raise ConfigError(f"{where}: setting {f.name!r} must be one of {', '.join(meta['choices'])}, got {value!r}")
    numbers = value if isinstance(value, tuple) else (value,) if isinstance(value, (int, float)) else ()
    for number in numbers:
        if meta.get("min") is not None and number < meta["min"]:
            raise ConfigError(f"{where}: setting {f.name!r} must be at least {meta['min']:g}, got {value!r}")
        if meta.get("max") is not None and number > meta["max"]:
            raise ConfigError(f"{where}: setting {f.name!r} must be at most {meta['max']:g}, got {value!r}")
        if meta.get("above") is not None and number <= meta["above"]:
            raise ConfigError(f"{where}: setting {f.name!r} must be greater than {meta['above']:g}, got {value!r}")


def deadline_range(text: str, where: str = "settings") -> tuple[float, float]:
    """``A,B`` (or ``A/B``, as a sweep's ``--set`` writes it): the range of U(A, B) that draws deadlines, 0 < A ≤ B.

    >>> deadline_range("0.5,1.5"), deadline_range("1/2")
    ((0.5, 1.5), (1.0, 2.0))
    """
    parts = [p.strip() for p in text.replace("/", ",").split(",")]
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise ConfigError(f"{where}: setting 'deadlines' must be two numbers A,B (deadline = submit + U(A, B) × "
                          f"duration), got {text!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and 0 < low <= high):
        raise ConfigError(f"{where}: setting 'deadlines' needs 0 < A ≤ B, got {text!r}")
    return low, high


def exclusion_rule(text: str, where: str = "settings") -> tuple[int, float]:
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


def _did_you_mean(key: str, names: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(key, list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else f"; valid settings: {', '.join(names)}"


_BOOLS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}
