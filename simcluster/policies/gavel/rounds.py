"""Gavel's round mechanism (OSDI'20 §5) as a policy of the event-driven engine.

:class:`RoundPolicy` is the base of Gavel's policies (:mod:`simcluster.policies.gavel`): a subclass
says how to *allocate* (each job's — or pair's — fraction of time on each GPU type, from the active
jobs; :meth:`RoundPolicy.allocate`) and this module realises the allocation, round by round, with
what any policy may do: start jobs on GPUs it chooses, preempt them, and set its own timers.  The
engine knows nothing of rounds.  Each VC has its own allocation and round clock (:class:`Rounds`),
and its own instance of the policy to allocate with (so FIFO's placements, Gandiva's pairs, the
isolated clock of finish-time fairness and every random draw are per VC).

Every ``round_seconds`` (360 s):

1. If the set of active jobs changed since the last allocation (and the reset rule allows it: at
   least ``realloc_interval`` seconds since the last one; 0 by default, Gavel's simulator uses
   1920), the policy computes a new allocation X and the time each job has received is reset
   (Gavel's ``_reset_time_run_so_far``: every entry restarts at half a round).
2. Priorities: for each GPU type, entry (job or pair) priority = X[entry, type] ÷ time it received on
   that type since the reset, ties broken by accumulated deficit (time it should have had minus time
   it got) and by X.  GPU types are visited fastest first for heterogeneity-aware policies, in a
   seeded random order for agnostic ones (as Gavel does; ``Mechanism.fills_fastest_first``); within
   a type entries take GPUs in priority order while they fit; a job appears once per round.  Entries
   with zero throughput never run; FIFO policies never run jobs their allocation leaves out.
3. Placement: an entry that holds GPUs of the same type keeps them (lease extension: it simply runs
   on); the others are preempted (no checkpoint cost, as in Gavel's simulator; a job restarted on
   another type at once counts as a migration) and take free GPUs of their type, multi-GPU entries
   first, consolidated where they can be (a job may span the type's nodes: there is no locality
   cost unless ``--spread-penalty`` says so).  A pair runs on the same GPUs, each job at its pair
   throughput from the table.

Between boundaries nothing ticks: the policy sets a timer for the round's end, and the engine wakes
it for completions and arrivals.  When one job of a pair finishes, its partner runs on alone at its
solo throughput, and the pair leaves the allocation.

What a pass costs (issue 55): the mid-round fill and the round's plan read per-slot arrays of the active jobs
(no walk of every job in Python); runs that node failures ended are looked for among the jobs that left GPUs
since the last pass (``on_run_stop``), not among every run; a reset touches the active jobs' rows only; the
jobs' remaining work is worked out only for the policies that read it (``reads_remaining``).  FIFO's mid-round
fill reads the active rows a block at a time up to the waiting head.  Each of these
decides as the plain walk did (tests/test_gavel_scale.py and tests/test_gavel_scale7.py hold them to it).

Where we differ from Gavel's simulator by default, :class:`~simcluster.policies.gavel.mechanism.Mechanism`
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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from simcluster.cluster import VirtualCluster
from simcluster.config import SimConfig
from simcluster.job import Job, JobState
from simcluster.placement.consolidate_first import ConsolidateFirst
from simcluster.placement.fractions import fraction_plan
from simcluster.policies.base import Policy, SchedulingContext
from simcluster.policies.gavel.allocation import Allocation, AllocationInput, PolicyOptions
from simcluster.policies.gavel.mechanism import Mechanism
from simcluster.settings.fields import names_of
from simcluster.settings.gavel import GavelOptions

EPS = 1e-6  # seconds: events this close count as simultaneous
Key = tuple[int, ...]  # (slot,) or (slot_a, slot_b) with slot_a < slot_b: a job alone or a pair


class RoundPolicy(Policy):
    """Base class of Gavel's policies: subclasses implement :meth:`allocate`; this class runs the rounds.

    Class attributes tell the mechanism how to realise an allocation: ``aware`` (GPU types filled
    fastest first, else in a seeded random order), ``packing`` (the policy allocates pairs of jobs
    sharing GPUs: it is given the candidate pairs), ``fifo`` (never give GPUs to jobs the allocation
    leaves out, Gavel's FIFO rule).
    """

    aware: bool = True
    packing: bool = False
    fifo: bool = False
    solves_lps: bool = False  # allocates with linear programs (reads --lp-solution)
    # reads AllocationInput.remaining: working it out walks every active job's run at every allocation, so a policy
    # that never reads it says so and gets NaN there instead (tests/test_gavel_scale.py holds each to its word)
    reads_remaining: bool = True
    one_type_per_job = True  # a job runs on GPUs of one type: it must fit on a single type it runs on
    priority_first = False  # (it allocates by its own model: the trace's priorities do not order it)
    own_placement = "rounds"  # places jobs itself (the --placement setting is not read)
    family = "gavel"
    # the round mechanism's settings; a policy that solves LPs also reads --lp-solution (__init_subclass__)
    reads = frozenset(names_of(GavelOptions)) - {"throughputs", "lp_solution", "makespan_search", "gandiva_pairing"}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.solves_lps:
            cls.reads = cls.reads | {"lp_solution"}

    @classmethod
    def uses_seed(cls, config: SimConfig) -> bool:
        return not cls.aware  # agnostic policies draw GPU types (and pairs) at random

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__(config)
        self.seed = self.config.seed
        self.options = PolicyOptions.from_config(self.config)
        self.solves = 0  # linear programs solved
        self._rounds: dict[str, Rounds] = {}
        self._arrived: dict[str, list[Job]] = {}  # jobs submitted since their VC's last pass

    def allocate(self, inp: AllocationInput) -> Allocation:  # pragma: no cover - interface
        raise NotImplementedError

    # --- the engine's hooks ---------------------------------------------------
    def on_submit(self, job: Job, now: float) -> None:
        self._arrived.setdefault(job.queue_vc, []).append(job)

    def on_finish(self, job: Job, now: float) -> None:
        self._rounds[job.queue_vc].finish(job, now)

    def on_run_stop(self, job: Job, vc: VirtualCluster) -> None:
        rounds = self._rounds.get(vc.name)
        if rounds is not None:  # the next pass checks whether it was one of ours that a failure ended
            rounds.stopped.append(job)

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        rounds = self._rounds.get(vc.name)
        if rounds is None:
            rounds = self._rounds[vc.name] = Rounds(vc, type(self)(self.config), Mechanism.from_config(self.config))
        for job in self._arrived.pop(vc.name, ()):
            rounds.arrive(job, ctx)
        rounds.step(ctx)

    def report(self) -> dict[str, Any]:
        vcs = self._rounds.values()
        return {"round_seconds": self.config.round_seconds, "rounds": sum(r.rounds for r in vcs),
                "allocations": sum(r.allocations for r in vcs), "lp_solves": sum(r.policy.solves for r in vcs),
                "lease_extensions": sum(r.lease_extensions for r in vcs),
                "lease_extension_opportunities": sum(r.lease_opportunities for r in vcs)}


@dataclass(slots=True)
class Run:
    """An entry holding GPUs of type ``gtype`` since ``since`` (a job alone, or a pair on the same GPUs)."""

    key: Key
    gtype: int
    since: float


class Rounds:
    """One VC's round state: its active jobs (by slot, in arrival order), the allocation, the time each
    entry received on each GPU type since the last reset, the deficits, and the runs."""

    def __init__(self, vc: VirtualCluster, policy: RoundPolicy, mechanism: Mechanism) -> None:
        self.vc, self.policy, self.mechanism = vc, policy, mechanism
        self.R = float(mechanism.round_seconds)
        self.types = vc.gpu_types
        self.m = len(self.types)
        self.cap = np.array([vc.pools[t].total_gpus for t in self.types], dtype=float)
        self.rng = np.random.default_rng(policy.seed)
        self.fast_order = [self.types.index(t) for t in vc.fastest_first]
        self.type_order = list(self.fast_order)
        self.fastest_first = mechanism.fills_fastest_first(policy)
        self.fractional = False  # a job taking a fraction of a GPU has arrived
        self.placement = ConsolidateFirst()
        # jobs by slot (arrival order); per-slot arrays grow as jobs arrive
        self.jobs: list[Job] = []
        self.slot: dict[Job, int] = {}
        self.X = np.zeros((0, self.m))  # allocation of each job alone
        self.G = np.zeros((0, self.m))  # time received since the last reset (starts at R/2)
        self.Dm = np.zeros((0, self.m))  # deficits
        self.T = np.zeros((0, self.m))  # iterations/s alone on each type (0: cannot run there)
        self.in_alloc = np.zeros(0, bool)
        self.share = np.zeros(0)  # GPUs each occupies (fractional for jobs taking GPU fractions)
        # what allocations read of each job, kept by slot so that an allocation reads arrays, not every job
        self.gpu_num = np.zeros(0, np.int64)
        self.rate = np.zeros(0)  # iterations per second of work
        self.weight = np.zeros(0)
        self.submit = np.zeros(0)
        self.held = np.zeros(0, bool)  # in a run (self.run_of), as an array for the mid-round fill
        self.active: dict[int, Job] = {}
        self._rows: np.ndarray | None = None  # the active slots as an array (active_rows)
        self.runs: dict[Key, Run] = {}
        self.run_of: dict[int, Key] = {}
        self.round_end = math.inf
        self.dirty = self.arrived = self.finished = False
        self.stopped: list[Job] = []  # jobs that left GPUs since the last pass (RoundPolicy.on_run_stop)
        self.last_reset: float | None = None
        self.alloc: dict[Key, np.ndarray] = {}  # pairs
        self.received: dict[Key, np.ndarray] = {}
        self.deficit: dict[Key, np.ndarray] = {}
        self.pair_cache: dict[tuple, np.ndarray | None] = {}
        self.rounds = self.allocations = self.lease_extensions = self.lease_opportunities = 0
        self.throughputs: Any = None

    # --- arrivals and completions ---------------------------------------------------
    def arrive(self, job: Job, ctx: SchedulingContext) -> None:
        self.throughputs = ctx.throughputs
        slot = len(self.jobs)
        if slot == len(self.X):
            self._grow(max(16, 2 * slot))
        self.jobs.append(job)
        self.slot[job] = slot
        self.T[slot] = self._solo_throughputs(job)
        self.share[slot] = job.gpus
        self.gpu_num[slot] = job.gpu_num
        self.rate[slot] = job.speeds.rate if job.speeds is not None else 1.0
        self.weight[slot], self.submit[slot] = job.priority_weight, job.submit_time
        if not ((self.T[slot] > 0) & (self.cap >= job.gpu_num)).any():
            raise ValueError(f"job {job.job_id} needs {job.gpu_num} GPU(s) of one type it runs on; VC {self.vc.name} "
                             f"has none ({', '.join(f'{t}:{int(c)}' for t, c in zip(self.types, self.cap))})")
        self.fractional |= job.gpu_milli < 1000
        self.active[slot] = job
        if self._rows is not None:  # the newest slot is the largest: the rows stay ascending
            self._rows = self._frozen(np.append(self._rows, slot))
        self.dirty = self.arrived = True

    def _solo_throughputs(self, job: Job) -> list[float]:
        """Iterations/s of ``job`` alone on each GPU type: the table's own figures where the job has a row in
        it (rate × speed would differ in the last bit, and the LPs' ties follow such bits), else rate × speed."""
        speeds, table = job.speeds, self.throughputs
        if speeds is not None and speeds.key is not None and table is not None and speeds.key in table.solo:
            row = table.solo[speeds.key]
            return [float(row[table.gpu_types.index(t)]) if job.speed_on(t) > 0 else 0.0 for t in self.types]
        rate = speeds.rate if speeds is not None else 1.0
        return [rate * job.speed_on(t) for t in self.types]

    def _grow(self, size: int) -> None:
        def grown(a: np.ndarray, fill: float | bool) -> np.ndarray:
            out = np.full((size, *a.shape[1:]), fill, dtype=a.dtype)
            out[: len(a)] = a
            return out

        self.X, self.Dm, self.T = grown(self.X, 0.0), grown(self.Dm, 0.0), grown(self.T, 0.0)
        self.G = grown(self.G, self.R / 2)
        self.in_alloc, self.share = grown(self.in_alloc, False), grown(self.share, 0.0)
        self.gpu_num, self.rate, self.weight = grown(self.gpu_num, 0), grown(self.rate, 0.0), grown(self.weight, 0.0)
        self.submit, self.held = grown(self.submit, 0.0), grown(self.held, False)

    def finish(self, job: Job, now: float) -> None:
        """A job finished (its GPUs are free): its run ends; the partner of a pair runs on alone."""
        slot = self.slot[job]
        key = self.run_of.get(slot)
        if key is not None:
            run = self.runs.pop(key)
            self._advance(run, now)
            self._let_go(key)
            for other in key:
                if other != slot:  # on the same GPUs, at its solo throughput (the engine re-timed it)
                    self.runs[(other,)] = Run((other,), run.gtype, now)
                    self._hold((other,))
        del self.active[slot]
        if self._rows is not None:
            self._rows = self._frozen(np.delete(self._rows, np.searchsorted(self._rows, slot)))
        self._retire_pairs(slot)
        self.dirty = self.finished = True

    def _retire_pairs(self, slot: int) -> None:
        """A finished job's pairs leave the allocation (until the next reset they would otherwise
        restart the finished job with its partner).  The partner keeps the pair's share as its own,
        with the time the pair received and its deficit, so that it goes on getting that GPU time —
        unless ``pair_share_on_finish="drop"`` (Gavel's simulator), when the share lapses."""
        keep = self.mechanism.pair_share_on_finish == "partner"
        for key in [key for key in self.alloc if slot in key]:
            share = self.alloc.pop(key)
            got = self.received.pop(key, None)
            deficit = self.deficit.pop(key, None)
            other = key[1] if key[0] == slot else key[0]
            if keep and other in self.active and self.in_alloc[other]:
                self.X[other] += share
                if got is not None:
                    self.G[other] += got - self.R / 2
                if deficit is not None:
                    self.Dm[other] += deficit

    # --- the pass ----------------------------------------------------------------------
    def step(self, ctx: SchedulingContext) -> None:
        """What the VC does now: a new round at its boundary, else (mid-round) fill the GPUs freed."""
        now = ctx.now
        finished, arrived = self.finished, self.arrived
        self.finished = self.arrived = False
        self._forget_evicted(now)
        if not self.active:
            self.round_end = math.inf
        elif now >= self.round_end - EPS or self.round_end == math.inf:
            self._begin_round(now, ctx)
        elif self.mechanism.midround_release and (finished or arrived):
            self._backfill(now, ctx)
        elif finished and not self.runs:  # Gavel: a round ends when its last job does
            self._begin_round(now, ctx)
        if self.round_end < math.inf:
            ctx.wake_at(self.round_end)

    def active_rows(self) -> np.ndarray:
        """The active jobs' slots, ascending (arrival order); read-only, kept up to date as jobs come and go."""
        if self._rows is None:
            self._rows = self._frozen(np.fromiter(self.active, dtype=np.int64, count=len(self.active)))
        return self._rows

    @staticmethod
    def _frozen(rows: np.ndarray) -> np.ndarray:
        rows.flags.writeable = False
        return rows

    def _hold(self, key: Key) -> None:
        for s in key:
            self.run_of[s] = key
            self.held[s] = True

    def _let_go(self, key: Key) -> None:
        for s in key:
            del self.run_of[s]
            self.held[s] = False

    def _forget_evicted(self, now: float) -> None:
        """Runs whose jobs lost their GPUs to a node failure end (the jobs wait for the next round).  Only the
        jobs that left GPUs since the last pass (``stopped``) can be such: the others' runs are not walked."""
        if not self.stopped:
            return
        stopped, self.stopped = self.stopped, []
        for job in stopped:
            key = self.run_of.get(self.slot.get(job, -1))
            if key is not None and any(self.jobs[s].state is not JobState.RUNNING for s in key):
                self._advance(self.runs.pop(key), now)
                self._let_go(key)

    def _advance(self, run: Run, now: float) -> None:
        """Count the time ``run`` held its GPUs since it was last counted as time received."""
        dt = now - run.since
        if dt <= 0:
            return
        if len(run.key) == 1:
            self.G[run.key[0], run.gtype] += dt
        else:
            got = self.received.get(run.key)
            if got is None:  # time received since the last reset; every entry starts at R/2 (Gavel)
                got = self.received[run.key] = np.full(self.m, self.R / 2)
            got[run.gtype] += dt
        run.since = now

    # --- allocation ----------------------------------------------------------------------
    def _inputs(self, now: float) -> AllocationInput:
        slots = list(self.active)
        rows = self.active_rows()
        if self.policy.reads_remaining:
            remaining = np.maximum(np.array([j.remaining_at(now) for j in self.active.values()]) * self.rate[rows], 1e-9)
        else:  # (RoundPolicy.reads_remaining)
            remaining = np.full(len(rows), np.nan)
        inp = AllocationInput(slots, self.T[rows], self.share[rows], self.weight[rows], remaining,
                              now - self.submit[rows], self.cap.copy(), rng=self.rng)
        if self.policy.packing:
            inp.pairs, inp.pair_throughput = self._candidate_pairs(list(self.active.values()))
        return inp

    def _pair(self, a: Job, b: Job) -> np.ndarray | None:
        """(types, 2) iterations/s of a and b sharing a GPU of each type, None where they never can."""
        ka, kb = a.speeds.key if a.speeds else None, b.speeds.key if b.speeds else None
        cached = self.pair_cache.get((ka, kb), False)
        if cached is False:
            table = self.throughputs
            cached = table.pair_for(ka, kb, self.types) if table is not None and ka and kb else None
            self.pair_cache[(ka, kb)] = cached
        return cached  # type: ignore[return-value]

    def _candidate_pairs(self, jobs: list[Job]) -> tuple[np.ndarray, np.ndarray]:
        """Every pair of active jobs (rows a < b) of equal scale that can share somewhere, vectorised
        through a table over the job types present."""
        n = len(jobs)
        kinds: dict[tuple, int] = {}
        kind = np.array([kinds.setdefault((j.speeds.key if j.speeds else None, j.gpu_milli, j.gpu_num), len(kinds))
                         for j in jobs], dtype=np.int64)
        names = list(kinds)
        representative = {kind[i]: jobs[i] for i in range(n - 1, -1, -1)}
        k = len(names)
        table = np.zeros((k, k, self.m, 2))
        ok = np.zeros((k, k), bool)
        for x, (_, ma, ga) in enumerate(names):
            for y in range(x, k):
                _, mb, gb = names[y]
                if ga != gb or ma != mb:
                    continue
                cached = self._pair(representative[x], representative[y])
                if cached is not None:
                    table[x, y], table[y, x] = cached, cached[:, ::-1]
                    ok[x, y] = ok[y, x] = True
        # only jobs of a kind that can share with some kind: the pairs of all n jobs are n²/2 (rows stay in order)
        pairable = np.flatnonzero(ok.any(axis=1)[kind])
        a, b = np.triu_indices(len(pairable), 1)
        a, b = pairable[a], pairable[b]
        keep = ok[kind[a], kind[b]]
        a, b = a[keep], b[keep]
        return np.c_[a, b].astype(np.int64), table[kind[a], kind[b]]

    def _reallocate(self, now: float) -> None:
        # Gavel's reset: fold the time received into the deficits, then restart every entry at R/2.  Only the
        # active jobs' rows are kept up to date: a finished job's are never read again.
        rows = self.active_rows()
        if self.last_reset is not None:
            elapsed = now - self.last_reset
            was = rows[self.in_alloc[rows]]
            self.Dm[was] += self.X[was] * elapsed - (self.G[was] - self.R / 2)
            for key, x in self.alloc.items():
                got = self.received.get(key)
                received = got - self.R / 2 if got is not None else 0.0
                self.deficit[key] = self.deficit.get(key, 0.0) + x * elapsed - received
        inp = self._inputs(now)
        allocation = self.policy.allocate(inp)
        self.allocations += 1
        self.X[rows] = allocation.single  # (inp.ids are the active rows)
        self.in_alloc[rows] = True
        self.G[rows] = self.R / 2
        alloc: dict[Key, np.ndarray] = {}
        if len(inp.pairs):
            for p in np.flatnonzero(allocation.pair.max(axis=1) > 1e-9).tolist():
                a, b = inp.pairs[p]
                alloc[(inp.ids[a], inp.ids[b])] = allocation.pair[p]
        self.alloc = alloc
        self.received = {}  # filled as pairs run (see _advance)
        if self.deficit:
            live = self.active
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

    # --- rounds ----------------------------------------------------------------------
    def _begin_round(self, now: float, ctx: SchedulingContext) -> None:
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
            if self.vc.to_arrive:
                jump = True
            elif self.dirty:  # nothing runs and nothing will arrive: reset whatever the interval
                self._reallocate(now)
                plan = self._plan(order)
        self._apply(plan, now, ctx)
        self.round_end = math.inf if jump else now + self.R

    def _plan(self, order: list[int]) -> list[tuple[Key, int]]:
        """Which entries (jobs alone, pairs) run this round on which GPU type: per type in ``order``,
        entries by priority while they fit, each job once."""
        idxs = self.active_rows()
        if self.mechanism.new_jobs_wait:
            idxs = idxs[self.in_alloc[idxs]]  # jobs that arrived after the reset wait for the next one
        if self.policy.fifo:  # FIFO never runs a job its allocation leaves out (rows kept in order: same ranking)
            idxs = idxs[(self.X[idxs] > 0).any(axis=1)]
        A, got, D = self.X[idxs], self.G[idxs], self.Dm[idxs]
        runnable, need = self.T[idxs] > 0, self.share[idxs]
        pair_keys = list(self.alloc)  # rows past the jobs' (keys made only for the rows visited)
        if pair_keys:
            half, zero = np.full(self.m, self.R / 2), np.zeros(self.m)
            A = np.vstack([A, [self.alloc[k] for k in pair_keys]])
            got = np.vstack([got, [self.received.get(k, half) for k in pair_keys]])
            D = np.vstack([D, [self.deficit.get(k, zero) for k in pair_keys]])
            runnable = np.vstack([runnable, [self._pair(self.jobs[k[0]], self.jobs[k[1]]).min(axis=1) > 0  # type: ignore[union-attr]
                                             for k in pair_keys]])
            need = np.concatenate([need, [self.share[k[0]] for k in pair_keys]])
        P = np.where((A > 0) & runnable, A / got, 0.0)
        pair_rows = len(idxs)
        smallest = float(need.min()) if len(need) else 0.0  # once no entry fits in what is left, none will
        taken: set[int] = set()
        plan: list[tuple[Key, int]] = []
        fifo = self.policy.fifo
        slots, needs = idxs.tolist(), need.tolist()  # (Python floats: the same sums, read faster)
        for j in order:
            left = float(self.cap[j])
            valid = runnable[:, j].copy()
            valid[pair_rows:] &= A[pair_rows:, j] > 0  # pairs only where the allocation puts them
            rows = np.flatnonzero(valid)
            if fifo:
                rows = rows[P[rows, j] > 0]
            ranked = rows[np.lexsort((-A[rows, j], -D[rows, j], -P[rows, j]))]
            for r in ranked.tolist():
                if left < 1e-9 or left + 1e-9 < smallest:
                    break
                if needs[r] > left + 1e-9:
                    continue
                if r < pair_rows:
                    if slots[r] in taken:
                        continue
                    key: Key = (slots[r],)
                    taken.add(slots[r])
                else:
                    key = pair_keys[r - pair_rows]
                    if key[0] in taken or key[1] in taken:
                        continue
                    taken.update(key)
                left -= needs[r]
                plan.append((key, j))
        return plan

    def _apply(self, plan: list[tuple[Key, int]], now: float, ctx: SchedulingContext) -> None:
        """Extend the leases the plan keeps; preempt the other runs; start the plan's new entries."""
        planned = dict(plan)
        self.lease_opportunities += len(self.runs)
        stopped = []
        for key, run in list(self.runs.items()):
            if planned.get(key) == run.gtype:
                self.lease_extensions += 1
                continue
            stopped.append(key)
            del self.runs[key]
            self._let_go(key)
        restarting = {s for key, _ in plan if key not in self.runs for s in key}
        for key in stopped:
            for s in key:  # no checkpoint cost, as in Gavel's simulator
                ctx.preempt(self.jobs[s], overhead=0.0, moving=s in restarting)
        for key, j in sorted(plan, key=lambda kj: -self.jobs[kj[0][0]].gpu_num):
            if key not in self.runs:
                self._start(key, j, now, ctx)

    def _start(self, key: Key, j: int, now: float, ctx: SchedulingContext) -> bool:
        """Start entry ``key`` on free GPUs of type ``j``; False if there are none (fragmented fractions)."""
        first = self.jobs[key[0]]
        pool = self.vc.pools[self.types[j]]
        if first.gpu_milli < 1000:
            gpus = fraction_plan(first, [pool])
        else:
            gpus = self.placement.place(first, pool) if pool.free_gpus >= first.gpu_num else None
        if gpus is None:
            return False
        ctx.start_on(first, gpus)
        for s in key[1:]:  # a pair: the partner on exactly the same GPUs
            ctx.start_on(self.jobs[s], [(node, list(ids)) for node, ids in first.allocation])
        self.runs[key] = Run(key, j, now)
        self._hold(key)
        return True

    def _backfill(self, now: float, ctx: SchedulingContext) -> None:
        """Mid-round: waiting jobs take the GPUs left idle (jobs with an allocation by priority, then the
        others in arrival order; FIFO policies strictly in arrival order)."""
        idle = [self.vc.pools[t].free_gpus for t in self.types]
        if not self.fractional and max(idle) == 0:
            return
        if self.policy.fifo:
            self._fill_in_order(idle, now, ctx)
            return
        slots = self.active_rows()
        waiting = self._waiting(slots)
        if not self.fractional:  # GPUs only fill as jobs start: a job that fits nowhere now will not fit below
            waiting = waiting[self._fits(waiting, idle)]
        if not len(waiting):
            return
        # by allocation ÷ time received on the best type, then arrival
        waiting = waiting[np.lexsort((waiting, -(self.X[waiting] / self.G[waiting]).max(axis=1)))]
        for s in waiting.tolist():
            self._try_start(s, now, ctx)

    def _fill_in_order(self, idle: list[int], now: float, ctx: SchedulingContext) -> None:
        """FIFO's mid-round fill: waiting jobs in arrival order until the first that does not start.  The active
        rows are read a block at a time (the waiting head is near the front, behind the running jobs), which
        decides as reading them all would: a job's fit is judged on the GPUs idle when the fill began."""
        slots = self.active_rows()
        start, block = 0, 32
        while start < len(slots):
            waiting = self._waiting(slots[start: start + block])
            start, block = start + block, 4 * block
            if not self.fractional:  # the first job that fits nowhere stops the fill
                fits = self._fits(waiting, idle)
                if not fits.all():
                    waiting = waiting[: int(np.argmin(fits)) + 1]
            for s in waiting.tolist():
                if not self._try_start(s, now, ctx):
                    return

    def _waiting(self, slots: np.ndarray) -> np.ndarray:
        """Of ``slots``, those holding no GPUs (and, where new jobs wait, in the allocation)."""
        waiting = slots[~self.held[slots]]
        return waiting[self.in_alloc[waiting]] if self.mechanism.new_jobs_wait else waiting

    def _fits(self, waiting: np.ndarray, idle: list[int]) -> np.ndarray:
        """Whether each job fits on some type it runs on, in the ``idle`` GPUs."""
        return ((self.T[waiting] > 0) & (np.asarray(idle)[None, :] >= self.gpu_num[waiting][:, None])).any(axis=1)

    def _try_start(self, s: int, now: float, ctx: SchedulingContext) -> bool:
        """Start waiting job ``s`` on the first type of the round's order with room (its allocation's types first,
        by priority); False if it did not start."""
        job = self.jobs[s]
        options = [j for j in self.type_order
                   if self.T[s, j] > 0 and (self.fractional or self.vc.pools[self.types[j]].free_gpus >= job.gpu_num)]
        if not options:
            return False
        if self.in_alloc[s]:
            options.sort(key=lambda j: -self._priority((s,), j)[0])
        return any(self._start((s,), j, now, ctx) for j in options)
