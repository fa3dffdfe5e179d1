"""Gavel's round policies (:mod:`simcluster.policies.gavel`) and its traces of job types: read by the policies
that declare them (``Policy.reads``); the throughput table by runs of traces with job types."""

from __future__ import annotations

from simcluster.settings.fields import Reader, declared, setting, settings_group

GAVEL = "Gavel: rounds and job types"  # its panel in `lucid-sim run --help`


@settings_group(GAVEL, reads=declared)
class GavelOptions:
    round_seconds: float = setting(360.0, "Round length (s) of the round-based mechanism.", above=0,
                                   cli="--round", time=True)
    throughputs: str | None = setting(
        None, "Throughput table: Gavel's simulation_throughputs.json or a folder with single.csv/pair.csv carrying "
        "a gpu_type column. Default: the shared data's Gavel table.",
        reads=Reader(lambda run: run.job_types, who="traces with job types (Gavel's .trace files)"),
    )
    realloc_interval: float = setting(
        0.0, "Least seconds between allocation recomputations (0: whenever the job set changed; Gavel's simulator "
        "uses 1920).", min=0,
        time=True,
    )
    midround_release: bool = setting(
        True, "A job finishing mid-round frees its GPUs at once for waiting jobs, and arrivals take idle GPUs at "
        "once (--no-midround-release: as Gavel, they wait for the next round).",
    )
    new_jobs_wait: bool = setting(
        False, "Jobs that arrive between reallocations get no GPUs until the next one (Gavel's simulator); by "
        "default they take the GPUs the allocation leaves idle.",
    )
    reset_rule: str = setting(
        "interval", "When reallocations may happen: 'interval' (at least --realloc-interval apart) or 'gavel' "
        "(Gavel's simulator: a reset at time 0 does not start the interval; when no job runs, time jumps to the "
        "next arrival, and a reset is forced once none remain).", choices=("interval", "gavel"),
    )
    pair_share_on_finish: str = setting(
        "partner", "When one job of a pair finishes before the next reallocation, the pair's share of the GPUs goes "
        "to its partner ('partner') or lapses ('drop', Gavel's simulator: the partner keeps only its own share).",
        choices=("partner", "drop"),
    )
    type_order: str = setting(
        "aware", "Order in which each round fills the GPU types: 'aware' (heterogeneity-agnostic policies in a "
        "seeded random order, the others fastest first) or 'gavel' (Gavel's simulator decides by the policy's "
        "name, so gandiva, a packing policy, is filled fastest first too).", choices=("aware", "gavel"),
    )
    lp_solution: str = setting(
        "vertex", "Which of equally good LP solutions a policy takes: 'vertex' (HiGHS simplex, ties broken towards "
        "more total normalised throughput) or 'central' (an interior point of the optimal set, no tie-break, as "
        "Gavel's ECOS returns).", choices=("vertex", "central"),
    )
    makespan_search: str = setting(
        "exact", "min_total_duration: 'exact' (one LP in 1/makespan) or 'bisection' (Gavel: bisection on the "
        "makespan over feasibility problems, stopping within 5 %; the allocation is a central feasible point).",
        choices=("exact", "bisection"),
    )
    gandiva_pairing: str = setting(
        "helpful", "gandiva: 'helpful' (random pairs of jobs that can share, kept only when sharing helps) or 'gavel' "
        "(Gavel's simulator: random pairs of equal scale factor, untested, split at a later reallocation when the "
        "sum over GPU types of paired ÷ solo throughput is below 1 — pairs that cannot share at all sit idle until "
        "then).", choices=("helpful", "gavel"),
    )
