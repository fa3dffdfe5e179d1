"""A topology study: what each placement, asked to keep jobs within which level, costs on one topology and trace.

For each placement (``consolidate`` and every topology-aware placement by default) and each request kind (none,
``preferred:LEVEL``, ``required:LEVEL``; by default the topology's lowest level), the trace runs on ``replicas``
replicas (:mod:`simcluster.experiments.replicas`: a new synthetic trace per replica for a ``synth:`` trace,
resampled days for a file; the same replicas for every combination) under the same topology and costs.  Each
figure gets its mean over the replicas and its 95 % interval, as ``lucid-sim sweep --replicas`` gives them:

- ``avg_jct``, ``avg_queue`` (seconds) and ``gpu_utilization``: summary.json's;
- ``lost_gpu_hours``: the GPU-time lost to spanning, the GPU-hours jobs held beyond their work because spanning
  slowed them.  A job that spans level *i* (and so every level below it) runs at 1/(1 + X), X the largest cost of
  those levels (docs/topology.md), so of the H GPU-seconds it held there H × X/(1 + X) were lost.  H per level
  is summary.json's ``gpu_time_spanning`` (each level's share of the GPU-time held) times the GPU-time held
  (jobs.csv's ``busy_time`` × ``gpu_num``): :func:`spanning_loss`;
- ``lost_share``: that loss as a share of all the GPU-time held;
- ``jct_change``: avg JCT minus the first combination's, replica by replica (a paired difference, whose
  interval tells a real difference from the replicas' spread: only one that excludes 0 says which is faster);
- ``spanning_LEVEL``: the share of started jobs that spanned LEVEL (summary.json's ``jobs_spanning``).

A combination the topology feature refuses is left out of the table with a note saying why: a placement that
does not read topology requests given one, or a required level that some job could never fit in.

``lucid-sim topology`` and :func:`topology_study` (exported by :mod:`simcluster`) run it;
:meth:`TopologyStudy.write` writes ``topology.csv`` (the table) and ``topology_runs.csv`` (one row per run).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simcluster.config import SimConfig
from simcluster.experiments.replicas import interval, paired
from simcluster.experiments.runs import SYNTH_PREFIX, RunSpec, SweepError
from simcluster.limits import MAX_REPLICAS, number
from simcluster.settings.fields import ConfigError

NONE = "none"  # the request kind of jobs left to the placement's own way
FIGURES = ("avg_jct", "avg_queue", "gpu_utilization", "lost_gpu_hours", "lost_share")


@dataclass(frozen=True)
class TopologyStudy:
    """The study's table (one row per placement and request: ``placement, request, replicas``, then
    ``FIGURE_mean, FIGURE_low, FIGURE_high`` for each figure of the module docstring), its runs (one row per
    placement, request and replica), the notes on combinations left out, and what it was run with."""

    table: pd.DataFrame
    runs: pd.DataFrame
    notes: list[str]
    settings: dict[str, Any]

    def write(self, out: str | os.PathLike[str]) -> list[Path]:
        """``topology.csv`` and ``topology_runs.csv`` into folder ``out`` (made if needed)."""
        from simcluster.atomic import atomic_write

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, frame in (("topology.csv", self.table), ("topology_runs.csv", self.runs)):
            data = frame.to_csv(index=False).encode()
            written.append(atomic_write(folder / name, lambda handle, data=data: handle.write(data)))
        return written


def topology_placements() -> list[str]:
    """The study's default placements: ``consolidate``, then every registered placement that reads the topology
    and its requests (``topology_aware``), so that one added later joins the study with no change here."""
    from simcluster.placement import PLACEMENTS

    return ["consolidate", *(name for name in PLACEMENTS.names() if getattr(PLACEMENTS.get(name), "topology_aware",
                                                                               False))]


def parse_requests(text: str | Sequence[str], levels: Sequence[str]) -> list[str]:
    """``none,preferred:rack,required:rack`` (a text or a list) as the study's request kinds, each checked against
    the topology's ``levels``.

    >>> parse_requests("none, preferred:rack,required:block", ("block", "rack"))
    ['none', 'preferred:rack', 'required:block']
    >>> parse_requests("preferred:row", ("block", "rack"))
    Traceback (most recent call last):
    ...
    simcluster.settings.fields.ConfigError: --requests: no level 'row' in the topology (its levels: block, rack, node)
    """
    from simcluster.topology.request import TopologyRequest

    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text) if t.strip()]
    if not items:
        raise ConfigError("--requests: give request kinds, e.g. none,preferred:rack,required:rack")
    found = []
    for item in items:
        if item != NONE:
            request = TopologyRequest.parse(item, levels, "--requests")
            item = f"{request.mode}:{request.level}"
        if item in found:
            raise ConfigError(f"--requests: {item} is given twice")
        found.append(item)
    return found


def default_requests(levels: Sequence[str]) -> list[str]:
    """No request, then preferred and required at the topology's lowest level (the rack, the access switch):
    where keeping a job together matters most often.

    >>> default_requests(("DSW", "PSW", "ASW"))
    ['none', 'preferred:ASW', 'required:ASW']
    """
    lowest = levels[-1] if levels else "node"
    return [NONE, f"preferred:{lowest}", f"required:{lowest}"]


def spanning_loss(topology: Mapping[str, Any], held_gpu_seconds: float) -> float:
    """The GPU-seconds lost to spanning in a run whose summary.json ``topology`` record is ``topology`` and whose
    jobs held ``held_gpu_seconds`` (the module docstring): each level's own share of the GPU-time held (its
    ``gpu_time_spanning`` less the level above's) times X/(1 + X), X the largest cost of it and the levels below.

    >>> record = {"levels": ["rack", "node"], "slowdown": {"rack": 0.25, "node": 0.0},
    ...           "gpu_time_spanning": {"rack": 0.5, "node": 0.75}}
    >>> spanning_loss(record, 1000.0)  # half the GPU-time spanned racks, at 1/1.25 of full speed
    100.0
    """
    levels = list(topology["levels"])
    costs = [float(topology["slowdown"].get(level, 0.0)) for level in levels]
    shares = [float(topology["gpu_time_spanning"].get(level, 0.0)) for level in levels]
    lost, above = 0.0, 0.0
    for i, share in enumerate(shares):
        worst = max(costs[i:])
        lost += (share - above) * worst / (1.0 + worst)
        above = share
    return lost * held_gpu_seconds


def run_figures(summary: Mapping[str, Any], jobs: pd.DataFrame) -> dict[str, Any]:
    """One run's figures (the module docstring) from its summary and jobs table."""
    held = float((jobs["gpu_seconds"] if "gpu_seconds" in jobs else jobs["busy_time"] * jobs["gpu_num"]).sum())
    record = summary["topology"]
    lost = spanning_loss(record, held)
    return {"avg_jct": summary["avg_jct"], "avg_queue": summary["avg_queue"],
            "gpu_utilization": summary["gpu_utilization"], "lost_gpu_hours": lost / 3600.0,
            "lost_share": lost / held if held > 0 else 0.0,
            **{f"spanning_{level}": share for level, share in record["jobs_spanning"].items()},
            "sim_cpu_seconds": summary.get("sim_cpu_seconds")}


