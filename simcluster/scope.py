"""Which settings a run reads, so that a setting it ignores is never recorded as if it were used.

Every setting declares its *reader* with it (:mod:`simcluster.settings`): a test on the run (the policy's
class, the trace, the other settings) that says whether the run reads the setting; a setting with no reader of
its own has its group's (a tiresias setting is read by the policies that declare it, a sharing setting by the
policies that share GPUs).

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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simcluster.config import SimConfig, knobs
from simcluster.plugins import PluginError, resolve_policy
from simcluster.policies import POLICIES
from simcluster.policies.base import settings_fields
from simcluster.settings.fields import ConfigError, Reader, RunView

if TYPE_CHECKING:
    from simcluster.policies.base import Policy


def reader(name: str) -> Reader:
    """The reader setting ``name`` declares (its own, else its group's)."""
    found: Reader = knobs()[name].metadata["reads"]
    return found


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


def trace_columns(trace: Any) -> frozenset[str] | None:
    """The columns of a trace's jobs (None without a trace: not known)."""
    frame = getattr(trace, "frame", None)
    return None if frame is None else frozenset(map(str, frame.columns))


def unused_settings(config: SimConfig, names: Iterable[str] | None = None, job_types: bool = False, *,
                    policy: type[Policy] | None = None, columns: frozenset[str] | None = None) -> list[Unused]:
    """The settings among ``names`` (default: every setting that is not its default) that a run of
    ``config`` does not read (``job_types``: on a trace with job types; ``policy``: the run's policy class, where
    it is resolved already, else the one ``config.policy`` names; ``columns``: the trace's, where known).  A sweep
    may pass its ``--set`` keys as ``names``."""
    defaults = SimConfig()
    if names is None:
        names = [n for n in knobs() if getattr(config, n) != getattr(defaults, n)]
    run = RunView(policy or _policy_of(config), config, job_types, columns)
    found = []
    for name in names:
        rule = reader(name)
        if not rule.reads(run):
            found.append(Unused(name, getattr(config, name), rule.error, config.policy, _readers(name, config)))
    return found


def settings_read(config: SimConfig, job_types: bool = False, *, policy: type[Policy] | None = None
                  ) -> frozenset[str]:
    """The settings that can change the results of a run of ``config`` (on a trace with job types if
    ``job_types``; ``policy``: its policy class, else the one ``config.policy`` names): what a sweep compares to say
    that a ``--set`` key or the seed changes nothing.

    >>> sorted(settings_read(SimConfig(policy="fifo")) & {"estimator", "quantum", "seed", "placement"})
    ['placement']
    >>> "seed" in settings_read(SimConfig(policy="fifo", placement="random"))
    True
    >>> sorted(settings_read(SimConfig(policy="max_min_fairness_perf")) & {"placement", "round_seconds", "seed"})
    ['round_seconds']
    """
    policy = policy or _policy_of(config)
    run = RunView(policy, config, job_types)
    own = set(settings_fields(policy)) if policy is not None else set()  # its own: always read
    return frozenset(name for name in knobs() if reader(name).reads(run)) | own


def why_seed_is_ignored(config: SimConfig) -> str:
    """A short reason, for a note: what would have drawn random numbers and does not here."""
    return f"{config.policy} with {config.placement} placement and no node failures draws no random numbers"


def check_settings(config: SimConfig, job_types: bool = False, *, policy: type[Policy] | None = None,
                   columns: frozenset[str] | None = None) -> list[str]:
    """Raise :class:`~simcluster.settings.ConfigError` for a given setting the run would ignore where that
    changes what is simulated; return the warnings for the harmless ones."""
    unused = unused_settings(config, job_types=job_types, policy=policy, columns=columns)
    errors = [str(u) for u in unused if u.error]
    if errors:
        raise ConfigError("; ".join(errors))
    return [str(u) for u in unused]


def _policy_of(config: SimConfig) -> type[Policy] | None:
    """The policy class ``config.policy`` names, or None where it names none (its readers then read nothing)."""
    try:
        return resolve_policy(config.policy)
    except PluginError:
        return None


def _readers(name: str, config: SimConfig) -> str:
    """Who would read setting ``name`` (with the other settings of ``config``), for the message."""
    rule = reader(name)
    if rule.who is not None:
        return rule.who
    policies = [p for p in POLICIES.names() if rule.reads(RunView(POLICIES.get(p), config))]
    rounds = [p for p in policies if POLICIES.get(p).family == "gavel"]
    if len(policies) == len(POLICIES.names()):
        return "every policy"
    if rounds and len(rounds) == len(policies) > 3:
        return "Gavel's policies (the round policies in `lucid-sim policies`)"
    if rounds and len(rounds) == len([p for p in POLICIES.names() if POLICIES.get(p).family == "gavel"]):
        others = [p for p in policies if p not in rounds]
        return ", ".join(others) + (", " if others else "") + "Gavel's policies"
    return ", ".join(policies) or "no policy"
