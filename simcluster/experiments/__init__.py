"""Experiments at scale: sweeps over policies × traces × seeds × settings, and comparison reports.

- :mod:`simcluster.experiments.sweep`: the grid of runs, ``runs.csv``, resume and failure recording.
- :mod:`simcluster.experiments.backends`: where runs execute (a local process pool, or Ray).
- :mod:`simcluster.experiments.split`: one run's VCs simulated apart and merged (per-VC policies).
- :mod:`simcluster.experiments.report`: the comparison table (CSV, Markdown, HTML) of finished runs.
- :mod:`simcluster.experiments.plots`: the report's PNG plots (matplotlib, no display needed).
"""

from simcluster.experiments.sweep import (
    RunSpec,
    SweepError,
    SweepListener,
    SweepOutcome,
    build_grid,
    parse_sets,
    run_sweep,
)

__all__ = ["RunSpec", "SweepError", "SweepListener", "SweepOutcome", "build_grid", "parse_sets", "run_sweep"]
