"""Which settings a run reads, so that a setting it ignores is never recorded as if it were used.

Every :class:`~simcluster.config.SimConfig` field has a *reader*: a test on the run (the policy's
class, the trace, the other settings) that says whether the run reads the field.  A field that
has no entry of its own in :data:`READERS` gets its help panel's reader (:data:`PANEL_READERS`): a
new tiresias setting is read by tiresias, a new sharing setting by the sharing policies, a new
Gavel setting by Gavel's round policies.

A setting that differs from its default and that the run does not read is

* an **error** when ignoring it would simulate another system than the one asked for;
* a **warning** otherwise (``--quantum`` under fifo changes nothing): printed, and kept in
  ``summary.json`` under ``warnings``.

>>> from simcluster.config import SimConfig
>>> [str(u) for u in unused_settings(SimConfig(policy="fifo", quantum=30))]
['--quantum 30 is ignored: fifo does not read it (read by tiresias, tiresias-gittins)']
>>> unused_settings(SimConfig(policy="tiresias", quantum=30))
[]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from simcluster.config import (
    CLUSTER,
    ESTIMATES,
    FAILURES,
    HETERO,
    LUCID,
    POLICY,
    SHARING,
    TIRESIAS,
    SimConfig,
    knobs,
)

if TYPE_CHECKING:
    from simcluster.policies.base import Policy
    from simcluster.policies.gavel.rounds import RoundPolicy


@dataclass(frozen=True)
class Run:
    """What a reader looks at: the policy's class (None: unknown), the settings, and whether the trace's
    jobs have job types with per-GPU-type throughputs (a Gavel trace: ``--throughputs`` is read)."""

    policy: type[Policy] | None
    config: SimConfig
    job_types: bool = False


@dataclass(frozen=True)
class Reader:
    """Whether a run reads a setting (``reads``), and whether ignoring it is an error."""

    reads: Callable[[Run], bool]
    error: bool = False


def _policy(test: Callable[[type[Policy]], bool]) -> Callable[[Run], bool]:
    return lambda run: run.policy is not None and test(run.policy)


def _subclass_of(*names: str) -> Callable[[type], bool]:
    return lambda cls: any(c.__name__ in names for c in cls.__mro__)


_TIRESIAS = _subclass_of("Tiresias")
_LUCID = _subclass_of("Lucid")
_ROUNDS = _subclass_of("RoundPolicy")  # Gavel's policies
# the estimate-driven policies and the estimator each uses for ``--estimator auto``
_ESTIMATOR_DEFAULTS = {"QuasiShortestServiceFirst": "oracle", "Lucid": "ebm", "EasyBackfill": "oracle"}


def _estimator(run: Run) -> str | None:
    """The estimator the run's policy uses, or None for a policy that uses none."""
    if run.policy is None:
        return None
    default = next((d for c in run.policy.__mro__ if (d := _ESTIMATOR_DEFAULTS.get(c.__name__))), None)
    if default is None:
        return None
    return default if run.config.estimator == "auto" else run.config.estimator


def _always(run: Run) -> bool:
    return True


PANEL_READERS: dict[str, Reader] = {
    POLICY: Reader(_always),
    CLUSTER: Reader(_always),
    FAILURES: Reader(_always),
    TIRESIAS: Reader(_policy(_TIRESIAS)),
    ESTIMATES: Reader(lambda run: _estimator(run) is not None),
    SHARING: Reader(_policy(lambda cls: cls.shares_gpus)),
    LUCID: Reader(_policy(_LUCID)),
    HETERO: Reader(_policy(_ROUNDS)),
}


def _draws_random(run: Run) -> bool:
    """Whether a random choice of the run depends on the seed: random placement, node failures, learned
    models (the ebm estimator, lucid's models), or Gavel's agnostic policies (they draw GPU types, pairs)."""
    config = run.config
    if run.policy is not None and _ROUNDS(run.policy):
        return not cast("type[RoundPolicy]", run.policy).aware or config.node_mtbf > 0
    return (config.placement == "random" or config.node_mtbf > 0 or _estimator(run) == "ebm"
            or (run.policy is not None and _LUCID(run.policy)))


_WITH_FAILURES = Reader(lambda run: run.config.node_mtbf > 0)

READERS: dict[str, Reader] = {
    "policy": Reader(_always),
    "seed": Reader(_draws_random),
    "cluster": Reader(_always),  # every policy runs on --cluster (a trace's VCs merged into it, with a warning)
    "placement": Reader(lambda run: run.policy is None or not _ROUNDS(run.policy)),  # rounds place jobs themselves
    "node_repair": _WITH_FAILURES,
    "checkpoint_interval": _WITH_FAILURES,
    "restart_limit": _WITH_FAILURES,
    "on_no_progress": _WITH_FAILURES,
    "preempt_overhead_small": Reader(_policy(lambda cls: cls.preemptive)),
    "preempt_overhead_large": Reader(_policy(lambda cls: cls.preemptive)),
    "estimates": Reader(lambda run: _estimator(run) == "file"),
    "retrain_interval": Reader(lambda run: _estimator(run) == "ebm"),
    "throughputs": Reader(lambda run: run.job_types),
    "lp_solution": Reader(_policy(lambda cls: _ROUNDS(cls) and getattr(cls, "solves_lps", False))),
    "makespan_search": Reader(_policy(_subclass_of("MinTotalDuration", "MinTotalDurationPerf",
                                                   "MinTotalDurationPacked"))),
    "gandiva_pairing": Reader(_policy(_subclass_of("Gandiva"))),
    "retrain_growth": Reader(lambda run: _estimator(run) == "ebm" or (run.policy is not None and _LUCID(run.policy))),
    "boosting": Reader(lambda run: _estimator(run) == "ebm" or (run.policy is not None and _LUCID(run.policy))),
}


