"""Gavel's LP policies solve fewer LPs and decide as before (issue 55, item 2, session 7).

Finish-time fairness on one GPU type settles the bisection's steps whose feasibility is certain by a sum and
solves only the last feasible level; its matrix is laid out from arrays.  These tests hold each shortcut to the
code it replaced (copied here): the same matrix entry for entry, HiGHS' own verdict wherever the sum gives one,
the same allocations bit for bit, the same jobs table on a whole run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.optimize import LinearConstraint

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.policies.gavel import finish_time_fairness as ftf
from simcluster.policies.gavel import rounds as rounds_module
from simcluster.policies.gavel.allocation import Allocation, AllocationInput
from simcluster.policies.gavel.fifo import _fastest, _greedy
from simcluster.policies.gavel.lp import Program, isolated_allocation, isolated_throughput, run_highs, stacked
from simcluster.traces.synth import spec_from_text, synthesize


def random_input(rng: np.random.Generator, n: int = 12, m: int = 1, zeros: bool = False) -> AllocationInput:
    """Active jobs on ``m`` GPU types; ``zeros``: some jobs cannot run on some types (never on type 0)."""
    throughput = rng.uniform(0.5, 4.0, (n, m))
    if zeros:
        throughput[:, 1:] *= rng.random((n, m - 1)) > 0.3
    scale = rng.choice([1.0, 2.0, 4.0, 8.0], n)
    capacity = rng.choice([8.0, 16.0, 32.0], m)
    return AllocationInput(list(range(n)), throughput, scale, rng.choice([1.0, 2.0], n), rng.uniform(1e3, 1e5, n),
                           rng.uniform(0, 1e4, n), capacity, rng=np.random.default_rng(1))


def stacked_problem(inp: AllocationInput, iso: np.ndarray) -> tuple:
    """The feasibility LP as finish_time_fair built it before: sparse rows stacked column-wise."""
    prog = Program(inp, None, extra=0)
    scaled = sp.diags(1.0 / iso) @ prog.theta
    cost = -np.asarray(scaled.sum(axis=0)).ravel() / max(inp.n, 1)
    columns, lower, upper = stacked([*prog.base(), LinearConstraint(scaled, np.zeros(inp.n), np.inf)])
    return cost, columns, lower, upper, prog.bounds.lb, prog.bounds.ub


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a.astype(np.float64).view(np.int64), b.astype(np.float64).view(np.int64))


@pytest.mark.parametrize("m", [1, 2, 3])
def test_columns_entry_for_entry_as_stacked(m: int) -> None:
    """The column-wise matrix straight from the arrays is the stacked one, to the bit (signed zeros included),
    with the zero-throughput entries left out where the sparse product left them out."""
    rng = np.random.default_rng(m)
    for _ in range(10):
        inp = random_input(rng, n=int(rng.integers(1, 30)), m=m, zeros=True)
        iso = isolated_throughput(inp)
        new = ftf.single_columns(inp, iso, central=False)
        old = stacked_problem(inp, iso)
        for a, b in zip((new[0], *new[1], *new[2:]), (old[0], *old[1], *old[2:])):
            assert same_bits(a, b)


def test_single_type_verdict_is_highs_verdict() -> None:
    """Wherever the sum gives a verdict, HiGHS gives the same one; near the edge it gives none."""
    rng = np.random.default_rng(5)
    said = {True: 0, False: 0, None: 0}
    for _ in range(40):
        inp = random_input(rng, n=int(rng.integers(2, 40)))
        iso = isolated_throughput(inp)
        verdict = ftf.single_type_verdict(inp, iso)
        cost, columns, lower, upper, col_lower, col_upper = ftf.single_columns(inp, iso, central=False)
        scaled = inp.throughput[:, 0] / iso
        shares = rng.dirichlet(np.ones(inp.n)) * inp.capacity[0] / inp.scale  # shares that fill the GPUs
        for level in (0.5, 0.99, 1 - 1e-7, 1.0, 1 + 1e-7, 1.01, 2.0):
            need = np.minimum(shares * level, 1.0 + (level - 1.0)) * scaled
            sure = verdict(need)
            said[sure] += 1
            lower[inp.n + 1:] = need
            solved = run_highs(cost, columns, lower, upper, col_lower, col_upper) is not None
            if sure is not None:
                assert sure == solved
    assert said[True] and said[False] and said[None]


def reference_finish_time_fair(inp: AllocationInput, pairs: np.ndarray | None, central: bool = False,
                               done_isolated: np.ndarray | None = None) -> tuple[Allocation, float, int]:
    """finish_time_fair as it was: every bisection step solved."""
    iso = isolated_throughput(inp)
    done = np.zeros(inp.n) if done_isolated is None else done_isolated
    prog = Program(inp, pairs, extra=0, central=central)
    scaled = sp.diags(1.0 / iso) @ prog.theta
    E = (done + inp.remaining / iso) / inp.weight
    best = np.maximum(inp.throughput.max(axis=1), 1e-12)
    lo = float(np.max((inp.age + inp.remaining / best) / E))
    hi = isolated_level = float(np.max((inp.age + inp.remaining / iso) / E))
    cost = np.zeros(prog.nvar) if central else -np.asarray(scaled.sum(axis=0)).ravel() / max(inp.n, 1)
    columns, lower, upper = stacked([*prog.base(), LinearConstraint(scaled, np.zeros(inp.n), np.inf)])
    found, solves = None, 0
    for step in range(ftf.BISECTION_STEPS + 1):
        rho = hi if step == 0 else 0.5 * (lo + hi)
        gap = rho * E - inp.age
        if np.any(gap <= 0):
            lo = rho
            continue
        need = inp.remaining / gap / iso
        lower = np.concatenate([lower[: len(lower) - inp.n], need * (1 - 1e-9)])
        x = run_highs(cost, columns, lower, upper, prog.bounds.lb, prog.bounds.ub, central)
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
        return out, isolated_level, solves
    return prog.allocation(found), hi, solves


@pytest.mark.parametrize("m", [1, 2])
def test_bisection_as_before(m: int) -> None:
    """The same allocation, bit for bit, and the same level; on one type with fewer LPs."""
    rng = np.random.default_rng(17 + m)
    fewer = 0
    for _ in range(30):
        inp = random_input(rng, n=int(rng.integers(1, 40)), m=m, zeros=True)
        done = rng.uniform(0, 1e3, inp.n)
        new, rho, solves = ftf.finish_time_fair(inp, None, done_isolated=done)
        old, rho_old, solves_old = reference_finish_time_fair(inp, None, done_isolated=done)
        assert rho == rho_old
        assert same_bits(new.single, old.single) and new.pair.shape == old.pair.shape
        assert solves <= solves_old
        fewer += solves < solves_old
    assert (fewer > 20) == (m == 1)


def test_central_solves_every_step() -> None:
    """An interior point is left to HiGHS at every step (its verdicts are its own near the edge)."""
    rng = np.random.default_rng(2)
    inp = random_input(rng, n=10)
    new, rho, solves = ftf.finish_time_fair(inp, None, central=True)
    old, rho_old, solves_old = reference_finish_time_fair(inp, None, central=True)
    assert (rho, solves) == (rho_old, solves_old)
    assert same_bits(new.single, old.single)


CONGESTED = ("jobs=400,nodes=8,sizes=1:0.4,2:0.1,4:0.15,8:0.2,16:0.1,32:0.05,durations=lognormal:mu=8,sigma=1.5,"
             "max=86400,arrivals=poisson,load=1.0,vcs=1,seed=4")


@pytest.mark.parametrize("policy", ["finish_time_fairness_perf", "finish_time_fairness", "finish_time_fairness_packed"])
def test_same_jobs_table_on_a_congested_trace(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole run, one GPU type, multi-GPU jobs at full load: the jobs table as with every step solved."""
    trace = synthesize(spec_from_text(CONGESTED))
    now = simulate(trace, SimConfig(policy=policy))
    with monkeypatch.context() as patch:
        patch.setattr(ftf, "finish_time_fair", reference_finish_time_fair)
        before = simulate(trace, SimConfig(policy=policy))
    pd.testing.assert_frame_equal(now.jobs, before.jobs)
    if policy != "finish_time_fairness_packed":  # (no pairs on a synthetic trace: the same path)
        assert now.summary["lp_solves"] < before.summary["lp_solves"]


