"""SRTF that stays fast on large clusters: the built-in ``srtf``'s schedule, job for job, from public API only.

    lucid-sim run --policy ./srtf_kept.py --trace ../shared/data/venus_sept

``srtf_minimal.py`` sorts every running job at every pass; here the run hooks keep each VC's running jobs in a
``RunningOrder`` by the end of their run (the order of their remaining times at any instant), and the quota
walk jumps over them from one start or preemption to the next.
"""

from simcluster.sdk import Minus, Policy, RunningOrder, walk_quota


class SrtfKept(Policy):
    """Preemptive shortest remaining time first, within the VC's GPU quota, over running jobs kept in order."""

    name = "srtf-kept"
    preemptive = True

    def __init__(self, config=None):
        super().__init__(config)
        self.orders = {}  # VC name → its running jobs, by the end of their run at full speed

    def on_run_start(self, job, vc):
        order = self.orders.get(vc.name)
        if order is None:
            order = self.orders[vc.name] = RunningOrder()
        order.add(job.run_started_at + job.overhead_left + job.work_left, job)  # the end of its run at full speed

    def on_run_stop(self, job, vc):
        self.orders[vc.name].remove(job)

    def pending_key(self, job):
        return job.remaining_at(0.0)  # a waiting job's remaining time does not change

    def schedule(self, vc, ctx):
        if not vc.pending:
            return  # the running jobs fit the quota by construction: nothing can change
        order = self.orders.get(vc.name) or RunningOrder()
        head = vc.pending.first()
        if len(vc.pending) == 1 and order.gpus + head.gpu_num <= vc.total_gpus:
            ctx.try_start(head)  # the one waiting job fits beside every running one: the walk would start it
            return
        now = ctx.now
        if walk_quota(vc, ctx, order, key=Minus(now)):  # end - now: the remaining time (Minus: searched fast)
            ctx.wake_at(now)  # the preempted jobs' remaining time grew by the restore overhead: look again
