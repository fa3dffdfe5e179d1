"""The effective training time ratio (ETTR) of one job under exponential faults, in closed form.

A job needs ``work`` seconds of failure-free progress.  It checkpoints after every ``interval`` (τ) seconds of
progress, each checkpoint taking ``checkpoint_cost`` (δ) seconds of no progress.  Faults strike the job as a
Poisson process of rate Λ (``rate``: λ per node × its nodes) while it runs or checkpoints; each one loses the
progress since the last *completed* checkpoint (a checkpoint cut short is lost too), then the job waits
``downtime`` D = repair or swap time + restart cost R (no faults during D) and resumes from that checkpoint.

One segment needs T = τ + δ seconds without a fault.  Its expected time X satisfies the renewal equation
(condition on the first fault, at t < T with density Λe^{-Λt}):

    X = e^{-ΛT}·T + ∫₀ᵀ (t + D + X) Λe^{-Λt} dt   ⇒   X = (1/Λ + D)(e^{ΛT} − 1).

A job of n = ⌈W/τ⌉ − 1 checkpointed segments and a last stretch r = W − nτ ∈ (0, τ] (no checkpoint
after it) takes in expectation
E[wall] = (1/Λ + D)(n(e^{Λ(τ+δ)} − 1) + e^{Λr} − 1), and its ETTR = W / E[wall]; for a long job
ETTR → τΛ / ((1 + ΛD)(e^{Λ(τ+δ)} − 1)).  Daly (2006) derives the same expectation with the restart
itself exposed to faults, M·e^{R/M}(e^{(τ+δ)/M} − 1) per segment (M = 1/Λ): where D is not exposed, M·e^{R/M}
becomes M + D.  Young (1974) is the first order of both.  D does not move the optimum: maximising
τ / (e^{Λ(τ+δ)} − 1) gives x = Λ(τ+δ) with (1 + Λδ − x)·e^x = 1, solved here by bisection
(:func:`optimal_interval`; x = 1 + Λδ + W₀(−e^{−(1+Λδ)}) with Lambert's W); Young's τ* = √(2δ/Λ) is its
first order and Daly's √(2δM)·[1 + ⅓√(δ/2M) + ⅑(δ/2M)] − δ (M = 1/Λ) its higher-order form.
"""

from __future__ import annotations

import math
import sys

from simcluster.limits import number

_EXP_LIMIT = math.log(sys.float_info.max)  # e^x overflows a float beyond this x


def _grows(x: float) -> float:
    """e^x − 1, or infinity where it overflows a float: a stretch so long against the rate of faults that
    it is never expected to finish (an ETTR of 0), never an OverflowError."""
    return math.expm1(x) if x < _EXP_LIMIT else math.inf


def _per_fault(rate: float, downtime: float, exposed: bool) -> float:
    """What each fault costs beyond the work it loses, per unit of e^{ΛT} − 1: 1/Λ + D, or with the downtime
    itself exposed to faults (a restart that a fault starts over: simcluster's engine, Daly's model) e^{ΛD}/Λ."""
    return (_grows(rate * downtime) + 1.0) / rate if exposed else 1.0 / rate + downtime


def _check(rate: float, interval: float | None = None, checkpoint_cost: float = 0.0, downtime: float = 0.0) -> None:
    number(rate, "the failure rate (per second)", above=0, high=1.0)
    if interval is not None:
        number(interval, "the checkpoint interval (s)", above=0)
    number(checkpoint_cost, "the checkpoint cost (s)", low=0)
    number(downtime, "the restart and repair time (s)", low=0)


def segment_time(length: float, rate: float, downtime: float = 0.0, exposed: bool = False) -> float:
    """Expected wall time to get ``length`` seconds done without a fault, each fault costing what was done
    plus ``downtime``: (1/Λ + D)(e^{ΛT} − 1); ``exposed``: faults strike during D too, (e^{ΛD}/Λ)(e^{ΛT} − 1)."""
    _check(rate, downtime=downtime)
    return _per_fault(rate, downtime, exposed) * _grows(rate * length)


def expected_wall_time(work: float, interval: float, checkpoint_cost: float, rate: float,
                       downtime: float = 0.0, exposed: bool = False) -> float:
    """Expected wall time of a job of ``work`` seconds (module docstring); ``exposed``: faults strike during
    the downtime too (it starts over), as in simcluster's engine where a restart holds the job's nodes."""
    _check(rate, interval, checkpoint_cost, downtime)
    work = number(work, "the job's work (s)", low=0)
    if work == 0:
        return 0.0
    segments = math.ceil(work / interval) - 1  # checkpointed; the last stretch, in (0, τ], ends the job
    rest = work - segments * interval
    checkpointed = segments * _grows(rate * (interval + checkpoint_cost)) if segments else 0.0
    return _per_fault(rate, downtime, exposed) * (checkpointed + _grows(rate * rest))


def ettr(interval: float, checkpoint_cost: float, rate: float, downtime: float = 0.0,
         work: float | None = None, exposed: bool = False) -> float:
    """Expected productive ÷ wall time: of a job of ``work`` seconds, or (``work=None``) in the long run,
    τΛ / ((1 + ΛD)(e^{Λ(τ+δ)} − 1)); with the downtime ``exposed`` to faults, τΛ / (e^{ΛD}(e^{Λ(τ+δ)} − 1)).

    >>> round(ettr(interval=1800, checkpoint_cost=60, rate=1 / 86_400, downtime=300), 4)
    0.954
    >>> ettr(interval=1e300, checkpoint_cost=60, rate=1 / 86_400, work=2e300)  # never expected to finish
    0.0
    """
    if work is not None:
        return (work / expected_wall_time(work, interval, checkpoint_cost, rate, downtime, exposed)
                if work > 0 else 1.0)
    _check(rate, interval, checkpoint_cost, downtime)
    return interval / (_per_fault(rate, downtime, exposed) * _grows(rate * (interval + checkpoint_cost)))


def young_interval(checkpoint_cost: float, rate: float) -> float:
    """Young (1974): τ* = √(2δ/Λ)."""
    _check(rate, checkpoint_cost=checkpoint_cost)
    return math.sqrt(2.0 * checkpoint_cost / rate)


def daly_interval(checkpoint_cost: float, rate: float) -> float:
    """Daly (2006), the higher-order estimate: √(2δM)·[1 + ⅓√(δ/2M) + ⅑(δ/2M)] − δ for δ < 2M, else M (M = 1/Λ)."""
    _check(rate, checkpoint_cost=checkpoint_cost)
    mtbf = 1.0 / rate
    if checkpoint_cost >= 2.0 * mtbf:
        return mtbf
    ratio = checkpoint_cost / (2.0 * mtbf)
    return math.sqrt(2.0 * checkpoint_cost * mtbf) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - checkpoint_cost


def optimal_interval(checkpoint_cost: float, rate: float) -> float:
    """The τ that maximises the long-run :func:`ettr` exactly: the root x = Λ(τ+δ) of (1 + Λδ − x)e^x = 1
    in (Λδ, 1 + Λδ), where the left side falls monotonically from e^{Λδ} − 1 ≥ 0 to −1."""
    _check(rate, checkpoint_cost=checkpoint_cost)
    a = rate * checkpoint_cost
    if a == 0:
        return 0.0
    low, high = a, 1.0 + a
    for _ in range(200):
        middle = (low + high) / 2
        gap = 1.0 + a - middle  # (1 + Λδ − x)e^x > 1 in logarithms, which never overflow for a long δ
        if gap > 0 and math.log(gap) + middle > 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2 / rate - checkpoint_cost