class ReferenceClock:
    """IsolatedClock as it was: dictionaries by job."""

    def __init__(self) -> None:
        self.seconds: dict[int, float] = {}
        self.last: dict[int, tuple[float, float]] = {}

    def update(self, inp: AllocationInput, iso: np.ndarray) -> np.ndarray:
        done = np.array([self.seconds.get(job, 0.0) for job in inp.ids])
        for i, job in enumerate(inp.ids):
            last = self.last.get(job)
            if last is not None:
                done[i] += max(last[0] - float(inp.remaining[i]), 0.0) / last[1]
        self.seconds = dict(zip(inp.ids, done.tolist()))
        self.last = {job: (float(r), float(x)) for job, r, x in zip(inp.ids, inp.remaining, iso)}
        return done


def test_isolated_clock_as_before() -> None:
    """Jobs come and go (slots ascending, as the rounds give them), their work shrinks; the same seconds."""
    rng = np.random.default_rng(9)
    new, old = ftf.IsolatedClock(), ReferenceClock()
    remaining: dict[int, float] = {}
    next_slot = 0
    for _ in range(60):
        for _ in range(int(rng.integers(0, 6))):
            remaining[next_slot] = float(rng.uniform(1e3, 1e5))
            next_slot += 1
        for job in [j for j in remaining if rng.random() < 0.15]:
            del remaining[job]
        for job, left in remaining.items():
            remaining[job] = max(left - float(rng.uniform(0, 2e3)), 1e-9)
        ids = sorted(remaining)
        inp = AllocationInput(ids, np.ones((len(ids), 1)), np.ones(len(ids)), np.ones(len(ids)),
                              np.array([remaining[j] for j in ids]), np.zeros(len(ids)), np.ones(1))
        iso = rng.uniform(0.1, 2.0, len(ids))
        assert same_bits(new.update(inp, iso), old.update(inp, iso))


