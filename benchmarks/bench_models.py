"""What the learned models cost and how accurate they are, on the Venus September trace.

    python benchmarks/bench_models.py [--trace PATH] [--repeat N] [--before] [--ablation] [--no-explain]

1. The runs that train models inside the simulation — lucid with the Lucid RTX 3090 table and with
   the default tables, qssf with the ebm estimator — each in a fresh process: simulation CPU-s
   (all model training included; best of --repeat), the duration estimates' MAE and median
   relative error, avg JCT, the duration model's trainings; and tiresias, the baseline lucid
   must beat by at least 10 % (avg JCT, Lucid table).  ``--before`` adds the same learned runs with
   the former model settings, ``--boosting interpret --retrain-growth 0`` (InterpretML's defaults,
   a training every week): the figures before issue 19, but for its exact speed-ups (table lookups
   for the packing model, the throughput model's training frame from running sums).
2. ``lucid-sim explain``'s held-out figures for the three models (packing: accuracy on held-out
   configurations; workload: MAE on the last 20 % of jobs next to the history estimator's;
   throughput: MAE of the next-hour forecast next to persistence's), and its CPU-s.
3. ``--ablation``: lucid with the Lucid table, its duration model boosted with ``FAST_BOOSTING`` but
   one setting set back towards InterpretML's default at a time, and with ``--boosting interpret``:
   the table in :mod:`simcluster.models.boosting`, measured in the run (the schedule follows the
   estimates, so each variant learns from the jobs its own run finished).

Targets (issue 19, quiet machine): lucid ≤ 10 CPU-s with its MAE no worse than before (9,936 s with
the Lucid table, 10,231 s with the default tables; the issue quotes 10,118 s), qssf with the ebm
estimator ≤ 8 CPU-s.  CPU-s come from ``time.process_time``; on a shared machine they are noisy (±20 %).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from simcluster.paths import shared_data_dir

ROOT = Path(__file__).resolve().parents[1]  # the checkout whose simcluster is measured

RUNS = [  # label, policy, settings
    ("lucid (Lucid table)", "lucid", {"colocation": "lucid"}),
    ("lucid (default tables)", "lucid", {}),
    ("qssf --estimator ebm", "qssf", {"estimator": "ebm"}),
    ("tiresias (baseline)", "tiresias", {}),
]
BEFORE = {"boosting": "interpret", "retrain_growth": 0.0}  # the model settings before issue 19


ABLATION = [  # label, changes to FAST_BOOSTING (lucid with the Lucid table, duration model)
    ("fast", {}),
    ("… but outer_bags=2", {"outer_bags": 2}),
    ("… but learning_rate=0.04", {"learning_rate": 0.04}),
    ("… but max_bins=1024", {"max_bins": 1024}),
    ("… but early_stopping_rounds=100", {"early_stopping_rounds": 100}),
    ("… but smoothing_rounds=500", {"smoothing_rounds": 500}),
    ("… but early_stopping_tolerance=1e-5", {"early_stopping_tolerance": 1e-5}),
]


def measure(trace: str, policy: str, settings: dict[str, Any], fast: dict[str, Any] | None = None) -> dict[str, Any]:
    """One simulation in a fresh interpreter (imports and training counted as they would be in a real run).

    ``fast``: changes to ``FAST_BOOSTING`` for this run (the ablation).  The duration model's trainings are
    counted and timed by wrapping ``fit_duration_model``; ``total_cpu`` is all of ``simulate()``, the
    summary included (lucid's packing model is evaluated there, five more fits).
    """
    code = f"""
import json, time
import simcluster.estimators.ebm as ebm
from simcluster.models.boosting import FAST_BOOSTING
from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.traces import load_trace
FAST_BOOSTING.update({fast or {}!r})
fits, fit = [], ebm.fit_duration_model
def timed_fit(*args, **kwargs):
    cpu0 = time.process_time()
    model = fit(*args, **kwargs)
    fits.append(time.process_time() - cpu0)
    return model
ebm.fit_duration_model = timed_fit
trace = load_trace({trace!r})
cpu0 = time.process_time()
s = simulate(trace, SimConfig(policy={policy!r}, **{settings!r})).summary
print(json.dumps(dict(sim_cpu=s["sim_cpu_seconds"], total_cpu=time.process_time() - cpu0, avg_jct=s["avg_jct"],
    quality=s.get("estimate_quality", {{}}), trainings=len(fits), training_cpu=sum(fits))))
"""
    return _run(code, f"{policy} on {trace}")


def _run(code: str, what: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter in this checkout's root (so that its simcluster is the one measured,
    not an installed copy); its last line of output is JSON."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"{what} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("run", "sim CPU-s", "of it duration trainings", "simulate() CPU-s", "MAE (s)", "median rel. error",
                "avg JCT (s)", "trainings"):
        table.add_column(col, justify="right")
    return table


def _add_row(table: Table, label: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    best = min(runs, key=lambda r: r["sim_cpu"])
    quality = best["quality"]
    learned = best["trainings"] > 0
    table.add_row(label, f"{best['sim_cpu']:.2f}", f"{best['training_cpu']:.2f}" if learned else "–",
                  f"{best['total_cpu']:.2f}", f"{quality['mae']:,.1f}" if "mae" in quality else "–",
                  f"{quality['median_relative_error']:.4f}" if "mae" in quality else "–",
                  f"{best['avg_jct']:,.1f}", str(best["trainings"]) if learned else "–")
    return best


def runs_table(trace: str, repeat: int, before: bool) -> Table:
    table = _table(f"models in the simulation ({trace}; best of {repeat} by sim CPU-s)")
    runs = list(RUNS)
    if before:
        runs += [(f"{label}, before", policy, {**settings, **BEFORE}) for label, policy, settings in RUNS
                 if policy != "tiresias"]
    jct: dict[str, float] = {}
    for label, policy, settings in runs:
        jct[label] = _add_row(table, label, [measure(trace, policy, settings) for _ in range(repeat)])["avg_jct"]
    gain = 1 - jct["lucid (Lucid table)"] / jct["tiresias (baseline)"]
    table.caption = f"lucid (Lucid table) vs tiresias: avg JCT {gain:.1%} lower (target ≥ 10 %)"
    return table


def ablation_table(trace: str, repeat: int) -> Table:
    table = _table(f"lucid --colocation lucid, duration model boosted with FAST_BOOSTING but one change "
                   f"({trace}; best of {repeat})")
    for label, change in ABLATION:
        _add_row(table, label, [measure(trace, "lucid", {"colocation": "lucid"}, change) for _ in range(repeat)])
    _add_row(table, "--boosting interpret", [measure(trace, "lucid", {"colocation": "lucid", "boosting": "interpret"})
                                             for _ in range(repeat)])
    return table


def explain_table(trace_path: str) -> Table:
    with tempfile.TemporaryDirectory() as out:
        done = _run(f"""
import json, pathlib, time
from simcluster.config import SimConfig
from simcluster.models.explain import explain
from simcluster.traces import load_trace
trace = load_trace({trace_path!r})
cpu0 = time.process_time()
report = explain(trace, SimConfig(colocation="lucid"), pathlib.Path({out!r}))
print(json.dumps(dict(report=report, cpu=time.process_time() - cpu0), default=float))
""", f"explain on {trace_path}")
    report, cpu = done["report"], done["cpu"]
    table = Table(title=f"lucid-sim explain, held-out ({cpu:.1f} CPU-s with plots)", title_justify="left")
    for col in ("model", "held-out figure", "value", "yardstick", "value"):
        table.add_column(col, justify="right")
    packing, workload, throughput = report["packing"], report["workload"], report["throughput"]
    table.add_row("packing", f"accuracy ({packing.get('folds', '?')}-fold)", f"{packing.get('accuracy', float('nan')):.3f}",
                  "vs authors' labels", f"{packing.get('accuracy_vs_authors', float('nan')):.3f}")
    table.add_row("workload", "MAE (s)", f"{workload['ebm']['mae']:,.1f}", "history MAE",
                  f"{workload['history']['mae']:,.1f}")
    table.add_row("workload", "median rel. error", f"{workload['ebm']['median_relative_error']:.4f}",
                  "history", f"{workload['history']['median_relative_error']:.4f}")
    if "lucid_artifact" in workload:
        table.add_row("workload", "", "", "Lucid artifact's MAE", f"{workload['lucid_artifact']['mae']:,.1f}")
    table.add_row("throughput", "MAE (jobs/hour)", f"{throughput['mae']:.2f}", "persistence MAE",
                  f"{throughput['persistence_mae']:.2f}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", default=str(shared_data_dir() / "venus_sept"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--before", action="store_true", help="also run the learned runs with the former settings")
    parser.add_argument("--ablation", action="store_true", help="also run lucid with one boosting setting changed "
                        "at a time (the ablation of benchmarks/RESULTS.md)")
    parser.add_argument("--no-explain", action="store_true", help="skip lucid-sim explain's held-out figures")
    args = parser.parse_args()
    console = Console(width=140)
    console.print(runs_table(args.trace, args.repeat, args.before))
    if args.ablation:
        console.print(ablation_table(args.trace, args.repeat))
    if not args.no_explain:
        console.print(explain_table(args.trace))


if __name__ == "__main__":
    main()
