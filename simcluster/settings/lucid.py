"""Lucid's settings (:mod:`simcluster.policies.lucid`): read by the policies that declare them (``Policy.reads``)."""

from __future__ import annotations

from simcluster.settings.fields import declared, setting, settings_group

LUCID = "Policy: lucid"  # its panel in `lucid-sim run --help`


@settings_group(LUCID, reads=declared)
class LucidOptions:
    profiler_nodes: int = setting(2, "Nodes in the profiling partition (beside the VCs); 0 = no profiling.", min=0)
    profile_seconds: float = setting(200.0, "Seconds a new job runs on the profiling partition at most (the "
                                     "authors' Venus setting).", above=0, time=True)
    profiler_factor: float = setting(0.5, "Jobs asking for more than factor × the partition's GPUs skip profiling.",
                                     above=0)
    profiler_from_vcs: str | None = setting(
        None, "VCs that each give one node to the profiling partition, comma-separated (one per --profiler-nodes; "
        "the artifact on Venus: vc8Gr,vcefl); unset: the partition comes beside the VCs.",
    )
    profiler_queue_limit: int = setting(
        10, "A new job that finds more than this many jobs waiting for the profiling partition goes to its VC "
        "unprofiled (so it never pairs); 0 = no limit (the artifact borrows a node when more than 10 wait).",
        min=0,
    )
    profiler_mode: str = setting(
        "move", "move: a job is profiled, then moves to its VC with the progress it made; short-only: as the "
        "artifact's two passes, only jobs done within the window (by true duration) run there, the others go "
        "to their VC at once.", choices=("move", "short-only"),
    )
    backfill_while_sharing: bool = setting(
        True, "While sharing is on, every waiting job that can start (paired or alone) starts; off, or while "
        "sharing is off, starts stop at the first job that cannot.",
    )
    lucid_sharing: str = setting(
        "adaptive", "When jobs may pair on GPUs: adaptive (only while the forecast load is high), always or never.",
        choices=("adaptive", "always", "never"),
    )
    share_load_quantile: float = setting(
        0.5, "Adaptive sharing, quantile rule: pair jobs while the forecast of next hour's GPU-job submissions is at "
        "least this quantile of the hourly submissions the forecaster was trained on.", min=0, max=1,
    )
    share_rule: str = setting(
        "rate", "Adaptive sharing's test of the forecast: rate (above --share-min-rate, the artifact's rule) or "
        "quantile (at least --share-load-quantile of the hourly submissions trained on).",
        choices=("rate", "quantile"),
    )
    share_min_rate: float = setting(
        2.0, "Adaptive sharing, rate rule: pair jobs only while the forecast GPU-job submissions per 10 minutes "
        "over the next hour exceed this (the artifact: 2).", min=0,
    )
    throughput_history: str | None = setting(
        None, "CSV of 10-minute submission bins (time, submit_gpu_job) to train the throughput forecaster on (its "
        "bins before the trace starts); default: cluster_throughput.csv beside the trace, else the trace's own "
        "earlier bins, retrained daily.",
    )
    pair_priority_ratio: float = setting(
        2.0, "A waiting job may pair with a running one only if its priority is at most this × the partner's.", min=0,
    )
    max_score_sum: int = setting(2, "Most the two jobs' sharing scores (0 good … 2 bad) may sum to.", min=0)
    pair_choice: str = setting(
        "best", "Which eligible running job a waiting job pairs with: best (lowest score sum, then trace order) or "
        "first (the earliest started, as the artifact).", choices=("best", "first"),
    )
    sharing_labels: str | None = setting(
        None, "CSV of sharing scores (model,dataset,batchsize,amp,label; e.g. the authors' single_data.csv) used "
        "instead of the packing model ('lucid': the authors' file in the shared data); a job whose workload it "
        "lacks never pairs.",
    )
    packing_thresholds: tuple[float, float] = setting(
        (0.85, 0.95), "A configuration whose mean speed when sharing is below the first is labelled 2 (shares "
        "badly), below the second 1, else 0.",
    )
