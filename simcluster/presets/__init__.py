"""Named configurations shipped with simcluster, and config files a user writes.

Both are TOML files whose top-level keys are :class:`~simcluster.config.SimConfig` fields (same names
as ``lucid-sim run``'s options, with ``_``).  A ``[policy]`` table names the policy (``name = "las2.py"``,
instead of a top-level ``policy = ...``) and holds its own settings (those ``--set NAME=VALUE`` sets)::

    [policy]
    name = "examples/policies/las2.py"
    threshold = 7200  A preset also carries a ``[preset]`` table saying what
it reproduces and where that comes from; a config file may name a preset to build on
(``preset = "gavel"``).  Settings apply in this order, each overriding the one before: the defaults,
the preset, the config file, the command line (:func:`resolve_config`).

A new preset is one ``NAME.toml`` file in this folder.

>>> config = resolve_config(preset="lucid-artifact", overrides={"seed": 3})
>>> config.policy, config.preset, config.seed
('lucid', 'lucid-artifact', 3)
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from simcluster.config import ConfigError, SimConfig, settings_pairs

FOLDER = Path(__file__).resolve().parent
ABOUT = ("description", "reproduces", "source")  # the keys of a preset's [preset] table


@dataclass(frozen=True)
class Preset:
    name: str
    description: str  # one line: what the preset sets up
    reproduces: str  # the published figures or behaviour it reproduces
    source: str  # where that comes from (paper, artifact and its files)
    settings: Mapping[str, Any]
    path: Path


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a folder, not a config file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


@cache
def presets() -> dict[str, Preset]:
    """Every shipped preset by name (the file name without ``.toml``), sorted."""
    found = {}
    for path in sorted(FOLDER.glob("*.toml")):
        data = policy_table(read_toml(path), path)
        about = data.pop("preset", None)
        if not isinstance(about, dict) or set(about) != set(ABOUT):
            raise ConfigError(f"{path}: a preset needs a [preset] table with exactly {', '.join(ABOUT)}")
        SimConfig.from_settings(data, str(path))  # a shipped preset must itself be valid
        found[path.stem] = Preset(path.stem, **{k: str(about[k]) for k in ABOUT}, settings=data, path=path)
    return found


def get_preset(name: str) -> Preset:
    known = presets()
    if name not in known:
        raise ConfigError(f"unknown preset {name!r}; `lucid-sim presets` lists them: {', '.join(known)}")
    return known[name]


def read_config_file(path: str | Path) -> tuple[str | None, dict[str, Any]]:
    """(the preset it builds on, its settings) — settings checked only for their names here."""
    path = Path(path)
    data = read_toml(path)
    preset = data.pop("preset", None)
    if preset is not None and not isinstance(preset, str):
        raise ConfigError(f"{path}: key 'preset' must be a preset's name, got {preset!r}")
    data = policy_table(data, path)
    for key, value in data.items():
        if isinstance(value, dict) and key != "policy_settings":
            raise ConfigError(f"{path}: key {key!r}: tables are not settings (but [policy], the policy's name and "
                              "its own settings); write the settings as top-level keys")
    return preset, data


def policy_table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """A file's ``[policy]`` table read into ``policy`` (its ``name``) and ``policy_settings`` (the rest)."""
    table = data.get("policy")
    if not isinstance(table, dict):
        return data
    data = dict(data)
    own = dict(table)
    name = own.pop("name", None)
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"{path}: [policy] name must be the policy's name or file, got {name!r}")
    del data["policy"]
    if name is not None:
        data["policy"] = name
    data["policy_settings"] = own
    return data


def resolve_config(preset: str | None = None, config_file: str | Path | None = None,
                   overrides: Mapping[str, Any] | None = None, where: str = "command line",
                   policy_settings: Mapping[str, Any] | None = None) -> SimConfig:
    """The defaults, then ``preset``, then ``config_file``, then ``overrides`` (each a SimConfig field → value).
    The policy's own settings (``policy_settings``: ``--set``) merge over those of the preset and the file, name
    by name; they are checked once the policy is known (:func:`simcluster.plugins.resolved_config`)."""
    file_settings: dict[str, Any] = {}
    if config_file is not None:
        named, file_settings = read_config_file(config_file)
        if preset is None:
            preset = named
    config = SimConfig()
    if preset is not None:
        found = get_preset(preset)
        config = SimConfig.from_settings(found.settings, str(found.path))
    if file_settings:
        config = SimConfig.from_settings(file_settings, str(config_file), base=config)
    if overrides:
        config = SimConfig.from_settings(overrides, where, base=config)
    if policy_settings:
        config = replace(config, policy_settings=settings_pairs({**dict(config.policy_settings), **policy_settings}))
    return replace(config, preset=preset, config_file=str(config_file) if config_file is not None else None)
