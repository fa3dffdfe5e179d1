"""The round-based mechanism (Gavel OSDI'20 §5) as one SimPy process.

Every ``round_seconds`` (360 s) the scheduler hands out GPUs:

1. If the set of active jobs changed since the last allocation (and the reset rule allows it: at
   least ``realloc_interval`` seconds since the last one; 0 by default, Gavel's simulator uses
   1920), the policy computes a new allocation X (time fraction per job — or pair — per GPU type)
   and the time each job has received is reset (Gavel's ``_reset_time_run_so_far``: every entry
   restarts at half a round).
2. Priorities: for each GPU type, entry (job or pair) priority = X[entry, type] ÷ time it received on
   that type since the reset, ties broken by accumulated deficit (time it should have had minus time
   it got) and by X.  GPU types are visited fastest first for heterogeneity-aware policies, in a
   seeded random order for agnostic ones (as Gavel does; ``Mechanism.fills_fastest_first``); within
   a type entries take GPUs in priority order while they fit; a job appears once per round.  Entries
   with zero throughput never run; FIFO policies never run jobs their allocation leaves out.
3. Placement: an entry that holds GPUs of the same type keeps them (lease extension: it simply runs
   on); others take free GPUs, multi-GPU entries first, consolidated on the nodes with most free GPUs.
   Jobs that held GPUs and got none this round are preempted (counted); checkpoint costs are not
   modelled (Gavel's simulator does not either).

Between boundaries nothing ticks: the process sleeps until the earliest completion, arrival or round
end.  When one job of a pair finishes, its partner runs on alone at its solo throughput, and the
pair leaves the allocation.

Where we differ from Gavel's simulator by default, :class:`~simcluster.hetero.mechanism.Mechanism`
holds the switch (the ``gavel`` preset sets Gavel's):

* **mid-round release** (``midround_release``): a job that finishes mid-round frees its GPUs at
  once, and waiting jobs take them for the rest of the round (jobs with an allocation by priority,
  then new jobs in arrival order; FIFO policies strictly in arrival order); an arriving job likewise
  takes idle GPUs at once.  Gavel leaves such GPUs idle until the round ends, and a round ends early
  once every job in it has finished;
* **new jobs** (``new_jobs_wait``): by default a job that arrived after the last reset may use GPUs
  the allocation leaves idle; Gavel's simulator runs only jobs of the last allocation;
* **reset clock** (``reset_rule="gavel"``): see ``Mechanism.gavel_clock``;
* **a finished job's pairs** (``pair_share_on_finish``): the partner keeps the pair's share as its
  own until the next reset; in Gavel's simulator the share lapses.

A multi-GPU job holds GPUs of one type, so it advances at that type's throughput for its scale factor.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from simcluster.hetero.cluster import HeteroCluster
from simcluster.hetero.mechanism import Mechanism
from simcluster.hetero.policies.base import AllocationInput, HeteroPolicy
from simcluster.hetero.throughputs import ThroughputTable
from simcluster.hetero.trace import HeteroJob, HeteroState
from simcluster.metrics.observer import overridden_hooks

EPS = 1e-6  # seconds: events this close count as simultaneous
Key = tuple[int, ...]  # (job,) or (job_a, job_b) with job_a < job_b


@dataclass(slots=True)
class Run:
    key: Key
    gtype: int
    gpus: tuple[int, ...]
    rates: list[float]  # iterations/s of each job of key
    since: float
    token: int


class RoundEngine:
    def __init__(self, jobs: list[HeteroJob], cluster: HeteroCluster, table: ThroughputTable,
                 policy: HeteroPolicy, mechanism: Mechanism | None = None, *, seed: int = 0,
                 observers: Iterable[Any] = (), audit: list | None = None) -> None:
        self.jobs, self.cluster, self.table, self.policy = jobs, cluster, table, policy
        self.mechanism = mechanism = mechanism or Mechanism()
        self.R = float(mechanism.round_seconds)
        self.midround = mechanism.midround_release
        self.m = len(cluster.types)
        self.cap = np.asarray(cluster.counts, dtype=float)
        self.used = [np.zeros(c, dtype=np.int64) for c in cluster.counts]  # thousandths of each GPU in use
        self.jobs_on = [np.zeros(c, dtype=np.int64) for c in cluster.counts]
        self.idle = list(cluster.counts)  # GPUs of each type holding nothing
        self.nodes = [np.asarray(n, dtype=np.int64) for n in cluster.node_of_gpu]
        self.rng = np.random.default_rng(seed)
        self.env = simpy.Environment()
        self.observers = list(observers)
        self._hooks = {h: overridden_hooks(self.observers, h)
                       for h in ("on_submit", "on_start", "on_preempt", "on_finish", "on_sample")}
        self.audit = audit
        speed = np.array([np.mean([row[i] for row in table.solo.values()]) if table.solo else 1.0
                          for i in range(len(table.gpu_types))])
        self.fast_order = sorted(range(self.m), key=lambda j: -float(
            speed[table.gpu_types.index(cluster.types[j])] if cluster.types[j] in table.gpu_types else 0.0))
        self.type_order = list(self.fast_order)
        self.fastest_first = mechanism.fills_fastest_first(policy)
        self.fractional = any(job.milli < 1000 for job in jobs)
        for job in jobs:
            job.type_seconds = np.zeros(self.m)
        # state
        self.active: dict[int, HeteroJob] = {}  # arrival order
        self.runs: dict[Key, Run] = {}
        self.run_of: dict[int, Key] = {}
        self.heap: list[tuple[float, int, int]] = []  # (finish time, job, run token)
        self.token = 0
        self.next_arrival = 0
        self.round_end = math.inf
        self.dirty = False
        self.last_reset: float | None = None
        # allocation state; jobs alone live in arrays indexed by job index, pairs in dicts
        n = len(jobs)
        self.X = np.zeros((n, self.m))  # allocation of each job alone
        self.G = np.full((n, self.m), self.R / 2)  # time received since the last reset (starts at R/2)
        self.Dm = np.zeros((n, self.m))  # deficits
        self.in_alloc = np.zeros(n, bool)
        self.runs_on = np.array([j.throughput > 0 for j in jobs]).reshape(n, self.m)
        self.share = np.array([j.share for j in jobs])
        self.alloc: dict[Key, np.ndarray] = {}  # pairs
        self.received: dict[Key, np.ndarray] = {}
        self.deficit: dict[Key, np.ndarray] = {}
        self.pair_cache: dict[tuple, np.ndarray | None] = {}
        # accounting
        self.busy_gpus = 0
        self.shared_gpus = 0
        self.last_t = 0.0
        self.busy_gpu_seconds = 0.0
        self.shared_gpu_seconds = 0.0
        self.rounds = 0
        self.allocations = 0
        self.lease_extensions = 0
        self.lease_opportunities = 0
        self.finished: list[HeteroJob] = []

    # ------------------------------------------------------------------ loop
    def run(self) -> None:
        self.env.process(self._loop())
        self.env.run()

    def _loop(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        while True:
            arrival = self.jobs[self.next_arrival].submit_time if self.next_arrival < len(self.jobs) else math.inf
            t_next = min(self.round_end, self._next_finish(), arrival)
            if t_next == math.inf:
                return
            if t_next > env.now:
                yield env.timeout(t_next - env.now)
            now = env.now
            self._integrate(now)
            finished = self._complete(now)
            arrived = self._admit(now)
            if not self.active:
                self.round_end = math.inf
            elif now >= self.round_end - EPS or (self.round_end == math.inf):
                self._begin_round(now)
            elif self.midround and (finished or arrived):
                self._backfill(now)
            elif finished and not self.runs:  # Gavel: a round ends when its last job does
                self._begin_round(now)
            self._sample(now)

    def _next_finish(self) -> float:
        heap = self.heap
        while heap:
            t, job, token = heap[0]
            key = self.run_of.get(job)
            if key is not None and self.runs[key].token == token:
                return t
            heapq.heappop(heap)
        return math.inf

    def _integrate(self, now: float) -> None:
        dt = now - self.last_t
        if dt > 0:
            self.busy_gpu_seconds += self.busy_gpus * dt
            self.shared_gpu_seconds += self.shared_gpus * dt
        self.last_t = now

    # ------------------------------------------------------------------ events
    def _admit(self, now: float) -> bool:
        arrived = False
        while self.next_arrival < len(self.jobs) and self.jobs[self.next_arrival].submit_time <= now + EPS:
            job = self.jobs[self.next_arrival]
            self.next_arrival += 1
            self.active[job.index] = job
            self.dirty = arrived = True
            for hook in self._hooks["on_submit"]:
                hook(job, now)
        return arrived

    def _complete(self, now: float) -> bool:
        done = False
        while self.heap and self.heap[0][0] <= now + EPS:
            _, idx, token = heapq.heappop(self.heap)
            key = self.run_of.get(idx)
            if key is None or self.runs[key].token != token:
                continue
            run = self.runs[key]
            self._advance(run, now)
            job = self.jobs[idx]
            job.state, job.end_time = HeteroState.FINISHED, now
            del self.active[idx]
            self.finished.append(job)
            self.dirty = done = True
            others = [k for k in run.key if k != idx]
            self._stop(run)
            self._retire_pairs(idx)
            if others:  # the partner runs on alone, on the same GPUs, at its solo throughput
                other = others[0]
                self._start((other,), run.gtype, run.gpus, now)
            for hook in self._hooks["on_finish"]:
                hook(job, now)
        return done

    def _retire_pairs(self, idx: int) -> None:
        """A finished job's pairs leave the allocation (until the next reset the engine would otherwise
        restart the finished job with its partner).  The partner keeps the pair's share as its own,
        with the time the pair received and its deficit, so that it goes on getting that GPU time —
        unless ``pair_share_on_finish="drop"`` (Gavel's simulator), when the share lapses."""
        keep = self.mechanism.pair_share_on_finish == "partner"
        for key in [key for key in self.alloc if idx in key]:
            share = self.alloc.pop(key)
            got = self.received.pop(key, None)
            deficit = self.deficit.pop(key, None)
            other = key[1] if key[0] == idx else key[0]
            if keep and other in self.active and self.in_alloc[other]:
                self.X[other] += share
                if got is not None:
                    self.G[other] += got - self.R / 2
                if deficit is not None:
                    self.Dm[other] += deficit

    # ------------------------------------------------------------------ runs
    def _advance(self, run: Run, now: float) -> None:
        dt = now - run.since
        if dt <= 0:
            return
        shared = len(run.key) > 1
        for idx, rate in zip(run.key, run.rates):
            job = self.jobs[idx]
            job.steps_done += rate * dt
            job.busy_time += dt
            job.type_seconds[run.gtype] += dt
            if shared:
                job.shared_seconds += dt
        if not shared:
            self.G[run.key[0], run.gtype] += dt
        else:
            got = self.received.get(run.key)
            if got is None:  # time received since the last reset; every entry starts at R/2 (Gavel)
                got = self.received[run.key] = np.full(self.m, self.R / 2)
            got[run.gtype] += dt
        run.since = now

    def _rates(self, key: Key, gtype: int) -> list[float]:
        if len(key) == 1:
            return [float(self.jobs[key[0]].throughput[gtype])]
        pair = self._pair(key[0], key[1])
        assert pair is not None
        return [float(pair[gtype, 0]), float(pair[gtype, 1])]

    def _pair(self, a: int, b: int) -> np.ndarray | None:
        ka, kb = self.jobs[a].key, self.jobs[b].key
        cached = self.pair_cache.get((ka, kb), False)
        if cached is False:
            cached = self.table.pair_for(ka, kb, self.cluster.types)
            self.pair_cache[(ka, kb)] = cached
        return cached  # type: ignore[return-value]

    def _start(self, key: Key, gtype: int, gpus: tuple[int, ...], now: float) -> None:
        if any(self.jobs[idx].state is HeteroState.FINISHED for idx in key):
            raise RuntimeError(f"round engine: would restart a finished job in {key} at t={now:.1f}")
        self.token += 1
        run = Run(key, gtype, gpus, self._rates(key, gtype), now, self.token)
        self.runs[key] = run
        milli = self.jobs[key[0]].milli
        used, on = self.used[gtype], self.jobs_on[gtype]
        for g in gpus:
            if on[g] == 0:
                self.busy_gpus += 1
                self.idle[gtype] -= 1
            before = on[g]
            used[g] += milli
            on[g] += len(key)
            if before < 2 <= on[g]:
                self.shared_gpus += 1
        for idx, rate in zip(key, run.rates):
            job = self.jobs[idx]
            self.run_of[idx] = key
            if job.state is not HeteroState.RUNNING:
                job.state = HeteroState.RUNNING
                if job.start_time is None:
                    job.start_time = now
                    for hook in self._hooks["on_start"]:
                        hook(job, now)
            if rate > 0:
                heapq.heappush(self.heap, (now + job.remaining / rate, idx, run.token))

    def _stop(self, run: Run) -> None:
        del self.runs[run.key]
        milli = self.jobs[run.key[0]].milli
        used, on = self.used[run.gtype], self.jobs_on[run.gtype]
        for g in run.gpus:
            before = on[g]
            used[g] -= milli
            on[g] -= len(run.key)
            if before >= 2 > on[g]:
                self.shared_gpus -= 1
            if on[g] == 0:
                self.busy_gpus -= 1
                self.idle[run.gtype] += 1
        for idx in run.key:
            if self.run_of.get(idx) == run.key:
                del self.run_of[idx]
                job = self.jobs[idx]
                if job.state is HeteroState.RUNNING:
                    job.state = HeteroState.PENDING

    def _find_gpus(self, gtype: int, count: int, milli: int) -> tuple[int, ...] | None:
        used = self.used[gtype]
        fits = np.flatnonzero(used + milli <= 1000)
        if len(fits) < count:
            return None
        if milli < 1000:  # best fit: the fullest GPUs that still hold the fraction
            order = fits[np.argsort(-used[fits], kind="stable")]
            return tuple(int(g) for g in order[:count])
        if count == 1:  # a single GPU: on the node with the fewest free GPUs, to keep whole nodes free
            nodes = self.nodes[gtype][fits]
            free_on = np.bincount(nodes)[nodes]
            return (int(fits[np.argmin(free_on)]),)
        nodes = self.nodes[gtype][fits]
        free_on = np.bincount(nodes)[nodes]
        order = fits[np.lexsort((fits, nodes, -free_on))]
        return tuple(int(g) for g in order[:count])

    # ------------------------------------------------------------------ allocation
    def _inputs(self, now: float) -> AllocationInput:
        jobs = list(self.active.values())
        ids = [j.index for j in jobs]
        inp = AllocationInput(
            ids, np.array([j.throughput for j in jobs]), np.array([j.share for j in jobs]),
            np.array([j.weight for j in jobs]), np.array([max(j.remaining, 1e-9) for j in jobs]),
            np.array([now - j.submit_time for j in jobs]), self.cap.copy(), rng=self.rng)
        if self.policy.packing:
            inp.pairs, inp.pair_throughput = self._candidate_pairs(jobs)
        return inp

    def _candidate_pairs(self, jobs: list[HeteroJob]) -> tuple[np.ndarray, np.ndarray]:
        """Every pair of active jobs (rows a < b) of equal scale that can share somewhere, vectorised
        through a table over the job types present."""
        n = len(jobs)
        kinds: dict[tuple, int] = {}
        kind = np.array([kinds.setdefault((j.key, j.milli), len(kinds)) for j in jobs], dtype=np.int64)
        names = list(kinds)
        k = len(names)
        table = np.zeros((k, k, self.m, 2))
        ok = np.zeros((k, k), bool)
        for x, (ka, ma) in enumerate(names):
            for y in range(x, k):
                kb, mb = names[y]
                if ka[2] != kb[2] or ma != mb:
                    continue
                cached = self.pair_cache.get((ka, kb), False)
                if cached is False:
                    cached = self.table.pair_for(ka, kb, self.cluster.types)
                    self.pair_cache[(ka, kb)] = cached
                if cached is not None:
                    table[x, y], table[y, x] = cached, cached[:, ::-1]  # type: ignore[index]
                    ok[x, y] = ok[y, x] = True
        a, b = np.triu_indices(n, 1)
        keep = ok[kind[a], kind[b]]
        a, b = a[keep], b[keep]
        return np.c_[a, b].astype(np.int64), table[kind[a], kind[b]]

    def _reallocate(self, now: float) -> None:
        # Gavel's reset: fold the time received into the deficits, then restart every entry at R/2
        if self.last_reset is not None:
            elapsed = now - self.last_reset
            was = self.in_alloc
            self.Dm[was] += self.X[was] * elapsed - (self.G[was] - self.R / 2)
            for key, x in self.alloc.items():
                got = self.received.get(key)
                received = got - self.R / 2 if got is not None else 0.0
                self.deficit[key] = self.deficit.get(key, 0.0) + x * elapsed - received
        inp = self._inputs(now)
        allocation = self.policy.allocate(inp)
        self.allocations += 1
        ids = np.asarray(inp.ids, dtype=np.int64)
        self.X[self.in_alloc] = 0.0
        self.in_alloc[:] = False
        self.X[ids] = allocation.single
        self.in_alloc[ids] = True
        self.G[:] = self.R / 2
        alloc: dict[Key, np.ndarray] = {}
        if len(inp.pairs):
            for p in np.flatnonzero(allocation.pair.max(axis=1) > 1e-9).tolist():
                a, b = inp.pairs[p]
                alloc[(inp.ids[a], inp.ids[b])] = allocation.pair[p]
        self.alloc = alloc
        self.received = {}  # filled as pairs run (see _advance)
        live = set(self.active)
        self.deficit = {k: v for k, v in self.deficit.items() if all(i in live for i in k)}
        self.last_reset, self.dirty = now, False

    def _priority(self, key: Key, j: int) -> tuple[float, float, float]:
        """(allocation ÷ time received, deficit, allocation) of an entry on GPU type j."""
        if len(key) == 1:
            i = key[0]
            x = self.X[i, j]
            return (x / self.G[i, j] if x > 0 else 0.0), float(self.Dm[i, j]), x
        xs = self.alloc.get(key)
        if xs is None or xs[j] <= 0:
            return 0.0, 0.0, 0.0
        got = self.received[key][j] if key in self.received else self.R / 2
        deficit = self.deficit.get(key)
        return xs[j] / got, (float(deficit[j]) if deficit is not None else 0.0), xs[j]

    # ------------------------------------------------------------------ rounds
    def _begin_round(self, now: float) -> None:
        self.rounds += 1
        for run in list(self.runs.values()):
            self._advance(run, now)
        if self.dirty and self.mechanism.may_reset(now, self.last_reset):
            self._reallocate(now)
        order = self.fast_order if self.fastest_first else [int(j) for j in self.rng.permutation(self.m)]
        self.type_order = order
        plan = self._plan(order)
        jump = False  # Gavel's clock: a round in which nothing runs does not tick; time jumps to the next arrival
        if self.mechanism.gavel_clock and not plan and self.active:
            if self.next_arrival < len(self.jobs):
                jump = True
            elif self.dirty:  # nothing runs and nothing will arrive: reset whatever the interval
                self._reallocate(now)
                plan = self._plan(order)
        self._apply(plan, now)
        self.round_end = math.inf if jump else now + self.R
        if self.audit is not None:
            self._record(now)

    def _plan(self, order: list[int]) -> list[tuple[Key, int]]:
        """Which entries (jobs alone, pairs) run this round on which GPU type: per type in ``order``,
        entries by priority while they fit, each job once."""
        idxs = np.fromiter(self.active, dtype=np.int64, count=len(self.active))
        if self.mechanism.new_jobs_wait:
            idxs = idxs[self.in_alloc[idxs]]  # jobs that arrived after the reset wait for the next one
        keys: list[Key] = [(int(i),) for i in idxs]
        A, got, D = self.X[idxs], self.G[idxs], self.Dm[idxs]
        runnable, need = self.runs_on[idxs], self.share[idxs]
        pair_keys = list(self.alloc)
        if pair_keys:
            half, zero = np.full(self.m, self.R / 2), np.zeros(self.m)
            keys += pair_keys
            A = np.vstack([A, [self.alloc[k] for k in pair_keys]])
            got = np.vstack([got, [self.received.get(k, half) for k in pair_keys]])
            D = np.vstack([D, [self.deficit.get(k, zero) for k in pair_keys]])
            runnable = np.vstack([runnable, [self._pair(*k).min(axis=1) > 0 for k in pair_keys]])  # type: ignore[union-attr]
            need = np.concatenate([need, [self.share[k[0]] for k in pair_keys]])
        P = np.where((A > 0) & runnable, A / got, 0.0)
        pair_rows = len(idxs)
        taken: set[int] = set()
        plan: list[tuple[Key, int]] = []
        fifo = self.policy.fifo
        for j in order:
            left = self.cap[j]
            valid = runnable[:, j].copy()
            valid[pair_rows:] &= A[pair_rows:, j] > 0  # pairs only where the allocation puts them
            rows = np.flatnonzero(valid)
            if fifo:
                rows = rows[P[rows, j] > 0]
            ranked = rows[np.lexsort((-A[rows, j], -D[rows, j], -P[rows, j]))]
            for r in ranked.tolist():
                if left < 1e-9:
                    break
                key = keys[r]
                if need[r] > left + 1e-9 or any(i in taken for i in key):
                    continue
                left -= need[r]
                taken.update(key)
                plan.append((key, j))
        return plan

    def _apply(self, plan: list[tuple[Key, int]], now: float) -> None:
        planned = dict(plan)
        was_running = set(self.run_of)
        self.lease_opportunities += len(self.runs)
        for key, run in list(self.runs.items()):
            if planned.get(key) == run.gtype:
                self.lease_extensions += 1
                continue
            self._stop(run)
        for key, j in sorted(plan, key=lambda kj: -self.jobs[kj[0][0]].gpu_num):
            if key in self.runs:
                continue
            job = self.jobs[key[0]]
            gpus = self._find_gpus(j, job.gpu_num, job.milli)
            if gpus is None:
                continue  # fragmentation (fractional GPUs): waits for the next round
            for idx in key:
                if idx in was_running:
                    self.jobs[idx].migrations += 1
            self._start(key, j, gpus, now)
        for idx in was_running - set(self.run_of):
            job = self.jobs[idx]
            if job.state is not HeteroState.FINISHED:
                job.preemptions += 1
                for hook in self._hooks["on_preempt"]:
                    hook(job, now)

    def _backfill(self, now: float) -> None:
        fractional = self.fractional
        if not fractional and max(self.idle) == 0:
            return
        wait_for_reset = self.mechanism.new_jobs_wait
        waiting = [job for idx, job in self.active.items()
                   if idx not in self.run_of and not (wait_for_reset and not self.in_alloc[idx])]
        if not waiting:
            return
        order = self.type_order

        def best(job: HeteroJob) -> float:
            return float((self.X[job.index] / self.G[job.index]).max())

        if not self.policy.fifo:
            ranked = [(best(job), -job.index, job) for job in waiting]
            waiting = [job for _, _, job in sorted(ranked, key=lambda r: (r[0], r[1]), reverse=True)]
        for job in waiting:
            options = [j for j in order if job.throughput[j] > 0 and (fractional or self.idle[j] >= job.gpu_num)]
            if not options and not self.policy.fifo:
                continue
            if self.in_alloc[job.index]:
                options.sort(key=lambda j: -self._priority((job.index,), j)[0])
            placed = False
            for j in options:
                gpus = self._find_gpus(j, job.gpu_num, job.milli)
                if gpus is not None:
                    self._start((job.index,), j, gpus, now)
                    placed = True
                    break
            if not placed and self.policy.fifo:
                break
        if self.audit is not None:
            self._record(now)

    # ------------------------------------------------------------------ observation
    def _record(self, now: float) -> None:
        busy = [int((u > 0).sum()) for u in self.used]
        milli = [int(u.sum()) for u in self.used]
        self.audit.append((now, busy, milli, [int(u.max(initial=0)) for u in self.used]))  # type: ignore[union-attr]

    def _sample(self, now: float) -> None:
        hooks = self._hooks["on_sample"]
        if hooks:
            running = len(self.run_of)
            for hook in hooks:
                hook(now, self.busy_gpus, self.shared_gpus, running, len(self.active) - running)
