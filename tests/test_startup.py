"""Start-up: `lucid-sim --help` and a small run import only what they use (no timings here: what is
imported is what costs; `benchmarks/bench_scale.py --startup` measures the seconds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "numpy", "scipy", "simpy", "pyarrow", "interpret", "torch", "sklearn", "matplotlib", "ray")


def modules_after(argv: list[str], tmp_path: Path) -> set[str]:
    """The top-level modules (and simcluster's own) loaded by ``lucid-sim ARGV`` in a fresh interpreter."""
    code = ("import json, sys\n"
            f"sys.argv = ['lucid-sim', *{argv!r}]\n"
            "from simcluster.cli import main\n"
            "try:\n"
            "    main()\n"
            "except SystemExit as exit:\n"
            "    assert not exit.code, exit.code\n"
            "names = {m.split('.')[0] for m in sys.modules} | {m for m in sys.modules if m.startswith('simcluster')}\n"
            "print(json.dumps(sorted(names)))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          check=False, env={**_environment(), "COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _environment() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_help_imports_no_data_or_model_library(tmp_path):
    for argv in (["--help"], ["run", "--help"], ["sweep", "--help"]):
        loaded = modules_after(argv, tmp_path)
        assert not loaded & set(HEAVY), (argv, loaded & set(HEAVY))
        assert "simcluster.engine" not in loaded


def test_a_small_fifo_run_leaves_the_round_based_engine_and_scipy_unimported(tmp_path):
    loaded = modules_after(["run", "--out", str(tmp_path / "out"), "--quiet"], tmp_path)
    assert (tmp_path / "out" / "jobs.csv").is_file()
    assert {"pandas", "simpy"} <= loaded  # it did load and simulate
    assert not loaded & {"scipy", "interpret", "torch", "sklearn", "matplotlib", "ray"}
    assert not {m for m in loaded if m.startswith("simcluster.policies.gavel")}


def test_a_gavel_policy_imports_its_family_when_used(tmp_path):
    loaded = modules_after(["run", "--policy", "max_min_fairness", "--out", str(tmp_path / "out"), "--quiet"],
                           tmp_path)
    assert "simcluster.policies.gavel.max_min_fairness" in loaded
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["policy"] == "max_min_fairness"


def test_the_lazily_registered_gavel_names_are_the_ones_its_family_registers():
    from simcluster.policies import GAVEL_POLICIES, POLICIES
    from simcluster.policies.gavel import RoundPolicy

    assert sorted(GAVEL_POLICIES) == sorted(n for n in POLICIES.names() if issubclass(POLICIES.get(n), RoundPolicy))


def test_an_unknown_policy_is_named_with_every_choice(tmp_path):
    done = subprocess.run([sys.executable, "-m", "simcluster.cli", "run", "--policy", "nope", "--out",
                           str(tmp_path / "out")], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          check=False, env={**_environment(), "COLUMNS": "200"})
    assert done.returncode == 2
    assert "unknown policy 'nope'" in done.stderr
    assert "fifo" in done.stderr and "max_min_fairness" in done.stderr


def test_a_sweep_of_event_driven_policies_leaves_scipy_unimported(tmp_path):
    loaded = modules_after(["sweep", "--trace", "synth:jobs=50,nodes=4,vcs=2,seed=1", "--policy", "fifo,sjf",
                            "--workers", "1", "--quiet", "--out", str(tmp_path / "sweep")], tmp_path)
    assert len(list((tmp_path / "sweep" / "runs").glob("*/summary.json"))) == 2
    assert "scipy" not in loaded
