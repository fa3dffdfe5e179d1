"""ElasticFlow's policies here against ElasticFlow's own simulator, on its traces, job by job (issues 31 and 45).

    python benchmarks/elasticflow_differential.py --peers /tmp/efout --policies edf,dlas-gpu,ef-accessctrl \\
        --clusters 01,02,03,05
    python benchmarks/elasticflow_differential.py --peers /tmp/efout --policies ef-accessctrl \\
        --trace /tmp/ef/ElasticFlow/traces_for_ElasticFlow/philly_103959.csv --trace /tmp/efout/cuts/cluster01_first100.csv

Each run of ours is the artifact's policy under its preset, at the artifact's cluster size for the trace (64 nodes
of 8 GPUs for the ITP clusters, 128 for cluster04; a cut ``clusterNN_firstN.csv`` of one is sized as its cluster;
the loader's sizes for the artifact's other traces): ``edf`` and ``ef-accessctrl`` as ``--preset
elasticflow-artifact --policy edf`` / ``elasticflow``, ``edf-accessctrl`` with ``--set admission=true``,
``dlas-gpu`` as ``--preset elasticflow-dlas``.  ``--set KEY=VALUE`` adds a setting of the policy (e.g.
``overhead_cache=ranks``).  It is compared with the artifact's run in ``<peers>/<policy>_<name>/``
(benchmarks/peers_elasticflow.py writes them; ``name`` = ``clusterNN`` or the trace's stem): the deadline
satisfaction it reports (``final_result.csv``) and, where the run has ``decisions.csv``, job by job:

- *admitted*: not declined on arrival (a job the artifact declines only when it ends late was admitted);
- *met*: admitted and ended by its deadline (the artifact's exact end, ``real_end_time``; ours: jobs.csv's
  ``judged_end`` where the run has one, as the deadline figures judge it);
- *start* and *end* equal within a slot (60 s).

It prints per trace both satisfactions, their difference, the share of jobs with the same admission decision
and the same outcome, and the first job (in submission order) where admission, outcome, start or end differ;
``--json`` also keeps the first job where the admission and where the outcome differ.
A run the artifact has no result for is printed with ours alone.  ``--exact`` runs ours at our defaults (exact
time, no overheads, no slot batching) instead of the presets.  ``--json FILE`` writes every figure.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simcluster.api import load_trace, simulate
from simcluster.paths import shared_data_dir
from simcluster.presets import resolve_config

OURS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {  # artifact's name → (preset, overrides, --set)
    "edf": ("elasticflow-artifact", {"policy": "edf"}, {}),
    "edf-accessctrl": ("elasticflow-artifact", {"policy": "edf"}, {"admission": True}),
    "ef-accessctrl": ("elasticflow-artifact", {"policy": "elasticflow"}, {}),
    "dlas-gpu": ("elasticflow-dlas", {}, {}),
}
CLUSTER_NODES = {"cluster04": 128}  # the ITP clusters (and their cuts) at the paper's sizes; 64 nodes otherwise
SLOT = 60.0  # starts and ends this close count as equal (the artifact's grid)


@dataclass
class Fate:
    """One job's fate in one simulator: admitted on arrival, its deadline met, its start and end."""

    admitted: bool
    met: bool
    start: float = math.nan
    end: float = math.nan


@dataclass
class Comparison:
    policy: str
    trace: str
    jobs: int
    ours: float
    artifact: float | None
    same_admission: float | None = None
    same_outcome: float | None = None
    same_start: float | None = None
    same_end: float | None = None
    artifact_admitted: int | None = None
    ours_admitted: int | None = None
    first_divergence: str | None = None
    first_admission: str | None = None  # the first job admitted by one and declined by the other
    first_outcome: str | None = None  # the first job whose deadline one meets and the other does not
    cpu_seconds: float = 0.0


def theirs(run: Path) -> float | None:
    """The artifact's reported deadline satisfaction (None where it has no result)."""
    path = run / "final_result.csv"
    if not path.is_file():
        return None
    with path.open() as handle:
        return float(next(csv.DictReader(handle))["ddl_satis_ratio"])


def artifact_fates(run: Path) -> dict[str, Fate] | None:
    """Each job's fate in the artifact's run, from the runner's ``decisions.csv`` (None where there is none)."""
    path = run / "decisions.csv"
    if not path.is_file():
        return None
    rows = list(csv.DictReader(path.open()))
    fates = {row["job_id"]: Fate(True, True, float(row["start_time"]), float(row["real_end_time"]))
             for row in rows if row["event"] == "completed"}
    for row in rows:
        if row["event"] == "declined":
            if row["job_id"] in fates:  # declined as it ended (before or after its log entry): late
                fates[row["job_id"]].met = False
            else:  # declined on arrival
                fates[row["job_id"]] = Fate(False, False)
    return fates


def our_fates(jobs: pd.DataFrame) -> dict[str, Fate]:
    out = {}
    for row in jobs.itertuples(index=False):
        declined = bool(getattr(row, "declined", False))
        deadline = row.deadline if not pd.isna(row.deadline) else math.inf
        end = float(row.end_time) if not pd.isna(row.end_time) else math.nan
        judged = float(getattr(row, "judged_end", end))  # (the end its deadline is judged by, where the run has one)
        out[str(row.job_id)] = Fate(not declined, not declined and judged <= deadline, float(row.start_time), end)
    return out


