"""Linear-program building blocks shared by the allocation policies (numpy + scipy.sparse + HiGHS).

Variables, in this order: ``x[i, j]`` (job i alone on GPU type j; index ``i*m + j``), then
``y[p, j]`` (candidate pair p sharing GPUs of type j; index ``n*m + p*m + j``), then any scalars
a policy appends (``t``, ``z``).  Every policy shares the *base constraints* (Gavel §4.1):

* time:      Σ_j x[i,j] + Σ_{p ∋ i} Σ_j y[p,j] ≤ 1       (a job is in at most one place at a time)
* capacity:  Σ_i s_i x[i,j] + Σ_p s_p y[p,j] ≤ c_j        (s = scale factor = GPUs per job)
* 0 ≤ x, y, and x[i,j] = 0 where job i cannot run on type j (zero throughput), y = 0 where the pair
  cannot share.

A job's *effective throughput* is θ_i = Σ_j T[i,j] x[i,j] + Σ_{p ∋ i} Σ_j T_p[i,j] y[p,j] (its
paired throughput when sharing).  Solved with HiGHS through its own Python bindings (``highspy``,
:func:`solve_lp`): the same solver as ``scipy.optimize.linprog``'s default, without scipy's
per-call validation, which was half the cost of the ~500 small LPs a 500-job trace needs.
"""

from __future__ import annotations

import os
import sys

import highspy
import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint

from simcluster.policies.gavel.allocation import Allocation, AllocationInput

TIE_BREAK = 1e-3  # weight of the secondary objective (mean effective throughput) next to the main one
DUST = 1e-7  # interior-point solutions hold tiny positive values where a vertex would hold 0


def tie_break(central: bool) -> float:
    """Weight of the tie-break objective: none when the solver is to return a central solution."""
    return 0.0 if central else TIE_BREAK


class LPFailed(RuntimeError):
    pass


def solve_lp(cost: np.ndarray, constraints: list[LinearConstraint], bounds: Bounds,
             central: bool = False) -> np.ndarray | None:
    """Minimise ``cost @ x`` subject to ``constraints`` and ``bounds``; None unless HiGHS finds the optimum.

    ``central``: HiGHS' interior-point method without crossover, which ends inside the set of optimal
    solutions rather than at one of its vertices — what an interior-point solver such as Gavel's ECOS
    returns when several allocations are equally good (with a zero cost: a point inside the feasible set).

    >>> a = LinearConstraint(np.array([[1.0, 1.0]]), -np.inf, 1.0)
    >>> (solve_lp(np.array([-1.0, -2.0]), [a], Bounds(np.zeros(2), np.ones(2))) + 0.0).tolist()
    [0.0, 1.0]
    """
    columns, lower, upper = stacked(constraints)
    return run_highs(cost, columns, lower, upper, bounds.lb, bounds.ub, central)


Columns = tuple[np.ndarray, np.ndarray, np.ndarray]  # a matrix column-wise: (start, row index, value)


def stacked(constraints: list[LinearConstraint]) -> tuple[Columns, np.ndarray, np.ndarray]:
    """``constraints`` as one matrix, column-wise, with its rows' lower and upper bounds — what HiGHS takes.
    A search that solves the same rows under other bounds (a bisection) stacks them once.

    >>> (start, index, value), lower, upper = stacked([LinearConstraint(np.array([[1.0, 2.0]]), 0.0, 1.0)])
    >>> start.tolist(), index.tolist(), value.tolist(), lower.tolist(), upper.tolist()
    ([0, 1, 2], [0, 0], [1.0, 2.0], [0.0], [1.0])
    """
    if len(constraints) == 1 and sp.issparse(constraints[0].A):
        matrix = sp.csc_array(constraints[0].A)
    else:
        matrix = sp.vstack([sp.csr_array(c.A) for c in constraints]).tocsc()
    lower = np.concatenate([np.broadcast_to(c.lb, (c.A.shape[0],)) for c in constraints])
    upper = np.concatenate([np.broadcast_to(c.ub, (c.A.shape[0],)) for c in constraints])
    return (matrix.indptr, matrix.indices, matrix.data), lower, upper


_SOLVER: list[highspy.Highs] = []  # one HiGHS instance per process, reused: building one costs ~0.5 ms
_MODE: list[bool] = []  # the ``central`` its options were last set for


