"""Reference runs: digests of every run's jobs and timeline tables, to show a change left results byte-identical.

    python benchmarks/reference_runs.py --out before.json            # on the old code
    python benchmarks/reference_runs.py --out after.json --compare before.json

Each run is written as ``lucid-sim run`` writes it (CSV) into a temporary folder and its ``jobs.csv``,
``timeline.csv`` and ``summary.json`` hashed, the summary less its timings (every ``*cpu_seconds`` figure, which
differs run to run).  ``--only`` picks runs by name (comma-separated substrings); ``--keep DIR`` keeps each run's
folder there (to diff two trees' files where a digest differs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.paths import shared_data_dir
from simcluster.results import write_run
from simcluster.traces import load_trace

DATA = shared_data_dir()
VENUS = DATA / "venus_sept"
OPENB = DATA / "alibaba_openb"
GAVEL = DATA / "gavel_traces" / "t100.trace"

# name → (trace, settings)
RUNS: dict[str, tuple[Path, dict[str, Any]]] = {
    "fifo": (VENUS, {"policy": "fifo"}),
    "sjf": (VENUS, {"policy": "sjf"}),
    "srtf": (VENUS, {"policy": "srtf"}),
    "qssf": (VENUS, {"policy": "qssf"}),
    "tiresias": (VENUS, {"policy": "tiresias"}),
    "tiresias-knob2": (VENUS, {"policy": "tiresias", "promote_knob": 2.0, "promotion_hold": False}),  # the artifact's
    "tiresias-knob2-hold": (VENUS, {"policy": "tiresias", "promote_knob": 2.0}),
    "tiresias-gittins": (VENUS, {"policy": "tiresias-gittins", "until": 1_200_000.0}),
    "fifo-failures": (VENUS, {"policy": "fifo", "node_mtbf": 200_000.0, "on_no_progress": "abandon"}),
    "srtf-failures": (VENUS, {"policy": "srtf", "node_mtbf": 500_000.0, "checkpoint_interval": 3600.0}),
    "srtf-wrs": (VENUS, {"policy": "srtf-wrs", "colocation": "lucid"}),
    "srtf-ars": (VENUS, {"policy": "srtf-ars", "colocation": "lucid"}),
    "sjf-ffs": (VENUS, {"policy": "sjf-ffs", "colocation": "lucid"}),
    "sjf-bsbf": (VENUS, {"policy": "sjf-bsbf"}),
    "lucid": (VENUS, {"policy": "lucid", "colocation": "lucid"}),
    "srtf-random": (VENUS, {"policy": "srtf", "placement": "random", "seed": 3}),
    "openb-tiresias": (OPENB / "openb_pod_list_gpushare40.csv", {"policy": "tiresias"}),
    "gavel-mmf": (GAVEL, {"policy": "max_min_fairness_perf", "cluster": "v100:4,p100:4,k80:4"}),
}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def without_timings(value: Any) -> Any:
    """A summary with every CPU-time figure left out, at any depth (they differ from run to run)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not k.endswith("cpu_seconds")}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def run_one(trace: Path, settings: dict[str, Any], keep: Path | None = None) -> dict[str, Any]:
    loaded = load_trace(trace)
    t0 = time.process_time()
    result = simulate(loaded, SimConfig.from_settings(settings))
    cpu = time.process_time() - t0
    with tempfile.TemporaryDirectory() as folder:
        run = (keep or Path(folder)) / "run"
        write_run(run, result.tables(), result.summary, "csv", overwrite=keep is not None)
        summary = json.dumps(without_timings(json.loads((run / "summary.json").read_text())), indent=1)
        (run / "summary-less-timings.json").write_text(summary)
        return {"jobs": digest(run / "jobs.csv"), "timeline": digest(run / "timeline.csv"),
                "summary": hashlib.sha256(summary.encode()).hexdigest()[:16],
                "avg_jct": result.summary["avg_jct"], "cpu_seconds": round(cpu, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path)
    parser.add_argument("--only", default="")
    parser.add_argument("--keep", type=Path, help="keep each run's folder in DIR/NAME")
    args = parser.parse_args()
    wanted = [w for w in args.only.split(",") if w]
    found: dict[str, Any] = {}
    for name, (trace, settings) in RUNS.items():
        if wanted and not any(w in name for w in wanted):
            continue
        found[name] = run_one(trace, settings, args.keep / name if args.keep else None)
        print(f"{name:18} {found[name]['jobs']} {found[name]['timeline']} {found[name]['summary']} avg JCT {found[name]['avg_jct']:,.1f}"
              f"  ({found[name]['cpu_seconds']} CPU-s)", flush=True)
    args.out.write_text(json.dumps(found, indent=1))
    if args.compare:
        before = json.loads(args.compare.read_text())
        files = ("jobs", "timeline", "summary")
        differ = [n for n in found if n in before and
                  any(found[n][f] != before[n].get(f, found[n][f]) for f in files)]
        print(f"{len(found) - len(differ)} of {len(found)} identical" + (f"; differ: {', '.join(differ)}" if differ else ""))
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
