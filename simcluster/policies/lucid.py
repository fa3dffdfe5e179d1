"""Lucid (Hu et al., ASPLOS'23): a non-intrusive, interpretable scheduler that packs jobs affinely.

The policy's parts, each with the paper section it follows and the switch that turns it off:

1. **Non-intrusive job profiler** (§4.1; ``--profiler-nodes 0``).  A new job first runs on a
   small profiling partition of its own (``profiler_nodes`` nodes beside the VCs, or taken out of
   the VCs named by ``profiler_from_vcs``), least-GPU-first, for at most ``profile_seconds``; a job
   asking for more than ``profiler_factor`` × the partition's GPUs skips it, and so does a job that
   finds more than ``profiler_queue_limit`` jobs already waiting for the partition (profiling must
   not hold jobs back: with no limit, a burst of arrivals makes short jobs wait for the partition
   far longer than they run; the artifact borrows a third node instead).  A
   job that finishes inside that window never reaches its VC; the others move on to their VC's
   queue with the progress they made (no checkpoint overhead is charged: the partition exists to
   take that first step).  Profiling is what makes a job's profile (utilization, memory, AMP,
   batch size, model) known; a job that skipped it never pairs.  The window is the authors'
   Venus setting, 200 s.
2. **Packing Analyze Model** (§4.2): :class:`~simcluster.models.packing.PackingModel`, an EBM
   classifier trained on the colocation tables, maps the profile to a sharing score 0/1/2
   (``--sharing-labels FILE``: scores looked up in a labels file instead).
3. **Workload Estimate Model** (§4.3; ``--estimator``, default ``ebm``): the job's estimated
   duration × its GPUs is its priority; a VC's queue is ordered by priority (ties: GPU count,
   trace order).
4. **Throughput Predict Model** (§4.4; ``--lucid-sharing always|never`` turns the forecast off):
   :class:`~simcluster.models.throughput.ThroughputForecaster` forecasts next hour's GPU-job
   submissions; *prescient adaptive sharing* pairs jobs only while the forecast is high: above
   ``share_min_rate`` (2) submissions per 10 minutes (``share_rule = "rate"``, the artifact's rule),
   or at least the ``share_load_quantile`` of the hourly submissions trained on (``"quantile"``).
5. **Affine-pair colocation** (§4.5): while sharing is on, a waiting job of at most one node's
   GPUs first looks for a running exclusive job of the same GPU count whose GPUs it can take
   over as a pair: their memory fits ``gpu_memory``, their scores sum to at most
   ``max_score_sum`` and its priority is at most ``pair_priority_ratio`` × the partner's.  It
   takes the best such partner (lowest score sum, then trace order; ``pair_choice = "first"``:
   the earliest started) on exactly the partner's GPUs; otherwise it is placed exclusively (the
   ``--placement``, consolidate by default).  Both then run at the colocation table's pair
   speeds.  While sharing is on every waiting job that can start, paired or alone, starts
   (backfilling, ``--no-backfill-while-sharing`` to stop at the first that cannot); while it is
   off, starts stop at the first job that cannot.  Lucid never preempts.

**Against the artifact** (S-Lab-System-Group/Lucid, ``simulation/``).  What it does that is
Lucid's *design*, and so our default too: backfilling while sharing (packing exists to use
GPUs that strict priority order leaves idle; the artifact stops at the first job that cannot
start only while colocation is off), and the PAS rule with its threshold (colocation off only
while at most two GPU jobs per 10 minutes are forecast: PAS avoids interference when the
cluster is quiet, and an absolute level says "quiet", where a median rule turns sharing off a
fixed share of the time by construction).  What each costs when switched off is measured in
``docs/policies/lucid.md``.  What is an *accident of its code*, kept as an option for the
``lucid-artifact`` preset but not our default:

- its profiler is a separate first pass over the trace: jobs of at most 8 GPUs that run at most
  200 s (by their true duration) finish there; every other job enters its VC at submission, as
  if never profiled, while also holding profiler GPUs for 200 s (``profiler_mode = "short-only"``;
  we do not hold GPUs for those, so profiling queues are a little shorter than the artifact's);
- the profiler's two nodes come out of vc8Gr and vcefl (``profiler_from_vcs``: VC names are the
  trace's, so ours sit beside the VCs by default), and it borrows a third from vcYVn while more
  than 10 jobs wait (not modelled; ``profiler_queue_limit = 0`` for no limit at all);
- scores are the authors' labels (``sharing_labels``), priorities its offline EBM estimates with
  negatives set to 1000 s (``--estimator file --negative-estimates 1000``), the partner the
  first eligible one in start order (``pair_choice = "first"``, not the best);
- its pair speeds are the table's exact values, above 1.0 included, and 1.0 for any pair with
  NeuMF, ResNet50, BERT or Transformer (ours come from the colocation model, capped at 1.0);
  it ends every job one second late and checks the forecast every 100 s.

We keep our own models (in-simulation EBM estimator, packing model and forecaster) by default:
they learn only from what a scheduler would know when it decides.  The packing model learns from
the colocation tables alone, so, as in the paper, it is trained once per set of tables, not once per
run: :mod:`simcluster.models.cache` keeps it on disk (``SIMCLUSTER_CACHE=off`` refits it every run;
the scores are the same either way).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter, defaultdict
from collections.abc import Iterator
from heapq import heapify, heappop, heapreplace
from operator import itemgetter
from typing import Any

from simcluster.cluster import Cluster, VirtualCluster
from simcluster.config import SimConfig
from simcluster.estimators import EstimateQuality, make_estimator
from simcluster.estimators.from_file import TieOrder
from simcluster.job import UNKNOWN_WORKLOAD as UNKNOWN
from simcluster.job import Job, JobState, table_keys
from simcluster.policies.base import POLICIES, Policy, SchedulingContext
from simcluster.queue import JobQueue
from simcluster.settings.fields import names_of
from simcluster.settings.lucid import LucidOptions
from simcluster.throughputs import PAIR_FLOOR

PROFILER = "profiler"
UNSCORED = object()  # a candidate whose score is not known yet
NEVER = object()  # a candidate that can never pair (GPU fractions, no profile)
SHARING_MODES = ("adaptive", "always", "never")


def profiler_vcs(config: SimConfig) -> list[str]:
    """The VCs named by ``--profiler-from-vcs``, one per node they give."""
    return [name.strip() for name in (config.profiler_from_vcs or "").split(",") if name.strip()]


def check_lucid_config(config: SimConfig) -> None:
    """Raise ValueError naming the option that is out of range."""
    if config.lucid_sharing not in SHARING_MODES:
        raise ValueError(f"--lucid-sharing must be one of {', '.join(SHARING_MODES)}, got {config.lucid_sharing!r}")
    if not 0.0 <= config.share_load_quantile <= 1.0:
        raise ValueError(f"--share-load-quantile must lie in [0, 1], got {config.share_load_quantile}")
    low, mid = config.packing_thresholds
    if not 0.0 < low <= mid:
        raise ValueError(f"--packing-thresholds must be 0 < low <= high, got {config.packing_thresholds}")
    if config.profiler_nodes < 0 or config.profile_seconds <= 0 or config.profiler_factor <= 0:
        raise ValueError("--profiler-nodes must be >= 0, --profile-seconds and --profiler-factor > 0")
    vcs = profiler_vcs(config)
    if vcs and len(vcs) != config.profiler_nodes:
        raise ValueError(f"--profiler-from-vcs names {len(vcs)} VCs, one per node, but --profiler-nodes is "
                         f"{config.profiler_nodes}")


@POLICIES.register("lucid")
class Lucid(Policy):
    """Lucid (ASPLOS'23): brief profiling, duration estimates as priority, affine pairs while load is high."""

    shares_gpus = True
    default_estimator = "ebm"
    reads = frozenset(names_of(LucidOptions)) | {"retrain_growth", "boosting"}  # its forecaster learns and boosts too

    @classmethod
    def uses_seed(cls, config: SimConfig) -> bool:
        return True  # its models learn with the seed

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__(config)
        c = self.config
        check_lucid_config(c)
        self.estimator = make_estimator(c, default="ebm")
        self.quality = EstimateQuality()
        self.ties = TieOrder(c.tie_order)
        self._priority: dict[Job, float] = {}
        # a job bigger than the whole partition could never be profiled: factors above 1 count as 1
        self._profile_limit = min(c.profiler_factor, 1.0) * c.profiler_nodes * c.gpus_per_node
        self._scores: dict[Job, int | None] = {}
        self._profiler_queue = JobQueue()  # jobs waiting for the profiling partition: its own queue, once attached
        self.packing: Any = None  # the scores' source: a labels file, or the packing model built at first use
        if c.sharing_labels:
            from simcluster.models.labels import LabelledScores

            self.packing = LabelledScores(c.sharing_labels)
        self.forecaster: Any = None  # built at the first submission (it needs to know when the trace starts)
        self.counts: defaultdict[str, int] = defaultdict(int)
        # per VC and GPU count, its running exclusive jobs (a pair's candidates), kept by the run hooks; a job
        # that stops sharing goes back to its place (its start number)
        self._exclusive: dict[str, defaultdict[int, _Candidates]] = {}
        # a candidate → (its candidates, its score or UNSCORED or NEVER, its sort key there)
        self._where: dict[Job, tuple[_Candidates, Any, Any]] = {}
        self._first = self.config.pair_choice == "first"
        self._started: dict[Job, int] = {}  # a running job → its start number
        self._starts = 0

    # --- the profiling partition ------------------------------------------------
    def partitions(self) -> dict[str, int]:
        return {PROFILER: self.config.profiler_nodes} if self.config.profiler_nodes else {}

    def borrowed_nodes(self) -> dict[str, int]:
        return dict(Counter(profiler_vcs(self.config)))

    def attach(self, cluster: Cluster) -> None:
        # its queue, not a count kept by hand: a job evicted there by a node failure waits there again, and
        # one given up on leaves it, which the policy is not told of
        if PROFILER in cluster.vcs:
            self._profiler_queue = cluster.vcs[PROFILER].pending

    def on_submit(self, job: Job, now: float) -> str | None:
        if self.forecaster is None and self.config.lucid_sharing == "adaptive":
            self.forecaster = self._make_forecaster(now)
        if self.forecaster is not None and self.forecaster.live:
            self.forecaster.series.record(now)
        estimate = self.estimator.estimate(job, now)
        self.quality.record(estimate, job)
        self._priority[job] = estimate * job.gpu_num
        if not self.config.profiler_nodes:
            return None
        limit = self.config.profiler_queue_limit
        if job.gpu_num > self._profile_limit:
            self._scores[job] = None  # never profiled: its profile is unknown, so it never pairs
            self.counts["skipped_profiling"] += 1
        elif limit and len(self._profiler_queue) > limit:
            self._scores[job] = None
            self.counts["profiler_busy"] += 1
        elif self.config.profiler_mode == "move" or job.duration <= self.config.profile_seconds:
            return PROFILER  # profiled first
        else:
            self.counts["profiled_beside"] += 1  # short-only: profiled in a pass of its own, at no cost to it
        return None

    def on_run_start(self, job: Job, vc: VirtualCluster) -> None:
        number = self._started.get(job)
        if number is None:
            self._starts += 1
            number = self._started[job] = self._starts
        if not job.sharing:
            exclusive = self._exclusive.get(vc.name)  # (setdefault would make a defaultdict per start)
            if exclusive is None:
                exclusive = self._exclusive[vc.name] = defaultdict(_Candidates)
            pool = exclusive[job.gpu_num]
            pool.total += 1
            if job.gpu_milli < 1000:  # never a partner
                insort(pool.never, (number, job))
                self._where[job] = (pool, NEVER, number)
            elif job in self._scores:
                self._file(job, number, self._scores[job], pool)
            else:
                insort(pool.unscored, (number, job))
                self._where[job] = (pool, UNSCORED, number)

    def on_run_stop(self, job: Job, vc: VirtualCluster) -> None:
        if job.state is not JobState.RUNNING:
            del self._started[job]
        where = self._where.pop(job, None)
        if where is None:
            return
        pool, kind, key = where
        pool.total -= 1
        bucket = pool.unscored if kind is UNSCORED else pool.never if kind is NEVER else pool.buckets[kind]
        at = bisect_left(bucket, key, key=itemgetter(0))
        del bucket[at]

    def pending_key(self, job: Job) -> tuple[float, ...]:
        if job.queue_vc == PROFILER:
            return (job.gpu_num, self.ties.rank(job))  # least-GPU-first, then trace order
        return (self._priority[job], job.gpu_num, self.ties.rank(job))

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        if vc.name == PROFILER:
            self._run_profiler(vc, ctx)
        else:
            self._run_vc(vc, ctx)

    def _run_profiler(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        now, window = ctx.now, self.config.profile_seconds
        for job in [j for j in vc.running if now - j.run_started_at >= window - 1e-9]:
            ctx.move(job, job.vc)  # profiled: on to its own VC, with the progress it made
            self.counts["profiled"] += 1
        while (waiting := vc.pending.first()) is not None and ctx.try_start(waiting):
            ctx.wake_at(now + window)

    # --- a VC: priority order, affine pairs while load is high ---------------------
    def _run_vc(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        share = self._sharing_on(ctx.now)
        exclusive = self._exclusive.setdefault(vc.name, defaultdict(_Candidates))  # (kept by the run hooks)
        backfill = share and self.config.backfill_while_sharing
        if backfill and len(vc.pending) >= self.walk_by_size_from:
            self._backfill_by_size(vc, ctx, exclusive)
            return
        small, no_room = vc.gpus_per_node, set()  # GPU counts that found no idle GPUs (starts only take GPUs)
        for job in vc.pending:  # in priority order
            size = job.gpu_num
            if share and size <= small and self._pair(job, exclusive[size], ctx):
                continue
            if size in no_room:
                continue
            if not ctx.try_start(job):
                if not backfill:
                    return
                no_room.add(size)

    #: from how many waiting jobs a backfilling pass walks the queue per GPU count (below, one walk is cheaper)
    walk_by_size_from = 64

    def _backfill_by_size(self, vc: VirtualCluster, ctx: SchedulingContext,
                          exclusive: defaultdict[int, _Candidates]) -> None:
        """The backfilling pass of :meth:`_run_vc` at the cost of the jobs that can still do something.

        The same decisions as one walk over the whole queue: the queue is walked per GPU count, merged
        in its order, and a count is dropped once no job of it can start in this pass (one found no
        room: starts only take GPUs) nor pair (none of its size runs alone to pair with, and only a
        start of that count, which no room rules out, adds one).  A long queue of jobs too big for
        the idle GPUs then costs a step per GPU count, not one per job.
        """
        small, no_room = vc.gpus_per_node, set()
        jobs_of, keys_of, heads = {}, {}, []
        for size, (keys, jobs, first) in vc.pending.runs_by_size(float("inf")).items():
            jobs_of[size], keys_of[size] = jobs[first:], keys[first:]  # (a copy: starts change the queue)
            heads.append((keys[first], size, 0))
        heapify(heads)
        while heads:
            _, size, i = heads[0]
            job = jobs_of[size][i]
            if not (size <= small and self._pair(job, exclusive[size], ctx)) and size not in no_room \
                    and not ctx.try_start(job):
                no_room.add(size)
            i += 1
            if i < len(jobs_of[size]) and (size not in no_room or (size <= small and exclusive[size].total)):
                heapreplace(heads, (keys_of[size][i], size, i))
            else:
                heappop(heads)

    def _pair(self, job: Job, candidates: _Candidates, ctx: SchedulingContext) -> bool:
        """Start ``job`` on the GPUs of its best partner among ``candidates``, if one passes every check."""
        partner = self._partner(job, candidates, ctx) if candidates.total else None
        if partner is None:
            return False
        # (it shares from now on: the run hooks take it out of the candidates)
        ctx.start_on(job, [(node, list(ids)) for node, ids in partner.allocation])
        self.counts["paired"] += 1
        return True

    def _partner(self, job: Job, candidates: _Candidates, ctx: SchedulingContext) -> Job | None:
        # The rule: of the candidates in start order, the first (pair_choice "first") or the one of the lowest
        # (score sum, trace index) that passes every check.  Candidates are kept by score (those not scored yet
        # apart, scored in start order as the walk reaches them, as a walk over all of them would), so those
        # whose score cannot fit are never visited.
        score = self._score(job, ctx) if job.gpu_milli >= 1000 else None  # GPU fractions share by fraction
        if score is None:
            return None
        config, priorities = self.config, self._priority
        priority, memory_limit, most, ratio = self._priority[job], config.gpu_memory, config.max_score_sum, \
            config.pair_priority_ratio
        first, throughputs, memory, speeds = self._first, ctx.throughputs, job.memory, job.speeds

        def fits(other: Job) -> bool:  # every check but the score's
            if memory + other.memory > memory_limit:
                return False
            if speeds is not None and not all(job.speed_on(node.gpu_type) for node, _ in other.allocation):
                return False
            if throughputs is not None and not can_share(job, other, throughputs):
                return False
            return not priority > ratio * priorities[other]

        def prechecks(other: Job) -> bool:  # the checks made before a candidate's score is looked at
            if memory + other.memory > memory_limit:
                return False
            if speeds is not None and not all(job.speed_on(node.gpu_type) for node, _ in other.allocation):
                return False
            return throughputs is None or can_share(job, other, throughputs)

        buckets = candidates.buckets
        if first:
            found: tuple[int, Job] | None = None
            for s in candidates.order:
                if score + s > most:
                    break
                for entry in buckets[s]:
                    if found is not None and entry[0] > found[0]:
                        break
                    if fits(entry[1]):
                        found = entry
                        break
            limit = found[0] if found is not None else None
            unscored = candidates.unscored
            if unscored:
                kept: list[tuple[int, Job]] = []
                result = None
                for at, entry in enumerate(unscored):
                    number, other = entry
                    if limit is not None and number > limit:
                        kept.extend(unscored[at:])
                        break
                    if not prechecks(other):
                        kept.append(entry)
                        continue
                    other_score = self._score(other, ctx)
                    self._file(other, number, other_score, candidates)
                    if other_score is not None and score + other_score <= most \
                            and not priority > ratio * priorities[other]:
                        result = other
                        kept.extend(unscored[at + 1:])
                        break
                candidates.unscored = kept
                if result is not None:
                    return result
            return None if found is None else found[1]
        unscored = candidates.unscored
        if unscored:  # a walk over all candidates scores every one that passes the checks before the score's
            kept = []
            for entry in unscored:
                number, other = entry
                if not prechecks(other):
                    kept.append(entry)
                    continue
                self._file(other, number, self._score(other, ctx), candidates)
            candidates.unscored = kept
        for s in candidates.order:
            if score + s > most:
                break
            for _, other in buckets[s]:  # in trace order
                if fits(other):
                    return other
        return None

    def _file(self, job: Job, number: int, score: int | None, candidates: _Candidates) -> None:
        """File a scored candidate (not among the unscored ones) under its score."""
        if score is None:  # never pairs
            insort(candidates.never, (number, job))
            self._where[job] = (candidates, NEVER, number)
            return
        key = number if self._first else (job.index, number)
        bucket = candidates.buckets.get(score)
        if bucket is None:
            bucket = candidates.buckets[score] = []
            candidates.order = sorted(candidates.buckets)
        insort(bucket, (key, job))
        self._where[job] = (candidates, score, key)

    def _score(self, job: Job, ctx: SchedulingContext) -> int | None:
        if job not in self._scores:
            self._scores[job] = self.packing_model(ctx.colocation).score(job.workload or UNKNOWN, job.gpu_num,
                                                                          job.memory)
        return self._scores[job]

    def packing_model(self, colocation: Any) -> Any:
        if self.packing is None:
            from simcluster.models.packing import PackingModel

            # trained once per set of colocation tables, not once per run (simcluster.models.cache)
            self.packing = PackingModel(colocation, tuple(self.config.packing_thresholds), self.config.seed,
                                        cached=True)
        return self.packing

    def _sharing_on(self, now: float) -> bool:
        mode = self.config.lucid_sharing
        if mode != "adaptive":
            return mode == "always"
        return bool(self.forecaster.high(now))

    def _make_forecaster(self, now: float) -> Any:
        from simcluster.models.throughput import (
            BIN,
            SubmissionSeries,
            ThroughputForecaster,
            read_throughput_log,
        )
        from simcluster.traces.venus import DEFAULT_EPOCH

        c = self.config
        rule: dict[str, Any] = {"quantile": c.share_load_quantile, "seed": c.seed, "boosting": c.boosting,
                                "retrain_growth": c.retrain_growth,
                                "min_rate": c.share_min_rate if c.share_rule == "rate" else None}
        if c.throughput_history:
            first, counts = read_throughput_log(c.throughput_history, DEFAULT_EPOCH)
            return ThroughputForecaster(SubmissionSeries(first, counts), train_until=int(now // BIN), **rule)
        return ThroughputForecaster(SubmissionSeries(int(now // BIN)), **rule)

    def on_finish(self, job: Job, now: float) -> None:
        self.estimator.observe(job, now)
        del self._priority[job]
        self._scores.pop(job, None)
        if job.queue_vc == PROFILER:
            self.counts["finished_while_profiling"] += 1

    def report(self) -> dict[str, Any]:
        from simcluster.models.explanation import term_importances

        def top_terms(model: Any) -> list[str]:
            return [] if model is None else term_importances(model)["term"].head(3).tolist()

        c = self.config
        lucid: dict[str, Any] = {"sharing": c.lucid_sharing, **self.counts}
        if c.lucid_sharing == "adaptive":
            lucid["share_rule"] = c.share_rule
        model = getattr(self.estimator, "model", None)
        lucid["workload"] = {"estimator": self.estimator.name, "trainings": getattr(self.estimator, "trainings", 0),
                             "top_terms": top_terms(model)}
        if self.packing is not None:
            # (a packing model from the cache has its terms but no EBM)
            terms = self.packing.top_terms(3) if hasattr(self.packing, "top_terms") else top_terms(self.packing.model)
            lucid["packing"] = {**self.packing.evaluate_for(c.colocation), "top_terms": terms}
        if self.forecaster is not None:
            lucid["throughput"] = {**self.forecaster.report(), "top_terms": top_terms(self.forecaster.model)}
        return {"estimator": self.estimator.name, "estimate_quality": self.quality.report(), "lucid": lucid}


class _Candidates:
    """A VC's running exclusive jobs of one GPU count: a pair's candidates.

    ``total`` counts them all; those whose score is known sit in ``buckets`` by score, sorted by start number
    (pair_choice "first") or by (trace index, start number); those not scored yet in ``unscored`` and those
    that can never pair (GPU fractions, no profile) in ``never``, by start number.  Iterated: all of them as
    (start number, job), in start order.
    """

    __slots__ = ("buckets", "never", "order", "total", "unscored")

    def __init__(self) -> None:
        self.total = 0
        self.buckets: dict[int, list[tuple[Any, Job]]] = {}
        self.order: list[int] = []
        self.unscored: list[tuple[int, Job]] = []
        self.never: list[tuple[int, Job]] = []

    def __len__(self) -> int:
        return self.total

    def __iter__(self) -> Iterator[tuple[int, Job]]:
        entries = [*self.unscored, *self.never]
        for bucket in self.buckets.values():
            entries += [(key if isinstance(key, int) else key[1], job) for key, job in bucket]
        return iter(sorted(entries, key=itemgetter(0)))


def can_share(job: Job, partner: Job, table: Any) -> bool:
    """Whether ``job`` may join ``partner`` on its GPUs as far as a pair throughput table knows.

    Jobs of a trace with such a table (Gavel's) run beside each other at the table's pair speeds, and the
    table marks pairs that cannot share at all; the packing model's scores come from Venus workloads and
    cannot see that, so such a pair would crawl at the floor speed.  Without a table: no objection.
    """
    keys = table_keys(table, job, partner)
    if keys is None:
        return True
    mine, theirs = keys
    return all(min(table.pair_factor(mine, theirs, node.gpu_type), table.pair_factor(theirs, mine, node.gpu_type))
               > PAIR_FLOOR for node, _ in partner.allocation)
