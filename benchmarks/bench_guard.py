"""What the guard of a plug-in costs: srtf as a plug-in file against the built-in srtf, on venus_sept.

    python benchmarks/bench_guard.py [--trace PATH] [--repeat N]

A plug-in (a policy not built in) runs behind a guard (:mod:`simcluster.guard`): each hook wrapped, each
decision checked, its queue keys checked, the no-progress limits counted per pass, and every attribute write
of its file checked against the views.  Three runs of the same schedule, in one fresh process that loads the trace
once, sim CPU-s (the simulation alone, not the trace's loading), best of ``--repeat``, interleaved so that a
busy machine slows all three alike:

- ``built-in srtf``: the built-in policy (trusted: no guard);
- ``srtf_kept.py, unguarded``: ``examples/policies/srtf_kept.py`` (the built-in srtf's schedule, job for job,
  in public API) registered as if it were built in: the plug-in's own code, no guard;
- ``srtf_kept.py as a plug-in``: the same file as ``--policy ./srtf_kept.py`` runs it, behind the guard.

The issue's figure is plug-in ÷ built-in − 1 (target: at most 5 %): what a researcher pays for writing srtf as a
plug-in; plug-in ÷ unguarded − 1 (the guard alone, the file's own code aside) is printed too.
The three runs must give the same average JCT (the guard changes nothing of the schedule).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from rich.console import Console
from rich.table import Table

from simcluster.paths import REPO_ROOT, shared_data_dir

PLUGIN = str(REPO_ROOT / "examples" / "policies" / "srtf_kept.py")
CODE = """
import gc, json, sys
from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.plugins import resolve_policy
from simcluster.policies import POLICIES
from simcluster.traces import load_trace
trace, plugin, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
loaded = load_trace(trace)
POLICIES.register("srtf-kept-unguarded")(resolve_policy(plugin))  # its code, as if built in: no guard
policies = {"built-in": "srtf", "unguarded": "srtf-kept-unguarded", "plug-in": plugin}
found = {how: [] for how in policies}
for _ in range(repeat):  # interleaved: a busy machine slows every variant alike
    for how, policy in policies.items():
        gc.collect()
        s = simulate(loaded, SimConfig(policy=policy)).summary
        found[how].append({"sim_cpu": s["sim_cpu_seconds"], "avg_jct": s["avg_jct"]})
print(json.dumps(found))
"""
RUNS = [("built-in srtf", "built-in"), ("srtf_kept.py, unguarded", "unguarded"),
        ("srtf_kept.py as a plug-in (guarded)", "plug-in")]


def measure(trace: str, repeat: int) -> dict[str, list[dict[str, float]]]:
    """Every run of every variant, in one fresh process (the trace loaded once)."""
    done = subprocess.run([sys.executable, "-c", CODE, trace, PLUGIN, str(repeat)], capture_output=True, text=True,
                          check=False)
    if done.returncode:
        raise RuntimeError(f"the runs on {trace} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", default=str(shared_data_dir() / "venus_sept"))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    found = measure(args.trace, args.repeat)
    best = {how: min(r["sim_cpu"] for r in runs) for how, runs in found.items()}
    jct = {how: runs[0]["avg_jct"] for how, runs in found.items()}
    overhead = best["plug-in"] / best["unguarded"] - 1
    versus_builtin = best["plug-in"] / best["built-in"] - 1
    if args.json:
        print(json.dumps({"trace": args.trace, "repeat": args.repeat, "sim_cpu_s": best, "avg_jct": jct,
                          "guard_overhead": overhead, "plugin_vs_builtin": versus_builtin}))
        return
    table = Table(title=f"sim CPU-s on {args.trace} (best of {args.repeat}, interleaved)", title_justify="left")
    for column in ("run", "sim CPU-s", "all runs", "avg JCT (s)"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for label, how in RUNS:
        runs = ", ".join(f"{r['sim_cpu']:.2f}" for r in found[how])
        table.add_row(label, f"{best[how]:.3f}", runs, f"{jct[how]:,.1f}")
    console = Console()
    console.print(table)
    console.print(f"plug-in ÷ built-in − 1: [bold]{versus_builtin:+.1%}[/] (target ≤ +5 %); the guard alone "
                  f"(plug-in ÷ unguarded − 1): {overhead:+.1%}", highlight=False)
    if len(set(jct.values())) != 1:
        console.print("[red]the three runs' average JCTs differ: the guard changed the schedule[/]")
        sys.exit(1)


if __name__ == "__main__":
    main()
