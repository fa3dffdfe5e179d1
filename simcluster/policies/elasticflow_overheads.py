"""ElasticFlow's simulated start and restart costs, for a policy of fixed-size jobs that decides in rounds.

ElasticFlow's simulator (pkusys/ElasticFlow, ``scheduler.py``, run with ``--simulation``) charges its
baselines the cost of starting workers, from ``utils.estimate_overhead``: 2 s (7 s on a cluster of 256
GPUs or more) plus 2 × (log2 GPUs + 1) s, and every 60th scheduling round is a *restart round* that costs
27 s more (47 s on a large cluster).  How its Tiresias baseline (``dlas_sim_jobs``) charges them:

* a job started in a round owes its start cost, taken out of the progress it made by the *next* round
  (at most what it made); a job whose run ends before any other round pays nothing;
* in a restart round every running job, just started or not, pays the restart cost as a pause: its end
  moves back by as much.

:class:`RoundOverheads` does the same through the context: the start cost is a :meth:`~simcluster.sdk.
SchedulingContext.stall` at the next round of the VC (a pause then costs what lost progress costs), the
restart cost a stall at once.

>>> overhead_seconds(8, cluster_gpus=512, restart=False), overhead_seconds(8, cluster_gpus=512, restart=True)
(15.0, 62.0)
>>> overhead_seconds(1, cluster_gpus=64, restart=False), [is_restart_round(n) for n in (0, 59, 60, 120)]
(4.0, [False, False, True, True])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simcluster.sdk import JobView, SchedulingContext, VCView

ROUNDS_PER_RESTART = 60  # the artifact's --scheduling_slot (60), used as a count of rounds
LARGE_CLUSTER_GPUS = 256  # from this many GPUs on, the artifact's costs are those of a large cluster


def overhead_seconds(gpus: int, cluster_gpus: int, restart: bool, cached: bool = False) -> float:
    """``utils.estimate_overhead``: what starting a job of ``gpus`` GPUs costs on a cluster of ``cluster_gpus``,
    in a restart round or not; ``cached``: on GPUs it held before (the artifact's cache of GPU ranks), only the
    base cost."""
    large = cluster_gpus >= LARGE_CLUSTER_GPUS
    seconds = 7.0 if large else 2.0
    if cached:
        return seconds
    if restart:
        seconds += 47.0 if large else 27.0
    return seconds + 2.0 * (math.log2(gpus) + 1)


def is_restart_round(rounds_before: int) -> bool:
    """Whether the round after ``rounds_before`` rounds is a restart round (the 60th, 120th, ... counting from 0)."""
    return rounds_before > 0 and rounds_before % ROUNDS_PER_RESTART == 0


@dataclass
class _VcRounds:
    rounds: int = 0  # rounds taken in the VC
    owed: dict[JobView, tuple[float, float]] = field(default_factory=dict)  # started last round: (cost, when)


class RoundOverheads:
    """ElasticFlow's costs for one run of a policy: call :meth:`open_round` before a round's decisions in a VC
    and :meth:`close_round`, with what the first returned, after them."""

    def __init__(self) -> None:
        self._vcs: dict[str, _VcRounds] = {}

    def open_round(self, vc: VCView, ctx: SchedulingContext) -> set[JobView]:
        """Charge the jobs started at the VC's previous round that still run their start cost (at most the time
        they have run since); the jobs that run before this round's decisions."""
        state = self._vcs.setdefault(vc.name, _VcRounds())
        now, running = ctx.now, vc.running
        for job, (seconds, since) in state.owed.items():
            ran = now - since
            if job in running and ran > 0:
                ctx.stall(job, min(seconds, ran))
        state.owed.clear()
        return set(running)

    def close_round(self, vc: VCView, ctx: SchedulingContext, running_before: set[JobView]) -> None:
        """Count the round; note what the jobs it started owe, or, in a restart round, charge every running job
        its restart cost at once."""
        state = self._vcs.setdefault(vc.name, _VcRounds())
        restart = is_restart_round(state.rounds)
        state.rounds += 1
        total = vc.total_gpus
        for job in vc.running:
            if restart:
                ctx.stall(job, overhead_seconds(job.gpu_num, total, restart=True))
            elif job not in running_before:
                state.owed[job] = (overhead_seconds(job.gpu_num, total, restart=False), ctx.now)