class PlainFill(rounds_module.Rounds):
    """The mid-round fill as it was: every waiting job ranked or filtered at once."""

    def _backfill(self, now: float, ctx) -> None:
        idle = [self.vc.pools[t].free_gpus for t in self.types]
        if not self.fractional and max(idle) == 0:
            return
        slots = self.active_rows()
        waiting = slots[~self.held[slots]]
        if self.mechanism.new_jobs_wait:
            waiting = waiting[self.in_alloc[waiting]]
        fifo = self.policy.fifo
        if not self.fractional:
            fits = ((self.T[waiting] > 0) & (np.asarray(idle)[None, :] >= self.gpu_num[waiting][:, None])).any(axis=1)
            if not fifo:
                waiting = waiting[fits]
            elif not fits.all():
                waiting = waiting[: int(np.argmin(fits)) + 1]
        if not len(waiting):
            return
        if not fifo:
            waiting = waiting[np.lexsort((waiting, -(self.X[waiting] / self.G[waiting]).max(axis=1)))]
        for s in waiting.tolist():
            job = self.jobs[s]
            options = [j for j in self.type_order
                       if self.T[s, j] > 0 and (self.fractional or self.vc.pools[self.types[j]].free_gpus >= job.gpu_num)]
            if not options and not fifo:
                continue
            if self.in_alloc[s]:
                options.sort(key=lambda j: -self._priority((s,), j)[0])
            placed = any(self._start((s,), j, now, ctx) for j in options)
            if not placed and fifo:
                break

    def _plan(self, order: list[int]) -> list:
        idxs = self.active_rows()
        if self.mechanism.new_jobs_wait:
            idxs = idxs[self.in_alloc[idxs]]
        if self.policy.fifo:
            idxs = idxs[(self.X[idxs] > 0).any(axis=1)]
        A, got, D = self.X[idxs], self.G[idxs], self.Dm[idxs]
        runnable, need = self.T[idxs] > 0, self.share[idxs]
        pair_keys = list(self.alloc)
        if pair_keys:
            half, zero = np.full(self.m, self.R / 2), np.zeros(self.m)
            A = np.vstack([A, [self.alloc[k] for k in pair_keys]])
            got = np.vstack([got, [self.received.get(k, half) for k in pair_keys]])
            D = np.vstack([D, [self.deficit.get(k, zero) for k in pair_keys]])
            runnable = np.vstack([runnable, [self._pair(self.jobs[k[0]], self.jobs[k[1]]).min(axis=1) > 0
                                             for k in pair_keys]])
            need = np.concatenate([need, [self.share[k[0]] for k in pair_keys]])
        P = np.where((A > 0) & runnable, A / got, 0.0)
        pair_rows = len(idxs)
        smallest = float(need.min()) if len(need) else 0.0
        taken: set[int] = set()
        plan = []
        for j in order:
            left = self.cap[j]
            valid = runnable[:, j].copy()
            valid[pair_rows:] &= A[pair_rows:, j] > 0
            rows = np.flatnonzero(valid)
            if self.policy.fifo:
                rows = rows[P[rows, j] > 0]
            ranked = rows[np.lexsort((-A[rows, j], -D[rows, j], -P[rows, j]))]
            for r in ranked.tolist():
                if left < 1e-9 or left + 1e-9 < smallest:
                    break
                key = (int(idxs[r]),) if r < pair_rows else pair_keys[r - pair_rows]
                if need[r] > left + 1e-9 or any(i in taken for i in key):
                    continue
                left -= need[r]
                taken.update(key)
                plan.append((key, j))
        return plan