def compare(mine: dict[str, Fate], other: dict[str, Fate], order: list[str]) -> dict[str, Any]:
    """Shares of jobs alike and the first job (in ``order``) where the two differ, with how."""
    n = len(order)
    missing = Fate(False, False)
    alike = {"admission": 0, "outcome": 0, "start": 0, "end": 0}
    first = first_admission = first_outcome = None
    for job in order:
        a, b = mine.get(job, missing), other.get(job, missing)
        how = []
        if a.admitted == b.admitted:
            alike["admission"] += 1
        else:
            how.append(f"admitted here {a.admitted}, artifact {b.admitted}")
            first_admission = first_admission or f"job {job}: {how[-1]}"
        if a.met == b.met:
            alike["outcome"] += 1
        else:
            how.append(f"deadline met here {a.met}, artifact {b.met}")
            first_outcome = first_outcome or f"job {job}: {how[-1]}"
        both = a.admitted and b.admitted
        for what, x, y in (("start", a.start, b.start), ("end", a.end, b.end)):
            if not both or abs(x - y) <= SLOT or (math.isnan(x) and math.isnan(y)):
                alike[what] += 1
            else:
                how.append(f"{what} {x:.0f} here, {y:.0f} artifact")
        if how and first is None:
            first = f"job {job}: " + "; ".join(how)
    return {"same_admission": alike["admission"] / n, "same_outcome": alike["outcome"] / n,
            "same_start": alike["start"] / n, "same_end": alike["end"] / n,
            "artifact_admitted": sum(other.get(j, missing).admitted for j in order),
            "ours_admitted": sum(mine.get(j, missing).admitted for j in order), "first_divergence": first,
            "first_admission": first_admission, "first_outcome": first_outcome}


def run_ours(policy: str, path: Path, exact: bool, settings: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any],
                                                                                      float, list[str]]:
    """Our run's jobs and summary, the simulation's CPU seconds and the jobs in submission order."""
    preset, overrides, given = OURS[policy]
    given = {**given, **settings}
    if exact:
        config = resolve_config(preset) if policy == "dlas-gpu" else \
            resolve_config(overrides={"policy": overrides["policy"]}, policy_settings=given)
    else:
        config = resolve_config(preset, overrides=overrides, policy_settings=given)
    cluster = path.stem.split("_first")[0]
    nodes = CLUSTER_NODES.get(cluster, 64) if cluster.startswith("cluster") else None
    trace = load_trace(path, nodes=nodes)
    order = [str(j) for j in trace.frame["job_id"]]
    t0 = time.process_time()
    result = simulate(trace, config)
    return result.jobs, result.summary, time.process_time() - t0, order


def share(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def parse_sets(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition("=")
        out[key.strip()] = {"true": True, "false": False}.get(value.strip().lower(), value.strip())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", type=Path, default=Path("/tmp/efout"),
                        help="the artifact's runs: <policy>_<name>/final_result.csv (and decisions.csv)")
    parser.add_argument("--traces", type=Path, default=shared_data_dir() / "elasticflow" / "traces")
    parser.add_argument("--trace", type=Path, action="append", default=[],
                        help="another trace (instead of --clusters): one the artifact ships, or a cut of a cluster")
    parser.add_argument("--policies", default="edf,dlas-gpu", help=f"of {', '.join(OURS)}")
    parser.add_argument("--clusters", default="01,02,03,05")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting of our policy")
    parser.add_argument("--exact", action="store_true", help="ours at our defaults instead of the presets")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    traces = args.trace or [args.traces / f"cluster{c.strip()}.csv" for c in args.clusters.split(",") if c.strip()]
    settings = parse_sets(args.set)
    rows = []
    print(f"{'policy':14} {'trace':22} {'jobs':>5} {'ours':>7} {'artifact':>8} {'diff':>8} {'adm=':>6} {'met=':>6} "
          f"{'start=':>6} {'end=':>6} {'CPU-s':>7}  first divergence")
    for policy in [p.strip() for p in args.policies.split(",") if p.strip()]:
        if policy not in OURS:
            parser.error(f"unknown policy {policy!r}; known: {', '.join(OURS)}")
        for path in traces:
            jobs, summary, cpu, order = run_ours(policy, path, args.exact, settings)
            run = args.peers / f"{policy}_{path.stem}"
            row = Comparison(policy, path.stem, len(order), float(summary["deadline_satisfaction"]), theirs(run),
                             cpu_seconds=cpu)
            fates = artifact_fates(run)
            if fates is not None:
                for key, value in compare(our_fates(jobs), fates, order).items():
                    setattr(row, key, value)
            rows.append(row)
            diff = "" if row.artifact is None else f"{row.ours - row.artifact:+.4f}"
            print(f"{policy:14} {path.stem:22} {row.jobs:5} {row.ours:7.4f} {share(row.artifact):>8} {diff:>8} "
                  f"{share(row.same_admission):>6} {share(row.same_outcome):>6} {share(row.same_start):>6} "
                  f"{share(row.same_end):>6} {cpu:7.1f}  {row.first_divergence or ''}", flush=True)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")


if __name__ == "__main__":
    main()
