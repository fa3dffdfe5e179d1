"""The run's seam: resolve once (:func:`resolve_run`), simulate, collect (:func:`collect`).

:func:`simcluster.api.simulate` is these three steps; every entry point (the CLI, sweeps' workers, the conformance
kit, Python users) goes through :func:`resolve_run`.
"""

from simcluster.run.collect import collect
from simcluster.run.resolve import cluster_of, resolve_run, resolve_settings
from simcluster.run.resolved import InPlay, Plugin, ResolvedRun, ResolvedSettings
from simcluster.run.result import RunResult

__all__ = ["InPlay", "Plugin", "ResolvedRun", "ResolvedSettings", "RunResult", "cluster_of", "collect", "resolve_run",
           "resolve_settings"]
