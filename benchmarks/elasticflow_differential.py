"""ElasticFlow's policies here against ElasticFlow's own simulator, on its ITP traces (issue 31).

    python benchmarks/elasticflow_differential.py --peers /work/peers/out/elasticflow \\
        --policies edf,dlas-gpu,ef-accessctrl --clusters 01,02,03,05

Each run of ours is the artifact's policy under its preset, on ``elasticflow/traces/clusterNN.csv`` at the
paper's cluster size (64 nodes of 8 GPUs, 128 for cluster04): ``edf`` and ``ef-accessctrl`` as
``--preset elasticflow-artifact --policy edf`` / ``elasticflow``, ``edf-accessctrl`` with ``--set
admission=true``, ``dlas-gpu`` as ``--preset elasticflow-dlas``.  Its deadline satisfaction is compared
with the artifact's ``final_result.csv`` in ``<peers>/<policy>_clusterNN/`` (benchmarks/peers_elasticflow.py
writes them); a run the artifact has no result for is printed with ours alone.  ``--exact`` runs ours at
our defaults (exact time, no overheads, no slot batching) instead of the presets.  ``--json FILE`` writes
every figure.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path
from typing import Any

from simcluster.api import load_trace, simulate
from simcluster.paths import shared_data_dir
from simcluster.presets import resolve_config

OURS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {  # artifact's name → (preset, overrides, --set)
    "edf": ("elasticflow-artifact", {"policy": "edf"}, {}),
    "edf-accessctrl": ("elasticflow-artifact", {"policy": "edf"}, {"admission": True}),
    "ef-accessctrl": ("elasticflow-artifact", {"policy": "elasticflow"}, {}),
    "dlas-gpu": ("elasticflow-dlas", {}, {}),
}


def theirs(peers: Path, policy: str, cluster: str) -> float | None:
    """The artifact's reported deadline satisfaction (None where it has no result)."""
    path = peers / f"{policy}_cluster{cluster}" / "final_result.csv"
    if not path.is_file():
        return None
    with path.open() as handle:
        return float(next(csv.DictReader(handle))["ddl_satis_ratio"])


def ours(policy: str, cluster: str, traces: Path, exact: bool) -> tuple[float, float, dict[str, Any]]:
    """Our deadline satisfaction, the simulation's CPU seconds and the run's summary."""
    preset, overrides, settings = OURS[policy]
    if exact:
        if policy == "dlas-gpu":
            config = resolve_config(preset)
        else:
            config = resolve_config(overrides={"policy": overrides["policy"]}, policy_settings=settings)
    else:
        config = resolve_config(preset, overrides=overrides, policy_settings=settings)
    trace = load_trace(traces / f"cluster{cluster}.csv")
    t0 = time.process_time()
    summary = simulate(trace, config).summary
    return float(summary["deadline_satisfaction"]), time.process_time() - t0, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", type=Path, default=Path("/work/peers/out/elasticflow"),
                        help="the artifact's runs: <policy>_clusterNN/final_result.csv")
    parser.add_argument("--traces", type=Path, default=shared_data_dir() / "elasticflow" / "traces")
    parser.add_argument("--policies", default="edf,dlas-gpu", help=f"of {', '.join(OURS)}")
    parser.add_argument("--clusters", default="01,02,03,05")
    parser.add_argument("--exact", action="store_true", help="ours at our defaults instead of the presets")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    rows = []
    print(f"{'policy':15} {'cluster':8} {'ours':>8} {'artifact':>9} {'diff':>8} {'CPU-s':>8}")
    for policy in [p.strip() for p in args.policies.split(",") if p.strip()]:
        if policy not in OURS:
            parser.error(f"unknown policy {policy!r}; known: {', '.join(OURS)}")
        for cluster in [c.strip() for c in args.clusters.split(",") if c.strip()]:
            mine, cpu, summary = ours(policy, cluster, args.traces, args.exact)
            other = theirs(args.peers, policy, cluster)
            diff = "" if other is None else f"{mine - other:+.4f}"
            print(f"{policy:15} {cluster:8} {mine:8.4f} {'' if other is None else f'{other:.4f}':>9} {diff:>8} "
                  f"{cpu:8.1f}", flush=True)
            rows.append({"policy": policy, "cluster": cluster, "ours": mine, "artifact": other, "cpu_seconds": cpu,
                         "declined": summary.get("declined"), "deadlines_met": summary.get("deadlines_met")})
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
