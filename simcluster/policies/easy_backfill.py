"""``easy-backfill``: EASY backfilling (Lifka 1995; the shape of Slurm's and most batch schedulers' backfill).

The queue is walked in order.  Jobs start while they can; the first that cannot (the *head*) gets a
reservation: the earliest instant at which, by the running jobs' expected ends, enough of the VC's GPUs
are free for it (the *shadow time*), and the GPUs that will be left over then (the *spare* GPUs).  A later
job may start now only if it does not delay that reservation: it is expected to end by the shadow time,
or it fits in the spare GPUs (which it then uses up).  Expected ends come from a duration estimator
(``--estimator``: oracle by default; history, file, ebm), each job estimated once, at its submission.

The reservation counts GPUs, not nodes, as EASY does: with a node-aware placement the head may still
find its GPUs scattered over nodes at the shadow time, and then waits for the next reservation.  A
running job that outlived its estimate is expected to end now.  The running jobs are kept in the order of
their expected ends as they start and stop (:class:`~simcluster.sdk.RunningOrder`), so a reservation costs a
search, not a sort of every running job.  A long queue's waiting jobs are indexed by GPU count in queue order,
with the shortest expected duration of each block of them (:class:`WaitingIndex`): after the head, a pass steps
only to the jobs it tries (those that fit and end by the shadow time or fit the spare GPUs), not over every
waiting job (issue 55: at full load the queue grows with the cluster).  Decisions are the plain walk's
(:meth:`EasyBackfill.walk_queue`, which a short queue, or one ranked by tiers first, still takes).

>>> from simcluster.sdk import Policy
>>> issubclass(EasyBackfill, Policy)
True
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable
from typing import Any

from simcluster.estimators import EstimateQuality, make_estimator
from simcluster.policies.fifo_backfill import FifoBackfill
from simcluster.sdk import JobView, RunningOrder, SchedulingContext, VCView, register_policy


def reservation(need: int, free: int, ends: list[tuple[float, int]]) -> tuple[float, int]:
    """(shadow time, spare GPUs) of a job asking for ``need`` GPUs when ``free`` are idle now and running jobs
    release theirs at ``ends`` ((expected end, GPUs), in any order).  Never enough: (inf, 0).

    >>> reservation(8, 2, [(500.0, 4), (100.0, 4), (300.0, 2)])  # 2 + 4 at 100, + 2 at 300
    (300.0, 0)
    >>> reservation(4, 2, [(100.0, 8)])
    (100.0, 6)
    """
    for end, gpus in sorted(ends):
        free += gpus
        if free >= need:
            return end, free - need
    return float("inf"), 0


def reservation_in(order: RunningOrder, need: int, free: int, now: float) -> tuple[float, int]:
    """:func:`reservation` over running jobs kept by (expected end, GPUs), each expected to end at ``now`` at the
    earliest: the jobs overdue at ``now`` end first, smallest first (the ties of ``reservation``'s sort), then
    the first job whose end frees enough is found by its running sum.

    >>> from simcluster.job import Job
    >>> order = RunningOrder()
    >>> for i, (end, gpus) in enumerate([(500.0, 4), (100.0, 4), (300.0, 2)]):
    ...     order.add((end, gpus), Job(index=i, job_id=str(i), vc="v", gpu_num=gpus, submit_time=0, duration=1))
    >>> reservation_in(order, 8, 2, 0.0), reservation_in(order, 7, 2, 400.0), reservation_in(order, 99, 2, 0.0)
    ((300.0, 0), (400.0, 1), (inf, 0))
    >>> reservation(7, 2, [(400.0, 4), (400.0, 2), (500.0, 4)])  # what the jobs overdue at 400 mean
    (400.0, 1)
    """
    due = order.locate((now, float("inf")))  # the jobs that should have ended by now
    overdue = order.gpus_before(due)
    if free + overdue >= need and overdue:
        for gpus in sorted(job.gpu_num for job in order.jobs_between(order.start, due)):
            free += gpus
            if free >= need:
                return now, free - need
    over, held = order.first_over(due, need - free - overdue - 1)  # the first whose running sum reaches need
    if over is None:
        return float("inf"), 0
    end, gpus = order.key_at(over)
    return end, free + overdue + held + gpus - need


_BLOCK = 64  # waiting jobs per block of a GPU count (a block splits at twice this)
_INF = float("inf")
SHORT_QUEUE = 64  # a queue of at most this many waiting jobs is walked plainly (cheaper than indexing it)
REFILE_AFTER = 32  # a queue is indexed once plain walks stepped over this many times its jobs (filing one costs
# several steps of a walk; Slurm files its queue again after each re-sort, every PriorityCalcPeriod)

Entry = tuple[Any, int, JobView]  # (the queue's key, trace index, job): the queue's order, ties by trace index


class SizeQueue:
    """One GPU count's waiting jobs in queue order, in blocks, with a tree of the blocks' shortest expected durations.

    EASY asks for the next job (in queue order, after a position) that is expected to end by the shadow time; the
    tree finds the next block holding one in O(log blocks), so a pass steps over no longer job one by one.

    >>> from simcluster.job import Job
    >>> jobs = [Job(index=i, job_id=str(i), vc="v", gpu_num=1, submit_time=i, duration=1) for i in range(300)]
    >>> queue = SizeQueue()
    >>> for job in jobs:
    ...     queue.add((job.submit_time, job.index, job), 10.0 if job.index != 250 else 1.0)
    >>> queue.next_any(None)[1], queue.next_any((3, 3, jobs[3]))[1], queue.next_short(None, 100.0, 101.0)[1]
    (0, 4, 250)
    """

    __slots__ = ("blocks", "count", "durations", "lasts", "leaves", "tree")

    def __init__(self) -> None:
        self.blocks: list[list[Entry]] = []
        self.durations: list[list[float]] = []  # each entry's expected duration, block by block
        self.lasts: list[Entry] = []
        self.leaves = 1  # the tree: node i holds the least of nodes 2i and 2i + 1; block b's least is leaf leaves + b
        self.tree: list[float] = [_INF, _INF]
        self.count = 0

    def load(self, entries: list[Entry], durations: list[float]) -> None:
        """Hold ``entries`` (in order) and nothing else, in full blocks."""
        self.blocks = [entries[i:i + _BLOCK] for i in range(0, len(entries), _BLOCK)]
        self.durations = [durations[i:i + _BLOCK] for i in range(0, len(entries), _BLOCK)]
        self.lasts = [block[-1] for block in self.blocks]
        self.count = len(entries)
        self._plant()

    def add(self, entry: Entry, duration: float) -> None:
        blocks, lasts = self.blocks, self.lasts
        self.count += 1
        if not blocks:
            blocks.append([entry])
            self.durations.append([duration])
            lasts.append(entry)
            self._plant()
            return
        b = bisect_left(lasts, entry)
        if b == len(blocks):
            b -= 1
            lasts[b] = entry
        block, durations = blocks[b], self.durations[b]
        i = bisect_left(block, entry)
        block.insert(i, entry)
        durations.insert(i, duration)
        if len(block) > 2 * _BLOCK:
            blocks[b + 1:b + 1] = [block[_BLOCK:]]
            self.durations[b + 1:b + 1] = [durations[_BLOCK:]]
            del block[_BLOCK:], durations[_BLOCK:]
            lasts[b:b + 1] = [block[-1], blocks[b + 1][-1]]
            self._plant()
        elif duration < self.tree[self.leaves + b]:
            self._set(b, duration)

    def remove(self, entry: Entry) -> None:
        lasts = self.lasts
        b = bisect_left(lasts, entry)
        block, durations = self.blocks[b], self.durations[b]
        i = bisect_left(block, entry)
        del block[i]
        duration = durations.pop(i)
        self.count -= 1
        if not block:
            del self.blocks[b], self.durations[b], lasts[b]
            self._plant()
            return
        lasts[b] = block[-1]
        if duration == self.tree[self.leaves + b]:
            self._set(b, min(durations))

    def _plant(self) -> None:
        """The tree over the blocks as they are now (after a block came or went)."""
        leaves = 1
        while leaves < len(self.blocks):
            leaves *= 2
        tree = [_INF] * (2 * leaves)
        tree[leaves:leaves + len(self.blocks)] = map(min, self.durations)
        for i in range(leaves - 1, 0, -1):
            tree[i] = min(tree[2 * i], tree[2 * i + 1])
        self.leaves, self.tree = leaves, tree

    def _set(self, b: int, least: float) -> None:
        tree = self.tree
        i = self.leaves + b
        tree[i] = least
        i >>= 1
        while i:
            tree[i] = min(tree[2 * i], tree[2 * i + 1])
            i >>= 1

    def _first_after(self, after: Entry | None) -> tuple[int, int] | None:
        """(block, offset) of the first entry after ``after`` (None: from the start), or None."""
        if after is None:
            return (0, 0) if self.blocks else None
        b = bisect_right(self.lasts, after)
        return (b, bisect_right(self.blocks[b], after)) if b < len(self.blocks) else None

    def next_any(self, after: Entry | None) -> Entry | None:
        """The first entry after ``after``."""
        at = self._first_after(after)
        return self.blocks[at[0]][at[1]] if at is not None else None

    def next_short(self, after: Entry | None, now: float, shadow: float) -> Entry | None:
        """The first entry after ``after`` whose job, started at ``now``, is expected to end by ``shadow``
        (``now + duration <= shadow``, as a pass compares: monotone in the duration, so a block's least
        answers for the whole block)."""
        if not now + self.tree[1] <= shadow:  # (none at all)
            return None
        at = self._first_after(after)
        if at is None:
            return None
        b, i = at
        if now + self.tree[self.leaves + b] <= shadow:
            durations = self.durations[b]
            for j in range(i, len(durations)):
                if now + durations[j] <= shadow:
                    return self.blocks[b][j]
        b = self._first_block(b + 1, now, shadow)
        if b is None:
            return None
        for j, duration in enumerate(self.durations[b]):
            if now + duration <= shadow:
                return self.blocks[b][j]
        raise AssertionError("a block's least duration is one of its own")

    def _first_block(self, b: int, now: float, shadow: float) -> int | None:
        """The first block from ``b`` on holding a job short enough, by the tree."""
        tree, leaves = self.tree, self.leaves
        if b >= leaves:
            return None
        i = leaves + b
        while not now + tree[i] <= shadow:  # up while this subtree has none, then on to the next one to the right
            while i & 1:
                i >>= 1
            if not i:
                return None
            i += 1
        while i < leaves:
            i = 2 * i if now + tree[2 * i] <= shadow else 2 * i + 1
        return i - leaves


def _particular(job: JobView) -> bool:
    """Whether ``job`` asks for GPU fractions or runs on some GPU types only (the engine places it otherwise)."""
    return job.speeds is not None or job.gpu_milli < 1000


class WaitingIndex:
    """A VC's waiting jobs by GPU count, each count in queue order (a :class:`SizeQueue`): EASY's backfill asks for
    the next job that fits the idle GPUs and either ends by the shadow time or fits the spare GPUs, without
    stepping over every waiting job that does not.

    >>> from simcluster.job import Job
    >>> index = WaitingIndex()
    >>> for i, (gpus, duration) in enumerate([(8, 50.0), (2, 500.0), (4, 500.0), (2, 20.0)]):
    ...     index.add(Job(index=i, job_id=str(i), vc="v", gpu_num=gpus, submit_time=i, duration=1), i, duration)
    >>> first = index.next_job(None)
    >>> first[1], index.next_job(first)[1]
    (0, 1)
    >>> # after job 0: 4 GPUs idle, 2 to spare at a shadow time 100 s away: job 1 fits the spare GPUs; none to
    >>> # spare, job 3 ends by then (job 2, 4 GPUs, neither)
    >>> {gpus: e[1] for gpus, e in index.candidates(first, 4, 2, 0.0, 100.0).items()}
    {2: 1}
    >>> {gpus: e[1] for gpus, e in index.candidates(first, 4, 0, 0.0, 100.0).items()}
    {2: 3}
    """

    __slots__ = ("by_size", "entry_of", "particular", "sizes")

    def __init__(self) -> None:
        self.by_size: dict[int, SizeQueue] = {}
        self.sizes: list[int] = []  # the GPU counts of by_size, ascending
        self.entry_of: dict[JobView, Entry] = {}
        self.particular = 0  # waiting jobs that ask for GPU fractions or run on some GPU types only

    def __len__(self) -> int:
        return len(self.entry_of)

    def _size_queue(self, gpus: int) -> SizeQueue:
        queue = self.by_size.get(gpus)
        if queue is None:
            queue = self.by_size[gpus] = SizeQueue()
            insort(self.sizes, gpus)
        return queue

    def add(self, job: JobView, key: Any, duration: float) -> None:
        """File waiting ``job`` under its queue key ``key``, expected to run ``duration`` seconds."""
        entry = self.entry_of[job] = (key, job.index, job)
        self._size_queue(job.gpu_num).add(entry, duration)
        self.particular += _particular(job)

    def load(self, jobs: Iterable[tuple[JobView, Any, float]]) -> None:
        """File (job, key, duration) given in queue order into an empty index, a block at a time."""
        grouped: dict[int, tuple[list[Entry], list[float]]] = {}
        for job, key, duration in jobs:
            entry = self.entry_of[job] = (key, job.index, job)
            self.particular += _particular(job)
            entries, durations = grouped.setdefault(job.gpu_num, ([], []))
            entries.append(entry)
            durations.append(duration)
        for gpus, (entries, durations) in grouped.items():
            self._size_queue(gpus).load(entries, durations)

    def remove(self, job: JobView) -> None:
        self.by_size[job.gpu_num].remove(self.entry_of.pop(job))
        self.particular -= _particular(job)

    def next_job(self, after: Entry | None) -> Entry | None:
        """The first waiting job after ``after`` (None: from the start), of any GPU count."""
        found = [entry for gpus in self.sizes if (entry := self.by_size[gpus].next_any(after)) is not None]
        return min(found) if found else None

    def candidate(self, gpus: int, after: Entry, spare: int, now: float, shadow: float) -> Entry | None:
        """The first waiting job of ``gpus`` GPUs after ``after`` that fits ``spare`` or is expected to end by
        ``shadow`` when started at ``now``."""
        queue = self.by_size[gpus]
        return queue.next_any(after) if gpus <= spare else queue.next_short(after, now, shadow)

    def candidates(self, after: Entry | None, free: int, spare: int, now: float, shadow: float) -> dict[int, Entry]:
        """Per GPU count up to ``free``, :meth:`candidate` (counts with none left out): the first of them is the
        next job EASY's backfill tries."""
        found: dict[int, Entry] = {}
        for gpus in self.sizes:
            if gpus > free:
                break
            queue = self.by_size[gpus]
            if queue.count:
                entry = queue.next_any(after) if gpus <= spare else queue.next_short(after, now, shadow)
                if entry is not None:
                    found[gpus] = entry
        return found


@register_policy("easy-backfill")
class EasyBackfill(FifoBackfill):
    """EASY backfilling: the first job that cannot start gets a reservation that later jobs may not delay.

    The reservation is the earliest time enough GPUs free up by the running jobs' expected ends; a later
    job starts now if it is expected to end by then or fits in the GPUs the head leaves over.  Expected
    durations from ``--estimator`` (oracle by default; history, file, ebm), estimated at submission.
    """

    default_estimator = "oracle"
    indexes_queue: bool = True  # whether a long queue's waiting jobs are indexed (walk_index) or always walked

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.estimator = make_estimator(self.config, self.default_estimator)
        self.quality = EstimateQuality()
        self.expected: dict[JobView, float] = {}  # job → its estimated duration
        self._ends: dict[str, RunningOrder] = {}  # per VC, its running jobs by (expected end, GPUs)
        self._waiting: dict[str, WaitingIndex] = {}  # per VC, its waiting jobs by GPU count (walk_index)
        self._filed: dict[JobView, WaitingIndex] = {}  # waiting job → the index it is filed in
        self._joined: list[JobView] = []  # jobs that may have joined a queue since the last pass
        self._walked: dict[str, int] = {}  # per VC without an index, the waiting jobs its plain walks stepped over

    def on_submit(self, job: JobView, now: float) -> None:
        estimate = self.estimator.estimate(job, now)
        self.quality.record(estimate, job)
        self.expected[job] = estimate
        if self.indexes_queue:
            self._joined.append(job)

    def on_run_start(self, job: JobView, vc: VCView) -> None:
        ends = self._ends.get(vc.name)
        if ends is None:
            ends = self._ends[vc.name] = RunningOrder()
        ends.add((job.start_time + self.expected[job], job.gpu_num), job)  # type: ignore[operator]
        if self._filed:
            self._unfile(job)

    def on_finish(self, job: JobView, now: float) -> None:
        super().on_finish(job, now)
        self.estimator.observe(job, now)
        del self.expected[job]

    def on_run_stop(self, job: JobView, vc: VCView) -> None:
        self._ends[vc.name].remove(job)
        if self.indexes_queue:
            self._joined.append(job)  # (it may wait again: preempted, evicted or moved)

    def send(self, ctx: SchedulingContext, job: JobView, partition: str) -> None:
        super().send(ctx, job, partition)
        if self.indexes_queue:
            self._unfile(job)
            self._joined.append(job)

    def schedule(self, vc: VCView, ctx: SchedulingContext) -> None:
        index = self._synced(vc) if self.indexes_queue else None
        if index is None or len(vc.pending) <= SHORT_QUEUE:
            self.walk_queue(vc, ctx)
        else:
            self.walk_index(vc, ctx, index)
        if self.settings.borrow_idle:
            self.borrow(vc, ctx)

    def walk_queue(self, vc: VCView, ctx: SchedulingContext) -> None:
        """The pass as a walk over every waiting job in queue order (the rule :meth:`walk_index` follows)."""
        now, expected = ctx.now, self.expected
        reserved, shadow, spare = False, 0.0, 0  # the head's reservation, once a job could not start
        for job in list(vc.pending):  # (a copy: a start removes the job from the live queue)
            free = vc.free_gpus
            if not free:
                break
            if job.gpu_num > free:
                started = False
            elif not reserved or now + expected[job] <= shadow:  # (ending by the shadow time delays no one)
                started = ctx.try_start(job)
            elif job.gpu_num <= spare:
                started = ctx.try_start(job)
                spare -= job.gpu_num if started else 0
            else:
                started = False
            if not started and not reserved and job.vc == vc.name:  # the head (a borrower reserves nothing here)
                reserved, (shadow, spare) = True, self.reserve(job, vc, now)

    def walk_index(self, vc: VCView, ctx: SchedulingContext, index: WaitingIndex) -> None:
        """:meth:`walk_queue`'s pass, stepping only to the jobs it would try: until the head, every job in turn
        (the queue's first while every job before started); after it, :meth:`backfill`."""
        pending, after, skipped = vc.pending, None, False
        while free := vc.free_gpus:
            if skipped:  # (a borrower that did not start is still first in the queue)
                after = index.next_job(after)
                if after is None:
                    return
                job = after[2]
            else:
                job = pending.first()
                if job is None:
                    return
                after = index.entry_of[job]
            if job.gpu_num <= free and ctx.try_start(job):
                continue
            if job.vc == vc.name:  # the head (a borrower reserves nothing here)
                self.backfill(vc, ctx, index, after, *self.reserve(job, vc, ctx.now))
                return
            skipped = True

    def backfill(self, vc: VCView, ctx: SchedulingContext, index: WaitingIndex, after: Entry, shadow: float,
                 spare: int) -> None:
        """Try, in queue order after the head (``after``), each job that fits the idle GPUs and is expected to end
        by ``shadow`` or fits the ``spare`` GPUs (then holding them).  Each GPU count's next such job is kept and
        asked again only when it was tried or its rule changed (the idle and spare GPUs only shrink in a pass,
        and a job passed over under a looser rule is passed over under a stricter one)."""
        now, expected = ctx.now, self.expected
        free = self._room(vc, index)
        nexts = index.candidates(after, free, spare, now, shadow)
        while nexts:
            entry = min(nexts.values())
            job = entry[2]
            held = spare
            if now + expected[job] <= shadow:  # (ending by the shadow time delays no one)
                ctx.try_start(job)
            elif ctx.try_start(job):  # it holds spare GPUs past the shadow time
                spare -= job.gpu_num
            free = self._room(vc, index)
            for gpus in list(nexts):
                if gpus > free:
                    del nexts[gpus]
                elif gpus == job.gpu_num or spare < gpus <= held:
                    found = index.candidate(gpus, entry, spare, now, shadow)
                    if found is None:
                        del nexts[gpus]
                    else:
                        nexts[gpus] = found

    @staticmethod
    def _room(vc: VCView, index: WaitingIndex) -> int:
        """The most GPUs a waiting job may ask for and still start now: the VC's idle GPUs, and, while every waiting
        job runs on any GPU, fewer than the engine has found no room for since GPUs were last freed
        (``vc.unplaceable``: ``try_start`` refuses such a job at once, changing nothing)."""
        free = vc.free_gpus
        return free if index.particular else min(free, vc.unplaceable - 1)

    def _synced(self, vc: VCView) -> WaitingIndex | None:
        """The VC's waiting jobs indexed, as its queue holds them now; None when its queue is short and not indexed
        yet, or its order is not the policy's key alone (a tier's priority ranks the queue first): the plain walk."""
        if self._waiting:  # (else nothing is filed, and each queue is filed whole when first indexed)
            for job in self._joined:
                self._file(job)
        self._joined.clear()
        pending = vc.pending
        index = self._waiting.get(vc.name)
        if index is None:  # indexed once the plain walks since its last index stepped over a few times its queue
            walked = self._walked.get(vc.name, 0)
            if len(pending) <= SHORT_QUEUE or walked < REFILE_AFTER * len(pending):
                self._walked[vc.name] = walked + (len(pending) if vc.free_gpus else 0)
                return None
            self._walked[vc.name] = 0
        if pending:
            first, head = pending.first(), pending.first_entry()
            if (self.pending_key(first), first.index) != head:  # ranked before the policy's key
                return None
            if index is None or len(index) != len(pending) or index.entry_of.get(first, (None,))[0] != head[0]:
                index = self._refile(vc)  # (first pass; a queued job taken out for good: abandoned, declined)
        elif index is None or len(index):
            index = self._refile(vc)
        return index

    def _file(self, job: JobView) -> None:
        """Index ``job`` where it waits now, if it waits."""
        self._unfile(job)
        vc = self._vcs.get(job.queue_vc)
        if vc is not None and job in vc.pending:
            index = self._waiting.get(vc.name)
            if index is not None:  # (else the next pass there files its whole queue)
                index.add(job, self.pending_key(job), self.expected[job])
                self._filed[job] = index

    def _unfile(self, job: JobView) -> None:
        index = self._filed.pop(job, None)
        if index is not None:
            index.remove(job)

    def _refile(self, vc: VCView) -> WaitingIndex:
        """Index the VC's whole queue afresh (its first pass, or its keys changed: :meth:`forget_order`)."""
        old = self._waiting.get(vc.name)
        if old is not None:
            for job in old.entry_of:
                del self._filed[job]
        pending, filed = list(vc.pending), self._filed
        for job in pending:
            if job in filed:  # (a job moved here while filed elsewhere)
                self._unfile(job)
        index = self._waiting[vc.name] = WaitingIndex()
        key, expected = self.pending_key, self.expected
        index.load((job, key(job), expected[job]) for job in pending)
        self._filed.update(dict.fromkeys(pending, index))
        return index

    def forget_order(self, vc: VCView) -> None:
        """The VC's waiting jobs have new keys (``ctx.reorder``): index them afresh at the next pass."""
        index = self._waiting.pop(vc.name, None)
        if index is not None:
            for job in index.entry_of:
                del self._filed[job]

    def reserve(self, head: JobView, vc: VCView, now: float) -> tuple[float, int]:
        """The head's reservation (shadow time, spare GPUs), from the running jobs' expected ends."""
        shadow, spare = reservation_in(self._ends.get(vc.name) or RunningOrder(), head.gpu_num, vc.free_gpus, now)
        return max(shadow, now), spare

    def report(self) -> dict[str, Any]:
        return {"estimator": self.estimator.name, "estimate_quality": self.quality.report()}
