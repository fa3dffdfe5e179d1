"""Replaying a fault log onto a simulated cluster's nodes.

Each simulated node takes one logged server's history (its merged outages, the class of each the class of its
first fault).  The mapping is seeded: nodes ``0 … S-1`` (S: the log's servers, those that never failed
included) take the servers in a random order (a permutation), nodes ``S … 2S-1`` another permutation, and so
on.  A cluster larger than the log thus draws server histories *with replacement, in rounds*: every server
is used ⌊N/S⌋ or ⌈N/S⌉ times, and no history twice before every other once.  A copy in round 1 or later is
shifted in time by its own uniform draw within the log's span (circularly), so that copies of one server do
not fail at the same instants; round 0 (a cluster no larger than the log) replays the log as it was.

Time: simulated time ``t`` is log time ``t + offset_s``; the log is periodic with its span, so a horizon longer
than the span replays it again, and a replay that starts late in the log wraps around to its first day
(``repeat=False``: only its first pass).  :func:`random_offset` draws the offset from a run's seed, so that the
replicas of a study sample the whole log instead of its first weeks.  The servers' GPU count is not in a
log: a logged server is a node, whatever its GPUs.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from simcluster.faults.log import FaultLog
from simcluster.faults.models import Outage, Outages
from simcluster.limits import number

_OFFSET_STREAM = 0x0FF5E7  # the offset's own random stream, apart from the node mapping's (0x4E9A)


def random_offset(span_s: float, seed: int) -> float:
    """Where in a log of ``span_s`` seconds a run of ``seed`` starts: uniform in [0, span), the same for the same
    seed and independent of the node mapping's draws (each replica of a study its own month of the log).

    >>> a, b = random_offset(86_400.0 * 365, 0), random_offset(86_400.0 * 365, 1)
    >>> 0 <= a < 86_400 * 365 and a != b and random_offset(86_400.0 * 365, 0) == a
    True
    """
    span = number(span_s, "the fault log's span (s)", low=0)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed) % (1 << 64), _OFFSET_STREAM]))
    return float(rng.random() * span)


@dataclass(frozen=True)
class LogReplay:
    """A recorded log as a failure model: ``offset_s`` seconds into the log is simulated time 0."""

    log: FaultLog
    offset_s: float = 0.0
    repeat: bool = True

    def __post_init__(self) -> None:
        number(self.offset_s, "the fault log's time offset (s)", low=0, high=self.log.span_s)

    def outages(self, nodes: int, gpus_per_node: int, horizon_s: float, seed: int) -> Outages:
        return _ReplayOutages(self, nodes, horizon_s, seed)

    def at(self, offset_s: float) -> LogReplay:
        """The same log replayed from ``offset_s`` seconds in (a replica's own start in the log)."""
        return replace(self, offset_s=float(offset_s))

    def histories(self) -> list[list[tuple[float, float, str]]]:
        """Server ``i``'s merged outages ``(start, end, class)`` in log time; [] for a server that never failed."""
        result: list[list[tuple[float, float, str]]] = [[] for _ in range(len(self.log.names))]
        for fault in sorted(self.log.faults, key=lambda f: (f.server, f.start_s, f.end_s)):
            spans = result[fault.server]
            if spans and fault.start_s <= spans[-1][1]:
                start, end, cls = spans[-1]
                spans[-1] = (start, max(end, fault.end_s), cls)
            else:
                spans.append((fault.start_s, fault.end_s, fault.key))
        return result


def covers_circle(outages: list[tuple[float, float]], span: float) -> bool:
    """Whether outages ``(start, length)``, starts within ``[0, span)``, leave a server of a log replayed period
    after period (a circle of ``span`` seconds) no moment up: then it is down for good, and replaying its one
    merged outage period by period would take ~3e7 steps a century of a 100-s log without yielding one.

    >>> covers_circle([(0.0, 100.0)], 100.0), covers_circle([(10.0, 60.0), (60.0, 50.0)], 100.0)
    (True, True)
    >>> covers_circle([(0.0, 99.0)], 100.0)
    False
    """
    if any(length >= span for _, length in outages):
        return True
    segments = sorted([(start, start + length) for start, length in outages]
                      + [(start + span, start + length + span) for start, length in outages])
    first = reach = -1.0
    for start, end in segments:  # (no length reaches the span, so a merged run covering [span, 2·span] is needed)
        if start > reach:
            first, reach = start, end
        else:
            reach = max(reach, end)
        if first <= span and reach >= 2 * span:
            return True
    return False


class _ReplayOutages(Outages):
    def __init__(self, replay: LogReplay, nodes: int, horizon_s: float, seed: int) -> None:
        super().__init__(nodes, horizon_s)
        self.replay, self.seed = replay, int(seed)
        self._histories = replay.histories()
        self.server, self.shift = self._mapping()

    def _mapping(self) -> tuple[np.ndarray, np.ndarray]:
        """Each node's server and time shift (vectorised: one permutation per round of S nodes)."""
        servers, span = self.replay.log.servers, self.replay.log.span_s
        rounds = -(-self.nodes // servers)
        rng = np.random.default_rng(np.random.SeedSequence([self.seed % (1 << 64), 0x4E9A]))
        server = np.concatenate([rng.permutation(servers) for _ in range(rounds)])[:self.nodes]
        shift = rng.random(self.nodes) * span
        shift[:min(servers, self.nodes)] = 0.0  # round 0 replays the log as it was
        return server, shift

    def node(self, index: int) -> Iterator[Outage]:
        server = int(self.server[index])
        if server >= len(self._histories) or not self._histories[server]:
            return iter(())
        return self._node(index, self._histories[server], float(self.shift[index]))

    def _node(self, index: int, history: list[tuple[float, float, str]], shift: float) -> Iterator[Outage]:
        span, horizon = self.replay.log.span_s, self.horizon_s
        base = shift - self.replay.offset_s  # log time t is simulated time (t + base) mod span, period after period
        placed = sorted(((start + base) % span, end - start, cls) for start, end, cls in history)
        last = self.horizon_s if self.replay.repeat else min(span, horizon)
        if self.replay.repeat and covers_circle([(start, length) for start, length, _ in placed], span):
            yield Outage(index, 0.0, last, placed[0][2])  # down at every moment of the log: down for good
            return
        previous: Outage | None = None
        period = -1
        while True:
            origin = period * span
            if origin >= last:
                break
            for start, length, cls in placed:
                down, up = origin + start, origin + start + length
                if up <= 0 or down >= last:
                    continue
                down = max(down, 0.0)
                if previous is not None and down <= previous.up_at:  # wrapped outages that touch: one
                    previous = previous._replace(up_at=max(previous.up_at, up))
                    continue
                if previous is not None:
                    yield previous
                previous = Outage(index, down, up, cls)
            period += 1
        if previous is not None:
            yield previous

    def stream(self) -> Iterator[Outage]:
        failing = np.flatnonzero(np.isin(self.server, [i for i, h in enumerate(self._histories) if h]))
        streams = [self.node(int(i)) for i in failing]
        return heapq.merge(*streams, key=lambda o: (o.down_at, o.node))

    def by_node(self) -> dict[int, list[Outage]]:
        if self._by_node is None:
            found: dict[int, list[Outage]] = {}
            for outage in self.stream():
                found.setdefault(outage.node, []).append(outage)
            self._by_node = found
        return self._by_node
