"""The fault replay (simcluster/engine/reliability.py) tells the simulation of every fault as it strikes, a spot node
reclaimed at the time included: the node is then down for both (Simulation.node_down records why) and comes back
only at the later of the fault's repair and the reclaim's end; observers hear of the fault at its start and its
repair, not when the reclaim ends.  The hand-worked runs are tests/test_spot7_faults.py's: node 0 on demand, node 1
spot, "prod" (guaranteed, 2,000 s) on node 0, "spot" (preemptible, 1,000 s) on node 1, checkpoints every 100 s, a
reclaim costs 13 s, node 1 reclaimed from 550 s to 850 s."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig

sys.path.insert(0, str(Path(__file__).parent))
from test_spot7_faults import FixedFaults, Lives, run


@pytest.fixture
def reclaims(tmp_path):
    """The spot node (cluster/n1) reclaimed from 550 s to 850 s (the log's second line only stretches its span, so
    that no second reclaim comes before 5,000 s), as in tests/test_spot7_faults.py."""
    path = tmp_path / "reclaims.csv"
    path.write_text("node,start,end\nspot-0,550,850\nspot-0,5000,5001\n")
    return str(path)


def test_a_fault_striking_a_reclaimed_node_holds_it_down_until_its_repair(reclaims):
    # reclaimed at 550 s ("spot" evicted at 550 s: keeps its 500 s checkpoint, loses 50 s), failed at 600 s while
    # reclaimed, given back at 850 s but still failed, repaired at 1,000 s: "spot" starts again then, owes the
    # 13 s, and ends at 1,000 + 13 + 500 = 1,513 s
    result, jobs, lives = run(reclaims, FixedFaults((1, 600, 1000)))
    assert lives.starts == [("prod", 0.0, ["cluster/n0"]), ("spot", 0.0, ["cluster/n1"]),
                            ("spot", 1000.0, ["cluster/n1"])]
    assert jobs.loc["spot", "end_time"] == 1513 and jobs.loc["spot", "spot_evictions"] == 1
    summary = result.summary
    assert summary["failures"]["faults"] == 1 and summary["node_failures"] == 1
    assert summary["spot"]["reclaims"] == 1 and summary["spot"]["evictions"] == 1
    assert lives.downs == [("cluster/n1", 600.0)] and lives.ups == [("cluster/n1", 1000.0)]
    # the node is down for its fault 600 → 1,000 s (8 GPUs × 400 s), its reclaim before it is not a fault
    assert summary["gpu_seconds_by_cause"]["down"] == 8 * 400
    assert summary["spot"]["gpu_hours_up"] == round(8 * (550 + 1000) / 3600, 4)  # up 0–550 s and 1,000–2,000 s


@pytest.mark.parametrize(("fault", "spot_start", "spot_end"), [
    ((1, 700, 1000), 1000.0, 1513),  # struck while reclaimed, repaired after the reclaim ended
    ((1, 600, 700), 850.0, 1363),  # struck and repaired while reclaimed: the reclaim's end brings it back
    ((1, 500, 700), 850.0, 1350),  # struck before the reclaim (evicts at its 500 s checkpoint, no eviction cost)
    ((1, 500, 1000), 1000.0, 1500),  # around the reclaim on both sides
])
def test_observers_hear_each_fault_at_its_start_and_its_repair(reclaims, fault, spot_start, spot_end):
    result, jobs, lives = run(reclaims, FixedFaults(fault))
    _, down, up = fault
    assert lives.downs == [("cluster/n1", down)] and lives.ups == [("cluster/n1", up)]
    assert lives.starts[-1] == ("spot", spot_start, ["cluster/n1"]) and jobs.loc["spot", "end_time"] == spot_end
    assert result.summary["node_failures"] == 1 and result.summary["spot"]["reclaims"] == 1


def spans(rng: random.Random, times: list[int], count: int) -> list[tuple[int, int]]:
    """``count`` disjoint (start, end) spans of one node, from ``count`` × 2 distinct times taken off ``times``."""
    mine = sorted(times.pop() for _ in range(2 * count))
    return [(mine[i], mine[i + 1]) for i in range(0, len(mine), 2)]


def random_outages(seed: int) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """Faults of each of 4 nodes and reclaims of the 2 spot ones (cluster/n2, n3), every boundary a distinct second
    within the first 20,000 s (so no two events of the two replays coincide): (node, start, end), by start."""
    rng = random.Random(seed)
    times = rng.sample(range(1, 20_000), 200)
    faults = [(node, *span) for node in range(4) for span in spans(rng, times, rng.randint(1, 6))]
    reclaimed = [(spot, *span) for spot in range(2) for span in spans(rng, times, rng.randint(1, 6))]
    return sorted(faults, key=lambda f: f[1]), sorted(reclaimed, key=lambda r: r[1])


@pytest.mark.parametrize("seed", range(6))
def test_each_node_is_up_exactly_when_neither_a_fault_nor_a_reclaim_holds_it(seed, monkeypatch):
    # after every change of a node, from either replay, it is up iff no fault and no reclaim of it is under way;
    # observers hear every fault at its start and its repair; each replay's count is its own
    from simcluster.engine.simulation import Simulation

    faults, reclaimed = random_outages(seed)
    held = {f"cluster/n{node}": [(down, up) for n, down, up in faults if n == node] for node in range(4)}
    for spot, start, end in reclaimed:
        held[f"cluster/n{2 + spot}"].append((start, end))
    wrong, seen = [], []

    def checked(change):
        def call(sim, node, reclaim=False):
            change(sim, node, reclaim)
            now = sim.env.now
            if node.up != (not any(start <= now < end for start, end in held[node.name])):
                wrong.append((node.name, now, node.up))
        return call

    def keep(sim):
        seen.append(sim)
        return run_of(sim)

    run_of = Simulation.run
    monkeypatch.setattr(Simulation, "node_down", checked(Simulation.node_down))
    monkeypatch.setattr(Simulation, "node_up", checked(Simulation.node_up))
    monkeypatch.setattr(Simulation, "run", keep)
    monkeypatch.setattr("simcluster.features.spot.reclaims_model", lambda spec, seed: FixedFaults(*reclaimed))
    rng = random.Random(seed)
    rows = [(f"j{i}", 8, rng.randint(0, 15_000), rng.randint(200, 4_000), i % 2 == 0) for i in range(12)]
    rows.append(("long", 8, 0, 30_000, False))  # (runs past every outage: all of them are replayed)
    frame = pd.DataFrame(rows, columns=["job_id", "gpu_num", "submit_time", "duration", "preemptible"])
    lives = Lives()
    config = SimConfig(policy="fifo", spot_nodes="2", spot_reclaims="mtbf=1d", checkpoint_interval=100,
                       eviction_cost=13)
    result = simulate(load_trace(frame, nodes=4), config, observers=[lives], faults=FixedFaults(*faults))
    assert not wrong
    assert sorted(lives.downs) == sorted((f"cluster/n{node}", down) for node, down, _ in faults)
    assert sorted(lives.ups) == sorted((f"cluster/n{node}", up) for node, _, up in faults)
    summary = result.summary
    assert summary["failures"]["faults"] == summary["node_failures"] == len(faults)
    assert summary["spot"]["reclaims"] == len(reclaimed)
    assert result.jobs["end_time"].notna().all()
    assert seen[0].reliability.up_gpus == {"cluster": 32} and not seen[0].reliability.down_slots
