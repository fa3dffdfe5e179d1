"""A packing placement: fill the fullest nodes first, so that whole idle nodes stay free for big jobs.

    lucid-sim run --placement ./packing_placement.py --policy fifo --trace ../shared/data/venus_sept

A job is placed on the node with the fewest free GPUs that holds all of it (best fit); a job bigger than
any node's free GPUs takes them node by node, fullest first (ties: node order).
"""

from simcluster.sdk import Placement


class Packing(Placement):
    """Best fit on one node; bigger jobs fill the fullest nodes first, keeping idle nodes whole."""

    name = "packing"

    def place(self, job, pool):
        if job.gpu_num > pool.free_gpus:
            return None
        nodes = sorted((n for n in pool.nodes if n.free_gpus), key=lambda n: (n.free_gpus, n.index))
        for node in nodes:
            if node.free_gpus >= job.gpu_num:
                return [(node, job.gpu_num)]
        plan, left = [], job.gpu_num
        for node in nodes:
            take = min(node.free_gpus, left)
            plan.append((node, take))
            left -= take
            if not left:
                return plan
        return None
