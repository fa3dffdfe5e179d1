"""The run's own settings: which policy and placement, the seed, the horizon.  Every run reads them (the seed only
where something draws random numbers)."""

from __future__ import annotations

from simcluster.settings.estimates import estimator_of
from simcluster.settings.fields import Reader, RunView, always, setting, settings_group

POLICY = "Policy"  # its panel in `lucid-sim run --help`


def draws_random(run: RunView) -> bool:
    """Whether a random choice of the run depends on the seed: drawn deadlines, random placement, node failures,
    learned estimators (ebm), or a policy that draws random numbers itself (``Policy.uses_seed``: lucid's models,
    Gavel's agnostic policies)."""
    config = run.config
    if config.deadlines is not None:  # drawn deadlines
        return True
    if run.policy is not None and run.policy.own_placement is not None:  # (its placement draws nothing)
        return run.policy.uses_seed(config) or config.node_mtbf > 0 or bool(config.faults)
    return (config.placement == "random" or config.node_mtbf > 0 or bool(config.faults) or estimator_of(run) == "ebm"
            or (run.policy is not None and run.policy.uses_seed(config)))


@settings_group(POLICY, reads=Reader(always))
class RunOptions:
    policy: str = setting(
        "fifo", "Scheduling policy: a built-in name (see `lucid-sim policies`), path/to/file.py[:Class], "
        "package.module:Class, or a name an installed package registers (entry point simcluster.policies).")
    placement: str = setting(
        "consolidate", "Placement: a built-in name (see `lucid-sim placements`), path/to/file.py[:Class], "
        "package.module:Class, or an entry point of simcluster.placements.",
        reads=Reader(lambda run: run.policy is None or run.policy.own_placement is None))
    seed: int = setting(0, "Seed for every random choice (placement, failures, learners).",
                        reads=Reader(draws_random, who="random placement, node failures (--node-mtbf, --faults), "
                                     "learned models (lucid, --estimator ebm) and Gavel's agnostic policies"))
    until: float = setting(
        0.0, "Simulated-time horizon: stop the run this many seconds after the first submission and report the "
        "jobs not finished by then (0 = run until every job finishes).", min=0,
        time=True,
    )