def study_run(spec: RunSpec) -> dict[str, Any]:
    """One run of the study (in a worker process, or here): its figures, or ``refused``: why the topology
    feature refused its settings (a :class:`ConfigError` raised as the run starts)."""
    from simcluster.api import simulate
    from simcluster.experiments.sweep import run_inputs

    trace, config = run_inputs(spec)
    try:
        result = simulate(trace, config)
    except ConfigError as exc:
        return {"refused": str(exc)}
    return run_figures(result.summary, result.jobs)


def topology_study(trace: str | os.PathLike[str], topology: str | os.PathLike[str],
                   placements: Sequence[str] | None = None, requests: str | Sequence[str] | None = None,
                   slowdown: str | None = None, replicas: int = 10, perturb: str | None = None,
                   base: SimConfig | None = None, vc_config: str | os.PathLike[str] | None = None,
                   trace_options: Mapping[str, Any] | None = None, workers: int | None = 1,
                   on_run: Callable[[str, str, int], None] | None = None) -> TopologyStudy:
    """Run the study (module docstring): ``trace`` is what ``lucid-sim sweep --trace`` takes (a path, or
    ``synth:FIELD=VALUE,…``), ``topology`` a topology file (found as traces are, in the shared data too);
    ``placements`` default to :func:`topology_placements`, ``requests`` to :func:`default_requests`; ``slowdown``
    is ``--topology-slowdown``; ``perturb`` makes the replicas (default: ``seeds`` for a synthetic trace, a new
    trace per replica; else ``bootstrap``).  ``base`` holds every other setting (the policy: fifo by default).
    ``workers``: processes (None: every CPU; 1: this one).  ``on_run(placement, request, replica)`` is called as
    each run ends.

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "topo.csv").write_text("node,rack\\n" + "".join(f"n{i},r{i // 2}\\n" for i in range(4)))
    >>> study = topology_study("synth:jobs=40,nodes=4,vcs=1,sizes=pow2:16,seed=1", folder / "topo.csv",
    ...                        placements=["consolidate", "tas-best-fit"], slowdown="rack=0.5", replicas=2)
    >>> study.table[["placement", "request"]].values.tolist()
    [['consolidate', 'none'], ['tas-best-fit', 'none'], ['tas-best-fit', 'preferred:rack'], ['tas-best-fit', 'required:rack']]
    >>> study.notes
    ['consolidate with preferred:rack, required:rack: left out (consolidate does not read topology requests)']
    >>> study.table.set_index("request")["spanning_rack_mean"].loc["required:rack"].item()
    0.0
    """
    from simcluster.experiments.sweep import build_grid, check_traces
    from simcluster.paths import resolve_data
    from simcluster.topology.costs import slowdown_costs

    base = base or SimConfig()
    replicas = int(number(replicas, "--replicas", low=2, high=MAX_REPLICAS, whole=True))
    trace = str(trace)
    perturb = perturb or ("seeds" if trace.startswith(SYNTH_PREFIX) else "bootstrap")
    path = resolve_data(topology).resolve()
    model = _read_topology(path, base.topology_levels)
    slowdown_costs(slowdown, model)  # a bad level or cost: an error now, not a refusal of every combination
    chosen = list(dict.fromkeys(placements or topology_placements()))
    kinds = parse_requests(requests, model.levels) if requests else default_requests(model.levels)
    combinations, notes = _combinations(chosen, kinds)
    specs: dict[tuple[str, str], list[RunSpec]] = {}
    for placement, kind in combinations:
        config = SimConfig.from_settings({"topology": str(path), "topology_slowdown": slowdown,
                                          "placement": placement, "topology_request": None if kind == NONE else kind},
                                         "the topology study", base=base)
        specs[placement, kind] = build_grid([trace], [config.policy], [config.seed], base=config,
                                            vc_config=vc_config, replicas=replicas, perturb=perturb,
                                            trace_options=dict(trace_options or {}))
    check_traces([spec for group in specs.values() for spec in group])
    rows, runs = _summarise(_execute(specs, workers, on_run), notes)
    first = rows[0]
    settings = {"trace": trace, "topology": str(path), "levels": list(model.all_levels),
                "domains": {level: len(model.domains(level)) for level in model.levels},
                "slowdown": dict(zip(model.all_levels, slowdown_costs(slowdown, model), strict=True)),
                "policy": base.policy, "replicas": replicas, "perturb": perturb,
                "baseline": f"{first['placement']} {first['request']}"}
    return TopologyStudy(pd.DataFrame(rows), pd.DataFrame(runs), notes, settings)


