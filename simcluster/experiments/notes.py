"""Notes on a sweep's grid: ``--set`` keys a run does not read, and seeds that change nothing.

Both are said once on the console (``lucid-sim sweep``) and per run in the ``notes`` column of
``runs.csv``, which ``lucid-sim report`` carries into its table.

- A ``--set`` key that a run's policy does not read (:func:`simcluster.scope.settings_read`)
  is known before anything runs: ``--set estimator=ebm`` on fifo gives fifo's results again.
- Seeds: after the runs, runs that differ only in the seed are compared; when every figure of
  ``runs.csv`` is identical for all their seeds, they are noted, with why when the run draws no
  random numbers (deterministic policy, no random placement, no node failures).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from simcluster.experiments.runs import FIGURES, SYNTH_PREFIX, RunSpec
from simcluster.scope import settings_read, why_seed_is_ignored
from simcluster.traces.files import trace_format


@dataclass(frozen=True)
class Note:
    text: str  # the console line
    tag: str  # what runs.csv's notes column says for each run concerned
    run_ids: tuple[str, ...]


def has_job_types(spec: RunSpec) -> bool:
    """Whether the run's trace has job types with per-GPU-type throughputs (a Gavel trace)."""
    return not spec.trace.startswith(SYNTH_PREFIX) and trace_format(spec.trace) == "gavel"


def ignored_setting_notes(specs: Sequence[RunSpec]) -> list[Note]:
    """One note per ``--set`` key that some runs do not read, naming their policies."""
    notes = []
    keys = list(dict.fromkeys(k for s in specs for k, _ in s.params))
    reads = {s.run_id: settings_read(s.config, has_job_types(s)) for s in specs}
    for key in keys:
        given = [s for s in specs if key in dict(s.params)]
        ignoring = [s for s in given if key not in reads[s.run_id]]
        if not ignoring:
            continue
        by_policy: dict[str, list[RunSpec]] = {}
        for s in ignoring:
            by_policy.setdefault(s.config.policy, []).append(s)
        parts = []
        for policy, runs in by_policy.items():
            total = sum(s.config.policy == policy for s in given)
            parts.append(policy if len(runs) == total else f"{policy} ({len(runs)} of its {total} runs, e.g. "
                         f"{runs[0].run_id})")
        notes.append(Note(f"--set {key}: not read by {', '.join(parts)}; their runs that differ only in "
                          f"{key} give the same results", f"{key} not read", tuple(s.run_id for s in ignoring)))
    return notes


def seed_notes(specs: Sequence[RunSpec], rows: Mapping[str, Mapping[str, Any]]) -> list[Note]:
    """Runs that differ only in the seed and whose figures are identical for every seed."""
    groups: dict[str, list[RunSpec]] = {}
    for s in specs:
        key = json.dumps([s.trace, s.vc_config, replace(s.config, seed=0).as_dict()], sort_keys=True, default=str)
        groups.setdefault(key, []).append(s)
    same: dict[tuple[str, str], list[list[RunSpec]]] = {}  # (trace, policy) → groups of identical seeds
    for runs in groups.values():
        done = [s for s in runs if s.run_id in rows and rows[s.run_id].get("status") == "ok"]
        if len(done) < 2 or len({s.config.seed for s in done}) < 2:
            continue
        first = _figures(rows[done[0].run_id])
        if all(_figures(rows[s.run_id]) == first for s in done[1:]):
            same.setdefault((done[0].trace_name, done[0].config.policy), []).append(done)
    notes = []
    for (trace, policy), found in same.items():
        seeds = sorted({s.config.seed for runs in found for s in runs})
        deterministic = not any("seed" in settings_read(runs[0].config, has_job_types(runs[0])) for runs in found)
        why = (why_seed_is_ignored(found[0][0].config) if deterministic
               else "its random choices decide nothing on this trace")
        where = f" ({len(found)} settings)" if len(found) > 1 else ""
        tag = "seed not read: same results for every seed" if deterministic else "same results for every seed"
        notes.append(Note(f"{policy} on {trace}{where}: seeds {', '.join(map(str, seeds))} give identical results — "
                          f"{why}; one seed is enough", tag, tuple(s.run_id for runs in found for s in runs)))
    return notes


def annotate(rows: Mapping[str, dict[str, Any]], notes: Iterable[Note]) -> None:
    """Fill the ``notes`` column of each row a note concerns (tags joined by '; ')."""
    tags: dict[str, list[str]] = {}
    for note in notes:
        for run_id in note.run_ids:
            tags.setdefault(run_id, []).append(note.tag)
    for run_id, row in rows.items():
        row["notes"] = "; ".join(tags.get(run_id, []))


def _figures(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A row's figures, comparable (NaN equal to NaN)."""
    return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in (row.get(k) for k in FIGURES))
