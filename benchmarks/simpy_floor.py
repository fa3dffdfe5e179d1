"""The SimPy floor: what a plain SimPy FIFO costs on venus_sept, and each policy's simulation CPU as a multiple of it.

    python benchmarks/simpy_floor.py [--trace PATH] [--policy fifo,srtf,...] [--repeat N]

The floor is a FIFO written as a SimPy textbook would (a process per job, a scheduler pass as a LATE event once
per instant, the consolidate placement with plain lists over each VC's nodes) that gives fifo's JCTs job for job:
the least a SimPy simulation of this trace can cost. Each policy then runs through ``simulate`` in this same
process (sharing policies and lucid with the Lucid RTX 3090 table, ``--colocation lucid``), best of
``--repeat`` sim CPU-s (``time.process_time``), and its ratio to the floor's best is printed beside issue 41's
targets (fifo ≤ 1.0×, srtf ≤ 2.0×, tiresias ≤ 3.0×, lucid ≤ 15×).
"""

from __future__ import annotations

import argparse
import time

import simpy
from rich.console import Console
from rich.table import Table

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.paths import shared_data_dir
from simcluster.traces import load_trace

TARGETS = {"fifo": 1.0, "srtf": 2.0, "tiresias": 3.0, "lucid": 15.0}
LATE = 2  # after every other event of an instant (SimPy's own priorities are 0 and 1)


def simpy_fifo(jobs: list[tuple[str, int, float, float]], vc_nodes: dict[str, int], per_node: int = 8) -> dict:
    """FIFO with head-of-line blocking per VC, consolidate placement; ``jobs``: (vc, GPUs, submit, duration) in
    trace order. Returns each job's JCT, by trace position."""
    env = simpy.Environment(initial_time=min(submit for _, _, submit, _ in jobs))
    free = {vc: [per_node] * n for vc, n in vc_nodes.items()}  # idle GPUs per node
    queues: dict[str, list[int]] = {vc: [] for vc in vc_nodes}
    heads = dict.fromkeys(vc_nodes, 0)  # the queue's head (started jobs stay in the list)
    started: dict[int, simpy.Event] = {}
    held: dict[int, list[tuple[int, int]]] = {}
    dirty: dict[str, None] = {}
    jct: dict[int, float] = {}

    def place(vc: str, need: int) -> list[tuple[int, int]] | None:
        nodes = free[vc]
        if need <= per_node:  # the fullest node that holds it
            fits = [(f, i) for i, f in enumerate(nodes) if f >= need]
            return [(min(fits)[1], need)] if fits else None
        full, rest = divmod(need, per_node)
        idle = [i for i, f in enumerate(nodes) if f == per_node]
        if len(idle) < full:
            return None
        plan = [(i, per_node) for i in idle[:full]]
        if rest:
            if len(idle) > full:
                return [*plan, (idle[full], rest)]
            others = [(f, -i) for i, f in enumerate(nodes) if f < per_node]
            most = max(others, default=(0, 0))
            if most[0] < rest:
                return None
            plan.append((-most[1], rest))
        return plan

    def scheduler_pass(_: simpy.Event) -> None:
        global_pass[0] = None
        for vc in list(dirty):
            del dirty[vc]
            queue = queues[vc]
            while heads[vc] < len(queue):
                index = queue[heads[vc]]
                plan = place(vc, jobs[index][1])
                if plan is None:
                    break
                for node, gpus in plan:
                    free[vc][node] -= gpus
                held[index] = plan
                heads[vc] += 1
                started[index].succeed()

    global_pass: list[simpy.Event | None] = [None]

    def request_pass(vc: str) -> None:
        dirty[vc] = None
        if global_pass[0] is None:
            event = global_pass[0] = env.event()
            event.callbacks.append(scheduler_pass)
            event._ok, event._value = True, None  # (as SimPy's own succeed, at another priority)
            env.schedule(event, LATE)

    def life(index: int) -> simpy.events.ProcessGenerator:
        vc, _, submit, duration = jobs[index]
        yield env.timeout(submit - env.now)
        started[index] = env.event()
        queues[vc].append(index)
        request_pass(vc)
        yield started[index]
        yield env.timeout(duration)
        for node, gpus in held.pop(index):
            free[vc][node] += gpus
        jct[index] = env.now - submit
        request_pass(vc)

    for index in range(len(jobs)):
        env.process(life(index))
    env.run()
    return jct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", default=str(shared_data_dir() / "venus_sept"))
    parser.add_argument("--policy", default="fifo,sjf,srtf,tiresias,qssf,easy-backfill,slurm,sjf-ffs,srtf-wrs,lucid")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    trace = load_trace(args.trace)
    frame = trace.frame
    jobs = list(zip(frame["vc"], frame["gpu_num"].astype(int), frame["submit_time"].astype(float),
                    frame["duration"].astype(float), strict=True))
    floor, jcts = float("inf"), {}
    for _ in range(args.repeat):
        cpu = time.process_time()
        jcts = simpy_fifo(jobs, trace.vc_nodes)
        floor = min(floor, time.process_time() - cpu)
    fifo_jct = simulate(trace, SimConfig(policy="fifo")).jobs["jct"].to_numpy()
    same = len(jcts) == len(fifo_jct) and all(jcts[i] == fifo_jct[i] for i in range(len(fifo_jct)))
    table = Table(title=f"sim CPU-s on {args.trace}: best of {args.repeat}, as a multiple of a plain SimPy FIFO "
                        f"({floor:.3f} CPU-s; its JCTs {'equal' if same else 'DIFFER from'} fifo's)",
                  title_justify="left")
    for col in ("policy", "sim CPU-s", "× floor", "target"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for policy in args.policy.split(","):
        options = {"colocation": "lucid"} if policy == "lucid" or policy.startswith(("sjf-", "srtf-")) else {}
        best = min(simulate(trace, SimConfig(policy=policy, **options)).summary["sim_cpu_seconds"]
                   for _ in range(args.repeat))
        target = TARGETS.get(policy)
        table.add_row(policy, f"{best:.3f}", f"{best / floor:.2f}", f"≤ {target:.1f}×" if target else "")
    Console(width=130).print(table)


if __name__ == "__main__":
    main()
