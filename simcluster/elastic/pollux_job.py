"""What Pollux's agent knows of one job, and the batch size it picks (OSDI'21 §3.2, as its simulator runs it).

The *learned* model (the default, as in the paper): the job starts knowing nothing, runs at its starting
batch, and each configuration it runs on — (nodes, GPUs, per-GPU batch) with the step and
synchronisation times measured there — is added to its profile and the throughput model refitted
(:func:`~simcluster.elastic.goodput.fit_perf_params`); the gradient statistics are the latest measured.
Until it has run, its speedup is taken as linear in GPUs.  It may grow to at most twice the most GPUs it
has been measured on (at most 64, and at most its largest batch over its smallest per-GPU batch): the
growth limit that keeps it from leaping to allocations its model has never seen.

The *true* model (``true_model=True``) gives the policy the measurements themselves: goodput from the
application's step times and gradient statistics at the job's current epoch, so that a study can tell
the policy's search from its learning.

>>> from simcluster.elastic.pollux_apps import PolluxApp
>>> import numpy as np
>>> app = PolluxApp("x", {}, np.zeros((0, 5)), {}, 128, 4096, 32, 1024, 100)
>>> job = PolluxJobModel(app)
>>> job.max_replicas(), job.choose_batch((1,)), job.choose_batch((4, 4))
(1, (128, 0), (32, 0))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from simcluster.elastic.goodput import GoodputFunction, GradParams, PerfParams, fit_perf_params
from simcluster.elastic.pollux_apps import OutOfMeasuredRange, PolluxApp

MAX_REPLICAS = 64  # the authors' simulator's own bound on one job


def even_layout(num_nodes: int, num_replicas: int) -> tuple[int, ...]:
    """``num_replicas`` GPUs spread as evenly as possible over ``num_nodes`` nodes.

    >>> even_layout(2, 5), even_layout(1, 3)
    ((3, 2), (3,))
    """
    base, extra = divmod(num_replicas, num_nodes)
    return tuple(base + (1 if i < extra else 0) for i in range(num_nodes))


@dataclass
class PolluxJobModel:
    """One job's model and batch choice (see the module's docstring).

    ``fixed_batch``: a total batch the job keeps whatever its GPUs (the authors' simulator runs ncf at
    32,768 under Pollux; Tiresias and Optimus keep the trace's); ``replica_cap``: a bound of its own on
    GPUs (ncf: 1); ``growth_limit``: apply the twice-the-profiled bound.
    """

    app: PolluxApp
    true_model: bool = False
    fixed_batch: int | None = None
    replica_cap: int | None = None
    growth_limit: bool = True
    epoch: int = 0  # the job's epoch now (the true model's gradient statistics are those of this epoch)
    profile: dict[tuple[int, int, int], tuple[float, float]] = field(default_factory=dict)
    perf_params: PerfParams | None = None
    grad_params: GradParams | None = None

    # --- learning ----------------------------------------------------------------
    def observe(self, layout: Sequence[int], atomic_bsz: int, step_time: float, sync_time: float,
                grad_sqr: float, grad_var: float) -> None:
        """What running on ``layout`` at ``atomic_bsz`` per GPU showed: refit on a configuration not seen before."""
        self.grad_params = GradParams(grad_sqr, grad_var)
        key = (sum(1 for g in layout if g), sum(layout), int(atomic_bsz))
        if key in self.profile:
            return
        self.profile[key] = (step_time, sync_time)
        keys = np.array(list(self.profile), dtype=float)
        times = np.array(list(self.profile.values()))
        self.perf_params = fit_perf_params(keys[:, 0], keys[:, 1], keys[:, 2], times[:, 0] - times[:, 1], times[:, 0])

    @property
    def max_profiled_replicas(self) -> int:
        return max((key[1] for key in self.profile), default=0)

    def max_replicas(self, limit: int = MAX_REPLICAS) -> int:
        """The most GPUs the job may be given now."""
        app = self.app
        bound = min(limit, app.max_batch_size // app.min_local_bsz)
        if self.growth_limit:
            bound = min(bound, max(2 * self.max_profiled_replicas, 1))
        if self.replica_cap is not None:
            bound = min(bound, self.replica_cap)
        return bound

    # --- the model ---------------------------------------------------------------
    def goodput_fn(self) -> GoodputFunction | None:
        """The learned goodput model, or None before the job has run (or under the true model)."""
        if self.true_model or self.perf_params is None or self.grad_params is None:
            return None
        return GoodputFunction(self.perf_params, self.grad_params, self.app.init_batch_size)

    def best_goodput(self, num_nodes: int, num_replicas: int) -> float:
        """The best modelled goodput on (nodes, GPUs): the learned model's optimum, or the measured one."""
        if num_replicas == 0:
            return 0.0
        if self.true_model:
            return self._true_best(num_nodes, num_replicas)[0]
        fn = self.goodput_fn()
        if fn is None:
            return float(num_replicas)
        app = self.app  # (a fixed batch too is valued at the optimum, as Pollux's scheduler values every job)
        return float(fn.optimize(num_nodes, num_replicas, app.max_batch_size, (app.min_local_bsz, app.max_local_bsz),
                                 accumulation=True)[0])

    def speedup_fn(self, base: tuple[int, int] = (1, 1), gpus_per_node: int | None = None
                   ) -> Callable[[int, int], float]:
        """Speedup on (nodes, GPUs) over the best goodput on ``base`` (Pollux's fair share), memoised.
        Before the job has run under the learned model: GPUs ÷ the base's GPUs.  ``gpus_per_node``: the
        packed shapes (fewest nodes for each GPU count up to :meth:`max_replicas`), which the allocation
        asks for most, are evaluated at once, in one vectorised search of the learned model."""
        if not self.true_model and self.goodput_fn() is None:
            replicas = base[1]
            return lambda n, r: r / replicas
        memo: dict[tuple[int, int], float] = {(0, 0): 0.0}
        fn = self.goodput_fn()
        if gpus_per_node and fn is not None:
            app = self.app
            counts = np.arange(1, self.max_replicas() + 1)
            spans = -(-counts // gpus_per_node)
            values = fn.optimize(np.append(spans, base[0]), np.append(counts, base[1]), app.max_batch_size,
                                 (app.min_local_bsz, app.max_local_bsz), accumulation=True)[0]
            reference = float(values[-1])
            memo.update({(int(n), int(r)): float(v) / reference
                         for n, r, v in zip(spans.tolist(), counts.tolist(), values.tolist(), strict=False)})
        else:
            reference = self.best_goodput(*base)

        def speedup(num_nodes: int, num_replicas: int) -> float:
            key = (num_nodes, num_replicas)
            if key not in memo:
                memo[key] = self.best_goodput(num_nodes, num_replicas) / reference
            return memo[key]
        return speedup

    # --- the batch -----------------------------------------------------------------
    def choose_batch(self, layout: Sequence[int]) -> tuple[int, int]:
        """(atomic_bsz, accum_steps) the agent runs on ``layout``: the fixed batch's split; before any
        model, the starting batch (or the smallest per-GPU batch on every GPU); else the goodput optimum."""
        app = self.app
        replicas, nodes = sum(layout), sum(1 for g in layout if g)
        if self.fixed_batch is not None:
            return app.fixed_batch(self.fixed_batch, replicas)
        if self.true_model:
            _, atomic, accum = self._true_best(nodes, replicas, tuple(layout))
            return atomic, accum
        fn = self.goodput_fn()
        if fn is None:
            return app.fixed_batch(max(app.init_batch_size, app.min_local_bsz * replicas), replicas)
        _, atomic, accum = fn.optimize(nodes, replicas, app.max_batch_size, (app.min_local_bsz, app.max_local_bsz),
                                       accumulation=True)
        atomic = min(int(atomic), int(app.max_batch_size / (replicas * (accum + 1))))
        return atomic, int(accum)

    def _true_best(self, num_nodes: int, num_replicas: int, layout: tuple[int, ...] | None = None
                   ) -> tuple[float, int, int]:
        """The measured optimum over the same 50 batch sizes the learned model searches."""
        app = self.app
        layout = layout or even_layout(num_nodes, num_replicas)
        low = max(app.init_batch_size, app.min_local_bsz * num_replicas)
        if low > app.max_batch_size:
            return 0.0, app.min_local_bsz, 0
        best = (0.0, app.min_local_bsz, 0)
        for batch in np.geomspace(low, app.max_batch_size):
            local = batch / num_replicas
            accum = math.ceil(local / app.max_local_bsz - 1e-8) - 1
            if num_replicas == 1 and local > app.init_batch_size + 1e-8:
                accum = max(accum, 1)
            atomic = math.ceil(local / (accum + 1) - 1e-8)
            if not app.min_local_bsz <= atomic <= app.max_local_bsz:
                continue
            try:
                value = app.goodput(layout, atomic, accum, min(self.epoch, app.max_epochs - 1))
            except OutOfMeasuredRange:
                continue
            if value > best[0]:
                best = (value, atomic, accum)
        return best