def quiet_highs() -> highspy.Highs:
    """A HiGHS instance that prints nothing.  HiGHS prints its banner on the process's standard output as it is
    built, before any option can switch its output off: that would precede a ``--json`` document.  So it is
    built with file descriptor 1 pointed at /dev/null (C++ writes there, beneath Python's sys.stdout)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            solver = highspy.Highs()
            solver.setOptionValue("output_flag", False)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return solver


def run_highs(cost: np.ndarray, columns: tuple[np.ndarray, np.ndarray, np.ndarray], row_lower: np.ndarray,
              row_upper: np.ndarray, col_lower: np.ndarray, col_upper: np.ndarray,
              central: bool = False) -> np.ndarray | None:
    """:func:`solve_lp` on a matrix given column-wise, as (start, row index, value) arrays; HiGHS'
    infinity is IEEE inf.  Each call passes a new model, so nothing carries over between calls."""
    n = len(cost)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, len(row_lower)
    lp.col_cost_ = np.asarray(cost, float)
    lp.col_lower_ = np.broadcast_to(np.asarray(col_lower, float), n)
    lp.col_upper_ = np.broadcast_to(np.asarray(col_upper, float), n)
    lp.row_lower_, lp.row_upper_ = row_lower, row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = columns
    if not _SOLVER:
        solver = quiet_highs()
        solver.setOptionValue("presolve", "off")
        _SOLVER.append(solver)
        _MODE.clear()
    solver = _SOLVER[0]
    if _MODE != [central]:  # (setting an option HiGHS already holds changes nothing, but costs a call)
        solver.setOptionValue("solver", "ipm" if central else "choose")
        solver.setOptionValue("run_crossover", "off" if central else "on")
        _MODE[:] = [central]
    solver.passModel(lp)
    solver.run()
    if solver.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.asarray(solver.getSolution().col_value)


def proportional_throughput(inp: AllocationInput) -> np.ndarray:
    """Each job's throughput with its time split over the GPU types in proportion to their sizes —
    the normaliser of ``max_min_fairness_perf`` (Gavel's ``ProportionalPolicy``).

    It does not depend on the job's scale factor or on how many jobs there are, so that the LP's
    ``s_i · θ_i / X_i`` terms give every job equal *GPU time* when throughputs are equal, as Gavel
    intends.  (Gavel divides by max(n, C) as well, the same for every job: it does not change the
    max-min allocation.)

    >>> p = AllocationInput([0, 1], np.array([[4.0, 1.0], [2.0, 2.0]]), np.array([1.0, 4.0]), np.ones(2),
    ...                     np.ones(2), np.zeros(2), np.array([1.0, 3.0]))
    >>> proportional_throughput(p).tolist()
    [1.75, 2.0]
    """
    per_type = inp.capacity / inp.capacity.sum()
    return np.maximum(inp.throughput @ per_type, 1e-12)


def isolated_allocation(inp: AllocationInput) -> np.ndarray:
    """Gavel's isolated baseline: each of n jobs gets 1/n of every GPU type, divided by its scale
    factor; a job whose shares add up to more than all of its time is capped at all of it (the
    others keep theirs, as in Gavel's ``IsolatedPolicy``).

    >>> p = AllocationInput([0, 1], np.ones((2, 2)), np.array([1.0, 4.0]), np.ones(2), np.ones(2),
    ...                     np.zeros(2), np.array([4.0, 4.0]))
    >>> isolated_allocation(p).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    """
    x = np.tile(inp.capacity / max(inp.n, 1), (inp.n, 1)) / inp.scale[:, None]
    return x / np.maximum(x.sum(axis=1, keepdims=True), 1.0)


def isolated_throughput(inp: AllocationInput) -> np.ndarray:
    return np.maximum((inp.throughput * isolated_allocation(inp)).sum(axis=1), 1e-12)


PAIR_BUDGET = 600  # candidate pairs (before the per-job cap) the packed LPs keep, about


def top_pairs(inp: AllocationInput, keep: int) -> np.ndarray:
    """Indices of the candidate pairs worth a variable: for each job its best partners by normalised
    combined throughput (Σ over the pair of paired ÷ solo throughput, best GPU type) — ``keep`` of
    them, fewer when many jobs are active (about ``PAIR_BUDGET`` pairs in all, at least 2 per job),
    so that the LP stays small; pairs whose combined throughput is not above 1 never help."""
    keep = max(2, min(keep, PAIR_BUDGET // max(inp.n, 1)))
    p = len(inp.pairs)
    if p == 0:
        return np.zeros(0, dtype=np.int64)
    solo = inp.throughput[inp.pairs]  # (p, 2, m)
    gain = (inp.pair_throughput / np.maximum(solo.transpose(0, 2, 1), 1e-12)).sum(axis=2).max(axis=1)  # (p,)
    useful = gain > 1.0
    chosen = np.zeros(p, bool)
    for side in (0, 1):
        order = np.lexsort((-gain, inp.pairs[:, side]))
        ranked_jobs = inp.pairs[order, side]
        starts = np.searchsorted(ranked_jobs, ranked_jobs, side="left")
        rank = np.arange(p) - starts
        chosen[order[rank < keep]] = True
    return np.flatnonzero(chosen & useful)


class Program:
    """Base constraints plus the effective-throughput rows, for one allocation problem."""

    def __init__(self, inp: AllocationInput, pair_subset: np.ndarray | None = None, extra: int = 1,
                 throughput: np.ndarray | None = None, central: bool = False) -> None:
        self.inp, self.central = inp, central
        n, m = inp.n, inp.m
        self.sel = pair_subset if pair_subset is not None else np.zeros(0, dtype=np.int64)
        pairs = inp.pairs[self.sel]
        p = len(pairs)
        self.n, self.m, self.p, self.extra = n, m, p, extra
        self.nx, self.ny = n * m, p * m
        self.nvar = self.nx + self.ny + extra
        T = inp.throughput if throughput is None else throughput
        rows_x = np.repeat(np.arange(n), m)
        cols_x = np.arange(self.nx)
        # time rows: one per job
        pair_rows = pairs.repeat(m, axis=0)  # (p*m, 2): the jobs of each y column
        cols_y = self.nx + np.arange(self.ny)
        self.time = sp.csr_matrix(
            (np.ones(self.nx + 2 * self.ny), (np.r_[rows_x, pair_rows[:, 0], pair_rows[:, 1]],
                                               np.r_[cols_x, cols_y, cols_y])), shape=(n, self.nvar))
        # capacity rows: one per GPU type
        pair_scale = inp.scale[pairs[:, 0]] if p else np.zeros(0)
        self.capacity = sp.csr_matrix(
            (np.r_[np.repeat(inp.scale, m), np.repeat(pair_scale, m)],
             (np.r_[np.tile(np.arange(m), n), np.tile(np.arange(m), p)], np.r_[cols_x, cols_y])),
            shape=(m, self.nvar))
        # effective throughput θ_i as a matrix (n × nvar), in iterations/s
        pt = inp.pair_throughput[self.sel] if p else np.zeros((0, m, 2))
        self.theta = sp.csr_matrix(
            (np.r_[T.ravel(), pt[:, :, 0].ravel(), pt[:, :, 1].ravel()],
             (np.r_[rows_x, pair_rows[:, 0], pair_rows[:, 1]], np.r_[cols_x, cols_y, cols_y])),
            shape=(n, self.nvar))
        upper = np.r_[np.where(T.ravel() > 0, 1.0, 0.0),
                      np.where(pt.min(axis=2).ravel() > 0, 1.0, 0.0) if p else np.zeros(0),
                      np.full(extra, np.inf)]
        self.bounds = Bounds(np.zeros(self.nvar), upper)

    def base(self) -> list[LinearConstraint]:
        return [LinearConstraint(self.time, -np.inf, np.ones(self.n)),
                LinearConstraint(self.capacity, -np.inf, self.inp.capacity)]

    def solve(self, cost: np.ndarray, constraints: list[LinearConstraint]) -> np.ndarray | None:
        return solve_lp(cost, constraints, self.bounds, self.central)

    def allocation(self, x: np.ndarray) -> Allocation:
        x = np.clip(x, 0.0, 1.0)
        if self.central:
            x[x < DUST] = 0.0
        single = x[: self.nx].reshape(self.n, self.m)
        pair = np.zeros((len(self.inp.pairs), self.m))
        if self.p:
            pair[self.sel] = x[self.nx: self.nx + self.ny].reshape(self.p, self.m)
        return Allocation(single, pair)


def max_min(inp: AllocationInput, coef: np.ndarray, pair_subset: np.ndarray | None = None,
            pair_coef: np.ndarray | None = None, central: bool = False) -> tuple[Allocation, float]:
    """maximise t + ε·mean_i θ̂_i  s.t.  θ̂_i ≥ t for all i, base constraints;
    θ̂_i = Σ_j coef[i,j] x[i,j] + Σ_{p∋i} Σ_j pair_coef[p,j,·] y[p,j]  (normalised throughputs).
    ``central``: ε = 0 and an interior point of the optimal set (see :func:`solve_lp`)."""
    if pair_subset is None or not len(pair_subset):
        return _max_min_classes(inp, coef, central)
    sub = AllocationInput(inp.ids, inp.throughput, inp.scale, inp.weight, inp.remaining, inp.age,
                          inp.capacity, inp.pairs, np.asarray(pair_coef), inp.rng)
    prog = Program(sub, pair_subset, extra=1, throughput=coef, central=central)
    theta = prog.theta
    t_col = sp.csr_matrix((np.ones(prog.n), (np.arange(prog.n), np.full(prog.n, prog.nvar - 1))),
                          shape=(prog.n, prog.nvar))
    rows = LinearConstraint(t_col - theta, -np.inf, np.zeros(prog.n))
    cost = -tie_break(central) * np.asarray(theta.sum(axis=0)).ravel() / max(prog.n, 1)
    cost[-1] = -1.0
    x = prog.solve(cost, [*prog.base(), rows])
    if x is None:
        raise LPFailed("max-min fairness LP found no solution")
    return prog.allocation(x), float(x[-1])


def _max_min_classes(inp: AllocationInput, coef: np.ndarray, central: bool = False) -> tuple[Allocation, float]:
    """The single-job max-min LP over *classes* of interchangeable jobs (same coefficients and scale).

    Exact: the LP is symmetric in jobs of one class, so averaging an optimal solution over their
    permutations is optimal too, and that solution gives them equal allocations.  Class c of n_c jobs
    has variables x[c, j] (each of its jobs' share), rows Σ_j x[c,j] ≤ 1, Σ_j coef[c,j] x[c,j] ≥ t and
    joins the capacity rows with weight n_c · s_c.  Gavel's later versions aggregate by job type the same way.
    """
    m = inp.m
    rows = np.ascontiguousarray(np.column_stack((coef, inp.scale)))
    packed = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse, counts = np.unique(packed, return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    k = len(first)
    kc, scale = rows[first, :m], rows[first, m]
    # Shortcut, exact: if every job can have its best type all the time, that is optimal for both the
    # least and the sum of the normalised throughputs (each job's own maximum), so no LP is needed.
    # (Not for a central solution: the jobs above the least then get less than all of their time.)
    best = kc.argmax(axis=1)
    demand = np.bincount(best, weights=counts * scale, minlength=m)
    if not central and (demand <= inp.capacity + 1e-9).all():
        one_hot = np.zeros((k, m))
        one_hot[np.arange(k), best] = 1.0
        return Allocation(one_hot[inverse], np.zeros((len(inp.pairs), m))), float(kc.max(axis=1).min())
    # Column-wise: x[c, j] has 1 in its class row c, n_c·s_c in capacity row k + j and −coef in its
    # fairness row k + m + c (rows in increasing order); t has 1 in every fairness row.
    N = k * m
    cls = np.repeat(np.arange(k), m)
    typ = np.tile(np.arange(m), k)
    cat = np.concatenate
    index = cat((np.column_stack((cls, k + typ, k + m + cls)).ravel(), k + m + np.arange(k)))
    value = cat((np.column_stack((np.ones(N), np.repeat(counts * scale, m), -kc.ravel())).ravel(), np.ones(k)))
    start = cat((np.arange(0, 3 * N + 1, 3), [3 * N + k]))
    upper = cat((np.ones(k), inp.capacity, np.zeros(k)))
    cost = cat((-tie_break(central) * (kc * counts[:, None]).ravel() / max(inp.n, 1), [-1.0]))
    solution = run_highs(cost, (start, index, value), np.full(2 * k + m, -np.inf), upper, np.zeros(N + 1),
                         cat(((kc.ravel() > 0).astype(float), [np.inf])), central)
    if solution is None:
        raise LPFailed("max-min fairness LP found no solution")
    x = np.clip(solution, 0.0, 1.0)
    if central:
        x[x < DUST] = 0.0
    single = x[:N].reshape(k, m)[inverse]
    return Allocation(single, np.zeros((len(inp.pairs), m))), float(solution[-1])
