"""Simulation settings: :class:`SimConfig`, the groups of :mod:`simcluster.settings` side by side.

Each group is the settings of one feature or policy family, declared with it (its fields' help text, help panel,
the values they admit and which runs read them); :class:`SimConfig` holds them all, flat, so that the command
line, config files (``--config FILE.toml``), presets (``--preset NAME``), sweeps (``--set key=v1,v2``) and the
Python API (``SimConfig(quantum=60)``) all set the same fields by name.  :func:`coerce` is the one place that
turns a value from any of them into the field's type, and :meth:`SimConfig.check` the one place that checks
ranges, so every entry point reports a bad value the same way.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import Field, dataclass, fields
from functools import cache
from typing import Any

from simcluster.settings.cluster import CLUSTER, ClusterOptions
from simcluster.settings.colocation import SHARING, ColocationOptions
from simcluster.settings.deadlines import DEADLINES, DeadlineOptions, deadline_range
from simcluster.settings.elastic import ELASTIC, ElasticOptions
from simcluster.settings.estimates import ESTIMATES, EstimateOptions
from simcluster.settings.fields import (
    POLICY_SETTINGS,
    PROVENANCE,
    ConfigError,
    base_type,
    check_range,
    coerce,
    default_of,
    did_you_mean,
    setting,
)
from simcluster.settings.gavel import GAVEL, GavelOptions
from simcluster.settings.gpu_types import GPU_TYPES, GpuTypeOptions
from simcluster.settings.lucid import LUCID, LucidOptions
from simcluster.settings.preemption import PREEMPTION, PreemptionOptions
from simcluster.settings.reliability import MAX_COST_S, RELIABILITY, ReliabilityOptions, exclusion_rule
from simcluster.settings.run import POLICY, RunOptions
from simcluster.settings.spot import SPOT, SpotOptions
from simcluster.settings.tiers import TIERS, TierOptions
from simcluster.settings.tiresias import TIRESIAS, TiresiasOptions
from simcluster.settings.topology import TOPOLOGY, TopologyOptions

__all__ = [
    "CLUSTER", "DEADLINES", "ELASTIC", "ESTIMATES", "GAVEL", "GPU_TYPES", "LUCID", "MAX_COST_S", "POLICY",
    "POLICY_SETTINGS", "PREEMPTION", "PROVENANCE", "RELIABILITY", "SHARING", "SPOT", "TIERS", "TIRESIAS", "TOPOLOGY", "ConfigError", "SimConfig",
    "base_type", "coerce", "config_fields", "deadline_range", "default_of", "exclusion_rule", "knobs", "setting",
    "settings_pairs",
]

# The groups in the order their fields are listed (summary.json's config, `--help`).  A dataclass lists the fields
# of its bases from its last base to its first, so SimConfig names them in the reverse order.
GROUPS = (RunOptions, ClusterOptions, ReliabilityOptions, PreemptionOptions, TiresiasOptions, EstimateOptions,
          ColocationOptions, GpuTypeOptions, GavelOptions, LucidOptions, DeadlineOptions, ElasticOptions,
          TopologyOptions, TierOptions, SpotOptions)


@dataclass(frozen=True)
class SimConfig(SpotOptions, TierOptions, TopologyOptions, ElasticOptions, DeadlineOptions, LucidOptions, GavelOptions,
                GpuTypeOptions, ColocationOptions, EstimateOptions, TiresiasOptions, PreemptionOptions,
                ReliabilityOptions, ClusterOptions, RunOptions):
    """Every setting of ``lucid-sim run``, by its option's name with ``_`` (``--node-mtbf`` is ``node_mtbf``).

    ``policy`` and ``placement`` may also be classes (the Python API: ``SimConfig(policy=MyPolicy)``); resolving
    the run (:func:`simcluster.run.resolve_run`) names them by the spec that loads them again in another process.

    >>> config = SimConfig(policy="tiresias", quantum=60)
    >>> config.policy, config.quantum, config.gpus_per_node
    ('tiresias', 60, 8)
    """

    # the policy's own settings, as (name, value) pairs sorted by name; the policy's Settings dataclass says
    # which exist and checks them (simcluster.policies.base.policy_settings)
    policy_settings: tuple[tuple[str, Any], ...] = setting(
        (), "The policy's own settings (`lucid-sim policies NAME` lists them): --set NAME=VALUE, or a [policy] "
        "table in a config file.", POLICY_SETTINGS)

    # where these settings came from (recorded in summary.json; set by --preset/--config, not a knob)
    preset: str | None = setting(None, "The preset the settings started from.", PROVENANCE)
    config_file: str | None = setting(None, "The config file the settings were read from.", PROVENANCE)

    def __post_init__(self) -> None:
        given = self.policy_settings
        if not isinstance(given, tuple) or any(not isinstance(p, tuple) for p in given):
            object.__setattr__(self, "policy_settings", settings_pairs(given))

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
        simcluster.settings.fields.ConfigError: run.toml: unknown setting 'quantm' (did you mean 'quantum'?)
        """
        by_name = knobs()
        values = {}
        for key, value in settings.items():
            if key == "policy_settings":
                values[key] = settings_pairs(value, where)
                continue
            if key not in by_name:
                raise ConfigError(f"{where}: unknown setting {key!r}{did_you_mean(key, by_name)}")
            values[key] = coerce(by_name[key], value, where)
        made = cls(**{**(base.as_dict() if base else {}), **values})
        made.check(where, only=values)
        return made

    def check(self, where: str = "settings", only: Mapping[str, Any] | None = None) -> None:
        """Raise :class:`ConfigError` for a value outside the range its field admits."""
        for name, f in config_fields().items():
            if only is not None and name not in only:
                continue
            check_range(f, getattr(self, name), where)


def knobs() -> dict[str, Field]:
    """The fields a user sets by name, each an option of `lucid-sim run` (every field but the provenance ones and
    the policy's own settings)."""
    return {name: f for name, f in config_fields().items() if f.metadata["panel"] not in (PROVENANCE, POLICY_SETTINGS)}


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


