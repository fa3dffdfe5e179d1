"""What a plug-in policy costs: loading it, and running behind the guards that check a plug-in's decisions.

    python benchmarks/bench_plugins.py [--trace PATH] [--repeat N]

- load: seconds for a fresh process to resolve a spec to its class (the module's import included): a
  built-in name, the example files, and a built-in named by module:Class;
- run: sim CPU-s on the trace of the built-in srtf as a built-in (unguarded), the same class named
  ``simcluster.policies.srtf:ShortestRemainingTimeFirst`` (a plug-in: every decision checked, every hook
  wrapped), and examples/policies/srtf_minimal.py (plain public-API code, the same schedule); fifo likewise.
Each run is a fresh process; the best of --repeat is kept.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from _measure import measure_in_subprocess
from rich.console import Console
from rich.table import Table

from simcluster.paths import REPO_ROOT, shared_data_dir

EXAMPLES = REPO_ROOT / "examples" / "policies"
SPECS = ["srtf", "fifo", "simcluster.policies.srtf:ShortestRemainingTimeFirst", str(EXAMPLES / "srtf_minimal.py"),
         str(EXAMPLES / "las2.py"), str(EXAMPLES / "fair_share.py")]
RUNS = [("srtf (built-in)", "srtf"), ("srtf as a plug-in (guarded)", "simcluster.policies.srtf:ShortestRemainingTimeFirst"),
        ("srtf_minimal.py", str(EXAMPLES / "srtf_minimal.py")), ("fifo (built-in)", "fifo"),
        ("fifo as a plug-in (guarded)", "simcluster.policies.fifo:Fifo")]


def load_seconds(spec: str) -> float:
    code = (f"import time\nt0 = time.perf_counter()\nfrom simcluster.plugins import resolve_policy\n"
            f"t1 = time.perf_counter()\nresolve_policy({spec!r})\nprint(time.perf_counter() - t1)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", default=str(shared_data_dir() / "venus_sept"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    console = Console()
    loads = Table(title="resolving a spec in a fresh process (best of --repeat)", title_justify="left")
    loads.add_column("spec")
    loads.add_column("ms", justify="right")
    found: dict[str, object] = {"load_ms": {}, "sim_cpu_s": {}}
    for spec in SPECS:
        best = min(load_seconds(spec) for _ in range(args.repeat)) * 1000
        found["load_ms"][spec] = round(best, 1)  # type: ignore[index]
        loads.add_row(spec.replace(str(REPO_ROOT) + "/", ""), f"{best:.1f}")
    console.print(loads)
    runs = Table(title=f"sim CPU-s on {args.trace} (best of --repeat)", title_justify="left")
    for column in ("policy", "sim CPU-s", "avg JCT (s)"):
        runs.add_column(column, justify="right" if column != "policy" else "left")
    for label, spec in RUNS:
        measured = [measure_in_subprocess(args.trace, spec) for _ in range(args.repeat)]
        best = min(measured, key=lambda m: m["sim_cpu"])
        found["sim_cpu_s"][label] = round(best["sim_cpu"], 3)  # type: ignore[index]
        runs.add_row(label, f"{best['sim_cpu']:.2f}", f"{best['avg_jct']:,.1f}")
    console.print(runs)
    print(json.dumps(found))


if __name__ == "__main__":
    main()
