"""Per-user fair share: the user holding the fewest GPUs of the VC goes first.

    lucid-sim run --policy ./fair_share.py --set max_share=0.5 --trace ../shared/data/venus_sept

Non-preemptive.  At each decision the waiting jobs are taken user by user, the user with the fewest GPUs in
use first (ties: the earlier job), and every job that fits starts (backfilling).  While others wait, a user
may not hold more than ``max_share`` of the VC's GPUs (1: no cap).  The order depends on who holds what at
each moment, so it is made in ``schedule``; the queue itself stays in submit order.
"""

from collections import Counter
from dataclasses import dataclass

from simcluster.sdk import Policy, setting


@dataclass(frozen=True)
class FairShareSettings:
    max_share: float = setting(1.0, "Most of a VC's GPUs one user may hold while others wait (1: no cap).",
                               above=0, max=1)


class FairShare(Policy):
    """Per-user fair share: the user with the fewest GPUs in use first; any waiting job that fits starts."""

    name = "fair-share"
    Settings = FairShareSettings

    def schedule(self, vc, ctx):
        held = Counter()
        for job in vc.running:
            held[job.user] += job.gpu_num
        cap = self.settings.max_share * vc.total_gpus
        waiting_users = {job.user for job in vc.pending}
        for job in sorted(vc.pending, key=lambda j: (held[j.user], j.submit_time, j.index)):
            if job.gpu_num > vc.free_gpus:
                continue
            over = held[job.user] + job.gpu_num > cap and len(waiting_users) > 1
            if not over and ctx.try_start(job):
                held[job.user] += job.gpu_num
