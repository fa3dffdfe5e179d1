"""Sweeps: the cross product of traces × policies × seeds × settings, run on a backend.

Each run writes the standard run folder (:func:`simcluster.results.write_run`) to
``OUT/runs/<run-id>/``, and the sweep keeps ``OUT/runs.csv`` (one row per run:
its parameters, ``status`` ok/failed, ``error``, the summary figures and
``notes``) up to date, written atomically.  A run is finished when its folder's
``summary.json`` records the run's identity (:meth:`RunSpec.identity`: trace,
VC config, every setting, table format): running the same sweep again skips it
(resume), and one whose settings or format changed is run again.  A failed run
— it raises, or its cell of the grid combines settings that its policy refuses —
is recorded with its error (``runs.csv`` and ``OUT/failed/<run-id>.txt``) and
never stops the others; an interrupted sweep leaves every finished run intact
and no half-written file.

Every path a run reads (traces, VC config, estimates, colocation and throughput
tables, a node list) is made absolute here, before it travels to a worker that
may run in another directory or on another machine (:func:`absolute_paths`).

A run whose policy keeps its state per VC may be split by VC
(:mod:`simcluster.experiments.split`).

>>> specs = build_grid(["synth:jobs=20,nodes=2,vcs=2,seed=1"], ["fifo", "sjf"], [0], parse_sets(["quantum=30"]))
>>> [s.run_id for s in specs]
['synth-jobs20-nodes2-vcs2-seed1-fifo-seed0-quantum=30', 'synth-jobs20-nodes2-vcs2-seed1-sjf-seed0-quantum=30']
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from simcluster.api import simulate
from simcluster.atomic import atomic_write
from simcluster.config import ConfigError, SimConfig, coerce, knobs, settings_pairs
from simcluster.estimators import ESTIMATORS
from simcluster.experiments.backends import make_backend
from simcluster.experiments.notes import annotate, ignored_setting_notes, seed_notes
from simcluster.experiments.replicas import (
    PerturbationError,
    parse_perturbation,
    perturb_trace,
    replica_config,
    replica_seed,
)
from simcluster.experiments.runs import (
    FIGURES,
    RELIABILITY_FIGURES,
    SYNTH_PREFIX,
    TIMING_COLUMNS,
    RunSpec,
    SweepError,
    cpu_count,
    failed_row,
    load_trace_arg,
    ok_row,
    refused_row,
    synth_spec,
    with_identity,
)
from simcluster.experiments.split import Part, execute_part, merge_parts, splittable, vcs_of
from simcluster.limits import MAX_BLOCKS, MAX_REPLICAS, MAX_RUNS
from simcluster.paths import resolve_data
from simcluster.plugins import (
    PluginError,
    absolute_spec,
    display_name,
    resolve,
    resolve_policy,
    resolved_config,
)
from simcluster.policies.base import settings_fields
from simcluster.registry import UnknownPlugin
from simcluster.results import FORMATS, OutputError, check_writable, write_run
from simcluster.traces import TraceError
from simcluster.traces.synth import synthesize

__all__ = ["FIGURES", "TIMING_COLUMNS", "RunSpec", "SweepError", "build_grid", "cpu_count", "parse_sets", "read_runs",
           "run_sweep"]  # RunSpec, SweepError, FIGURES...: at home in .runs, named here too for the callers

FIXED_SETTINGS = {"policy": "--policy", "seed": "--seed"}
RUN_COLUMNS = ("run_id", "trace", "policy", "placement", "seed")  # a --set key of these names shares the column
# settings whose value names a file or folder (besides these keywords), made absolute for the workers
PATH_SETTINGS = {"estimates": (), "colocation": ("default", "lucid"), "throughputs": (), "throughput_history": (),
                 "cluster": ()}
SPLIT_MODES = ("auto", "always", "never")
Cell = tuple[frozenset[tuple[Any, ...]], BaseException | None]  # a cell of the grid: what it chose, its refusal


# --- the grid ------------------------------------------------------------------------------------

def split_list(text: str, what: str) -> list[str]:
    items = [v.strip() for v in text.split(",") if v.strip()]
    if not items:
        raise SweepError(f"{what}: expected a comma-separated list, got {text!r}")
    return items


def split_values(text: str, what: str) -> list[str]:
    """A ``--set`` key's values: comma-separated, or, where a value is itself a list of ``key=value`` pairs (a
    fault model, ``faults=mtbf=1d,repair=9h``; a log's ``fault_columns``), separated by ``;``.  A rate model
    cannot be swept pair by pair: each value is one whole model.

    >>> split_values("60,120", "--set quantum"), split_values("mtbf=1d,repair=9h", "--set faults")
    (['60', '120'], ['mtbf=1d,repair=9h'])
    >>> split_values("mtbf=1d,repair=9h; mtbf=2d,repair=9h", "--set faults")
    ['mtbf=1d,repair=9h', 'mtbf=2d,repair=9h']
    """
    if "=" not in text:
        return split_list(text, what)
    items = [v.strip() for v in text.split(";") if v.strip()]
    if not items:
        raise SweepError(f"{what}: expected values separated by ';', got {text!r}")
    for item in items:
        keys = [pair.partition("=")[0].strip() for pair in item.split(",") if "=" in pair]
        twice = next((key for i, key in enumerate(keys) if key in keys[:i]), None)
        if twice is not None:
            raise SweepError(f"{what}: {twice!r} is given twice in {item!r}; a value of key=value pairs is one "
                             f"value, several are separated by ';' ({what.removeprefix('--set ')}="
                             f"{twice}=…,…;{twice}=…,…)")
    return items


def parse_seeds(text: str) -> list[int]:
    try:
        return [int(v) for v in split_list(text, "--seed")]
    except ValueError:
        raise SweepError(f"--seed: expected integers separated by commas, got {text!r}") from None


class ParsedSets(dict[str, list[tuple[str, Any]]]):
    """``--set`` values as the command line gave them: name → [(text, value)] (:func:`parse_sets`)."""


def parse_sets(items: Iterable[str]) -> dict[str, list[tuple[str, Any]]]:
    """``["quantum=60,120", …]`` → {"quantum": [("60", 60.0), ("120", 120.0)]}: SimConfig fields, typed.

    Values are converted to the field's type as a config file's would be
    (:func:`simcluster.config.coerce`); a tuple field (``thresholds``) takes
    its elements separated by ``/`` (``thresholds=3600/7200,18000``).  A value that is itself a list of
    ``key=value`` pairs, a fault model, is one value; several are separated by ``;``
    (``faults=mtbf=1d,repair=9h;mtbf=2d,repair=9h``: :func:`split_values`).  A key that is no SimConfig field
    may be a policy's own setting: its values stay as given (``build_grid`` gives them to the policies that
    declare it, whose Settings type them).

    >>> parse_sets(["faults=mtbf=1d,repair=9h"])
    {'faults': [('mtbf=1d,repair=9h', 'mtbf=1d,repair=9h')]}
    """
    by_name = knobs()
    valid = [k for k in by_name if k not in FIXED_SETTINGS]
    sets: dict[str, list[tuple[str, Any]]] = ParsedSets()
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SweepError(f"--set {item!r}: expected key=value[,value…]")
        if key in FIXED_SETTINGS:
            raise SweepError(f"--set {key}=…: use {FIXED_SETTINGS[key]} for the {key}")
        if key in sets:
            raise SweepError(f"--set {key}: given twice")
        if key not in by_name:
            if not key.isidentifier():
                raise SweepError(f"--set {item!r}: unknown setting {key!r}; valid keys: {', '.join(valid)}")
            sets[key] = [(raw, raw) for raw in split_values(values, f"--set {key}")]  # a policy's own, maybe
            continue
        try:
            sets[key] = [(raw, coerce(by_name[key], raw, f"--set {key}"))
                         for raw in split_values(values, f"--set {key}")]
        except ConfigError as exc:
            raise SweepError(str(exc)) from None
        if key == "faults":
            check_rate_models([raw for raw, _ in sets[key]])
    return sets


def check_rate_models(values: Sequence[str]) -> None:
    """Refuse a ``--set faults`` rate model that every run would refuse (``mtbf=1d,shape=0.006``) before the
    sweep starts, in the words ``run`` uses; a log or a fitted model is read by each run.

    >>> check_rate_models(["mtbf=1d,shape=0.006"])
    Traceback (most recent call last):
    ...
    simcluster.experiments.runs.SweepError: --set faults=mtbf=1d,shape=0.006: --faults shape must be from 0.1 to 100 (the Weibull shape of the times between failures: 1 exponential, below 1 clustered; below 0.1 a run's faults swing from none to several times their mean), got '0.006'
    """
    from simcluster.faults.spec import failure_model, is_rate_spec

    for value in values:
        if is_rate_spec(value):
            try:
                failure_model(value)
            except ValueError as exc:
                raise SweepError(f"--set faults={value}: {exc}") from None


def build_grid(traces: Sequence[str], policies: Sequence[str | type], seeds: Sequence[int],
               sets: Mapping[str, Any] | None = None, fmt: str = "csv",
               base: SimConfig | None = None, vc_config: str | Path | None = None, replicas: int = 0,
               perturb: str | None = None, trace_options: dict[str, Any] | None = None) -> list[RunSpec]:
    """Every combination, in the order traces × policies × seeds × settings (as given) × replicas, each built
    on ``base`` (a preset's or config file's settings; default: the defaults).  ``vc_config`` applies to
    every trace that is not synthetic (needed for a trace given as a CSV file without a vc_config.csv
    beside it).  ``replicas`` > 0 runs each combination on that many replicas of its trace made by
    ``perturb`` (:mod:`simcluster.experiments.replicas`); ``trace_options`` are the loader's.  Paths are
    made absolute (relative to the current directory).  A value that every cell having it refuses is a
    :class:`SweepError`; a cell refused while each of its values is taken elsewhere is kept, its
    :attr:`RunSpec.refused` saying why, and :func:`run_sweep` records it as a failed run
    (:func:`_stop_on_bad_values`).

    ``policies`` are what ``--policy`` takes (a built-in name, a file, module:Class, an installed plug-in's
    name) or policy classes; ``sets`` maps a setting (a run setting or a policy's own) to a value or a list of
    values, as Python gives them — or :func:`parse_sets`'s output, as ``--set`` gives them.  Two plug-ins of one
    name are an error (tables name a plug-in by its ``name``).

    >>> [spec.run_id for spec in build_grid(["synth:jobs=10,nodes=2,vcs=1"], ["fifo"], [0, 1])]
    ['synth-jobs10-nodes2-vcs1-fifo-seed0', 'synth-jobs10-nodes2-vcs1-fifo-seed1']
    >>> from simcluster.sdk import Policy
    >>> class Newest(Policy):
    ...     name = "newest"  # (tables and run ids name it so)
    ...     def pending_key(self, job):
    ...         return -job.submit_time
    >>> specs = build_grid(["synth:jobs=10,nodes=2,vcs=1"], [Newest, "srtf"], [0],
    ...                    sets={"quantum": [60, 120], "preempt_overhead_small": 5})
    >>> [spec.run_id for spec in specs][:2]
    ['synth-jobs10-nodes2-vcs1-newest-seed0-quantum=60-preempt_overhead_small=5', 'synth-jobs10-nodes2-vcs1-newest-seed0-quantum=120-preempt_overhead_small=5']
    >>> build_grid(["synth:jobs=10,nodes=2,vcs=1"], ["fifo"], [0], sets={"quantm": 60})
    Traceback (most recent call last):
    ...
    simcluster.experiments.runs.SweepError: sets['quantm']: unknown setting 'quantm': no run setting, and no policy of this sweep (fifo) declares it; valid keys: ...
    """
    python = not isinstance(sets, ParsedSets)  # from Python: errors say sets[...] and policies[...], not --set
    flag = "sets" if python else "--set"
    policies = _policy_specs(policies)
    sets = _typed_sets(sets) if python and sets is not None else sets
    if fmt not in FORMATS:
        raise SweepError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    try:
        made = parse_perturbation(perturb or "bootstrap") if replicas or perturb is not None else None
    except PerturbationError as exc:
        raise SweepError(str(exc)) from None
    if replicas < 0 or (perturb is not None and not replicas):
        raise SweepError(f"--perturb needs --replicas N (N ≥ 1): without replicas --perturb {perturb} perturbs nothing"
                         if replicas >= 0 else "--replicas must be ≥ 0")
    if replicas > MAX_REPLICAS:
        raise SweepError(f"--replicas must be at most {MAX_REPLICAS:,} (200 already steady a 95 % interval's ends), "
                         f"got {replicas:,}")
    grid = len(traces) * len(policies) * len(seeds) * math.prod(len(v) for v in (sets or {}).values())
    if grid * max(replicas, 1) > MAX_RUNS:
        raise SweepError(f"the sweep would have {grid * max(replicas, 1):,} runs, more than the limit of {MAX_RUNS:,}; "
                         "split it into several sweeps")
    options = tuple(sorted((k, v) for k, v in (trace_options or {}).items() if v is not None))
    sets = sets or {}
    vcs = None
    if vc_config is not None:
        vcs = str(Path(vc_config).expanduser().resolve())
        if not Path(vcs).is_file():
            raise SweepError(f"--vc-config {vc_config}: no such file")
    traces = [t if t.startswith(SYNTH_PREFIX) else str(resolve_data(t).resolve()) for t in traces]
    names = _trace_names(traces)
    own = own_setting_keys(policies, sets, flag)
    _one_policy_per_name(policies)
    specs: list[RunSpec] = []
    cells: list[Cell] = []
    for trace, name in zip(traces, names):
        for policy in policies:
            label = _policy_label(policy)
            combos: list[list[tuple[str, str, Any]]] = [[]]
            for key, values in sets.items():
                if key in knobs() or key in own[policy]:  # a policy's own setting: for the policies declaring it
                    combos = [c + [(key, raw, value)] for c in combos for raw, value in values]
            for seed in seeds:
                for combo in combos:
                    refused: BaseException | None = None
                    try:
                        config = _cell_config(policy, seed, combo, flag, base)
                    except (UnknownPlugin, ValueError, TypeError) as exc:  # (SweepError, ConfigError: ValueErrors)
                        refused, config = exc, _placeholder_config(policy, seed, combo, base)
                    chosen = {("policy", policy), ("seed", seed), *((k, raw) for k, raw, _ in combo)}
                    cells.append((frozenset(chosen), refused))
                    suffix = "".join(f"-{k}={raw}" for k, raw, _ in combo)
                    run_id = _safe_id(f"{name}-{label}-seed{seed}{suffix}")
                    spec = RunSpec(run_id, trace, name, config, tuple((k, raw) for k, raw, _ in combo), fmt,
                                   None if trace.startswith(SYNTH_PREFIX) else vcs, trace_options=options,
                                   refused=None if refused is None else f"{type(refused).__name__}: {refused}")
                    if made is None:
                        specs.append(spec)
                        continue
                    specs.extend(replace(spec, run_id=_safe_id(f"{run_id}-{made.kind}{i}"), replica=i,
                                         perturb=perturb or made.kind) for i in range(replicas))
    _stop_on_bad_values(cells)
    seen: set[str] = set()
    for spec in specs:
        if spec.run_id in seen:
            raise SweepError(f"two runs would share the folder {spec.run_id!r}: a value is given twice?")
        seen.add(spec.run_id)
    return specs


def _cell_config(policy: str, seed: int, combo: Sequence[tuple[str, str, Any]], flag: str,
                 base: SimConfig | None) -> SimConfig:
    """The resolved settings of one cell of the grid: ``base`` with its policy, seed and ``--set`` values (a
    ValueError, TypeError or UnknownPlugin when they are refused)."""
    given_knobs = {k: v for k, _, v in combo if k in knobs()}
    config = SimConfig.from_settings({"policy": policy, "seed": seed, **given_knobs}, flag, base=base)
    given = {k: v for k, _, v in combo if k not in knobs()}
    if given:
        config = replace(config, policy_settings=settings_pairs({**dict(config.policy_settings), **given}))
    config = resolved_config(absolute_paths(config))
    if config.estimator != "auto":  # auto: the policy picks its own
        ESTIMATORS.get(config.estimator)
    return config


def _placeholder_config(policy: str, seed: int, combo: Sequence[tuple[str, str, Any]],
                        base: SimConfig | None) -> SimConfig:
    """What a refused cell's runs.csv row shows (policy, placement, seed); never simulated, never checked."""
    given_knobs = {k: v for k, _, v in combo if k in knobs()}
    return replace(base or SimConfig(), **{"policy": policy, "seed": seed, **given_knobs})


def _stop_on_bad_values(cells: Sequence[Cell]) -> None:
    """A policy, seed or ``--set`` value that every cell having it refuses is bad input: :class:`SweepError`,
    and nothing runs.  A cell refused while each of its values is accepted in another cell is a combination
    that fails (``--set overheads=none,elasticflow`` for tiresias, which takes both, and elasticflow, which takes
    only none): it is recorded as a failed run and the others go on.

    >>> from simcluster.config import ConfigError
    >>> _stop_on_bad_values([(frozenset({("policy", "a"), ("q", "1")}), None),
    ...                      (frozenset({("policy", "b"), ("q", "1")}), ConfigError("b refuses q=1")),
    ...                      (frozenset({("policy", "b"), ("q", "2")}), None)])
    >>> _stop_on_bad_values([(frozenset({("policy", "a"), ("q", "1")}), None),
    ...                      (frozenset({("policy", "a"), ("q", "-5")}), ConfigError("q must be > 0, got -5"))
    ...                      ])
    Traceback (most recent call last):
    ...
    simcluster.experiments.runs.SweepError: q must be > 0, got -5
    """
    accepted: set[tuple[Any, ...]] = set()
    for chosen, refused in cells:
        if refused is None:
            accepted |= chosen
    for chosen, refused in cells:
        if refused is not None and not chosen <= accepted:
            raise SweepError(str(refused)) from None


def _policy_specs(policies: Sequence[str | type]) -> list[str]:
    """The sweep's policies as specs: a class as :func:`~simcluster.plugins.absolute_spec` names it (a class
    defined in a file: the file and the class, which the workers load)."""
    if isinstance(policies, (str, type)):
        policies = [policies]
    found = []
    for i, policy in enumerate(policies):
        if isinstance(policy, type):
            try:
                found.append(absolute_spec(policy))
            except PluginError as exc:
                raise SweepError(f"policies[{i}]: {exc}") from None
        elif isinstance(policy, str) and policy.strip():
            found.append(policy.strip())
        else:
            raise SweepError(f"policies[{i}]: give a policy's name, a file (path/to/file.py[:Class]), "
                             f"module:Class or a policy class; got {policy!r}")
    return found


def _typed_sets(sets: Mapping[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    """``{"quantum": [60, 120], "max_wait": 3600}`` (a value or a list of values per setting, as Python gives
    them) → :func:`parse_sets`'s form; a run setting's values typed and checked, with errors that name
    ``sets[...]``."""
    if not isinstance(sets, Mapping):
        raise SweepError(f"sets: give a dict of setting → value or list of values, got {type(sets).__name__}")
    by_name = knobs()
    typed: dict[str, list[tuple[str, Any]]] = {}
    for key, given in sets.items():
        where = f"sets[{key!r}]"
        if not isinstance(key, str) or not key.isidentifier():
            raise SweepError(f"{where}: a setting's name is a Python identifier (quantum, max_wait, ...)")
        if key in FIXED_SETTINGS:
            raise SweepError(f"{where}: give the {key}s as build_grid's {key}s argument, not in sets")
        values = list(given) if isinstance(given, (list, range)) else [given]
        if not values:
            raise SweepError(f"{where}: an empty list; give a value or a list of values")
        made = []
        for value in values:
            text = value if isinstance(value, str) else (
                "/".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
                if isinstance(value, tuple) else (f"{value:g}" if isinstance(value, float) else str(value)))
            if key in by_name:
                try:
                    value = coerce(by_name[key], value, where)
                except ConfigError as exc:
                    raise SweepError(str(exc)) from None
            made.append((text, value))
        texts = [t for t, _ in made]
        if len(set(texts)) != len(texts):
            raise SweepError(f"{where}: a value is given twice: {given!r}")
        typed[key] = made
    return typed


def _one_policy_per_name(policies: Sequence[str]) -> None:
    """Tables name a plug-in by its declared ``name``: two policies of one name in a sweep are an error."""
    seen: dict[str, str] = {}
    for policy in policies:
        label = _policy_label(policy)
        try:
            _, origin = resolve(policy, "policy")
            where = f"the built-in {label}" if origin.source == "built-in" else origin.spec
        except PluginError:
            where = policy
        if label in seen and seen[label] != where:
            raise SweepError(f"two policies of this sweep are named {label!r}: {seen[label]} and {where}; tables "
                             "name a plug-in by its `name` — give one of them another name")
        seen[label] = where


def own_setting_keys(policies: Sequence[str], sets: Mapping[str, Any], flag: str = "--set") -> dict[str, set[str]]:
    """Per policy, the ``--set`` keys that are its own settings (no SimConfig field of that name); a key that no
    policy of the sweep declares is an error."""
    unknown = [k for k in sets if k not in knobs()]
    found: dict[str, set[str]] = {}
    for policy in policies:
        try:
            declared = settings_fields(resolve_policy(policy)) if unknown else {}
        except PluginError as exc:
            raise SweepError(str(exc)) from None
        found[policy] = {k for k in unknown if k in declared}
    for key in unknown:
        if not any(key in keys for keys in found.values()):
            valid = [k for k in knobs() if k not in FIXED_SETTINGS]
            named = f"--set {key}=…" if flag == "--set" else f"{flag}[{key!r}]"
            raise SweepError(f"{named}: unknown setting {key!r}: no run setting, and no policy of this sweep "
                             f"({', '.join(map(_policy_label, policies))}) declares it; valid keys: {', '.join(valid)}")
    return found


def _policy_label(policy: str) -> str:
    """How a run id names a policy: a built-in's name, a plug-in's name or class."""
    try:
        return display_name(policy)
    except PluginError:
        return policy


def _safe_id(text: str) -> str:
    """A folder name: unsafe characters replaced; a long one cut, with a digest of the whole (the same
    in every process and Python version: sweeps resume by it).

    >>> _safe_id("venus-fifo-seed0-estimates=/a b/c.csv")
    'venus-fifo-seed0-estimates=_a_b_c.csv'
    >>> len(_safe_id("x" * 400)), _safe_id("x" * 400) == _safe_id("x" * 400)
    (139, True)
    """
    safe = re.sub(r"[^A-Za-z0-9._=,+-]+", "_", text)
    if len(safe) > 150:
        safe = f"{safe[:130]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
    return safe


def absolute_paths(config: SimConfig) -> SimConfig:
    """``config`` with every path-valued setting (:data:`PATH_SETTINGS`) made absolute.

    A value that names no existing file or folder is left as it is when it may be something else
    (a colocation keyword, a cluster spec such as ``v100:4``); for the settings that only ever
    name a file, a missing one is an error now rather than in every worker.
    """
    changes: dict[str, Any] = {}
    for name, keywords in PATH_SETTINGS.items():
        value = getattr(config, name)
        if not value or value in keywords:
            continue
        path = Path(value).expanduser()
        if path.exists():
            changes[name] = str(path.resolve())
        elif not keywords and name != "cluster":
            raise SweepError(f"setting {name!r}: {value}: no such file or directory")
    return replace(config, **changes) if changes else config


def _trace_names(traces: Sequence[str]) -> list[str]:
    names = []
    for t in traces:
        if t.startswith(SYNTH_PREFIX):
            body = t[len(SYNTH_PREFIX):].replace("=", "").replace(",", "-")
            names.append(f"synth-{body}" if body else "synth")
        else:
            path = Path(t).resolve()
            names.append(path.name.removesuffix(".csv"))
    for i, name in enumerate(names):  # folders of the same name: add the parent's, then a number
        if names.count(name) > 1 and not traces[i].startswith(SYNTH_PREFIX):
            names[i] = f"{Path(traces[i]).resolve().parent.name}-{name}"
    counts: dict[str, int] = {}
    for i, name in enumerate(names):
        counts[name] = counts.get(name, 0) + 1
        if names.count(name) > 1:
            names[i] = f"{name}-{counts[name]}"
    return [_safe_id(n) for n in names]


def check_traces(specs: Sequence[RunSpec]) -> None:
    """Load every distinct trace once in this process, so bad input stops the sweep before it starts (a
    trace too long for its replicas' bootstrap blocks too)."""
    perturbs: dict[str, set[str]] = {}
    for s in specs:
        if s.perturb is not None:
            perturbs.setdefault(s.trace, set()).add(s.perturb)
    for trace, gpn, vcs, options in dict.fromkeys((s.trace, s.config.gpus_per_node, s.vc_config, s.trace_options)
                                                  for s in specs):
        try:
            if trace.startswith(SYNTH_PREFIX):
                synth_spec(trace, gpn)
                continue
            loaded = load_trace_arg(trace, gpn, vcs, options)
            for text in perturbs.get(trace, ()):
                made = parse_perturbation(text)
                if made.kind == "bootstrap" and made.by == "day" and len(loaded.frame):
                    submit = loaded.frame["submit_time"]
                    blocks = (float(submit.max()) - float(submit.min()) // made.block * made.block) // made.block + 1
                    if blocks > MAX_BLOCKS:
                        raise SweepError(f"{trace}: spans {blocks:,.0f} blocks of {made.block:g} s, more than the "
                                         f"limit of {MAX_BLOCKS:,} a replica draws; give a longer block "
                                         "(--perturb bootstrap:block=SECONDS)")
        except (TraceError, ValueError) as exc:
            raise SweepError(str(exc)) from None


# --- executing one run (in a worker) ----------------------------------------------------------------

_IN_WORKER = False  # set in a process that executes a sweep's runs: a sweep started there is a mistake


def execute_run(spec: RunSpec, out: str) -> dict[str, Any]:
    """Simulate one run and write its folder under ``out/runs``; return its runs.csv row (never raises)."""
    global _IN_WORKER
    _IN_WORKER = True
    t0 = time.perf_counter()
    try:
        trace, config = run_inputs(spec)
        result = simulate(trace, config)
        summary = with_identity(spec, result.summary)
        write_run(Path(out) / "runs" / spec.run_id, result.tables(), summary, spec.fmt)
    except Exception as exc:  # noqa: BLE001 — a failed run is recorded, never fatal to the sweep
        return failed_row(spec, exc, Path(out), time.perf_counter() - t0)
    return ok_row(spec, summary, time.perf_counter() - t0)


def run_inputs(spec: RunSpec) -> tuple[Any, SimConfig]:
    """The trace and settings a run simulates: its replica's, when it is one."""
    if spec.replica is None or spec.perturb is None:
        return load_trace_arg(spec.trace, spec.config.gpus_per_node, spec.vc_config, spec.trace_options), spec.config
    made = parse_perturbation(spec.perturb)
    if made.kind == "seeds" and spec.trace.startswith(SYNTH_PREFIX):  # a synthetic trace of its own seed
        synth = synth_spec(spec.trace, spec.config.gpus_per_node)
        trace: Any = synthesize(replace(synth, seed=replica_seed(synth.seed, spec.replica)))
    else:
        trace = load_trace_arg(spec.trace, spec.config.gpus_per_node, spec.vc_config, spec.trace_options)
    return (perturb_trace(trace, made, spec.replica, spec.config.seed),
            replica_config(spec.config, made, spec.replica))


def finished_row(spec: RunSpec, out: Path) -> dict[str, Any] | None:
    """The row of a run finished by an earlier sweep with this very identity, else None (run it)."""
    folder = out / "runs" / spec.run_id
    path = folder / "summary.json"
    if not path.is_file() or not (folder / f"jobs.{spec.fmt}").is_file():
        return None
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # unreadable: run it again
    if not isinstance(summary, dict) or (summary.get("sweep_run") or {}).get("identity") != spec.identity():
        return None  # another trace, settings or format than this sweep's (or from before identities)
    return ok_row(spec, summary, None)


# --- runs.csv ----------------------------------------------------------------------------------------

class RunsTable:
    """The rows of ``runs.csv`` (sorted by run id), rewritten atomically at most every ``every`` seconds."""

    def __init__(self, path: Path, param_keys: Sequence[str], every: float = 2.0, reliability: bool = False) -> None:
        self.path, self.every = path, every
        extra = [k for k in param_keys if k not in RUN_COLUMNS]  # --set placement=… fills the placement column
        ettr = RELIABILITY_FIGURES if reliability else ()  # (a sweep with a run given a reliability option)
        self.columns = [*RUN_COLUMNS, *extra, "status", "error", *FIGURES, *ettr, *TIMING_COLUMNS, "notes"]
        self.rows: dict[str, dict[str, Any]] = {}
        self._written = 0.0
        self._dirty = False

    def add(self, row: dict[str, Any]) -> None:
        self.rows[row["run_id"]] = row
        self._dirty = True
        if time.monotonic() - self._written >= self.every:
            self.flush()

    def flush(self, force: bool = False) -> None:
        if not (force or self._dirty) and self.path.exists():
            return
        frame = pd.DataFrame([self.rows[k] for k in sorted(self.rows)], columns=self.columns)
        buffer = io.StringIO()
        frame.to_csv(buffer, index=False)
        data = buffer.getvalue().encode()
        atomic_write(self.path, lambda f: f.write(data))
        self._written, self._dirty = time.monotonic(), False


def read_runs(path: Path) -> pd.DataFrame:
    """``runs.csv`` as a frame (the error column as text)."""
    return pd.read_csv(path, dtype={"error": str, "run_id": str, "trace": str, "notes": str},
                       keep_default_na=False, na_values=[""])


# --- the sweep ---------------------------------------------------------------------------------------

class SweepListener:
    """What a progress display learns about a sweep; every hook is a no-op by default."""

    def sweep_started(self, total: int, skipped: int, workers: int, backend: str) -> None: ...
    def run_started(self, spec: RunSpec) -> None: ...
    def run_finished(self, row: dict[str, Any]) -> None: ...


@dataclass
class SweepOutcome:
    rows: list[dict[str, Any]]  # every run of the grid, sorted by run id
    ran: int = 0
    skipped: int = 0
    failed: int = 0
    wall_seconds: float = 0.0
    runs_csv: Path = field(default_factory=Path)
    notes: list[str] = field(default_factory=list)  # --set keys not read, seeds that change nothing
    backend_log: Path | None = None  # where the backend's own messages went (Ray's)


@dataclass
class _Pending:
    spec: RunSpec
    parts: list[Part] = field(default_factory=list)
    waiting: int = 0


Task = tuple[Callable[..., Any], tuple[Any, ...], _Pending]  # a call to make: function, arguments, its run


def run_sweep(specs: Sequence[RunSpec], out: Path, *, backend: str = "local", workers: int | None = None,
              ray_address: str | None = None, split_vcs: str = "auto",
              listener: SweepListener | None = None) -> SweepOutcome:
    """Run every spec not finished yet; keep ``out/runs.csv`` current.  A run that fails — it raises, its worker
    dies, or its settings were refused when the grid was built (:attr:`RunSpec.refused`) — is recorded with its
    error (``status`` failed) and the others go on; ``failed`` counts them.  Ctrl-C (KeyboardInterrupt) stops
    dispatching, ends the runs in flight, records what finished and re-raises, leaving no half-written file.
    With Ray, Ray's own messages go to ``out/ray.log``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:
    ...     outcome = run_sweep(build_grid(["synth:jobs=20,nodes=2,vcs=1"], ["fifo", "sjf"], [0]), Path(out), workers=1)
    >>> outcome.ran, [row["status"] for row in outcome.rows]
    (2, ['ok', 'ok'])
    """

    if split_vcs not in SPLIT_MODES:
        raise SweepError(f"--split-vcs must be one of {', '.join(SPLIT_MODES)}, got {split_vcs!r}")
    if _IN_WORKER:
        raise SweepError("a sweep was started inside a sweep's worker: a plug-in file runs a sweep when it is "
                         "imported; keep the policy in a file of its own (or put the sweep under "
                         "`if __name__ == \"__main__\":`)")
    listener = listener or SweepListener()
    out = Path(out)
    try:
        check_writable(out)
    except OutputError as exc:
        raise SweepError(str(exc)) from None
    runnable = [s for s in specs if s.refused is None]  # (a refused run is recorded failed, never simulated)
    check_traces(runnable)
    _remove_stale(out)
    keys = list(dict.fromkeys(k for s in specs for k, _ in s.params))
    if any(s.replica is not None for s in specs):
        keys += ["replica", "perturb"]
    from simcluster.settings.reliability import reliability_mode

    table = RunsTable(out / "runs.csv", keys, reliability=any(reliability_mode(s.config) for s in runnable))
    todo: list[RunSpec] = []
    for spec in specs:
        row = finished_row(spec, out) if spec.refused is None else None
        if row is None:
            todo.append(spec)
        else:
            table.rows[spec.run_id] = row
    outcome = SweepOutcome([], skipped=len(specs) - len(todo), runs_csv=table.path)
    setting_notes = ignored_setting_notes(runnable)

    def finish() -> SweepOutcome:
        notes = setting_notes + seed_notes(runnable, table.rows)
        annotate(table.rows, notes)
        table.flush(force=True)
        outcome.notes = [n.text for n in notes]
        outcome.rows = [table.rows[k] for k in sorted(table.rows)]
        return outcome

    if not todo:
        return finish()

    if backend == "ray":
        outcome.backend_log = out / "ray.log"
    with workers_skip_main():
        return _run_queue(todo, out, backend, workers, ray_address, split_vcs, listener, table, outcome, finish)


def _run_queue(todo: list[RunSpec], out: Path, backend: str, workers: int | None, ray_address: str | None,
               split_vcs: str, listener: SweepListener, table: RunsTable, outcome: SweepOutcome,
               finish: Callable[[], SweepOutcome]) -> SweepOutcome:
    """Run ``todo`` on the backend, recording each row as it comes (a run whose settings were refused at once,
    without a backend)."""

    t0 = time.perf_counter()
    refused = [spec for spec in todo if spec.refused is not None]
    todo = [spec for spec in todo if spec.refused is None]
    runner = make_backend(backend, workers=workers, ray_address=ray_address, log=outcome.backend_log) if todo \
        else None
    slots = runner.slots if runner is not None else 0
    queue = _tasks(todo, out, split_vcs == "always" or (split_vcs == "auto" and len(todo) < slots))
    listener.sweep_started(outcome.skipped + len(todo) + len(refused), outcome.skipped, slots, backend)
    in_flight: dict[Any, _Pending] = {}
    started: set[str] = set()

    def record(row: dict[str, Any]) -> None:
        if row["status"] == "ok":  # an earlier attempt's traceback no longer applies
            (out / "failed" / f"{row['run_id']}.txt").unlink(missing_ok=True)
        table.add(row)
        outcome.ran += 1
        outcome.failed += row["status"] != "ok"
        listener.run_finished(row)

    try:
        for spec in refused:
            listener.run_started(spec)
            record(refused_row(spec, out))
        while queue or in_flight:
            assert runner is not None  # (tasks only when there is work for a backend)
            while queue and len(in_flight) < slots:
                fn, args, pending = queue.pop()
                if pending.spec.run_id not in started:
                    started.add(pending.spec.run_id)
                    listener.run_started(pending.spec)
                in_flight[runner.submit(fn, *args)] = pending
            for handle in runner.wait(list(in_flight), timeout=0.5):
                found = in_flight.pop(handle, None)
                if found is None:  # a sibling part of a run that already failed
                    continue
                pending = found
                try:
                    value = runner.result(handle)
                except Exception as exc:  # noqa: BLE001 — the worker died (killed, out of memory) or Ray lost the task
                    if pending.waiting:
                        queue[:] = [t for t in queue if t[2] is not pending]
                        for h in [h for h, p in in_flight.items() if p is pending]:
                            in_flight.pop(h)
                        pending.waiting = 0
                    record(failed_row(pending.spec, exc, out, math.nan))
                    continue
                if isinstance(value, Part):
                    pending.parts.append(value)
                    pending.waiting -= 1
                    if pending.waiting == 0:
                        record(merge_parts(pending.spec, pending.parts, out))
                else:
                    record(value)
    finally:
        cancel = bool(queue or in_flight)
        with interrupts_deferred(cancel):  # a second Ctrl-C must not cut the clean-up short
            if runner is not None:
                runner.close(cancel=cancel)
            if cancel:  # what the runs ended in flight left of their folders (each is written whole or not at all)
                _remove_stale(out)
                for pending in {id(p): p for p in in_flight.values()}.values():
                    row = finished_row(pending.spec, out)  # written whole before its worker was stopped: kept, so listed
                    if row is not None:
                        table.add(row)
            table.flush()
        outcome.wall_seconds = time.perf_counter() - t0
    return finish()


def _tasks(todo: Sequence[RunSpec], out: Path, split: bool) -> list[Task]:
    """The calls that run ``todo`` — (function, args, the run it belongs to) — in reverse grid order, so that
    ``pop()`` takes them in grid order; with ``split``, a run that may be split is one call per VC."""
    queue: list[Task] = []
    for spec in todo:
        pending = _Pending(spec)
        vcs = vcs_of(spec) if split and splittable(spec.config) and spec.replica is None else []
        if len(vcs) > 1:
            pending.waiting = len(vcs)
            queue.extend((execute_part, (spec, vc), pending) for vc in vcs)
        else:
            queue.append((execute_run, (spec, str(out.resolve())), pending))  # workers may run elsewhere
    queue.reverse()
    return queue


@contextmanager
def interrupts_deferred(active: bool = True) -> Iterator[None]:
    """While inside (and ``active``), Ctrl-C is held off: an interrupted sweep ends its workers and writes
    runs.csv whole even when Ctrl-C is pressed again meanwhile (the clean-up is bounded: workers are
    terminated, not awaited).  Does nothing outside the main thread, where signals cannot be handled.

    >>> with interrupts_deferred():
    ...     signal.raise_signal(signal.SIGINT)  # held off: no KeyboardInterrupt
    >>> signal.getsignal(signal.SIGINT) is signal.default_int_handler
    True
    """
    if not active or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


def _remove_stale(out: Path) -> None:
    """What workers killed mid-write left (one sweep per folder): a run's temporary folder, an older folder of
    a run being replaced (:func:`~simcluster.results.write_folder`), a traceback file not yet renamed into
    place (:func:`~simcluster.atomic.atomic_write`)."""
    for pattern in ("runs/.*.tmp", "runs/.*.old-*", "failed/.*.tmp"):
        for stale in out.glob(pattern):
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
            else:
                stale.unlink(missing_ok=True)


@contextmanager
def workers_skip_main() -> Iterator[None]:
    """While a sweep runs, worker processes do not import the caller's main module.

    A process started by ``spawn`` or ``forkserver`` first runs the caller's script again (as ``__mp_main__``),
    so that functions defined there can be unpickled; a script without an ``if __name__ == "__main__":`` guard
    would then start its sweep again in every worker.  A sweep's runs need nothing from the caller's script —
    plug-ins travel as specs that each worker loads itself — so the main module is presented to
    :mod:`multiprocessing` as a ``-m`` run of ``__main__``, which it skips."""
    import importlib.machinery

    main = sys.modules.get("__main__")
    if main is None or getattr(getattr(main, "__spec__", None), "name", None) is not None:
        yield  # run with -m (or interactively): multiprocessing imports it by name, which is safe
        return
    main.__spec__ = importlib.machinery.ModuleSpec("__main__", None)
    try:
        yield
    finally:
        main.__spec__ = None
