"""Gavel's round mechanism costs what changed (issue 55) and decides as before.

The mechanism's passes no longer walk every run and every waiting job (failures are looked for among the jobs
that left GPUs, the mid-round fill ranks arrays, a reset touches the active rows, policies that never read the
jobs' remaining work are not given it), and finish-time fairness stacks its bisection's matrix once.  These tests
hold each shortcut to the plain code it replaced, copied here as :class:`ReferenceRounds` and the other
references: the same jobs table on heterogeneous and failing clusters, the same allocations on random inputs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.optimize import LinearConstraint

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.job import JobState
from simcluster.paths import shared_data_dir
from simcluster.policies import GAVEL_POLICIES, POLICIES
from simcluster.policies.gavel import finish_time_fairness as ftf
from simcluster.policies.gavel import rounds as rounds_module
from simcluster.policies.gavel.allocation import Allocation, AllocationInput
from simcluster.policies.gavel.fifo import _fastest, _greedy
from simcluster.policies.gavel.lp import Program, isolated_allocation, isolated_throughput
from simcluster.policies.gavel.rounds import Key, Rounds
from simcluster.traces.synth import spec_from_text, synthesize

GAVEL_TRACE = shared_data_dir() / "gavel_traces" / "t100.trace"


class ReferenceRounds(Rounds):
    """The round mechanism as it was before issue 55: every pass walks every run, every waiting job, every slot."""

    def _forget_evicted(self, now: float) -> None:
        self.stopped = []
        for key, run in list(self.runs.items()):
            if any(self.jobs[s].state is not JobState.RUNNING for s in key):
                self._advance(run, now)
                del self.runs[key]
                self._let_go(key)

    def _inputs(self, now: float) -> AllocationInput:
        slots = list(self.active)
        jobs = list(self.active.values())
        rate = np.array([j.speeds.rate if j.speeds is not None else 1.0 for j in jobs])
        inp = AllocationInput(
            slots, self.T[slots], self.share[slots], np.array([j.priority_weight for j in jobs]),
            np.maximum(np.array([j.remaining_at(now) for j in jobs]) * rate, 1e-9),
            np.array([now - j.submit_time for j in jobs], dtype=float), self.cap.copy(), rng=self.rng)
        if self.policy.packing:
            n = len(jobs)
            kinds: dict[tuple, int] = {}
            kind = np.array([kinds.setdefault((j.speeds.key if j.speeds else None, j.gpu_milli, j.gpu_num), len(kinds))
                             for j in jobs], dtype=np.int64)
            names = list(kinds)
            representative = {kind[i]: jobs[i] for i in range(n - 1, -1, -1)}
            table = np.zeros((len(names), len(names), self.m, 2))
            ok = np.zeros((len(names), len(names)), bool)
            for x, (_, ma, ga) in enumerate(names):
                for y in range(x, len(names)):
                    _, mb, gb = names[y]
                    if ga != gb or ma != mb:
                        continue
                    cached = self._pair(representative[x], representative[y])
                    if cached is not None:
                        table[x, y], table[y, x] = cached, cached[:, ::-1]
                        ok[x, y] = ok[y, x] = True
            a, b = np.triu_indices(n, 1)
            keep = ok[kind[a], kind[b]]
            a, b = a[keep], b[keep]
            inp.pairs, inp.pair_throughput = np.c_[a, b].astype(np.int64), table[kind[a], kind[b]]
        return inp

    def _reallocate(self, now: float) -> None:
        n = len(self.jobs)
        if self.last_reset is not None:
            elapsed = now - self.last_reset
            was = self.in_alloc[:n]
            self.Dm[:n][was] += self.X[:n][was] * elapsed - (self.G[:n][was] - self.R / 2)
            for key, x in self.alloc.items():
                got = self.received.get(key)
                received = got - self.R / 2 if got is not None else 0.0
                self.deficit[key] = self.deficit.get(key, 0.0) + x * elapsed - received
        inp = self._inputs(now)
        allocation = self.policy.allocate(inp)
        self.allocations += 1
        ids = np.asarray(inp.ids, dtype=np.int64)
        self.X[:n][self.in_alloc[:n]] = 0.0
        self.in_alloc[:n] = False
        self.X[ids] = allocation.single
        self.in_alloc[ids] = True
        self.G[:n] = self.R / 2
        alloc: dict[Key, np.ndarray] = {}
        if len(inp.pairs):
            for p in np.flatnonzero(allocation.pair.max(axis=1) > 1e-9).tolist():
                a, b = inp.pairs[p]
                alloc[(inp.ids[a], inp.ids[b])] = allocation.pair[p]
        self.alloc = alloc
        self.received = {}
        live = set(self.active)
        self.deficit = {k: v for k, v in self.deficit.items() if all(i in live for i in k)}
        self.last_reset, self.dirty = now, False

    def _plan(self, order: list[int]) -> list[tuple[Key, int]]:
        idxs = np.fromiter(self.active, dtype=np.int64, count=len(self.active))
        if self.mechanism.new_jobs_wait:
            idxs = idxs[self.in_alloc[idxs]]
        keys: list[Key] = [(int(i),) for i in idxs]
        A, got, D = self.X[idxs], self.G[idxs], self.Dm[idxs]
        runnable, need = self.T[idxs] > 0, self.share[idxs]
        pair_keys = list(self.alloc)
        if pair_keys:
            half, zero = np.full(self.m, self.R / 2), np.zeros(self.m)
            keys += pair_keys
            A = np.vstack([A, [self.alloc[k] for k in pair_keys]])
            got = np.vstack([got, [self.received.get(k, half) for k in pair_keys]])
            D = np.vstack([D, [self.deficit.get(k, zero) for k in pair_keys]])
            runnable = np.vstack([runnable, [self._pair(self.jobs[k[0]], self.jobs[k[1]]).min(axis=1) > 0
                                             for k in pair_keys]])
            need = np.concatenate([need, [self.share[k[0]] for k in pair_keys]])
        P = np.where((A > 0) & runnable, A / got, 0.0)
        pair_rows = len(idxs)
        taken: set[int] = set()
        plan: list[tuple[Key, int]] = []
        for j in order:
            left = self.cap[j]
            valid = runnable[:, j].copy()
            valid[pair_rows:] &= A[pair_rows:, j] > 0
            rows = np.flatnonzero(valid)
            if self.policy.fifo:
                rows = rows[P[rows, j] > 0]
            for r in rows[np.lexsort((-A[rows, j], -D[rows, j], -P[rows, j]))].tolist():
                if left < 1e-9:
                    break
                if need[r] > left + 1e-9 or any(i in taken for i in keys[r]):
                    continue
                left -= need[r]
                taken.update(keys[r])
                plan.append((keys[r], j))
        return plan

    def _backfill(self, now: float, ctx) -> None:
        idle = [self.vc.pools[t].free_gpus for t in self.types]
        if not self.fractional and max(idle) == 0:
            return
        wait = self.mechanism.new_jobs_wait
        waiting = [s for s in self.active if s not in self.run_of and not (wait and not self.in_alloc[s])]
        fifo = self.policy.fifo
        if not fifo:
            ranked = [(float((self.X[s] / self.G[s]).max()), -s, s) for s in waiting]
            waiting = [s for _, _, s in sorted(ranked, key=lambda r: (r[0], r[1]), reverse=True)]
        for s in waiting:
            job = self.jobs[s]
            options = [j for j in self.type_order
                       if self.T[s, j] > 0 and (self.fractional or self.vc.pools[self.types[j]].free_gpus >= job.gpu_num)]
            if not options and not fifo:
                continue
            if self.in_alloc[s]:
                options.sort(key=lambda j: -self._priority((s,), j)[0])
            if not any(self._start((s,), j, now, ctx) for j in options) and fifo:
                break


def both_ways(monkeypatch: pytest.MonkeyPatch, trace, settings: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The jobs table of one run with the mechanism as it is, and with :class:`ReferenceRounds`."""
    now = simulate(trace, SimConfig.from_settings(settings)).jobs
    with monkeypatch.context() as patch:
        patch.setattr(rounds_module, "Rounds", ReferenceRounds)
        before = simulate(trace, SimConfig.from_settings(settings)).jobs
    return now, before


