"""A VC's running jobs kept in a policy's order, with the GPUs they hold summed by position.

A preemptive policy walks running and waiting jobs in one order (:func:`~simcluster.policies.quota.walk_quota`).
Sorting every running job at every pass makes a pass cost what runs, not what changed; on a cluster of tens of
thousands of GPUs that is most of a run.  A :class:`RunningOrder` is kept up to date by the policy's run hooks
instead (``on_run_start`` adds a job, ``on_run_stop`` removes it), and answers what the walk asks in about
O(√n): where a key falls, how many GPUs the jobs before a position hold, and which job is the first that no
longer fits a budget.  The order must not change while jobs run, only when the policy re-keys a job (remove,
then add): srtf's end times, Tiresias' (queue, submit time) between threshold crossings, EASY's expected ends.

It is a list of sorted blocks (each with its GPU sum and last entry), the layout of ``sortedcontainers``, so an
insertion moves at most one block's worth of references.

>>> from simcluster.job import Job
>>> jobs = [Job(index=i, job_id=str(i), vc="v", gpu_num=g, submit_time=0, duration=10) for i, g in enumerate([4, 2, 8])]
>>> order = RunningOrder()
>>> for end, job in zip([300.0, 100.0, 200.0], jobs):
...     order.add(end, job)
>>> [j.job_id for j in order], order.gpus
(['1', '2', '0'], 14)
>>> at = order.locate(150.0)  # the first job whose key is 150 or more: job 2, after job 1's 2 GPUs
>>> order.job_at(at).job_id, order.gpus_before(at)
('2', 2)
>>> over, fitted = order.first_over(order.start, 9)  # 2 + 8 > 9: job 2 is the first that does not fit
>>> order.job_at(over).job_id, fitted
('2', 2)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from itertools import accumulate
from typing import Any

from simcluster.job import Job

Entry = tuple[Any, int, Job]  # (the policy's key, trace index, job): unique and totally ordered
Position = tuple[int, int]  # (block, offset within it); (blocks, 0) is the end
KeyMap = Callable[[Any], Any]  # a stored key → the key the walk compares (monotone: srtf's end → end - now)

_LOAD = 256  # entries per block: a block splits at twice this
_AFTER = float("inf")  # an index above every trace index


def gpu_count(job: Job) -> int:
    """What a running job uses of its VC's quota unless a policy says otherwise: its GPUs."""
    return job.gpu_num


def same_key(key: Any) -> Any:
    """The identity key map: a walk over the order's own keys (its searches then skip the map)."""
    return key


class Minus:
    """The key map ``stored - offset`` (srtf: end of run - now = remaining time), which :meth:`RunningOrder.locate`
    searches without calling it at every step: it searches the stored keys for ``probe + offset``, then steps
    to where the exact comparison says (float rounding may move the answer by a job or two).

    >>> Minus(100.0)(350.0), Minus(100.0).stored(250.0)
    (250.0, 350.0)
    """

    __slots__ = ("offset",)

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def __call__(self, stored: float) -> float:
        return stored - self.offset

    def stored(self, probe: float) -> float:
        """About the stored key that maps to ``probe``."""
        return probe + self.offset


class TierMinus(Minus):
    """Srtf's key map on a tiered run (docs/tiers.md): a stored ``(tier, end)`` maps to ``(tier, end - now)``, the
    waiting jobs' ``(tier, remaining time)``, so the walk orders by tier first and by remaining time within one.

    >>> TierMinus(100.0)(((-5, False), 350.0)), TierMinus(100.0).stored(((-5, False), 250.0))
    (((-5, False), 250.0), ((-5, False), 350.0))
    """

    __slots__ = ()

    def __call__(self, stored: tuple[Any, float]) -> tuple[Any, float]:  # type: ignore[override]
        return (stored[0], stored[1] - self.offset)

    def stored(self, probe: tuple[Any, float]) -> tuple[Any, float]:  # type: ignore[override]
        return (probe[0], probe[1] + self.offset)