# mostly single-GPU jobs, so that more than one block of the active rows holds GPUs ahead of the waiting head
LONG_QUEUE = ("jobs=900,nodes=16,sizes=1:0.85,2:0.05,8:0.03,64:0.07,durations=lognormal:mu=8,sigma=1.5,"
              "max=86400,arrivals=poisson,load=1.6,vcs=1,seed=4")


@pytest.mark.parametrize("policy", ["fifo_perf", "gavel_fifo", "fifo_packed", "max_min_fairness", "gandiva",
                                    "max_min_fairness_packed"])
def test_same_jobs_table_with_the_plain_mechanism(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The FIFO fill reading the active rows a block at a time and the round's plan in Python floats decide as
    the plain code: a long queue (hundreds waiting behind multi-GPU heads), mixed GPU types, failing nodes."""
    trace = synthesize(spec_from_text(LONG_QUEUE))
    settings = {"policy": policy, "cluster": "v100:64,k80:64", "node_mtbf": 200_000.0, "on_no_progress": "abandon"}
    now = simulate(trace, SimConfig.from_settings(settings)).jobs
    with monkeypatch.context() as patch:
        patch.setattr(rounds_module, "Rounds", PlainFill)
        before = simulate(trace, SimConfig.from_settings(settings)).jobs
    pd.testing.assert_frame_equal(now, before)
    assert now["start_time"].notna().sum() > 300


def reference_greedy(inp: AllocationInput, single: np.ndarray, free: np.ndarray, queue: list[int]) -> list[int]:
    """FIFO's greedy on the fastest type, one job at a time (the loop fifo_perf ran on one type too)."""
    room = free.tolist()
    for k, i in enumerate(queue):
        need = float(inp.scale[i])
        fits = [j for j in range(len(room)) if room[j] >= need - 1e-9 and inp.throughput[i, j] > 0]
        if not fits:
            free[:] = room
            return queue[k:]
        j = max(fits, key=inp.throughput[i].tolist().__getitem__)
        single[i, j] = 1.0
        room[j] -= need
    free[:] = room
    return []


def test_greedy_on_one_type_as_the_loop() -> None:
    """The running difference places the same jobs and leaves the same room, to the bit, fractional shares and
    jobs that cannot run included."""
    rng = np.random.default_rng(23)
    for trial in range(200):
        n = int(rng.integers(0, 300))  # (past one block of the queue, 64 jobs)
        inp = random_input(rng, n=n) if n else random_input(rng, n=1)
        inp.scale = rng.choice([0.1, 0.3, 0.7, 1.0, 2.0, 4.0], inp.n) if trial % 2 else inp.scale
        inp.throughput[rng.random(inp.n) < 0.05, 0] = 0.0
        inp.capacity = np.array([float(rng.choice([3.3, 8.0, 40.0, 150.0, 400.0]))])
        queue = rng.permutation(inp.n).tolist()[: int(rng.integers(0, inp.n + 1))]
        new, old = np.zeros((inp.n, 1)), np.zeros((inp.n, 1))
        free_new, free_old = inp.capacity.copy(), inp.capacity.copy()
        assert _greedy(inp, new, free_new, queue, _fastest) == reference_greedy(inp, old, free_old, queue)
        assert same_bits(new, old) and same_bits(free_new, free_old)