@pytest.mark.parametrize("policy", GAVEL_POLICIES)
def test_same_decisions_on_gavels_trace(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Heterogeneous GPUs, job types that share GPUs (the packed policies' pairs), Gavel's own trace."""
    if not GAVEL_TRACE.is_file():
        pytest.skip(f"Gavel's traces not found at {GAVEL_TRACE.parent}")
    now, before = both_ways(monkeypatch, load_trace(GAVEL_TRACE),
                            {"policy": policy, "cluster": "v100:4,p100:4,k80:4"})
    pd.testing.assert_frame_equal(now, before)
    assert now["end_time"].notna().all()


@pytest.mark.parametrize("policy", ["gavel_fifo", "fifo_perf", "max_min_fairness", "finish_time_fairness_perf",
                                    "gandiva"])
def test_same_decisions_when_nodes_fail(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes fail under the runs (the evicted jobs' runs are found among the jobs that left GPUs), multi-node jobs
    wait for room (the mid-round fill's shortcuts)."""
    trace = synthesize(spec_from_text("jobs=250,nodes=8,sizes=pow2:32,durations=lognormal:mu=8,sigma=1.2,"
                                      "arrivals=poisson,load=1.2,vcs=1,seed=3"))
    now, before = both_ways(monkeypatch, trace, {"policy": policy, "node_mtbf": 40_000.0,
                                                 "on_no_progress": "abandon"})
    pd.testing.assert_frame_equal(now, before)
    assert now["restarts"].sum() > 0  # failures did evict runs


def random_input(rng: np.random.Generator, n: int = 12, m: int = 3) -> AllocationInput:
    throughput = rng.uniform(0.5, 4.0, (n, m)) * (rng.random((n, m)) > 0.2)
    throughput[:, 0] = np.maximum(throughput[:, 0], 0.5)  # every job runs somewhere
    scale = rng.choice([1.0, 2.0, 4.0], n)
    pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n) if scale[a] == scale[b]], dtype=np.int64)
    pair_throughput = rng.uniform(0.2, 2.0, (len(pairs), m, 2))
    return AllocationInput(list(range(10, 10 + n)), throughput, scale, rng.choice([1.0, 2.0], n),
                           rng.uniform(1e3, 1e5, n), rng.uniform(0, 1e4, n), np.array([4.0, 6.0, 8.0]),
                           pairs, pair_throughput, np.random.default_rng(1))


