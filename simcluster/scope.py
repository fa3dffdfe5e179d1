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
from typing import TYPE_CHECKING, Any

from simcluster.config import (
    CLUSTER,
    ELASTIC,
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


def _declared(name: str) -> Reader:
    """Read where the policy declares it reads ``name`` (``Policy.reads``)."""
    return Reader(_policy(lambda cls: name in cls.reads))


def _estimator(run: Run) -> str | None:
    """The estimator the run's policy uses, or None for a policy that uses none (``Policy.default_estimator``)."""
    if run.policy is None or run.policy.default_estimator is None:
        return None
    return run.policy.default_estimator if run.config.estimator == "auto" else run.config.estimator


def _always(run: Run) -> bool:
    return True


def _never(run: Run) -> bool:
    return False


# a panel's settings are read by every run, by runs that use an estimator, by policies that share GPUs, or
# (the panels of one policy or family) only by the policies that declare them in ``Policy.reads``
PANEL_READERS: dict[str, Reader] = {
    POLICY: Reader(_always),
    CLUSTER: Reader(_always),
    FAILURES: Reader(_always),
    ESTIMATES: Reader(lambda run: _estimator(run) is not None),
    SHARING: Reader(_policy(lambda cls: cls.shares_gpus)),
}
POLICY_PANELS = (TIRESIAS, LUCID, HETERO, ELASTIC)  # read only where declared


def _draws_random(run: Run) -> bool:
    """Whether a random choice of the run depends on the seed: drawn deadlines, random placement, node failures,
    learned estimators (ebm), or a policy that draws random numbers itself (``Policy.uses_seed``: lucid's models,
    Gavel's agnostic policies)."""
    config = run.config
    if config.deadlines is not None:  # drawn deadlines
        return True
    if run.policy is not None and run.policy.own_placement is not None:  # (its placement draws nothing)
        return run.policy.uses_seed(config) or config.node_mtbf > 0 or bool(config.faults)
    return (config.placement == "random" or config.node_mtbf > 0 or bool(config.faults) or _estimator(run) == "ebm"
            or (run.policy is not None and run.policy.uses_seed(config)))


_WITH_FAILURES = Reader(lambda run: run.config.node_mtbf > 0 or bool(run.config.faults))
_CHECKPOINTS = Reader(lambda run: run.config.node_mtbf > 0 or bool(run.config.faults) or run.config.checkpoint_cost > 0)
_CHECKPOINT_COST = Reader(lambda run: run.config.checkpoint_interval != 0 or (run.policy is not None
                                                                              and run.policy.preemptive))
_LEARNS = Reader(lambda run: _estimator(run) == "ebm" or (run.policy is not None and "boosting" in run.policy.reads))

READERS: dict[str, Reader] = {
    "policy": Reader(_always),
    "deadlines": Reader(_always),  # every run reports deadline satisfaction
    "seed": Reader(_draws_random),
    "cluster": Reader(_always),  # every policy runs on --cluster (a trace's VCs merged into it, with a warning)
    "placement": Reader(lambda run: run.policy is None or run.policy.own_placement is None),
    "node_repair": Reader(lambda run: run.config.node_mtbf > 0),
    "checkpoint_interval": _CHECKPOINTS,
    "checkpoint_cost": _CHECKPOINT_COST,
    "restart_cost": _WITH_FAILURES,
    "spare_nodes": _WITH_FAILURES,
    "spare_swap": Reader(lambda run: run.config.spare_nodes > 0),
    "exclude_after": _WITH_FAILURES,
    "faults_offset": Reader(lambda run: bool(run.config.faults)),
    "restart_limit": _WITH_FAILURES,
    "on_no_progress": _WITH_FAILURES,
    "preempt_overhead_small": Reader(_policy(lambda cls: cls.preemptive)),
    "preempt_overhead_large": Reader(_policy(lambda cls: cls.preemptive)),
    "estimates": Reader(lambda run: _estimator(run) == "file"),
    "retrain_interval": Reader(lambda run: _estimator(run) == "ebm"),
    "throughputs": Reader(lambda run: run.job_types),
    "retrain_growth": _LEARNS,
    "boosting": _LEARNS,
}


def reader(name: str) -> Reader:
    """The reader of setting ``name``: its own, else its help panel's (a policy's own panel: the policies that
    declare it), else "every run reads it"."""
    if name in READERS:
        return READERS[name]
    panel = knobs()[name].metadata["panel"]
    if panel in POLICY_PANELS:
        return _declared(name)
    return PANEL_READERS.get(panel, Reader(_always))


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
    return trace.format == "gavel"


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
    own = set(settings_fields(run.policy)) if run.policy is not None else set()  # its own: always read
    return frozenset(name for name in knobs() if reader(name).reads(run)) | own


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


def settings_fields(cls: type) -> dict[str, Any]:
    from simcluster.policies.base import settings_fields as declared

    return declared(cls)


def _run(config: SimConfig, job_types: bool = False) -> Run:
    from simcluster.plugins import PluginError, resolve_policy

    try:
        policy = resolve_policy(config.policy)
    except PluginError:
        policy = None
    return Run(policy, config, job_types)


def _readers(name: str, config: SimConfig) -> str:
    """Who would read setting ``name`` (with the other settings of ``config``), for the message."""
    from simcluster.policies import POLICIES

    if name in _CONDITIONS:
        return _CONDITIONS[name]
    rule = reader(name)
    policies = [p for p in POLICIES.names() if rule.reads(Run(POLICIES.get(p), config))]
    rounds = [p for p in policies if POLICIES.get(p).family == "gavel"]
    if len(policies) == len(POLICIES.names()):
        return "every policy"
    if rounds and len(rounds) == len(policies) > 3:
        return "Gavel's policies (the round policies in `lucid-sim policies`)"
    if rounds and len(rounds) == len([p for p in POLICIES.names() if POLICIES.get(p).family == "gavel"]):
        others = [p for p in policies if p not in rounds]
        return ", ".join(others) + (", " if others else "") + "Gavel's policies"
    return ", ".join(policies) or "no policy"


_CONDITIONS = {  # settings read only together with another one
    "seed": "random placement, node failures (--node-mtbf, --faults), learned models (lucid, --estimator ebm) and Gavel's agnostic "
            "policies",
    "throughputs": "traces with job types (Gavel's .trace files)",
    "node_repair": "runs with node failures (--node-mtbf > 0)",
    "checkpoint_interval": "runs with node failures (--node-mtbf > 0 or --faults) or --checkpoint-cost",
    "checkpoint_cost": "runs with periodic checkpoints (--checkpoint-interval) or a preemptive policy",
    "restart_cost": "runs with node failures (--node-mtbf > 0 or --faults)",
    "spare_nodes": "runs with node failures (--node-mtbf > 0 or --faults)",
    "spare_swap": "runs with spares (--spare-nodes)",
    "exclude_after": "runs with node failures (--node-mtbf > 0 or --faults)",
    "faults_offset": "runs replaying a fault log (--faults LOG)",
    "restart_limit": "runs with node failures (--node-mtbf > 0 or --faults)",
    "on_no_progress": "runs with node failures (--node-mtbf > 0 or --faults)",
    "estimates": "qssf, lucid, easy-backfill and slurm with --estimator file",
    "retrain_interval": "the ebm estimator (lucid's default; qssf with --estimator ebm)",
    "retrain_growth": "the ebm estimator (lucid's default; qssf with --estimator ebm) and lucid's forecaster",
    "boosting": "the ebm estimator (lucid's default; qssf with --estimator ebm) and lucid's throughput forecaster",
}
