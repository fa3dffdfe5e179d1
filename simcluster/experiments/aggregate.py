"""Runs grouped into *configurations* (same trace, same settings, any seed) and their figures aggregated.

A report never pools runs that differ in anything but the seed: a configuration is the trace
(its path, or a synthetic trace's whole spec), the cluster (GPUs per VC) and every setting of
``summary.json``'s ``config`` but ``seed`` (and the provenance fields ``preset``/``config_file``).
Its **label** is the policy plus the settings whose values differ between configurations and that
the policy reads, e.g. ``tiresias quantum=300``; when that is not enough to tell two
configurations apart, every differing setting, then the trace, is added.  A plug-in policy is told by its code
too (its file's SHA-256, ``policy_source`` in ``summary.json``): runs of two files that declare one ``name`` are
two configurations, each shown as ``name (file)`` (:func:`_distinguish`).

Each figure of a configuration is the mean over its seeds (or replicas), with the minimum and maximum
(``F``, ``F_min``, ``F_max`` in ``comparison.csv``), per VC and overall; the tail figures
(:mod:`simcluster.metrics.tail`) of runs written before they existed are computed from their jobs tables.  With a baseline policy,
``F_vs_baseline`` = mean ÷ the baseline's mean − 1 for the time figures and utilization, where the
baseline is the run of that policy on the same trace and cluster that shares the most settings.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.config import PROVENANCE, SimConfig, config_fields
from simcluster.metrics.tail import DEFAULT_WAIT_BOUNDS, over_key
from simcluster.scope import settings_read

FIGURES = ["jobs", "avg_jct", "p50_jct", "p99_jct", "avg_queue", "p99_queue", "max_queue", "p999_queue",
           over_key(DEFAULT_WAIT_BOUNDS[0]), "avg_bounded_slowdown", "makespan", "gpu_utilization", "preemptions",
           "shared_gpu_fraction", "jain_users", "rho_mean", "rho_p99", "rho_above_1"]
VERSUS = ["avg_jct", "p50_jct", "p99_jct", "avg_queue", "max_queue", "avg_bounded_slowdown", "makespan",
          "gpu_utilization"]  # compared with a baseline
LOG_NAMES = ("cluster_full_log.csv", "cluster_log.csv")
_IGNORED = {"seed"} | {name for name, f in config_fields().items() if f.metadata["panel"] == PROVENANCE}


@dataclass
class Configuration:
    """Runs of one trace and one set of settings, over seeds."""

    key: str
    trace: str  # what identifies the trace (absolute path or synthetic spec)
    trace_name: str
    settings: dict[str, Any]  # every setting but the seed
    runs: list[Any] = field(default_factory=list)  # RunRecord
    label: str = ""
    code: str | None = None  # a plug-in's code: its file's SHA-256 (else where it came from); None: built in
    location: str | None = None  # the plug-in's file, module or distribution (summary.json's policy_source)
    shown: str | None = None  # its policy as tables name it, where another plug-in's code has the same name

    @property
    def policy(self) -> str:
        """The policy as tables name it: its name, with its file where other code of that name was run too."""
        return self.shown or self.policy_name

    @property
    def policy_name(self) -> str:
        """The name the runs recorded (a plug-in's declared name)."""
        return str(self.settings.get("policy", "?"))

    @property
    def seeds(self) -> list[Any]:
        return sorted({r.summary.get("seed") for r in self.runs}, key=str)

    @property
    def replicas(self) -> list[int]:
        """The replica indices of its runs that are replicas (``sweep --replicas``), sorted."""
        return sorted({int(r.summary["sweep_run"]["replica"]) for r in self.runs
                       if (r.summary.get("sweep_run") or {}).get("replica") is not None})

    def runs_shown(self) -> str:
        """What its runs are, for the table's ``seeds`` column: the seeds, or how many replicas."""
        replicas = self.replicas
        if replicas:
            return f"{len(replicas)} replica{'s' if len(replicas) != 1 else ''}"
        return ";".join(map(str, self.seeds))

    def figure(self, name: str, vc: str = "all") -> np.ndarray:
        """The figure of each run (NaN where a run lacks it)."""
        values = []
        for r in self.runs:
            source = r.summary if vc == "all" else r.summary.get("per_vc", {}).get(vc, {})
            value = source.get(name)
            values.append(np.nan if value is None else float(value))
        return np.asarray(values, dtype=float)

    @property
    def vcs(self) -> list[str]:
        return list(dict.fromkeys(vc for r in self.runs for vc in r.summary.get("per_vc", {})))


def trace_of(summary: dict[str, Any]) -> tuple[str, str]:
    """(identity, short name) of a run's trace: the sweep's own record if any, else the summary's source."""
    sweep = summary.get("sweep_run") or {}
    if sweep.get("trace"):
        return str(sweep["trace"]), str(sweep.get("trace_name") or sweep["trace"])
    source = str(summary.get("trace", ""))
    path = Path(source)
    name = path.parent.name if path.name in LOG_NAMES else (path.stem if path.suffix else path.name)
    return source, name or source


def configurations(records: Sequence[Any]) -> list[Configuration]:
    """The records grouped by configuration (in order of first appearance), labelled uniquely."""
    groups: dict[str, Configuration] = {}
    for r in records:
        settings = {k: v for k, v in (r.summary.get("config") or {"policy": r.summary.get("policy"),
                                                                   "placement": r.summary.get("placement")}).items()
                    if k not in _IGNORED}
        settings["policy"] = r.summary.get("policy", settings.get("policy"))
        trace, name = trace_of(r.summary)
        vcs = sorted(r.summary.get("per_vc", {}))
        source = r.summary.get("policy_source") or {}
        code = source.get("sha256") or source.get("location") or None  # plug-ins of one name, other code: apart
        identity = [trace, r.summary.get("gpus"), vcs, settings] + ([code] if code else [])
        key = json.dumps(identity, sort_keys=True, default=str)
        if key not in groups:
            groups[key] = Configuration(key, trace, name, settings, code=code, location=source.get("location"))
        groups[key].runs.append(r)
    found = list(groups.values())
    _distinguish(found)
    _label(found)
    return found


def same_name_notes(groups: Sequence[Configuration]) -> list[str]:
    """What the report says where plug-ins of one name but different code were run: each kept apart, by file."""
    names: dict[str, list[str]] = {}
    for g in groups:
        if g.shown:
            names.setdefault(g.policy_name, []).append(g.policy)
    return [f"{len(set(shown))} different policies are named {name} ({'; '.join(dict.fromkeys(shown))}): their "
            "runs are kept apart, each labelled by its file" for name, shown in names.items()]


def _distinguish(groups: Sequence[Configuration]) -> None:
    """Where runs of one policy name come from different code (two files declaring one ``name``, or a file
    edited between runs), each is shown as ``name (file)`` — the file's path cut to as many trailing parts as
    tell them apart, and its SHA-256's first 8 digits where one file held both."""
    codes: dict[str, dict[str | None, str]] = {}
    for g in groups:
        codes.setdefault(g.policy_name, {}).setdefault(g.code, g.location or g.code or "")
    for name, found in codes.items():
        if len(found) < 2:
            continue
        tags = _tags({code: where for code, where in found.items() if code is not None})
        for g in groups:
            if g.policy_name == name and g.code is not None:
                g.shown = f"{name} ({tags[g.code]})"


def _tags(codes: dict[str, str]) -> dict[str, str]:
    """code → the shortest trailing part of its location that no other location ends in (+ the digest's start
    where two codes share a location).

    >>> _tags({"aa11": "/x/a/cap.py", "bb22": "/x/b/cap.py", "cc33": "/x/b/cap.py"})
    {'aa11': 'a/cap.py', 'bb22': 'b/cap.py sha256 bb22', 'cc33': 'b/cap.py sha256 cc33'}
    """
    places = list(dict.fromkeys(codes.values()))
    parts = {where: Path(where).parts or (where,) for where in places}
    longest = max(len(p) for p in parts.values())
    cut = 1
    while cut < longest and len({p[-cut:] for p in parts.values()}) < len(places):
        cut += 1
    short = {where: str(Path(*p[-cut:])) for where, p in parts.items()}
    shared = [where for where in places if list(codes.values()).count(where) > 1]
    return {code: short[where] + (f" sha256 {code[:8]}" if where in shared else "") for code, where in codes.items()}


def _label(groups: list[Configuration]) -> None:
    keys = sorted({k for g in groups for k in g.settings if k != "policy"
                   and len({_text(h.settings.get(k)) for h in groups}) > 1})

    def read_by(g: Configuration) -> frozenset[str]:
        try:
            return settings_read(SimConfig(**{k: v for k, v in g.settings.items() if k in config_fields()}))
        except (TypeError, ValueError):
            return frozenset(g.settings)

    for g in groups:
        g.label = _labelled(g, [k for k in keys if k in read_by(g)])
    clash = _clashing(groups)
    for g in clash:
        g.label = _labelled(g, keys)
    if len({g.trace for g in groups}) > 1:
        for g in groups:
            g.label = f"{g.trace_name}: {g.label}"
    for g in _clashing(groups):  # two traces of one name: the rest of the identity
        g.label = f"{g.label} [{g.trace}]"
    counts: dict[str, int] = {}
    for g in _clashing(groups):  # still equal (runs differing in nothing we record): number them
        counts[g.label] = counts.get(g.label, 0) + 1
        g.label = f"{g.label} #{counts[g.label]}"


def _clashing(groups: list[Configuration]) -> list[Configuration]:
    labels = [g.label for g in groups]
    return [g for g in groups if labels.count(g.label) > 1]


def _labelled(g: Configuration, keys: Sequence[str]) -> str:
    return " ".join([g.policy, *(f"{k}={_text(g.settings.get(k))}" for k in keys)])


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "/".join(_text(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def baseline_of(g: Configuration, groups: Sequence[Configuration], policy: str) -> Configuration | None:
    """The configuration of ``policy`` on ``g``'s trace and cluster sharing the most settings with ``g``."""
    candidates = [h for h in groups if h.policy == policy and h.trace == g.trace and sorted(h.vcs) == sorted(g.vcs)]
    if not candidates:
        return None
    return max(candidates, key=lambda h: sum(h.settings.get(k) == v for k, v in g.settings.items()))


def report_figures(bounds: Sequence[float] = DEFAULT_WAIT_BOUNDS) -> list[str]:
    """:data:`FIGURES` with a ``queue_over_<bound>`` figure for each of ``bounds`` (``report --wait-bound``)."""
    at = FIGURES.index(over_key(DEFAULT_WAIT_BOUNDS[0]))
    return [*FIGURES[:at], *(over_key(b) for b in sorted(set(bounds))), *FIGURES[at + 1:]]


def aggregate(groups: Sequence[Configuration], baseline: str | None = None,
              figures: Sequence[str] = FIGURES) -> pd.DataFrame:
    """``comparison.csv``: per configuration, its VCs and ``all``: mean/min/max of each of ``figures`` over seeds
    (or replicas); ``seeds`` lists the seeds, or says how many replicas (``replicas`` counts them)."""
    rows = []
    for g in groups:
        base = baseline_of(g, groups, baseline) if baseline else None
        for vc in [*g.vcs, "all"]:
            row: dict[str, Any] = {"label": g.label, "trace": g.trace_name, "policy": g.policy,
                                   "seeds": g.runs_shown(), "replicas": len(g.replicas), "runs": len(g.runs), "vc": vc}
            for name in figures:
                values = g.figure(name, vc)
                finite = values[np.isfinite(values)]
                row[name] = float(finite.mean()) if len(finite) else np.nan
                row[f"{name}_min"] = float(finite.min()) if len(finite) else np.nan
                row[f"{name}_max"] = float(finite.max()) if len(finite) else np.nan
            if baseline:
                row["baseline"] = base.label if base is not None else ""
                for name in VERSUS:
                    mine, theirs = row[name], _mean(base.figure(name, vc)) if base is not None else np.nan
                    row[f"{name}_vs_baseline"] = mine / theirs - 1 if np.isfinite(theirs) and theirs else np.nan
            row["notes"] = notes_of(g) if vc == "all" else ""
            rows.append(row)
    return pd.DataFrame(rows)


def _mean(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if len(finite) else np.nan


def notes_of(g: Configuration) -> str:
    """What a reader must know about a configuration's figures."""
    notes = []
    if len(g.seeds) > 1 and all(
            np.ptp(v[np.isfinite(v)]) == 0 for v in (g.figure(n) for n in FIGURES) if np.isfinite(v).any()):
        notes.append(f"identical for seeds {', '.join(map(str, g.seeds))}")
    unfinished = [int(r.summary.get("unfinished_jobs") or 0) for r in g.runs]
    if any(unfinished):
        notes.append(f"{max(unfinished):,} job(s) unfinished (run stopped early; figures over finished jobs)")
    if all("rho_mean" not in r.summary for r in g.runs):
        notes.append("no fairness figures (round-based run)")
    return "; ".join(notes)


def size_table(groups: Sequence[Configuration], bounds: Sequence[float] = DEFAULT_WAIT_BOUNDS) -> pd.DataFrame:
    """``sizes.csv``: per configuration and bucket of GPUs per job (``per_size`` of its runs' summaries:
    :func:`~simcluster.metrics.tail.size_figures`), the mean, min and max over its runs of the jobs, avg JCT, avg,
    p99 and max queueing delay, the shares over ``bounds`` and avg bounded slowdown; empty when no run has
    ``per_size``."""
    names = ["jobs", "avg_jct", "avg_queue", "p99_queue", "max_queue", *(over_key(b) for b in sorted(set(bounds))),
             "avg_bounded_slowdown"]
    rows = []
    for g in groups:
        sizes = list(dict.fromkeys(size for r in g.runs for size in (r.summary.get("per_size") or {})))
        for size in sorted(sizes, key=lambda s: int(s.split("-")[0].rstrip("+"))):
            row: dict[str, Any] = {"label": g.label, "trace": g.trace_name, "gpus": size, "runs": len(g.runs)}
            for name in names:
                values = np.array([np.nan if (v := (r.summary.get("per_size") or {}).get(size, {}).get(name)) is None
                                   else float(v) for r in g.runs])
                finite = values[np.isfinite(values)]
                row[name] = float(finite.mean()) if len(finite) else np.nan
                row[f"{name}_min"] = float(finite.min()) if len(finite) else np.nan
                row[f"{name}_max"] = float(finite.max()) if len(finite) else np.nan
            rows.append(row)
    return pd.DataFrame(rows)