@pytest.mark.parametrize("policy", [p for p in GAVEL_POLICIES if not POLICIES.get(p).reads_remaining])
def test_policies_that_say_so_do_not_read_remaining(policy: str) -> None:
    """A policy that declares ``reads_remaining = False`` gets NaN there: its allocations do not depend on it."""
    rng = np.random.default_rng(7)
    for _ in range(3):
        inp = random_input(rng)
        blank = AllocationInput(**{**inp.__dict__, "remaining": np.full(inp.n, np.nan),
                                   "rng": np.random.default_rng(1)})
        cls = POLICIES.get(policy)
        a, b = cls(SimConfig(policy=policy)).allocate(inp), cls(SimConfig(policy=policy)).allocate(blank)
        np.testing.assert_array_equal(a.single, b.single)
        np.testing.assert_array_equal(a.pair, b.pair)


def reference_greedy(inp: AllocationInput, single: np.ndarray, free: np.ndarray, queue: list[int], choose) -> list[int]:
    """FIFO's greedy as it was: one numpy pass over the types per job."""
    for k, i in enumerate(queue):
        fits = np.flatnonzero((free >= inp.scale[i] - 1e-9) & (inp.throughput[i] > 0))
        if len(fits) == 0:
            return queue[k:]
        j = choose(i, fits)
        single[i, j] = 1.0
        free[j] -= inp.scale[i]
    return []


def test_greedy_as_before() -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        inp = random_input(rng, n=30)
        same_greedy(inp, rng.permutation(inp.n).tolist())


def same_greedy(inp: AllocationInput, order: list[int]) -> None:
    new, old = np.zeros((inp.n, inp.m)), np.zeros((inp.n, inp.m))
    free_new, free_old = inp.capacity.copy(), inp.capacity.copy()
    left = _greedy(inp, new, free_new, order, _fastest)
    assert left == reference_greedy(inp, old, free_old, order,
                                    lambda i, fits: int(fits[np.argmax(inp.throughput[i, fits])]))
    np.testing.assert_array_equal(new, old)
    np.testing.assert_array_equal(free_new, free_old)
    draws_new, draws_old = np.random.default_rng(5), np.random.default_rng(5)  # gavel_fifo's random type
    new[:], old[:] = 0.0, 0.0
    _greedy(inp, new, inp.capacity.copy(), order, lambda fits, _: int(draws_new.choice(fits)))
    reference_greedy(inp, old, inp.capacity.copy(), order, lambda i, fits: int(draws_old.choice(fits)))
    np.testing.assert_array_equal(new, old)


def reference_finish_time_fair(inp: AllocationInput, done: np.ndarray) -> tuple[Allocation, float, int]:
    """finish_time_fair as it was: every bisection step stacks its constraints again."""
    iso = isolated_throughput(inp)
    prog = Program(inp, None, extra=0)
    scaled = sp.diags(1.0 / iso) @ prog.theta
    E = (done + inp.remaining / iso) / inp.weight
    best = np.maximum(inp.throughput.max(axis=1), 1e-12)
    lo = float(np.max((inp.age + inp.remaining / best) / E))
    hi = float(np.max((inp.age + inp.remaining / iso) / E))
    cost = -np.asarray(scaled.sum(axis=0)).ravel() / max(inp.n, 1)
    found, solves = None, 0
    for step in range(ftf.BISECTION_STEPS + 1):
        rho = hi if step == 0 else 0.5 * (lo + hi)
        gap = rho * E - inp.age
        if np.any(gap <= 0):
            lo = rho
            continue
        x = prog.solve(cost, [*prog.base(), LinearConstraint(scaled, inp.remaining / gap / iso * (1 - 1e-9), np.inf)])
        solves += 1
        if x is None:
            lo = rho
        else:
            found, hi = x, rho
        if step > 0 and hi - lo < 1e-3 * hi:
            break
    if found is None:
        out = Allocation.empty(inp)
        out.single[:] = isolated_allocation(inp) * (inp.throughput > 0)
        return out, hi, solves
    return prog.allocation(found), hi, solves


def test_finish_time_fairness_bisection_as_before() -> None:
    rng = np.random.default_rng(3)
    for _ in range(5):
        inp = random_input(rng, n=15)
        done = rng.uniform(0, 1e3, inp.n)
        new, rho, solves = ftf.finish_time_fair(inp, None, done_isolated=done)
        old, rho_old, solves_old = reference_finish_time_fair(inp, done)
        assert (rho, solves) == (rho_old, solves_old)
        np.testing.assert_array_equal(new.single, old.single)