def _read_topology(path: Path, levels: str | None) -> Any:
    from simcluster.features.topology import label_keys
    from simcluster.topology import read_topology

    return read_topology(path, label_keys=label_keys(levels))


def _combinations(placements: Sequence[str], kinds: Sequence[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(placement, request kind) to run, and notes on those left out: a placement that does not read topology
    requests runs with none only (the topology feature would refuse the others)."""
    from simcluster.plugins import resolve

    combinations: list[tuple[str, str]] = []
    notes: list[str] = []
    for placement in placements:
        cls, _ = resolve(placement, "placement")
        if getattr(cls, "topology_aware", False):
            combinations += [(placement, kind) for kind in kinds]
            continue
        combinations += [(placement, NONE)] if NONE in kinds else []
        asked = [kind for kind in kinds if kind != NONE]
        if asked:
            notes.append(f"{placement} with {', '.join(asked)}: left out ({placement} does not read topology "
                         "requests)")
    if not combinations:
        raise ConfigError("--placements and --requests leave nothing to run: "
                          + "; ".join(notes or ["no placement given"]))
    return combinations, notes


def _summarise(found: Mapping[tuple[str, str], list[dict[str, Any]]],
               notes: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The table's rows (each figure's interval over the replicas; avg JCT also paired with the first combination's)
    and the runs' rows; a combination refused on any replica is left out, with a note."""
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    baseline: dict[int, float] | None = None
    for (placement, kind), results in found.items():
        refused = next((r["refused"] for r in results if "refused" in r), None)
        if refused is not None:
            notes.append(f"{placement} with {kind}: left out (refused: {refused})")
            continue
        runs += [{"placement": placement, "request": kind, "replica": i, **r} for i, r in enumerate(results)]
        jct = {i: float(r["avg_jct"]) for i, r in enumerate(results)}
        baseline = jct if baseline is None else baseline
        spanning = [name for name in results[0] if name.startswith("spanning_")]
        figures = {**{name: interval([r[name] for r in results]) for name in FIGURES},
                   "jct_change": paired(jct, baseline),
                   **{name: interval([r[name] for r in results]) for name in spanning}}
        rows.append({"placement": placement, "request": kind, "replicas": len(results),
                     **{f"{name}_{part}": getattr(spread, part) for name, spread in figures.items()
                        for part in ("mean", "low", "high")}})
    if not rows:
        raise ConfigError("every combination was refused: " + "; ".join(notes))
    return rows, runs


def _execute(specs: Mapping[tuple[str, str], list[RunSpec]], workers: int | None,
             on_run: Callable[[str, str, int], None] | None) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every run's figures, by combination in replica order: here one after another (``workers`` 1), else on
    a local process pool (:mod:`simcluster.experiments.backends`)."""
    from simcluster.experiments.backends import LocalBackend
    from simcluster.experiments.runs import cpu_count
    from simcluster.experiments.sweep import workers_skip_main

    found: dict[tuple[str, str], list[dict[str, Any]]] = {key: [{} for _ in group] for key, group in specs.items()}
    tasks = [(key, i, spec) for key, group in specs.items() for i, spec in enumerate(group)]
    if workers is not None and workers < 1:
        raise SweepError(f"--workers must be at least 1, got {workers}")
    if min(workers or cpu_count(), len(tasks)) <= 1:
        for key, i, spec in tasks:
            found[key][i] = study_run(spec)
            if on_run:
                on_run(*key, i)
        return found
    runner = LocalBackend(min(workers or cpu_count(), len(tasks)))
    pending: dict[Any, tuple[tuple[str, str], int]] = {}
    queue = list(reversed(tasks))
    finished = False
    with workers_skip_main():  # (a caller's script without a __main__ guard is not run again in each worker)
        try:
            while queue or pending:
                while queue and len(pending) < runner.slots:
                    key, i, spec = queue.pop()
                    pending[runner.submit(study_run, spec)] = (key, i)
                for handle in runner.wait(list(pending), timeout=0.5):
                    key, i = pending.pop(handle)
                    found[key][i] = runner.result(handle)
                    if on_run:
                        on_run(*key, i)
            finished = True
        finally:
            runner.close(cancel=not finished)  # (interrupted: the runs in flight are ended, not waited for)
    return found


__all__ = ["TopologyStudy", "default_requests", "parse_requests", "spanning_loss", "topology_placements",
           "topology_study"]
