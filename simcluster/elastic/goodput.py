"""Pollux's goodput model of a job (OSDI'21 §3): what a policy *believes* about a job's speed and
statistical efficiency, fitted from what it has seen, and the batch size that model says is best.

*Throughput* (:class:`PerfParams`): a step's compute time is linear in the per-GPU batch,
``alpha_c + beta_c·b``; its network time ``alpha + beta·max(r − 2, 0)`` with one (alpha, beta) pair
for jobs spread over nodes and another for jobs on one node; the two overlap as a ``gamma``-norm,
``(compute^gamma + network^gamma)^(1/gamma)``.  An optimiser step of ``s`` accumulation steps costs
``s`` compute times plus one such step.  *Efficiency* (:class:`GradParams`): with gradient noise
``var`` and signal ``sqr`` measured at the starting batch ``B0``, a batch ``B`` does
``(var + sqr) / (var·B0/B + sqr)`` steps' worth of progress at ``B0``, i.e. an efficiency of that over
``B/B0``.  ``goodput = throughput × efficiency``, in samples per second counted at ``B0``'s worth.

:func:`fit_perf_params` fits the seven throughput parameters to observed (nodes, GPUs, per-GPU batch)
→ (compute time, step time) by the same loss as Pollux (RMS log error of both, a pull of ``gamma``
towards 1 and a penalty on the retrogression terms), with the same parameters pinned when the
observations cannot tell them apart, by L-BFGS-B with its exact gradient (Pollux differentiates the
same loss with autograd).  :meth:`GoodputFunction.optimize` picks, for given (nodes, GPUs), the total
batch among 50 geometrically spaced sizes and its split into per-GPU batch and accumulation steps that
maximise goodput, as Pollux's agent does.

>>> goodput = GoodputFunction(PerfParams(0.01, 0.001, 0.1, 0.01, 0.05, 0.005, 1.5), GradParams(1.0, 4.0), 128)
>>> float(goodput.efficiency(128)), float(goodput.efficiency(512))
(1.0, 0.625)
>>> noisy = GoodputFunction(goodput.perf_params, GradParams(1.0, 100.0), 128)  # large batches pay off
>>> [noisy.optimize(1, r, max_batch_size=1024, atomic_bsz_range=(32, 256), accumulation=True)[1:] for r in (1, 4)]
[(249, 1), (256, 0)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import scipy.optimize
from numpy.typing import ArrayLike

from simcluster.elastic.threads import one_blas_thread

EPS = 1e-8  # tolerance of floor/ceil, and the lower bound of every fitted parameter (as upstream)


class PerfParams(NamedTuple):
    alpha_c: float  # constant term of compute time
    beta_c: float  # compute time per sample of the per-GPU batch
    alpha_n: float  # constant term of network time, job across nodes
    beta_n: float  # retrogression per GPU beyond two, across nodes
    alpha_r: float  # constant term of network time, job within one node
    beta_r: float  # retrogression per GPU beyond two, within one node
    gamma: float  # overlap of compute and network: 1 none, 10 about perfect


class GradParams(NamedTuple):
    sqr: float
    var: float


def accum_time(params: Sequence[float], atomic_bsz: np.ndarray | float) -> np.ndarray:
    return params[0] + params[1] * np.asarray(atomic_bsz, dtype=float)


def network_time(params: Sequence[float], num_nodes: np.ndarray | float, num_replicas: np.ndarray | float) -> np.ndarray:
    nodes, replicas = np.asarray(num_nodes), np.asarray(num_replicas)
    conditions = [nodes > 1, replicas > 1]
    bottleneck = np.select(conditions, [params[2], params[4]], EPS)
    retrogress = np.select(conditions, [params[3], params[5]], EPS)
    return bottleneck + retrogress * np.maximum(replicas - 2, EPS)


def log_optim_time(params: Sequence[float], accum: np.ndarray, network: np.ndarray) -> np.ndarray:
    gamma = params[6]
    return np.log(accum ** gamma + network ** gamma) / gamma


class GoodputFunction:
    """A job's modelled goodput (see the module's docstring); arrays broadcast."""

    def __init__(self, perf_params: Sequence[float], grad_params: Sequence[float], init_batch_size: int) -> None:
        self.perf_params = PerfParams(*perf_params)
        self.grad_params = GradParams(*grad_params)
        self.init_batch_size = init_batch_size

    def __call__(self, num_nodes, num_replicas, atomic_bsz, accum_steps):  # type: ignore[no-untyped-def]
        return self.evaluate(num_nodes, num_replicas, atomic_bsz, accum_steps)

    def evaluate(self, num_nodes, num_replicas, atomic_bsz, accum_steps):  # type: ignore[no-untyped-def]
        batch_size = num_replicas * atomic_bsz * (accum_steps + 1)
        return self.throughput(num_nodes, num_replicas, atomic_bsz, accum_steps) * self.efficiency(batch_size)

    def throughput(self, num_nodes, num_replicas, atomic_bsz, accum_steps):  # type: ignore[no-untyped-def]
        """Samples per second."""
        accum = accum_time(self.perf_params, atomic_bsz)
        optim = np.exp(log_optim_time(self.perf_params, accum, network_time(self.perf_params, num_nodes, num_replicas)))
        return num_replicas * atomic_bsz * (accum_steps + 1) / (accum_steps * accum + optim)

    def efficiency(self, batch_size):  # type: ignore[no-untyped-def]
        sqr, var = self.grad_params
        scale = np.asarray(batch_size, dtype=float) / self.init_batch_size
        denominator = var / scale + sqr
        gain = np.where(denominator > 0, (var + sqr) / np.where(denominator > 0, denominator, 1.0), 1.0)
        return gain / scale

    def optimize(self, num_nodes, num_replicas, max_batch_size: float | None = None,  # type: ignore[no-untyped-def]
                 atomic_bsz_range: tuple[float | None, float | None] | None = None, accumulation: bool = False):
        """(goodput, atomic_bsz, accum_steps) of the best configuration on (nodes, GPUs), each broadcast;
        scalars in, scalars out.  A single GPU above the starting batch accumulates at least once (its
        gradient statistics need two micro-batches)."""
        if max_batch_size is None:
            max_batch_size = self.init_batch_size
        low, high = atomic_bsz_range or (None, None)
        min_atomic = low or 1
        max_atomic = high or max_batch_size
        shape = np.broadcast(num_nodes, num_replicas).shape
        scalar = np.isscalar(num_nodes) or np.isscalar(num_replicas)
        nodes = np.broadcast_to(num_nodes, shape).flatten()
        replicas = np.broadcast_to(num_replicas, shape).flatten()
        min_batch = np.maximum(self.init_batch_size, min_atomic * replicas)
        batch_size = np.geomspace(min_batch, max_batch_size)  # 50 sizes per (nodes, replicas) column
        local_bsz = batch_size / replicas
        if accumulation:
            accum = np.ceil(local_bsz / max_atomic - EPS) - 1
            accum = np.where((replicas == 1) & (local_bsz > self.init_batch_size + EPS), np.maximum(accum, 1), accum)
            accum = accum.astype(int)
        else:
            accum = np.zeros_like(local_bsz, dtype=int)
        atomic = np.ceil(local_bsz / (accum + 1) - EPS).astype(int)
        goodput = self.evaluate(nodes, replicas, atomic, accum)
        goodput = np.where((min_atomic <= atomic) & (atomic <= max_atomic), goodput, 0.0)
        best = np.argmax(goodput, axis=0), np.arange(goodput.shape[1])
        out_goodput = goodput[best].reshape(shape)
        out_atomic = atomic[best].reshape(shape)
        out_accum = accum[best].reshape(shape)
        if scalar:
            return out_goodput.item(), out_atomic.item(), out_accum.item()
        return out_goodput, out_atomic, out_accum


# ----------------------------------------------------------------------------- fitting
class _Loss:
    """Pollux's fitting loss and its exact gradient for one set of observations (the parts that do not depend
    on the parameters computed once: a fit evaluates it a hundred times or so)."""

    def __init__(self, nodes: np.ndarray, replicas: np.ndarray, atomic: np.ndarray, accum_observed: np.ndarray,
                 optim_observed: np.ndarray) -> None:
        across = nodes > 1
        within = (nodes <= 1) & (replicas > 1)
        self.atomic = atomic
        self.extra = np.maximum(replicas - 2, EPS)
        self.across, self.within = across.astype(float), within.astype(float)
        self.across_extra, self.within_extra = self.across * self.extra, self.within * self.extra
        self.alone = np.where(across | within, 0.0, EPS + EPS * self.extra)  # one GPU: no network to speak of
        self.log_accum_observed = np.log(accum_observed)
        self.log_optim_observed = np.log(optim_observed)
        self.n = len(atomic)

    def __call__(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        ac, bc, an, bn, ar, br, gamma = params.tolist()
        atomic, extra, n = self.atomic, self.extra, self.n
        accum = ac + bc * atomic
        network = self.across * (an + bn * extra) + self.within * (ar + br * extra) + self.alone
        accum_g, network_g = accum ** gamma, network ** gamma
        powered = accum_g + network_g
        log_powered, log_accum = np.log(powered), np.log(accum)
        grad = np.zeros(7)
        e1 = log_accum - self.log_accum_observed
        err1 = math.sqrt(float(e1 @ e1) / n)
        if err1 > 0:
            d_accum = e1 / accum / (n * err1)  # d err1 / d accum_i
            grad[0] += d_accum.sum()
            grad[1] += d_accum @ atomic
        e2 = log_powered / gamma - self.log_optim_observed
        err2 = math.sqrt(float(e2 @ e2) / n)
        if err2 > 0:
            d_log = e2 / (n * err2)  # d err2 / d log_optim_i
            d_accum2 = d_log * accum_g / accum / powered
            d_network = d_log * network_g / network / powered
            grad[0] += d_accum2.sum()
            grad[1] += d_accum2 @ atomic
            grad[2] += d_network @ self.across
            grad[3] += d_network @ self.across_extra
            grad[4] += d_network @ self.within
            grad[5] += d_network @ self.within_extra
            d_gamma = -log_powered / gamma ** 2 + (accum_g * log_accum + network_g * np.log(network)) / (gamma * powered)
            grad[6] += d_log @ d_gamma
        reg1 = 1e-3 * (gamma - 1) ** 2
        grad[6] += 2e-3 * (gamma - 1)
        reg2 = 1e-2 * ((bn / an) ** 2 + (br / ar) ** 2)
        grad[2] += -2e-2 * bn ** 2 / an ** 3
        grad[3] += 2e-2 * bn / an ** 2
        grad[4] += -2e-2 * br ** 2 / ar ** 3
        grad[5] += 2e-2 * br / ar ** 2
        return err1 + err2 + reg1 + reg2, grad


def fit_perf_params(num_nodes: ArrayLike, num_replicas: ArrayLike, atomic_bsz: ArrayLike,
                    accum_step_time: ArrayLike, optim_step_time: ArrayLike) -> PerfParams:
    """Fit :class:`PerfParams` to observations (one entry per configuration seen): ``accum_step_time`` is
    the time of a step that only accumulates (compute), ``optim_step_time`` of one that synchronises.

    Parameters the observations cannot identify are pinned as Pollux pins them: ``alpha_c`` at half the
    mean compute time when one per-GPU batch was seen; the across-node pair at its lower bound without an
    across-node observation, the within-node pair without a one-node multi-GPU one, both retrogression
    terms without more than two GPUs; and with no across-node observation the across-node terms are
    raised to at least 1.1 × the within-node ones (a prior: the network across nodes is the slower).
    """
    nodes = np.asarray(num_nodes, dtype=float)
    replicas = np.asarray(num_replicas, dtype=float)
    atomic = np.asarray(atomic_bsz, dtype=float)
    accum = np.asarray(accum_step_time, dtype=float)
    optim = np.asarray(optim_step_time, dtype=float)
    params = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3])
    lower = np.array([EPS, EPS] * 3 + [1.0])
    upper = np.array([np.inf, np.inf] * 3 + [10.0])
    if len(np.unique(atomic)) == 1:
        params[0] = upper[0] = lower[0] = np.mean(accum) / 2
    if not np.any(nodes > 1):
        params[2:4] = upper[2:4] = lower[2:4]
    if not np.any((nodes == 1) & (replicas > 1)):
        params[4:6] = upper[4:6] = lower[4:6]
    if not np.any(replicas > 2):
        params[[3, 5]] = upper[[3, 5]] = lower[[3, 5]]
    with one_blas_thread():
        result = scipy.optimize.minimize(_Loss(nodes, replicas, atomic, accum, optim), params, jac=True,
                                         method="L-BFGS-B", bounds=list(zip(lower, upper, strict=True)))
    fitted = np.clip(result.x, lower, upper)
    if not np.any(nodes > 1):
        fitted[2] = max(fitted[2], fitted[4] * 1.1)
        fitted[3] = max(fitted[3], fitted[5] * 1.1)
    return PerfParams(*(float(v) for v in fitted))


class SpeedupFunction:
    """A job's speedup on (nodes, GPUs): its best modelled goodput there over its best on ``base``
    (nodes, GPUs) — one GPU unless a policy sets a fair share (Pollux's cluster policy does) — memoised.

    >>> fn = SpeedupFunction(GoodputFunction(PerfParams(0.01, 0.001, 0.1, 0.01, 0.05, 0.005, 1.5),
    ...                                      GradParams(1.0, 4.0), 128), 1024, (32, 256), accumulation=True)
    >>> fn(1, 1), fn(0, 0), round(fn(1, 4), 3)
    (1.0, 0.0, 2.21)
    """

    def __init__(self, goodput_fn: GoodputFunction, max_batch_size: int, atomic_bsz_range: tuple[int, int],
                 accumulation: bool = True, base: tuple[int, int] = (1, 1)) -> None:
        self.goodput_fn = goodput_fn
        self.max_batch_size = max_batch_size
        self.atomic_bsz_range = atomic_bsz_range
        self.accumulation = accumulation
        self._memo: dict[tuple[int, int], float] = {(0, 0): 0.0}
        self.base_goodput = self._goodput(*base)

    def _goodput(self, num_nodes: int, num_replicas: int) -> float:
        return float(self.goodput_fn.optimize(num_nodes, num_replicas, self.max_batch_size, self.atomic_bsz_range,
                                              self.accumulation)[0])

    def __call__(self, num_nodes: int, num_replicas: int) -> float:
        key = (int(num_nodes), int(num_replicas))
        value = self._memo.get(key)
        if value is None:
            value = self._memo[key] = self._goodput(*key) / self.base_goodput
        return value