def reader(name: str) -> Reader:
    """The reader of setting ``name``: its own, else its help panel's, else "every run reads it"."""
    if name in READERS:
        return READERS[name]
    return PANEL_READERS.get(knobs()[name].metadata["panel"], Reader(_always))


@dataclass(frozen=True)
class Unused:
    """A setting given (not the default) that the run does not read."""

    name: str
    value: Any
    error: bool
    policy: str
    readers: str  # who reads it, e.g. "tiresias, tiresias-gittins"

    @property
    def option(self) -> str:
        return knobs()[self.name].metadata["cli"] or "--" + self.name.replace("_", "-")

    def __str__(self) -> str:
        value = ",".join(f"{v:g}" for v in self.value) if isinstance(self.value, tuple) else (
            f"{self.value:g}" if isinstance(self.value, float) else self.value)
        given = self.option if self.value is True else (
            "--no-" + self.option[2:] if self.value is False else f"{self.option} {value}")
        if self.error:
            return (f"{given} applies only to {self.readers}; {self.policy} would ignore it, so the run would not "
                    f"be the one its summary records. Drop {self.option}, or choose a policy that reads it")
        return f"{given} is ignored: {self.policy} does not read it (read by {self.readers})"


def has_job_types(trace: Any) -> bool:
    """Whether a trace's jobs have job types with per-GPU-type throughputs (a Gavel trace)."""
    return getattr(trace, "kind", None) == "gavel"


def unused_settings(config: SimConfig, names: Iterable[str] | None = None, job_types: bool = False) -> list[Unused]:
    """The settings among ``names`` (default: every setting that is not its default) that a run of
    ``config`` does not read (``job_types``: on a trace with job types).  A sweep may pass its
    ``--set`` keys as ``names``."""
    defaults = SimConfig()
    if names is None:
        names = [n for n in knobs() if getattr(config, n) != getattr(defaults, n)]
    run = _run(config, job_types)
    found = []
    for name in names:
        rule = reader(name)
        if not rule.reads(run):
            found.append(Unused(name, getattr(config, name), rule.error, config.policy, _readers(name, config)))
    return found


def settings_read(config: SimConfig, job_types: bool = False) -> frozenset[str]:
    """The settings that can change the results of a run of ``config`` (on a trace with job types if
    ``job_types``): what a sweep compares to say that a ``--set`` key or the seed changes nothing.

    >>> sorted(settings_read(SimConfig(policy="fifo")) & {"estimator", "quantum", "seed", "placement"})
    ['placement']
    >>> "seed" in settings_read(SimConfig(policy="fifo", placement="random"))
    True
    >>> sorted(settings_read(SimConfig(policy="max_min_fairness_perf")) & {"placement", "round_seconds", "seed"})
    ['round_seconds']
    """
    run = _run(config, job_types)
    return frozenset(name for name in knobs() if reader(name).reads(run))


def why_seed_is_ignored(config: SimConfig) -> str:
    """A short reason, for a note: what would have drawn random numbers and does not here."""
    return f"{config.policy} with {config.placement} placement and no node failures draws no random numbers"


def check_settings(trace: Any, config: SimConfig) -> list[str]:
    """Raise :class:`~simcluster.config.ConfigError` for a given setting the run would ignore where that
    changes what is simulated; return the warnings for the harmless ones."""
    from simcluster.config import ConfigError

    unused = unused_settings(config, job_types=has_job_types(trace))
    errors = [str(u) for u in unused if u.error]
    if errors:
        raise ConfigError("; ".join(errors))
    return [str(u) for u in unused]


def _run(config: SimConfig, job_types: bool = False) -> Run:
    from simcluster.policies import POLICIES

    policy = POLICIES.get(config.policy) if config.policy in POLICIES.names() else None
    return Run(policy, config, job_types)


def _readers(name: str, config: SimConfig) -> str:
    """Who would read setting ``name`` (with the other settings of ``config``), for the message."""
    from simcluster.policies import POLICIES

    if name in _CONDITIONS:
        return _CONDITIONS[name]
    rule = reader(name)
    policies = [p for p in POLICIES.names() if rule.reads(Run(POLICIES.get(p), config))]
    rounds = [p for p in policies if _ROUNDS(POLICIES.get(p))]
    if len(policies) == len(POLICIES.names()):
        return "every policy"
    if rounds and len(rounds) == len(policies) > 3:
        return "Gavel's policies (the round policies in `lucid-sim policies`)"
    if rounds and len(rounds) == len([p for p in POLICIES.names() if _ROUNDS(POLICIES.get(p))]):
        others = [p for p in policies if p not in rounds]
        return ", ".join(others) + (", " if others else "") + "Gavel's policies"
    return ", ".join(policies) or "no policy"


_CONDITIONS = {  # settings read only together with another one
    "seed": "random placement, node failures, learned models (lucid, --estimator ebm) and Gavel's agnostic "
            "policies",
    "throughputs": "traces with job types (Gavel's .trace files)",
    "node_repair": "runs with node failures (--node-mtbf > 0)",
    "checkpoint_interval": "runs with node failures (--node-mtbf > 0)",
    "restart_limit": "runs with node failures (--node-mtbf > 0)",
    "on_no_progress": "runs with node failures (--node-mtbf > 0)",
    "estimates": "qssf, lucid, easy-backfill and slurm with --estimator file",
    "retrain_interval": "the ebm estimator (lucid's default; qssf with --estimator ebm)",
    "retrain_growth": "the ebm estimator (lucid's default; qssf with --estimator ebm) and lucid's forecaster",
    "boosting": "the ebm estimator (lucid's default; qssf with --estimator ebm) and lucid's throughput forecaster",
}
