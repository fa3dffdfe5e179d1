"""Tiresias (NSDI'19): discretized two-dimensional least-attained-service scheduling.

A job's *attained service* is GPUs × seconds it has held them.  Thresholds
split attained service into K priority queues; a higher queue always goes
first, jobs move down as they cross a threshold, and the chosen jobs get
the VC's GPUs by the quota walk (:mod:`simcluster.policies.quota`), which
preempts running jobs that fall outside it.  Decisions are taken at quantum
boundaries (every 60 s by default, on the absolute clock) as in the Lucid
artifact's Tiresias baseline.

Event-driven: an arrival or completion asks for a decision at the next
boundary; after a decision the policy sets timers only where the decision
could change without any event — the first boundary after a running job
crosses a threshold, and the boundary when a waiting job becomes eligible
for promotion.  The running jobs are kept in their order (:class:`~simcluster.sdk.RunningOrder`) as they
start and stop, and re-filed only when one crosses a threshold (a heap by the time it will), so a decision
costs what it changes, not a pass over every running job.

With ``overheads = "elasticflow"`` each decision is a round of ElasticFlow's simulator, whose start and
restart costs (:mod:`simcluster.policies.elasticflow_overheads`) the jobs pay as pauses: the preset
``elasticflow-dlas`` runs it as that simulator runs its Tiresias baseline.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass
from heapq import heappop, heappush
from typing import Any

from simcluster.cluster import VirtualCluster
from simcluster.config import SimConfig
from simcluster.job import PENDING, RUNNING, Job
from simcluster.policies.base import POLICIES, Policy, SchedulingContext
from simcluster.policies.elasticflow_overheads import RoundOverheads
from simcluster.policies.quota import queue_is_tiered, queue_streams, walk_changes_nothing, walk_quota
from simcluster.policies.running_order import RunningOrder
from simcluster.sdk import setting
from simcluster.settings.fields import ConfigError, names_of
from simcluster.settings.tiresias import TiresiasOptions
from simcluster.tiers.eviction import tier_rank

OVERHEAD_MODELS = ("none", "elasticflow")
GUARDED = -1  # the queue a promoted job is keyed in on its first run since its promotion: ahead of every other


@dataclass(frozen=True)
class TiresiasSettings:
    overheads: str = setting("none", "What starting a job costs: none; elasticflow (ElasticFlow's simulator, "
                             "utils.estimate_overhead, each decision one of its rounds, the boundaries where a running "
                             "job crosses a threshold included: a job started in a round pauses 2 s, 7 s on a VC of "
                             "256 GPUs or more, plus 2 × (log2 GPUs + 1) s at the next round if it still runs then; "
                             "every 60th round restarts every running job, a pause of that plus 27 s, 47 s on a VC of "
                             "256 GPUs or more, at once).",
                             choices=OVERHEAD_MODELS)


@POLICIES.register("tiresias")
class Tiresias(Policy):
    """Tiresias 2D-LAS: K attained-service queues (GPU × s), FIFO within a queue, preemptive, 60 s quantum.

    Options: ``--thresholds`` (K-1 GPU-second boundaries, default 18,000 as
    in the Lucid artifact), ``--quantum`` (seconds between decisions),
    ``--promote-knob`` (Tiresias' PromoteKnob starvation guard: a job that
    has waited longer than knob × its last run is promoted to the highest
    queue; 0 = off; on its first run since then, until it leaves the top queue, no waiting job preempts it,
    so a promotion cannot feed the next).  Preemption charges the checkpoint overhead; ``--set
    overheads=elasticflow`` charges starts and restarts as ElasticFlow's simulator does.

    Where the trace gives tiers (docs/tiers.md) every key is ``(tier, the key above)``, running and waiting jobs
    alike: a higher tier goes first, so a waiting job preempts only running jobs of its tier (by attained service)
    or of a lower one.
    """

    preemptive = True
    priority_first = True  # (by tier first where the trace gives tiers, running and waiting jobs alike)
    reads = frozenset(names_of(TiresiasOptions))  # --quantum, --thresholds, --promote-knob
    Settings = TiresiasSettings
    keeps_order = True  # its run hooks keep each VC's running jobs in order (a subclass with other keys: False)

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__(config)
        self.thresholds = sorted(float(t) for t in self.config.thresholds)
        if any(t <= 0 for t in self.thresholds):
            raise ValueError(f"tiresias thresholds must be positive, got {self.config.thresholds}")
        if self.config.quantum <= 0:
            raise ValueError(f"quantum must be positive, got {self.config.quantum}")
        self.quantum = self.config.quantum
        self.knob = self.config.promote_knob
        self._forgiven: dict[Job, float] = {}  # attained service wiped by promotions
        self.promotions = 0
        # the promoted jobs on their first run since their promotion (:meth:`_note_promoted_start`), and what
        # each job's wiped service was when it last started (a new value: it was promoted since)
        self._guarded: set[Job] = set()
        self._forgiven_at_start: dict[Job, float] = {}
        self._overheads: RoundOverheads | None = None  # (attach: from the settings)
        # with the knob: per VC, the waiting jobs that may starve, by the time they become eligible for promotion
        # (a heap of (eligible, trace index, job, pending_since); an entry is stale once its job ran or was
        # promoted), and those queued since the VC's last timers were set
        self._eligible: dict[str, list[tuple[float, int, Job, float]]] = {}
        self._new_eligible: dict[str, list[tuple[float, int, Job, float]]] = {}
        # per VC, its running jobs by (queue, submit time); the time each will cross its queue's threshold (a heap
        # of (when, trace index, job, run)); and the jobs whose crossing no pass has set a timer for yet
        self._orders: dict[str, RunningOrder] = {}
        self._crossings: dict[str, list[tuple[float, int, Job, int]]] = {}
        self._unannounced: dict[str, list[tuple[Job, int]]] = {}
        self._run_of: dict[Job, int] = {}  # a running job → the number of its run (older heap entries are stale)
        self._runs = 0
        self._tiered: bool | None = None  # whether the keys are (tier, ...): known at the first pass with a job waiting
        # without the kept order: per job, the run and boundary of the crossing timer a pass set
        # (:meth:`_crossings_not_set`), where that boundary is exact (a whole quantum) and computed as here
        self._crossing_set: dict[Job, tuple[float, float, float, float]] = {}
        # whether attained service and queues are this class's own (then inlined where every job asks for them)
        self._plain_keys = type(self).attained is Tiresias.attained and type(self).queue_of is Tiresias.queue_of
        self._kept_crossings = not self.keeps_order and self.quantum == int(self.quantum) \
            and type(self).attained is Tiresias.attained and type(self).crossing_boundary is Tiresias.crossing_boundary

    def attach(self, cluster: Any) -> None:
        """The overhead model, from the settings (read here: a test may replace them after construction)."""
        self._overheads = None
        if self.settings.overheads == "elasticflow":
            if self.knob > 0:  # (a pause starts a new run segment, which the knob would take for the last run)
                raise ConfigError("tiresias: overheads=elasticflow reproduces ElasticFlow's dlas-gpu, which runs "
                                  f"without the promote knob; got --promote-knob {self.knob}: set it to 0")
            self._overheads = RoundOverheads()

    # --- attained service and queues -----------------------------------------
    def attained(self, job: Job, now: float) -> float:
        busy = job.busy_time
        if job.state is RUNNING:  # (the module constant: JobState.RUNNING is a metaclass lookup, ~10x dearer)
            busy += now - job.run_started_at
        if self._forgiven and job in self._forgiven:
            return job.gpu_num * busy - self._forgiven[job]
        return job.gpu_num * busy

    def queue_of(self, attained: float) -> int:
        """0 = highest; a job is in a lower queue once its service exceeds a threshold."""
        return bisect_left(self.thresholds, attained)

    def running_queue(self, job: Job, queue: int) -> int:
        """The queue a running job in ``queue`` is keyed in: :data:`GUARDED` for a promoted job on its first run
        since its promotion while it is still in the top queue (:meth:`_note_promoted_start`), else ``queue``."""
        return GUARDED if queue == 0 and job in self._guarded else queue

    def pending_key(self, job: Job) -> Any:
        """A waiting job's key, constant while it waits: its queue by attained service, then its submit time."""
        return (self._attained_and_queue(job, 0.0)[1], job.submit_time)

    def _attained_and_queue(self, job: Job, now: float) -> tuple[float, int]:
        """:meth:`attained` and :meth:`queue_of` in one step, inlined where no subclass overrides them: asked at
        every start and of every job the queue takes."""
        if not self._plain_keys:
            attained = self.attained(job, now)
            return attained, self.queue_of(attained)
        busy = job.busy_time
        if job.state is RUNNING:
            busy += now - job.run_started_at
        attained = job.gpu_num * busy
        if self._forgiven and job in self._forgiven:
            attained -= self._forgiven[job]
        return attained, bisect_left(self.thresholds, attained)

    def running_key(self, job: Job, now: float) -> Any:
        return (self.running_queue(job, self.queue_of(self.attained(job, now))), job.submit_time)

    # --- the running jobs, kept in order -------------------------------------------------------------
    def on_run_start(self, job: Job, vc: VirtualCluster) -> None:
        order = self._orders.get(vc.name)
        if order is None:
            order = self._orders[vc.name] = RunningOrder()
        self._runs += 1
        self._run_of[job] = run = self._runs
        now = self.now
        attained, queue = self._attained_and_queue(job, now)
        if self._forgiven:
            self._note_promoted_start(job)
        key = (self.running_queue(job, queue), job.submit_time)
        order.add((tier_rank(job), key) if self._tiered else key, job)  # (_order_key, inlined: at every start)
        self._note_crossing(vc.name, job, run, queue, attained, now)

    def on_run_stop(self, job: Job, vc: VirtualCluster) -> None:
        self._orders[vc.name].remove(job)
        del self._run_of[job]
        if self.knob > 0:
            self._note_stopped(job, vc)

    def _order_key(self, job: Job, queue: int) -> Any:
        """A running job's key in the kept order, in ``queue``: by tier first on a tiered run."""
        key = (queue, job.submit_time)
        return (tier_rank(job), key) if self._tiered else key

    def _queue_in_order(self, job: Job, order: RunningOrder) -> int:
        """The queue a running job is keyed in, in the kept order."""
        key = order.key_of(job)
        return key[1][0] if self._tiered else key[0]

    def _note_crossing(self, vc: str, job: Job, run: int, queue: int, attained: float, now: float) -> None:
        """Note when ``job`` (running, in ``queue`` with ``attained`` service at ``now``) crosses its queue's
        threshold, and that no timer is set for it yet."""
        if queue < len(self.thresholds):
            heappush(self._crossings.setdefault(vc, []),
                     (now + (self.thresholds[queue] - attained) / job.gpu_num, job.index, job, run))
        self._unannounced.setdefault(vc, []).append((job, run))

    def running_order(self, vc: VirtualCluster, now: float) -> RunningOrder:
        """The VC's running jobs by their key at ``now``: those that crossed a threshold since the last look are
        re-filed (their queue computed as :meth:`running_key` computes it, the same float)."""
        order = self._orders.get(vc.name)
        if order is None:
            order = self._orders[vc.name] = RunningOrder()
        heap = self._crossings.get(vc.name)
        horizon = now + 1e-9 * max(1.0, abs(now))  # (a little past now: the crossing time is itself a sum)
        not_yet = []
        while heap and heap[0][0] <= horizon:
            entry = heappop(heap)
            job, run = entry[2], entry[3]
            if self._run_of.get(job) != run:
                continue  # (stale: that run ended)
            attained = self.attained(job, now)
            queue = self.queue_of(attained)
            if self.running_queue(job, queue) == self._queue_in_order(job, order):
                not_yet.append(entry)
                continue
            order.rekey(job, self._order_key(job, queue))  # (a guarded job left the top queue: its guard ends)
            self._note_crossing(vc.name, job, run, queue, attained, now)
        for entry in not_yet:
            heappush(heap, entry)  # type: ignore[arg-type]
        return order

    # --- decisions ----------------------------------------------------------------
    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        now = ctx.now
        boundary = self._boundary_at_or_after(now)
        if boundary != now:
            ctx.wake_at(boundary)
            return
        overheads = self._overheads
        if overheads is not None:
            running_before = overheads.open_round(vc, ctx)
        if self.knob > 0:
            self._promote_starving(vc, ctx, now)
        if self._tiered is None and vc.pending:
            self._tiered = queue_is_tiered(vc)
        if vc.pending:
            self.decide(vc, ctx, now)
        if overheads is not None:
            overheads.close_round(vc, ctx, running_before)
        self._set_timers(vc, ctx, now)

    def running_entries(self, vc: VirtualCluster, now: float) -> list[tuple[Any, Job]]:
        """(running key, job) of every running job; keys compare with the waiting jobs' keys."""
        if type(self).running_key is not Tiresias.running_key:
            return [(self.running_key(j, now), j) for j in vc.running]
        if not self._forgiven:  # running_key and attained, inlined: this runs for every job at every pass
            thresholds = self.thresholds
            return [((bisect_left(thresholds, j.gpu_num * (j.busy_time + (now - j.run_started_at))),
                      j.submit_time), j) for j in vc.running]
        return [(self.running_key(j, now), j) for j in vc.running]

    def decide(self, vc: VirtualCluster, ctx: SchedulingContext, now: float) -> None:
        """The quota walk, with the running jobs that come before every waiting one handed their GPUs up front.

        The artifact lists running jobs before waiting ones, then sorts stably by key: on equal keys a
        running job goes first, so one whose key is at most the queue head's comes before every waiting
        job and keeps its GPUs (while they add up to no more than the VC's).  Only the others are walked,
        and when none is left and no waiting job fits what remains, there is nothing to walk.
        """
        if self.keeps_order:
            order = self.running_order(vc, now)
            self.order_queue(vc, ctx, now)
            walk_quota(vc, ctx, order, pending_first_on_ties=False)
            return
        running = self.running_entries(vc, now)
        if self._tiered:
            running = [((tier_rank(job), key), job) for key, job in running]
        self.order_queue(vc, ctx, now)
        head_key = self.head_key(vc)
        used, rest = 0, []
        for entry in running:
            if entry[0] <= head_key:
                used += entry[1].gpu_num
            else:
                rest.append(entry)
        self.walk_rest(vc, ctx, used, rest, running)

    @staticmethod
    def head_key(vc: VirtualCluster) -> Any:
        """The queue head's key, as the queue holds it (the smallest)."""
        return vc.pending.first_entry()[0]

    @staticmethod
    def walk_rest(vc: VirtualCluster, ctx: SchedulingContext, used: int, rest: list[tuple[Any, Job]],
                  running: list[tuple[Any, Job]]) -> None:
        """Walk the running jobs ``rest`` and the queue in what ``used`` GPUs leave; all of ``running``
        where they overbook the VC (GPU fractions may); no walk where it would change nothing."""
        if used > vc.total_gpus:
            used, rest = 0, running
        elif walk_changes_nothing(vc, used, sum(job.gpu_num for _, job in rest)):
            return
        walk_quota(vc, ctx, rest, queue_streams(vc, vc.total_gpus - used), pending_first_on_ties=False, reserved=used)

    def order_queue(self, vc: VirtualCluster, ctx: SchedulingContext, now: float) -> None:
        """Hook: bring the waiting jobs' keys up to date before the walk (their order may have changed)."""

    # --- the promote knob ------------------------------------------------------------------------
    def _note_promoted_start(self, job: Job) -> None:
        """A job starts: on its first run since a promotion it is guarded (keyed in :data:`GUARDED`, ahead of
        every waiting job) until it leaves the top queue, having had that queue's quantum of service.

        Without the guard a promoted job is preempted at its next decision by a later promotion, and is itself
        promoted again a knob's multiple of that one quantum later: the knob fed itself (issue 55, a promotion and
        a preemption per quantum on an overloaded cluster).  It goes ahead of every waiting job, not only of later
        promotions: "after every later promotion" is no order (a job promoted between two guarded ones may come
        before the first by key and must come after the second).  A promotion is told by the wiped service it
        added (:meth:`_promote_starving`), so any way of promoting is guarded alike."""
        forgiven = self._forgiven.get(job)
        if not self.config.promotion_hold:
            return  # (the artifact's rule: a promotion may be preempted by the next)
        if forgiven is not None and self._forgiven_at_start.get(job) != forgiven:
            self._forgiven_at_start[job] = forgiven
            self._guarded.add(job)

    def _note_stopped(self, job: Job, vc: VirtualCluster) -> None:
        """A job left its GPUs: if it waits again having run, it may starve; note when it becomes eligible.

        Its last run, its attained service and so its eligibility stay fixed while it waits, so the waiting
        jobs need not be scanned at every pass (which made the knob cost a pass per waiting job)."""
        self._guarded.discard(job)  # (its first run since its promotion is over)
        if job.state is not PENDING or not self._may_starve(job):
            return
        entry = (job.pending_since + self.knob * self.last_run(job), job.index, job, job.pending_since)
        heappush(self._eligible.setdefault(vc.name, []), entry)
        self._new_eligible.setdefault(vc.name, []).append(entry)

    def _may_starve(self, job: Job) -> bool:
        """Whether a waiting job ran and kept attained service (both fixed while it waits)."""
        return self.last_run(job) > 0 and self.attained(job, 0.0) > 0

    def _waiting_since(self, vc: VirtualCluster, entry: tuple[float, int, Job, float]) -> bool:
        """Whether the entry's job still waits in ``vc`` as it did when noted, unpromoted."""
        job = entry[2]
        return job in vc.pending and job.pending_since == entry[3] and self.attained(job, 0.0) > 0

    def _promote_starving(self, vc: VirtualCluster, ctx: SchedulingContext, now: float) -> None:
        """Promote to the highest queue every waiting job that has starved (:meth:`_starving`).

        Candidates come off the VC's heap by eligibility time, a little past ``now`` (the test's own float
        form decides); one not starving yet goes back."""
        heap = self._eligible.get(vc.name)
        horizon = now + 1e-9 * max(1.0, abs(now))
        not_yet = []
        while heap and heap[0][0] <= horizon:
            entry = heappop(heap)
            if not self._waiting_since(vc, entry):
                continue
            job = entry[2]
            if not self._starving(job, now):
                not_yet.append(entry)
                continue
            self._forgiven[job] = self._forgiven.get(job, 0.0) + self.attained(job, now)
            ctx.requeue(job)  # its key, by its attained service, is now the top queue's
            self.promotions += 1
        for entry in not_yet:
            heappush(heap, entry)  # type: ignore[arg-type]

    @staticmethod
    def last_run(job: Job) -> float:
        """How long a waiting job ran before it was last stopped (0 if it never ran)."""
        return job.pending_since - job.run_started_at if job.start_time is not None else 0.0

    def _starving(self, job: Job, now: float) -> bool:
        return self._may_starve(job) and now - job.pending_since >= self.knob * self.last_run(job)

    def _set_timers(self, vc: VirtualCluster, ctx: SchedulingContext, now: float) -> None:
        if not vc.pending and self._overheads is None:
            return  # nobody waits: a crossing or promotion changes nothing until an event (but is a round of
            # ElasticFlow's simulator, which its overheads count)
        thresholds, last_queue, quantum = self.thresholds, len(self.thresholds), self.quantum
        wake: dict[float, None] = {}  # the running jobs' next crossings, each once, in the order first met
        if self.keeps_order:
            # a timer stays set until it rings, so only the jobs whose crossing has none yet need one: those that
            # started, or crossed a threshold, since the last pass that set timers
            self.running_order(vc, now)
            run_of = self._run_of
            noted, self._unannounced[vc.name] = self._unannounced.get(vc.name, []), []
            running = [job for job, run in noted if run_of.get(job) == run]
        elif self._kept_crossings:
            running = self._crossings_not_set(vc, now)
        else:
            running = vc.running  # type: ignore[assignment]
        for job in running:
            attained = self.attained(job, now) if self._forgiven else \
                job.gpu_num * (job.busy_time + (now - job.run_started_at))  # (attained, inlined)
            queue = bisect_left(thresholds, attained)  # queue_of, inlined
            if queue < last_queue:
                crossing = now + (thresholds[queue] - attained) / job.gpu_num
                boundary = (math.floor(crossing / quantum) + 1) * quantum  # _boundary_after, inlined
                when = self.crossing_boundary(job, thresholds[queue], boundary, now)
                wake[when] = None
            else:
                when = math.inf
            if self._kept_crossings:
                self._note_crossing_set(vc, job, when)
        for when in wake:
            ctx.wake_at(when)
        if self.knob > 0:
            self._set_promotion_timers(vc, ctx, now)

    def _crossings_not_set(self, vc: VirtualCluster, now: float) -> list[Job]:
        """The running jobs of ``vc`` whose crossing no pass has set a timer for yet (in any order: a pass's timers
        are all its VC's, at times the engine merges, so no two of them tie in its queue).

        :meth:`crossing_boundary` gives the first boundary past ``now`` where the job is past its threshold, which
        is the same at every pass before it in the same run (boundaries are exact multiples of a whole quantum, and
        the attained service at each is a function of the run alone); the timer set there stays set until it
        rings, so setting it again is a no-op.  A job is noted with its run (its start, busy time and wiped
        service) and that boundary (inf in the last queue)."""
        still_set = self._crossing_still_set
        return [job for job in vc.running if not still_set(job, now)]

    def _note_crossing_set(self, vc: VirtualCluster, job: Job, when: float) -> None:
        """A pass set running ``job``'s crossing timer at ``when`` (inf: it has none, in the last queue)."""
        self._crossing_set[job] = (job.run_started_at, job.busy_time, self._forgiven.get(job, 0.0), when)

    def _crossing_still_set(self, job: Job, now: float) -> bool:
        """Whether ``job``'s noted crossing timer (:meth:`_crossings_not_set`) is for its run and still to ring."""
        noted = self._crossing_set.get(job)
        return noted is not None and now < noted[3] and noted[0] == job.run_started_at \
            and noted[1] == job.busy_time and noted[2] == self._forgiven.get(job, 0.0)

    def crossing_boundary(self, job: Job, threshold: float, boundary: float, now: float) -> float:
        """The first quantum boundary after ``now`` where running ``job`` is past ``threshold`` as :meth:`attained`
        computes it there, from ``boundary``: the one after the crossing time extrapolated at ``now``.

        The extrapolation rounds apart from the attained service computed at the boundary itself: where a job
        crosses on a boundary, the one it gives moves by a quantum with the time it was computed at (a job's start,
        for the kept order, or any later pass).  Stepping to where the key itself changes makes every pass agree.

        >>> from simcluster.job import Job
        >>> policy = Tiresias(SimConfig(policy="tiresias", thresholds=(100.0,)))
        >>> job = Job(index=0, job_id="0", vc="v", gpu_num=1, submit_time=0, duration=500)
        >>> job.state, job.run_started_at = RUNNING, 0.0
        >>> policy.crossing_boundary(job, 100.0, 60.0, 0.0), policy.crossing_boundary(job, 100.0, 180.0, 0.0)
        (120.0, 120.0)
        """
        quantum = self.quantum
        while boundary - quantum > now and self.attained(job, boundary - quantum) > threshold:
            boundary -= quantum
        while self.attained(job, boundary) <= threshold:
            boundary += quantum
        return boundary

    def _set_promotion_timers(self, vc: VirtualCluster, ctx: SchedulingContext, now: float) -> None:
        """Wake at the boundary when a waiting job becomes eligible for promotion, or at the next boundary
        for those eligible by then.

        The timers of waiting jobs eligible later than that are set once, at the first pass that sees them:
        their time is fixed, and the timer is still due (so setting it again at every pass would be a no-op)."""
        soon = now + self.quantum
        for entry in self._new_eligible.pop(vc.name, ()):
            if entry[0] > soon and self._waiting_since(vc, entry):
                ctx.wake_at(self._boundary_at_or_after(entry[0]))
        heap = self._eligible.get(vc.name)
        while heap and not self._waiting_since(vc, heap[0]):
            heappop(heap)  # (stale: it ran or was promoted)
        if heap and heap[0][0] <= soon:
            ctx.wake_at(self._boundary_at_or_after(soon))

    def _boundary_at_or_after(self, t: float) -> float:
        return math.ceil(t / self.quantum) * self.quantum

    def _boundary_after(self, t: float) -> float:
        return (math.floor(t / self.quantum) + 1) * self.quantum

    def on_finish(self, job: Job, now: float) -> None:
        self._crossing_set.pop(job, None)
        self._forgiven.pop(job, None)
        self._forgiven_at_start.pop(job, None)

    def report(self) -> dict[str, Any]:
        return {"promotions": self.promotions}