class RunningOrder:
    """Running jobs sorted by (key, trace index), each weighing its GPUs (``weight``: job → its share of the
    quota, whole GPUs by default); see the module's example.

    Running sums are kept per block and over the blocks, rebuilt where a job came or went since they were
    last read: a pass's searches then cost two bisections each."""

    __slots__ = ("_blocks", "_ends", "_entry_of", "_lasts", "_running", "_sums", "_weight", "_weights", "gpus")

    def __init__(self, weight: Callable[[Job], int] = gpu_count) -> None:
        self._blocks: list[list[Entry]] = []
        self._weights: list[list[int]] = []
        self._sums: list[int] = []
        self._lasts: list[Entry] = []
        self._running: list[list[int] | None] = []  # per block, the running sums of its weights (None: stale)
        self._ends: list[int] | None = None  # the running sums of the blocks' sums (None: stale)
        self._entry_of: dict[Job, Entry] = {}
        self._weight = weight
        self.gpus = 0  # what every job here holds

    # --- keeping it up to date ----------------------------------------------------------------------------
    def add(self, key: Any, job: Job) -> None:
        """File ``job`` under ``key`` (it must not be here yet)."""
        entry, weight = (key, job.index, job), self._weight(job)
        self._entry_of[job] = entry
        self.gpus += weight
        self._ends = None
        blocks, lasts = self._blocks, self._lasts
        if not blocks:
            blocks.append([entry])
            self._weights.append([weight])
            self._sums.append(weight)
            self._running.append(None)
            lasts.append(entry)
            return
        b = bisect_left(lasts, entry)
        if b == len(blocks):
            b -= 1
            lasts[b] = entry
        block = blocks[b]
        i = bisect_left(block, entry)
        block.insert(i, entry)
        self._weights[b].insert(i, weight)
        self._sums[b] += weight
        self._running[b] = None
        if len(block) > 2 * _LOAD:
            self._split(b)

    def remove(self, job: Job) -> None:
        """Take ``job`` out."""
        entry = self._entry_of.pop(job)
        b = bisect_left(self._lasts, entry)
        block = self._blocks[b]
        i = bisect_left(block, entry)
        del block[i]
        weight = self._weights[b].pop(i)
        self._sums[b] -= weight
        self.gpus -= weight
        self._ends = None
        if block:
            self._lasts[b] = block[-1]
            self._running[b] = None
        else:
            del self._blocks[b], self._weights[b], self._sums[b], self._lasts[b], self._running[b]

    def rekey(self, job: Job, key: Any) -> None:
        """Move ``job`` to ``key``."""
        self.remove(job)
        self.add(key, job)

    def _split(self, b: int) -> None:
        block, weights = self._blocks[b], self._weights[b]
        self._blocks[b + 1:b + 1] = [block[_LOAD:]]
        self._weights[b + 1:b + 1] = [weights[_LOAD:]]
        del block[_LOAD:], weights[_LOAD:]
        self._sums[b:b + 1] = [sum(weights), sum(self._weights[b + 1])]
        self._lasts[b:b + 1] = [block[-1], self._blocks[b + 1][-1]]
        self._running[b:b + 1] = [None, None]

    # --- running sums ------------------------------------------------------------------------------------
    def _block_ends(self) -> list[int]:
        """What the jobs up to the end of each block hold."""
        ends = self._ends
        if ends is None:
            ends = self._ends = list(accumulate(self._sums))
        return ends

    def _within(self, b: int) -> list[int]:
        """What the jobs of block ``b`` up to each of them (included) hold."""
        running = self._running[b]
        if running is None:
            running = self._running[b] = list(accumulate(self._weights[b]))
        return running

    def gpus_before(self, at: Position) -> int:
        """What the jobs before ``at`` hold."""
        b, i = at
        if b == len(self._blocks):
            return self.gpus
        before = self._block_ends()[b - 1] if b else 0
        return before + self._within(b)[i - 1] if i else before

    def gpus_between(self, first: Position, stop: Position) -> int:
        """What the jobs from ``first`` up to ``stop`` (excluded) hold."""
        return self.gpus_before(stop) - self.gpus_before(first)

    def first_over(self, first: Position, budget: float) -> tuple[Position | None, int]:
        """Walking from ``first``, every job fits ``budget`` until the one returned: (its position, what the jobs
        before it from ``first`` hold), or (None, what they all hold) when every one fits."""
        base = self.gpus_before(first)
        over = self._passing(first[0], base + budget)
        return over, (self.gpus_before(over) if over is not None else self.gpus) - base

    def reach(self, first: Position, budgets: list[float]) -> list[Position | None]:
        """For each budget, :meth:`first_over`'s position (None: every job from ``first`` fits it)."""
        base, b = self.gpus_before(first), first[0]
        return [self._passing(b, base + budget) for budget in budgets]

    def _passing(self, b: int, total: float) -> Position | None:
        """The first position, in block ``b`` or later, whose jobs up to it (included) hold more than ``total``."""
        ends = self._block_ends()
        b = bisect_right(ends, total, b)
        if b == len(ends):
            return None
        return (b, bisect_right(self._within(b), total - (ends[b - 1] if b else 0)))

    # --- reading it -----------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entry_of)

    def __bool__(self) -> bool:
        return bool(self._entry_of)

    def __contains__(self, job: Job) -> bool:
        return job in self._entry_of

    def __iter__(self) -> Iterator[Job]:
        """The jobs in order (over a snapshot of the blocks: re-keying meanwhile is safe)."""
        return (entry[2] for block in list(self._blocks) for entry in list(block))

    def items(self, first: Position = (0, 0)) -> Iterator[tuple[Any, Job]]:
        """(key, job) in order, from ``first``."""
        b, i = first
        blocks = self._blocks
        if b < len(blocks):
            yield from ((entry[0], entry[2]) for entry in blocks[b][i:])
            for block in blocks[b + 1:]:
                yield from ((entry[0], entry[2]) for entry in block)

    def listed(self, key: KeyMap = same_key) -> tuple[list[Any], list[Job], list[int]]:
        """Every job's mapped key, the jobs and their weights, in order (for a walk over a few jobs)."""
        entries = [entry for block in self._blocks for entry in block] if len(self._blocks) != 1 else self._blocks[0]
        if type(key) is Minus:  # (exactly: a subclass maps its keys its own way)
            offset = key.offset
            keys = [entry[0] - offset for entry in entries]
        else:
            keys = [key(entry[0]) for entry in entries]
        weights = [w for block in self._weights for w in block] if len(self._weights) != 1 else self._weights[0]
        return keys, [entry[2] for entry in entries], weights

    def count_from(self, first: Position) -> int:
        """How many jobs from ``first`` on."""
        b, i = first
        blocks = self._blocks
        return len(blocks[b]) - i + sum(map(len, blocks[b + 1:])) if b < len(blocks) else 0

    def key_of(self, job: Job) -> Any:
        return self._entry_of[job][0]

    @property
    def weight_of(self) -> Callable[[Job], int]:
        """What a job weighs here (its GPUs, by default)."""
        return self._weight

    @property
    def start(self) -> Position:
        return (0, 0)

    @property
    def end(self) -> Position:
        return (len(self._blocks), 0)

    def locate(self, probe: Any, key: KeyMap = same_key, after_ties: bool = False) -> Position:
        """The position of the first job whose ``key(stored key)`` is at least ``probe`` (``after_ties``: more
        than ``probe``), or the end."""
        if key is same_key:  # (an entry is (key, index, job): (probe,) sorts before every entry of key probe, and
            # (probe, inf) after every one, so the search compares no job)
            bound = (probe, _AFTER) if after_ties else (probe,)
            b = bisect_left(self._lasts, bound)
            return (b, 0) if b == len(self._lasts) else (b, bisect_left(self._blocks[b], bound))
        if isinstance(key, Minus):
            return self._locate_near(self.locate(key.stored(probe), same_key, after_ties), probe, key, after_ties)
        find = bisect_right if after_ties else bisect_left
        lasts = self._lasts
        b = find(lasts, probe, key=lambda entry: key(entry[0]))
        if b == len(lasts):
            return (b, 0)
        return (b, find(self._blocks[b], probe, key=lambda entry: key(entry[0])))

    def _locate_near(self, at: Position, probe: Any, key: KeyMap, after_ties: bool) -> Position:
        """:meth:`locate`'s answer from a position next to it: step while the exact comparison says so."""
        def past(position: Position) -> bool:  # whether the job there is at or after where ``probe`` goes
            mapped = key(self.key_at(position))
            return mapped > probe if after_ties else mapped >= probe

        while at != self.start and past(before := self.preceding(at)):
            at = before
        while at != self.end and not past(at):
            at = self.following(at)
        return at

    def job_at(self, at: Position) -> Job:
        b, i = at
        return self._blocks[b][i][2]

    def key_at(self, at: Position) -> Any:
        b, i = at
        return self._blocks[b][i][0]

    def following(self, at: Position) -> Position:
        """The position after ``at``."""
        b, i = at
        return (b + 1, 0) if i + 1 >= len(self._blocks[b]) else (b, i + 1)

    def preceding(self, at: Position) -> Position:
        """The position before ``at`` (not the start)."""
        b, i = at
        return (b, i - 1) if i else (b - 1, len(self._blocks[b - 1]) - 1)

    def jobs_between(self, first: Position, stop: Position | None = None) -> list[Job]:
        """The jobs from ``first`` up to ``stop`` (None: the end), in order."""
        b1, i1 = first
        b2, i2 = stop if stop is not None else self.end
        blocks, found = self._blocks, []
        for b in range(b1, min(b2 + 1, len(blocks))):
            lo = i1 if b == b1 else 0
            hi = i2 if b == b2 else len(blocks[b])
            found += [entry[2] for entry in blocks[b][lo:hi]]
        return found

    def check(self) -> None:
        """Assert the blocks' invariants (for tests)."""
        flat = [e for block in self._blocks for e in block]
        assert flat == sorted(flat) and len(flat) == len(self._entry_of)
        assert all(block for block in self._blocks)
        assert self._lasts == [block[-1] for block in self._blocks]
        assert self._sums == [sum(w) for w in self._weights]
        assert self.gpus == sum(self._sums)
