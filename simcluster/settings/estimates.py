"""How estimate-driven policies (qssf, lucid, easy-backfill, slurm) estimate durations: read by runs whose policy
uses an estimator (``Policy.default_estimator``)."""

from __future__ import annotations

from simcluster.settings.fields import Reader, RunView, setting, settings_group

ESTIMATES = "Policy: qssf and lucid estimates"  # its panel in `lucid-sim run --help`


def estimator_of(run: RunView) -> str | None:
    """The estimator the run's policy uses, or None for a policy that uses none (``Policy.default_estimator``)."""
    if run.policy is None or run.policy.default_estimator is None:
        return None
    return str(run.policy.default_estimator if run.config.estimator == "auto" else run.config.estimator)


def learns(run: RunView) -> bool:
    """Whether the run trains a learned model: the ebm estimator, or a policy that boosts its own (lucid)."""
    return estimator_of(run) == "ebm" or (run.policy is not None and "boosting" in run.policy.reads)


@settings_group(ESTIMATES, reads=Reader(lambda run: estimator_of(run) is not None))
class EstimateOptions:
    estimator: str = setting(
        "auto", "Duration estimator: oracle, history, file or ebm; auto = the policy's own (qssf: oracle, "
        "lucid: ebm).",
    )
    estimates: str | None = setting(None, "CSV of job_id,priority (estimated duration, s) for --estimator file "
                                    "(a relative path not found here is looked up beside the trace).",
                                    reads=Reader(lambda run: estimator_of(run) == "file",
                                                 who="qssf, lucid, easy-backfill and slurm with --estimator file"))
    retrain_interval: float = setting(
        7 * 86400.0, "Seconds of simulated time between re-trainings of learned estimators.", above=0,
        reads=Reader(lambda run: estimator_of(run) == "ebm",
                     who="the ebm estimator (lucid's default; qssf with --estimator ebm)"), time=True)
    retrain_growth: float = setting(
        0.25, "A learned model retrains at its interval only if what it learns from grew by this fraction since its "
        "last training (0: at every interval): the ebm estimator's finished jobs, and the bins of lucid's forecaster "
        "when it learns from the trace's own submissions; keeps a long trace's trainings few.", min=0,
        reads=Reader(learns, who="the ebm estimator (lucid's default; qssf with --estimator ebm) and lucid's "
                                 "forecaster"),
    )
    boosting: str = setting(
        "fast", "How the learned duration and throughput models (ebm estimator, lucid's forecaster) boost: fast "
        "(1 bag, learning rate 0.1, 64 bins, early stop: ~1/40 of the CPU, the same or a lower MAE) or interpret "
        "(InterpretML's defaults with 2 outer bags: the former default).", choices=("fast", "interpret"),
        reads=Reader(learns, who="the ebm estimator (lucid's default; qssf with --estimator ebm) and lucid's "
                                 "throughput forecaster"),
    )
    negative_estimates: float | None = setting(
        None, "An estimate below 0 in --estimates is replaced by this many seconds (the Lucid artifact: 1000); "
        "unset: used as it is.", time=True,
    )
    tie_order: str | None = setting(
        None, "CSV with a job_id column (e.g. an artifact's per-job log): jobs of equal priority are taken in the "
        "order they appear there, not in the trace's (the artifacts' unstable sort reorders jobs of one second).",
    )
