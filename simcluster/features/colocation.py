"""Colocation: how fast jobs sharing GPUs ran, and which model said so (docs/colocation.md); in play where the
policy shares GPUs (its colocation model) or a throughput table times jobs in pairs (Gavel's).

``summary.json`` names the model, its provenance and how many of its answers each fallback gave; a run whose
answers were mostly guesses, or whose tables cannot be right, gets a warning
(:func:`~simcluster.doubts.table_warnings`, :func:`~simcluster.doubts.fallbacks_warning`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from simcluster.doubts import fallbacks_warning, table_warnings
from simcluster.features.base import Contribution, Ended, Feature
from simcluster.settings.colocation import ColocationOptions

if TYPE_CHECKING:
    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun


class Colocation(Feature):
    name = "colocation"
    settings = ColocationOptions

    def in_play(self, run: ResolvedRun) -> bool:
        return run.tables.colocation is not None or run.tables.throughputs is not None

    def start(self, plan: Any, jobs: list[Job], run: ResolvedRun) -> Contribution:
        return ColocationResults()


class ColocationResults(Contribution):
    def figures(self, ended: Ended, jobs: pd.DataFrame) -> dict[str, Any]:
        answered = ended.outcome.colocation
        if answered is not None:
            return {"colocation": answered["source"], "colocation_provenance": answered["provenance"],
                    "colocation_fallbacks": answered["fallbacks"], "colocation_answered_by": answered["answered_by"]}
        throughputs = ended.run.tables.throughputs
        if throughputs is not None and (jobs["shared_seconds"] > 0).any():
            return {"colocation": f"throughput table pairs ({throughputs.source})"}
        return {}

    def warnings(self, ended: Ended) -> list[str]:
        answered = ended.outcome.colocation
        if answered is None:
            return []
        found = table_warnings(ended.run.tables.colocation)
        if (line := fallbacks_warning(answered["fallbacks"])) is not None:
            found.append(line)
        return found
