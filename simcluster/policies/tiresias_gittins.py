"""Tiresias' 2D-Gittins variant: the Gittins index orders jobs within each attained-service queue."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from heapq import heappop, heappush
from typing import Any

import numpy as np

from simcluster.cluster import VirtualCluster
from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.policies.base import POLICIES, Policy, SchedulingContext
from simcluster.policies.quota import (
    next_of_stream,
    queue_streams,
    stream_heads,
    walk_changes_nothing,
    walk_ranked,
)
from simcluster.policies.running_columns import RunningColumns
from simcluster.policies.tiresias import Tiresias


class GittinsIndex:
    """Gittins index of a job's remaining service, from the services of finished jobs.

    For a job that has attained service ``a`` (GPU-seconds) and a quantum of
    service ``d`` (here: up to its queue's next threshold),

        G(a, d) = P(S - a <= d | S > a) / E[min(S - a, d) | S > a]

    where S is the total service of a job, drawn from the empirical
    distribution of jobs that have already finished in this simulation.  A
    higher index means "likely to finish soon per unit of service": served
    first.  In the last queue d is unbounded, so G = 1 / E[S - a | S > a].
    With no finished job yet, or when the job outlived every finished one,
    the index is 0 (the order falls back to submit time).

    >>> g = GittinsIndex(); [g.add(s) for s in (10, 20, 30, 40)] and None; g.refresh()
    >>> round(g.index(0, 15), 4), round(g.index(20, float("inf")), 4)
    (0.0182, 0.0667)
    """

    def __init__(self) -> None:
        self._new: list[float] = []  # services recorded since the last refresh()
        self._services = np.zeros(0)  # sorted
        self._prefix = np.zeros(1)  # _prefix[i]: sum of the i smallest services, added one by one
        self.version = 0  # bumped by refresh(): indices may have changed
        self._fresh: dict[float, float] = {}  # quantum -> index(0, quantum), until the next refresh
        self._lists: tuple[int, list[float], list[float]] | None = None  # (version, services, prefix) as lists

    def add(self, service: float) -> None:
        """Record a finished job's service; it counts from the next refresh()."""
        self._new.append(service)

    def refresh(self) -> None:
        """Merge the new services in; the prefix sums are recomputed only from the first changed place
        (the same additions in the same order as summing from the start, so the same floats: a running sum
        adds one term at a time)."""
        if not self._new:
            return
        new, self._new = np.sort(np.array(self._new, float)), []
        services, prefix = self._services, self._prefix
        first = int(np.searchsorted(services, new[0], "right"))
        services = self._services = np.insert(services, np.searchsorted(services, new, "right"), new)
        tail = np.empty(len(services) - first + 1)
        tail[0], tail[1:] = prefix[first], services[first:]
        self._prefix = np.concatenate((prefix[:first], np.cumsum(tail)))
        self._fresh.clear()
        self.version += 1

    def index(self, attained: float, quantum: float) -> float:
        if attained == 0:  # a job that never ran: every arrival asks this, with its first queue's quantum
            fresh = self._fresh.get(quantum)
            if fresh is None:
                fresh = self._fresh[quantum] = self._index(0.0, quantum)
            return fresh
        return self._index(attained, quantum)

    def _index(self, attained: float, quantum: float) -> float:
        lists = self._lists
        if lists is not None and lists[0] == self.version:  # (scalar bisection of lists: cheaper than numpy's)
            _, s, prefix = lists
            alive = bisect_right(s, attained)
        else:  # (no list made for this distribution: a few calls do not pay for making one)
            s, prefix = self._services, self._prefix  # type: ignore[assignment]
            alive = int(np.searchsorted(s, attained, "right"))
        left = len(s) - alive
        if left == 0:
            return 0.0
        if quantum == float("inf"):
            return left / (float(prefix[-1]) - float(prefix[alive]) - attained * left)
        done = bisect_right(s, attained + quantum, alive)
        finished_within = done - alive
        served = float(prefix[done]) - float(prefix[alive]) - attained * finished_within + (len(s) - done) * quantum
        return finished_within / served if served > 0 else 0.0

    def segment(self, attained: float, end: float) -> tuple[float, float, int, float, int]:
        """What :meth:`index` reads off the distribution for a job with ``attained`` service whose quantum
        ends at ``end`` (``attained + quantum``; inf in the last queue), valid for every attained service in
        ``[low, high)`` until the next refresh: ``(low, high, count, total, beyond)``.

        With a finite ``end``, ``count`` jobs finished within the quantum, their services summing to
        ``total`` (one float: the same difference of prefix sums), and ``beyond`` outlived it; then
        ``index(a, q) == count / (total - a * count + beyond * q)`` (0 where that is not positive) for
        every ``a`` in the segment with ``a + q == end``.  With ``end`` inf, ``count`` jobs outlived
        ``attained`` and ``index(a, inf) == count / (total - a * count)``.  A ``count`` of 0: index 0.

        >>> g = GittinsIndex(); [g.add(s) for s in (10, 20, 30, 40)] and None; g.refresh()
        >>> g.segment(15, 30), g.segment(20, float("inf"))
        ((10.0, 20.0, 2, 50.0, 1), (20.0, 30.0, 2, 70.0, 0))
        """
        lists = self._lists
        if lists is None or lists[0] != self.version:
            lists = self._lists = (self.version, self._services.tolist(), self._prefix.tolist())
        _, s, prefix = lists
        alive = bisect_right(s, attained)
        low = s[alive - 1] if alive else float("-inf")
        high = s[alive] if alive < len(s) else float("inf")
        if alive == len(s):
            return low, high, 0, 0.0, 0
        if end == float("inf"):
            return low, high, len(s) - alive, prefix[-1] - prefix[alive], 0
        done = bisect_right(s, end, alive)
        return low, high, done - alive, prefix[done] - prefix[alive], len(s) - done

    def indices(self, attained: np.ndarray, quantum_ends: np.ndarray) -> np.ndarray | None:
        """``index(a, end - a)`` for each attained service ``a`` and where its quantum ends (inf in the last queue),
        the same floats as :meth:`index` gives; None where a job in the last queue would divide by zero (the
        scalar way raises there).

        >>> g = GittinsIndex(); [g.add(s) for s in (10, 20, 30, 40)] and None; g.refresh()
        >>> g.indices(np.array([0.0, 20.0]), np.array([15.0, float("inf")])).round(4).tolist()
        [0.0182, 0.0667]
        """
        services, prefix = self._services, self._prefix
        n = len(services)
        last = np.isinf(quantum_ends)
        alive = services.searchsorted(attained, "right")
        quantum = quantum_ends - attained
        # (the end as index() computes it: a + (end - a) may round away from end; inf in the last queue, so n)
        done = services.searchsorted(attained + quantum, "right")
        count = done - alive
        quantum[last] = 0.0  # (no quantum's worth beyond it in the last queue: (n - n) * 0)
        served = prefix[done] - prefix[alive] - attained * count + (n - done) * quantum
        if (last & (count > 0) & (served == 0)).any():
            return None
        positive = (count > 0) & ((served > 0) | last)  # (where=: no division where the index is 0, no warning)
        return np.divide(count, served, out=np.zeros(len(served)), where=positive)


CROSSING_MARGIN = 1e-3  # seconds: far above a crossing time's rounding error, far below a quantum


@POLICIES.register("tiresias-gittins")
class TiresiasGittins(Tiresias):
    """Tiresias 2D-Gittins: attained-service queues, ordered within by the Gittins index of finished jobs' GPU-time.

    Learns only from jobs that finished in the simulation (no look-ahead);
    the distribution is refreshed at most once per simulated hour, which
    keeps waiting jobs' order fixed in between (and each decision cheap).
    Because the index of a running job changes as it runs, decisions are
    re-taken at every quantum boundary while jobs are waiting.
    """

    REFRESH_SECONDS = 3600.0
    RANKED_FROM = 64  # a VC's running jobs are keyed as arrays from this many on
    keeps_order = False  # a running job's index moves as it runs: its keys are computed at every decision
    on_run_start = Policy.on_run_start
    on_run_stop = Policy.on_run_stop

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__(config)
        # the engine calls a run hook only where one is set: these keep each VC's running jobs as arrays
        self.on_run_start = self._note_run_start  # type: ignore[method-assign]
        self.on_run_stop = self._note_run_stop  # type: ignore[method-assign]
        self.gittins = GittinsIndex()
        self._next_refresh = float("-inf")
        self._queue_version: dict[str, int] = {}
        self._segments: dict[Job, tuple[Any, ...]] = {}  # running job -> (version, queue, *its segment)
        self._columns: dict[str, RunningColumns] = {}  # per VC, its running jobs as arrays
        self._ends = np.array([*self.thresholds, float("inf")])  # per queue, where its quantum ends
        # per VC, for the crossing timers set one job at a time (:meth:`_crossings_not_set`): the jobs started since
        # the last such pass (no list: the next one looks at every running job), and a heap of the timers set
        self._started_since: dict[str, list[Job]] = {}
        self._timers_set: dict[str, list[tuple[float, int, Job]]] = {}

    def _note_run_start(self, job: Job, vc: VirtualCluster) -> None:
        columns = self._columns.get(vc.name)
        if columns is None:
            columns = self._columns[vc.name] = RunningColumns()
        columns.add(job)
        started = self._started_since.get(vc.name)
        if started is not None:
            started.append(job)
        if self._forgiven:
            self._note_promoted_start(job)

    def _note_run_stop(self, job: Job, vc: VirtualCluster) -> None:
        self._columns[vc.name].remove(job)
        if self.knob > 0:
            self._note_stopped(job, vc)

    def pending_key(self, job: Job) -> Any:
        return self._key(job, 0.0)  # fixed between refreshes of the distribution

    def _key(self, job: Job, now: float) -> Any:
        attained = self.attained(job, now)
        queue = self.queue_of(attained)
        quantum = self.thresholds[queue] - attained if queue < len(self.thresholds) else float("inf")
        return (queue, -self.gittins.index(attained, quantum), job.submit_time)

    def running_key(self, job: Job, now: float) -> Any:
        key = self._key(job, now)
        return (self.running_queue(job, key[0]), *key[1:])  # (a guarded job: ahead of every waiting one)

    def running_entries(self, vc: VirtualCluster, now: float) -> list[tuple[Any, Job]]:
        if self._forgiven:
            return [(self.running_key(j, now), j) for j in vc.running]
        return self._split_running(vc, now, None)[1]

    def decide(self, vc: VirtualCluster, ctx: SchedulingContext, now: float) -> None:
        """Tiresias' decision, with the running keys computed and split off against the queue head in one go.

        At a refresh of the distribution the running keys still use the one from before it (Tiresias' order of
        steps: they are computed before the queue is re-keyed).  Between refreshes, where what the waiting jobs
        would start fits beside the running jobs, no running key is needed at all.  Many running jobs are keyed
        and ranked as arrays (:meth:`_ranked`), a few one by one (:meth:`_split_running`: numpy's fixed cost per
        call is more than theirs); promoted jobs' keys (the promote knob) take the general way."""
        if self._forgiven or self._tiered:  # (promoted jobs, or keys by tier first: the general way)
            super().decide(vc, ctx, now)
            return
        many = len(vc.running) >= self.RANKED_FROM
        if now >= self._next_refresh:
            ranked = self._ranked(vc, now) if many else None
            if ranked is None:
                super().decide(vc, ctx, now)
                return
            self.order_queue(vc, ctx, now)
        else:
            self.order_queue(vc, ctx, now)  # (re-keys the queue if another VC's pass refreshed the distribution)
            starts = self._starts_beside_running(vc)
            if starts is not None:
                for job in starts:
                    ctx.try_start(job)
                return
            ranked = self._ranked(vc, now) if many else None
            if ranked is None:
                used, rest = self._split_running(vc, now, self.head_key(vc))
                # where the jobs ahead overbook the VC (GPU fractions), the general way walks them all
                self.walk_rest(vc, ctx, used, rest, self.running_entries(vc, now) if used > vc.total_gpus else [])
                return
        jobs, gpus, place = ranked
        ahead = place(self.head_key(vc))  # the running jobs whose key is at most the head's come first
        used, held = int(gpus[:ahead].sum()), self._columns[vc.name].held
        if used > vc.total_gpus:
            ahead = 0  # (they overbook the VC, GPU fractions may: every running job is walked)
        elif walk_changes_nothing(vc, used, held - used):
            return
        walk_ranked(vc, ctx, jobs, gpus, place, ahead)

    def _starts_beside_running(self, vc: VirtualCluster) -> list[Job] | None:
        """What the quota walk starts when it preempts nothing, found without a running job's index; None where
        that cannot be told so.

        Walk the waiting jobs alone, in queue order, in the whole VC's quota (each GPU count's stream dropped at
        its first job that does not fit, as the walk drops it).  Where the jobs it starts hold fewer GPUs than
        the running jobs leave free, the walk among the running jobs starts the same jobs in the same order and
        preempts none, wherever their keys fall: a waiting job that fits here fits there too (what the running
        jobs before it hold plus what started before it and itself is less than the quota), one that does not
        fit here meets no more quota there, and every running job fits (all of them plus all that start are less
        than the quota, which so never runs out).  The walk that hands the running jobs ahead of the queue's
        head their GPUs first is the same walk (they fit), and so is no walk at all where nothing fits."""
        total = vc.total_gpus
        columns = self._columns.get(vc.name)
        free = total - (columns.held if columns is not None else 0)
        if free <= 0:
            return None
        heap = stream_heads(queue_streams(vc, total), total)
        quota, starts = total, []
        while heap:
            job = heap[0][4][heap[0][2]]
            gpus = job.gpu_num
            if gpus > quota:
                heappop(heap)  # this GPU count no longer fits, and the quota only shrinks
                continue
            quota -= gpus
            if total - quota >= free:
                return None  # what starts fills the free GPUs: running jobs may be preempted
            starts.append(job)
            next_of_stream(heap)
        return starts

    def _ranked(self, vc: VirtualCluster, now: float) -> tuple[list[Job], np.ndarray, Any] | None:
        """The running jobs in the walk's order by their keys at ``now`` (:meth:`_key`, the same floats, computed
        as arrays), their GPUs, and ``place(key)``: how many of them have a key at most ``key`` (the walk takes
        them before a waiting job with that key).  None where it cannot be done so: the walk then keys them one
        by one (and the scalar way raises where a key divides by zero)."""
        columns = self._columns.get(vc.name)
        if columns is None or len(columns) != len(vc.running) or not len(columns) or columns.below_one:
            return None
        attained, queue = self._attained_and_queue(columns, now)
        index = self.gittins.indices(attained, self._ends[queue])
        if index is None:
            return None
        negated, submit = -index, columns.submit
        order = np.lexsort((columns.index, submit, negated, queue))  # (queue, -index, submit time, trace index)
        queues, negated, submit = queue[order].tolist(), negated[order].tolist(), submit[order].tolist()

        def place(key: Any) -> int:
            low, high = bisect_left(queues, key[0]), bisect_right(queues, key[0])
            if low < high:
                low, high = bisect_left(negated, key[1], low, high), bisect_right(negated, key[1], low, high)
                if low < high:
                    low = bisect_right(submit, key[2], low, high)
            return low

        jobs = columns.jobs
        return [jobs[i] for i in order.tolist()], columns.gpus[order], place

    def _attained_and_queue(self, columns: RunningColumns, now: float) -> tuple[np.ndarray, np.ndarray]:
        """Each running job's attained service at ``now`` and its queue (:meth:`queue_of`), as arrays."""
        attained = columns.attained(now)
        return attained, self._ends[:-1].searchsorted(attained, "left")

    def _split_running(self, vc: VirtualCluster, now: float, head_key: Any) -> tuple[int, list[tuple[Any, Job]]]:
        """(GPUs of the running jobs whose key is at most ``head_key``, [(key, job) of the others]); with no
        ``head_key``, every running job is among the others.

        :meth:`_key`, with the attained service and queue computed once (the same floats): this runs for
        every running job at every pass.  A job in a higher queue than the head's needs no index."""
        thresholds, last_queue, gittins = self.thresholds, len(self.thresholds), self.gittins
        version, segments, inf = gittins.version, self._segments, float("inf")
        head_queue = -1 if head_key is None else head_key[0]
        used, rest = 0, []
        for job in vc.running:
            attained = job.gpu_num * (job.busy_time + (now - job.run_started_at))
            queue = bisect_left(thresholds, attained)
            if queue < head_queue:
                used += job.gpu_num  # ahead of the head whatever its index
                continue
            # GittinsIndex.index by the job's segment, kept while it stays in it: the same float expression
            seg = segments.get(job)
            if seg is None or seg[0] != version or seg[1] != queue or not seg[2] <= attained < seg[3]:
                end = thresholds[queue] if queue < last_queue else inf
                seg = segments[job] = (version, queue, *gittins.segment(attained, end))
            count = seg[4]
            if queue < last_queue:
                quantum = thresholds[queue] - attained
                if attained + quantum != thresholds[queue]:  # (rounding moved the quantum's end: the full way)
                    index = gittins.index(attained, quantum)
                elif count:
                    served = seg[5] - attained * count + seg[6] * quantum
                    index = count / served if served > 0 else 0.0
                else:
                    index = 0.0
            else:
                index = count / (seg[5] - attained * count) if count else 0.0
            key = (queue, -index, job.submit_time)
            if head_key is not None and key <= head_key:
                used += job.gpu_num
            else:
                rest.append((key, job))
        return used, rest

    def order_queue(self, vc: VirtualCluster, ctx: SchedulingContext, now: float) -> None:
        if now >= self._next_refresh:
            self.gittins.refresh()
            self._next_refresh = now + self.REFRESH_SECONDS
        if self._queue_version.get(vc.name) != self.gittins.version:
            ctx.reorder()
            self._queue_version[vc.name] = self.gittins.version

    def _set_timers(self, vc: VirtualCluster, ctx: SchedulingContext, now: float) -> None:
        columns = self._columns.get(vc.name)
        if self._forgiven or not vc.pending or len(vc.running) < self.RANKED_FROM or columns is None \
                or len(columns) != len(vc.running):
            super()._set_timers(vc, ctx, now)
        else:
            self._started_since.pop(vc.name, None)  # (these timers are noted on the columns)
            self._wake_at_crossings(columns, ctx, now)
            if self.knob > 0:
                self._set_promotion_timers(vc, ctx, now)
        if vc.pending:
            ctx.wake_at(now + self.quantum)  # running jobs' indices move as they run

    def _crossings_not_set(self, vc: VirtualCluster, now: float) -> list[Job]:
        """:meth:`Tiresias._crossings_not_set` from what changed: the jobs started since the last pass that set
        timers one job at a time, and those whose timer has rung since (off a heap).  After a pass that set
        them as arrays (which notes none), or the first time, every running job is looked at."""
        started = self._started_since.get(vc.name)
        self._started_since[vc.name] = []
        if started is None:
            self._timers_set[vc.name] = []  # (rebuilt by this pass's notes)
            found = super()._crossings_not_set(vc, now)
            not_set = set(found)
            self._heap_still_set(vc, [job for job in vc.running if job not in not_set])
            return found
        heap, still_set = self._timers_set[vc.name], self._crossing_still_set
        found = {job: None for job in started if job in vc.running and not still_set(job, now)}
        while heap and heap[0][0] <= now:
            job = heappop(heap)[2]
            if job in vc.running and not still_set(job, now):
                found[job] = None
        return list(found)

    def _heap_still_set(self, vc: VirtualCluster, jobs: list[Job]) -> None:
        """File the timers still set of running ``jobs`` on the VC's heap."""
        heap = self._timers_set[vc.name]
        for job in jobs:
            when = self._crossing_set[job][3]
            if when != math.inf:
                heappush(heap, (when, job.index, job))

    def _note_crossing_set(self, vc: VirtualCluster, job: Job, when: float) -> None:
        super()._note_crossing_set(vc, job, when)
        heap = self._timers_set.get(vc.name)
        if heap is not None and when != math.inf:
            heappush(heap, (when, job.index, job))

    def _wake_at_crossings(self, columns: RunningColumns, ctx: SchedulingContext, now: float) -> None:
        """Tiresias' timers at the running jobs' next crossings, for the rows whose timer no pass has set yet
        (:meth:`RunningColumns.due`).

        A timer stays set until it rings, and a run's crossing stays where it was: until just before it, its
        queue and the boundary after it come out the same at every pass (:meth:`_steady`), so setting its timer
        again is a no-op (the engine merges it).  Each row notes until when that holds; a job in the last queue
        has no crossing.  The timers left to set are the ones a pass over every row would set first, in the same
        order (rows in order), with the same floats as its arrays (``(floor(when / quantum) + 1) * quantum``)."""
        rows = columns.due(now)
        if not len(rows):
            return
        thresholds, last_queue, quantum, until = self.thresholds, len(self.thresholds), self.quantum, columns.until
        wake: dict[float, None] = {}
        for row in rows.tolist():
            gpus, busy, started = columns.run_at(row)
            attained = gpus * (busy + (now - started))
            queue = bisect_left(thresholds, attained)
            if queue == last_queue:
                until[row] = math.inf
                continue
            threshold = thresholds[queue]
            if gpus < 1:  # (no attained service: the arrays' division by zero gives an infinite crossing)
                wake[math.inf], until[row] = None, -math.inf
                continue
            when = now + (threshold - attained) / gpus
            wake[(math.floor(when / quantum) + 1) * quantum] = None
            steady = self._steady(gpus, busy, started, threshold, when, now)
            until[row] = when - CROSSING_MARGIN if steady else -math.inf
        for boundary in wake:
            ctx.wake_at(boundary)

    def _steady(self, gpus: int, busy: float, started: float, threshold: float, when: float, now: float) -> bool:
        """Whether a run's crossing time ``when``, worked out at ``now``, gives the same boundary at every pass
        before it: it is :data:`CROSSING_MARGIN` or more from a boundary (no rounding moves it across), or it is
        computed exactly at every pass (whole seconds throughout: a pass is at a boundary, a whole number of
        seconds when the quantum is, and the threshold a multiple of the GPUs; the crossing of a job that started
        on a boundary often lies on one, exactly).

        >>> policy = TiresiasGittins(SimConfig(policy="tiresias-gittins", thresholds=(120.0,)))
        >>> policy._steady(2, 0.0, 60.0, 120.0, 120.0, 60.0)  # 60 + 120 / 2, on a boundary: exact
        True
        >>> policy._steady(7, 0.0, 60.0, 120.0, 60 + 120 / 7, 60.0), policy._steady(7, 0.0, 60.0, 120.0, 120.0001, 60.0)
        (True, False)
        """
        quantum = self.quantum
        if abs(when - round(when / quantum) * quantum) >= CROSSING_MARGIN:
            return True
        whole = (quantum, now, busy, started)
        return all(x == int(x) and abs(x) < 2.0 ** 52 for x in whole) and threshold % gpus == 0 \
            and abs(when) < 2.0 ** 52

    def on_finish(self, job: Job, now: float) -> None:
        super().on_finish(job, now)
        self._segments.pop(job, None)
        self.gittins.add(job.gpu_num * job.duration)
