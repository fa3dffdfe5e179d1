"""ElasticFlow (ASPLOS'23) and its EDF baseline: elastic jobs with deadlines, admitted only if they can be met.

Both decide every job's GPU count at once when something happens (an arrival, a completion, a step of a
plan), from the cores in :mod:`simcluster.elastic.elasticflow_plan` and :mod:`simcluster.elastic.edf`, and
carry it out with :func:`~simcluster.sdk.apply_allocations`.  A job's speed does not depend on where its
GPUs are (the A100 table has one rate per GPU count), so GPUs are placed simply: a job keeps the GPUs it
holds where it can, and takes new ones on the node that fits them best.

Jobs without a deadline are *best-effort*: never declined, they take what the deadline jobs leave now,
in submission order.  The jobs' scaling models come from an ElasticFlow trace
(``elasticflow/traces/clusterNN.csv``): iterations at the A100 rate of their global batch and GPU count.

With ``--arrivals-wait`` the artifact's *slot batching* holds: after a decision at *t*, whatever happens
before *t* + ``--schedule-interval`` waits until then and is decided on together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from simcluster.elastic.edf import edf_admit, edf_allocate
from simcluster.elastic.elasticflow_plan import DeadlineJob, allocate_spare, plan_in_order
from simcluster.elastic.work import ElasticFlowWork, NotElastic
from simcluster.policies.elasticflow_nodes import NodeBook, artifact_switches
from simcluster.policies.elasticflow_overheads import is_restart_round, overhead_seconds
from simcluster.sdk import (
    JobView,
    Plan,
    Policy,
    SchedulingContext,
    VCView,
    apply_allocations,
    register_policy,
    setting,
)

OVERHEADS = ("none", "restart-delay", "artifact")


@dataclass(frozen=True)
class DeadlineSettings:
    slot: float = setting(0.0, "Plan on a grid of this many seconds from now, as the artifact does (60): deadlines "
                          "and plans' ends rounded up to it, a job keeping its GPUs until its rounded end; 0: exact "
                          "time.", min=0)
    overheads: str = setting("none", "What a start or a change of GPUs costs: none; restart-delay (the run's "
                             "--restart-delay at each start and change of GPUs); artifact (ElasticFlow's model: at "
                             "every decision each job with GPUs loses 2 s, 7 s on clusters of 256 GPUs or more, plus "
                             "2 × (log2 GPUs + 1) s on GPUs it has not held since the last restart round; every "
                             "60th decision is a restart round, 27 s more, 47 s on large clusters).",
                             choices=OVERHEADS)
    rerank: str = setting("lazy", "Spare GPUs go one level-step at a time to the job of highest marginal return; "
                          "each step changes the others' returns a little. lazy: only the job about to be chosen is "
                          "re-planned, and goes back in the queue if it no longer leads (a plan or two a step); all: "
                          "every job is re-planned after each step, as the artifact does (a plan per job a step: "
                          "far slower on large clusters). EDF has no hand-out and ignores it.", choices=("lazy", "all"))
    replan: str = setting("current", "When to decide again besides arrivals, completions and changes of the VC's "
                          "GPUs: current (the next step of the plans now in force); every (also the steps of plans "
                          "made by earlier decisions, since re-planned, as the artifact's figures here were "
                          "reproduced with).", choices=("current", "every"))
    overhead_cache: str = setting("job", "(overheads=artifact) What the cache of GPUs seen since the last restart "
                                  "round is keyed by: job (a job on the very GPUs it held before pays only the "
                                  "base cost); ranks (any job on a set of GPUs that any job held before, as the "
                                  "artifact keys its cache by the GPU ranks alone); placement (the ranks the "
                                  "artifact's placement would give: every job placed afresh at each decision, "
                                  "largest first, ties by deadline, packed from GPU 0, so a job's key is its first "
                                  "rank and its count); nodes (the ranks the artifact's own node bookkeeping gives: "
                                  "every job taken off its nodes and placed again at each decision, its free nodes "
                                  "kept sorted by their index within their switch, nodes shared by small jobs; see "
                                  "simcluster.policies.elasticflow_nodes).",
                                  choices=("job", "ranks", "placement", "nodes"))
    switches: int = setting(0, "(overhead_cache=nodes) How many switches the artifact's cluster has, its nodes split "
                            "evenly among them (they order its free nodes); 0: as the artifact's cluster spec for the "
                            "VC's node count (n64g8: two; its others: one).", min=0)
    restart_round: str = setting("cleared", "(overheads=artifact) How a restart round meets the cache: cleared (first: "
                                 "every job pays the restart cost); after (as the artifact: a job on GPUs in the cache "
                                 "pays only the base cost, and the cache is cleared once the round's GPUs are added "
                                 "to it, so that the next round finds none).", choices=("cleared", "after"))
    finish_round: str = setting("exact", "When a job's completion is decided on: exact (when it ends); rounded (as "
                                "the artifact: at its plan's end, rounded up to the slot grid, plus the overhead of "
                                "its last decision; its GPUs idle until then). Needs slot > 0 to differ; EDF ignores it.",
                                choices=("exact", "rounded"))
    unfinished: bool = setting(False, "(finish_round=rounded, overheads=artifact, overhead_timing=next-round) A "
                               "job that ended here is still planned at a decision before its end event, for the "
                               "iterations its last overhead cost (the artifact finds it short of them, idle since "
                               "its end), its GPUs held by no one; it ends at the end event of that plan.")
    judge: str = setting("end", "(unfinished=true) What a job's deadline is judged by: end (when it ends here); "
                         "last-plan (as the artifact, which judges a job at its end event by the exact end its last "
                         "plan predicts: a job ended here but still planned for its last overhead's iterations is "
                         "judged by the end of its last such plan, late if that is past its deadline; jobs.csv then "
                         "has a judged_end column). EDF ignores it.", choices=("end", "last-plan"))
    plan_steps: str = setting("all", "Which steps of the plans bring a decision (besides arrivals and completions): "
                              "all (the next step of any plan); before-ends (as the artifact: the next step only if "
                              "it comes before every plan's end on the slot grid, its overhead not yet added; the "
                              "artifact adds its scale event only before the first event in its queue, where each "
                              "job's end event then stands, and a step at or after one is not a round). EDF ignores it.",
                              choices=("all", "before-ends"))
    gpu_time: str = setting("exact", "How the spare-GPU hand-out counts a plan's GPU-seconds: exact (to its end); "
                            "artifact (as the artifact's allocation table does: the last count runs on to the first "
                            "breakpoint after the period the plan ends in). EDF ignores it.", choices=("exact", "artifact"))
    overhead_timing: str = setting("now", "(overheads=artifact) When a decision's overhead is paid: now (a pause "
                                   "at the decision, delaying the job's end); next-round (as the artifact: taken "
                                   "out of the progress the job made by the next decision, at most all of it, and "
                                   "forgiven if the job ends first, so that the last decision's overhead never "
                                   "makes a job late).", choices=("now", "next-round"))


@dataclass(frozen=True)
class EdfSettings(DeadlineSettings):
    admission: bool = setting(False, "Admission control (the artifact's edf-accessctrl): decline an arrival batch "
                              "when planning it greedily with the admitted jobs makes any of them late.")


@dataclass
class VcState:
    """What a deadline policy keeps of one VC between its decisions."""

    jobs: dict[JobView, DeadlineJob] = field(default_factory=dict)  # jobs seen (admitted or best-effort), not done
    held_until: float = -math.inf  # (slot batching) nothing is decided before this
    rounds: int = 0  # decisions made (artifact overheads: every 60th is a restart round)
    cache: set[tuple[str, tuple[tuple[int, Any], ...]]] = field(default_factory=set)  # (artifact) GPUs held before
    wake: float | None = None  # when the last decision asked to decide again (None: at the next event)
    changed: bool = True  # a job ended or the VC's GPUs changed since the last decision
    total: int = 0  # the VC's GPUs that were up at the last decision
    owed: dict[JobView, tuple[float, float, float]] = field(default_factory=dict)  # (next-round) seconds, since, rate
    carry: dict[JobView, float] = field(default_factory=dict)  # (next-round) iterations lost, not yet charged
    charged: dict[JobView, float] = field(default_factory=dict)  # (artifact) each job's overhead at the last decision
    releases: list[float] = field(default_factory=list)  # (finish_round=rounded) when completions are decided on
    # (finish_round=rounded) jobs ended here that the artifact still runs: their last overhead unpaid at its next round
    phantoms: dict[str, Phantom] = field(default_factory=dict)
    book: NodeBook | None = None  # (overhead_cache=nodes) the artifact's node bookkeeping
    ghost_owed: dict[str, float] = field(default_factory=dict)  # (overhead_cache=nodes) phantoms' overheads now


@dataclass
class Phantom:
    """A job that has ended here but that the artifact's simulator still runs until its end event (its plan's
    rounded end plus its last overhead): a round before then finds it short of the iterations that overhead cost,
    idle since its exact end, and plans the rest (``finish_round=rounded``).  Planned with the others, its GPUs
    held in the plans but given to no one."""

    info: DeadlineJob
    since: float  # when it was last planned (or ended)
    real_end: float  # when its plan ends exactly (no progress after it)
    owed: float  # overhead seconds owed from ``since`` on
    gpus: int  # GPUs its plan gives it from ``since``
    release: float  # the artifact's end event: from then on it is gone
    job_id: str = ""  # (judge=last-plan) the job's id, for the end it is judged by
    rate: float = 0.0  # iterations per second from ``since`` on (its GPUs then)


class DeadlinePolicy(Policy):
    """What ElasticFlow and EDF share: when they decide, who is new, how counts become GPUs and costs."""

    elastic = True
    priority_first = False  # (it allocates by its own model: the trace's priorities do not order it)
    preemptive = True
    own_placement = "its own allocation"
    reads: ClassVar[frozenset[str]] = frozenset({"schedule_interval", "arrivals_wait", "restart_delay"})
    cap_rule: ClassVar[str] = "measured"  # the GPU cap of each job (ElasticFlowThroughputs.max_gpus)
    trace_format: ClassVar[str] = "elasticflow"  # its jobs need ElasticFlow's models (the conformance kit's traces)
    end_events: ClassVar[bool] = False  # whether finish_round applies (the artifact's EDF decides at the exact end)
    Settings = DeadlineSettings

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self._vcs: dict[str, VcState] = {}
        self._judged: dict[str, float] = {}  # (judge=last-plan) job id -> the end its deadline is judged by

    def judged_ends(self) -> dict[str, float]:
        """(judge=last-plan) Jobs ended here whose deadline the artifact judges by a later plan's end."""
        return dict(self._judged)

    # --- what each policy decides ----------------------------------------------------------------------
    def admits(self, admitted: list[DeadlineJob], arriving: list[DeadlineJob], total: int, now: float) -> bool:
        return True

    def counts(self, admitted: list[DeadlineJob], total: int, now: float) -> tuple[dict[str, int], float | None]:
        """GPUs now for each admitted job (by key), and when the decision must be made again (None: at the next
        arrival or completion)."""
        raise NotImplementedError

    # --- the mechanism ---------------------------------------------------------------------------------
    def schedule(self, vc: VCView, ctx: SchedulingContext) -> None:
        now = ctx.now
        if not len(vc.pending) and not vc.running:
            idle = self._vcs.get(vc.name)
            if idle is None or not idle.releases:
                return
            if not any(t <= now for t in idle.releases):  # (finish_round=rounded: a job's end event is a round
                held = idle.held_until if self.config.arrivals_wait else now  # even with nothing left to run)
                ctx.wake_at(max(min(idle.releases), held))
                return
        state = self._vcs.setdefault(vc.name, VcState())
        if self.config.arrivals_wait and now < state.held_until:
            ctx.wake_at(state.held_until)
            return
        known = state.jobs
        total = sum(node.gpu_count for node in vc.nodes if node.up)
        newcomers = [job for job in vc.pending if job not in known]
        if state.releases:  # (finish_round=rounded) a completion is decided on at its job's end event
            due = any(t <= now for t in state.releases)
            state.releases = [t for t in state.releases if t > now]
            state.changed = state.changed or due  # (an end event is a round, whatever was decided since the end)
            if not due and not newcomers and state.releases and now != state.wake:
                ctx.wake_at(min(state.releases))
                return
        if (self.settings.replan == "current" and not newcomers and not state.changed and total == state.total
                and now != state.wake):
            return  # a wake asked for by a decision since re-planned: nothing to decide
        state.changed, state.total = False, total
        lost = self._owed_iterations(vc, state, now)
        for job in [*vc.pending, *vc.running]:
            if job in known:
                known[job].work = _iterations_left(job, now) + lost.get(job, 0.0)
        arriving = {job: self._deadline_job(job, total, now) for job in newcomers if job.deadline is not None}
        admitted = [d for job, d in known.items() if job.deadline is not None]
        phantoms = self._phantoms_now(state, now)
        admitted += [ghost.info for ghost in phantoms]
        if arriving and not self.admits(admitted, list(arriving.values()), total, now):
            for job in arriving:
                ctx.decline(job)
        else:
            known.update(arriving)
            admitted += arriving.values()
        for job in newcomers:
            if job.deadline is None:
                known[job] = self._deadline_job(job, total, now)
        counts, again = self.counts(admitted, total, now) if admitted else ({}, None)
        free = total - sum(counts.values())
        for job, info in known.items():  # best-effort jobs, in submission order
            if job.deadline is None:
                give = max((g for g in info.levels if g <= free), default=0)
                counts[info.key] = give
                free -= give
        for ghost in phantoms:  # (their GPUs idle: held by the artifact's plans, by no job here)
            ghost.gpus, ghost.since = counts.pop(ghost.info.key, 0), now
            ghost.rate = ghost.info.rate(ghost.gpus) if ghost.gpus else 0.0
        by_key = {info.key: job for job, info in known.items()}
        plans = place(vc, {by_key[key]: gpus for key, gpus in counts.items() if gpus})
        overheads = self.settings.overheads
        apply_allocations(ctx, vc, plans, delay=None if overheads == "restart-delay" else 0.0)
        if overheads == "artifact":
            self._charge_artifact_overheads(vc, ctx, total, state, lost, phantoms)
        for ghost in phantoms:
            plan = ghost.info.plan
            ghost.real_end = plan.real_end if plan is not None else now
            if plan is not None and self.settings.judge == "last-plan":  # (the artifact: its last plan's end)
                self._judged[ghost.job_id] = plan.real_end
            owed = state.ghost_owed.pop(ghost.info.key, None)  # (overhead_cache=nodes: from its ranks)
            if owed is None:
                owed = overhead_seconds(ghost.gpus, total, False, cached=True)
            ghost.owed = owed if ghost.gpus else 0.0
            # (its end event moves to its new plan's end plus its overhead at every round, as any job's: none at
            # the old one)
            if ghost.release in state.releases:
                state.releases.remove(ghost.release)
            ghost.release = (plan.end if plan is not None else now) + ghost.owed
            state.releases.append(ghost.release)  # (its end event is a round, as any job's)
            state.changed = True
        if self.config.arrivals_wait:
            state.held_until = now + self.config.schedule_interval
            if again is not None:
                again = max(again, state.held_until)
        state.wake = again
        if again is not None:
            ctx.wake_at(again)
        later = [t for t in state.releases if t > now]
        if later:  # (finish_round=rounded) the next end event of a job ended here
            ctx.wake_at(max(min(later), state.held_until if self.config.arrivals_wait else now))

    def on_finish(self, job: JobView, now: float) -> None:
        for state in self._vcs.values():
            info = state.jobs.pop(job, None)
            if info is not None:
                state.changed = True
                if self.end_events and self.settings.finish_round == "rounded" and info.plan is not None:
                    release = info.plan.end + state.charged.get(job, 0.0)
                    state.releases.append(max(release, now))
                    if release > now:
                        seconds, since, rate = state.owed.get(job, (0.0, now, 0.0))
                        short = min(seconds, max(0.0, now - since)) * rate
                        if short > 0 and self.settings.overheads == "artifact" and self.settings.unfinished:
                            info.work, info.gpus = short, 0
                            # (the artifact runs it on, at its GPUs, to its plan's real end: less short by then)
                            ends = max(now, info.plan.real_end)
                            state.phantoms[info.key] = Phantom(info, now, ends, 0.0, 0, release, job_id=job.job_id,
                                                               rate=rate)
            state.charged.pop(job, None)
            state.owed.pop(job, None)

    def _phantoms_now(self, state: VcState, now: float) -> list[Phantom]:
        """The phantoms still in the artifact's simulation at ``now``, their iterations left brought up to now."""
        for key, ghost in list(state.phantoms.items()):
            if now >= ghost.release:
                del state.phantoms[key]
                continue
            # what it made since, at its GPUs then, up to its plan's real end, its overhead out of the start (the
            # artifact's run_all_jobs)
            made = min(now, ghost.real_end) - ghost.since - ghost.owed
            if made > 0:
                ghost.info.work -= made * ghost.rate
            if ghost.info.work <= 1e-9:
                del state.phantoms[key]
        return list(state.phantoms.values())

    def _deadline_job(self, job: JobView, total: int, now: float) -> DeadlineJob:
        work = job.elastic.model if job.elastic is not None else None
        if not isinstance(work, ElasticFlowWork):
            raise NotElastic(f"{self.name} needs jobs of ElasticFlow's models (an ElasticFlow trace); job "
                             f"{job.job_id} is not one")
        table, model, batch = work.table, work.model_name, work.batch
        cap = min(table.max_gpus(model, batch, rule=self.cap_rule), total)
        rates = {g: table.rate(model, batch, g) for g in table.levels(model, batch, cap)}
        deadline = math.inf if job.deadline is None else job.deadline
        return DeadlineJob(job.job_id, _iterations_left(job, now), deadline, sorted(rates), rates.__getitem__)

    def _owed_iterations(self, vc: VCView, state: VcState, now: float) -> dict[JobView, float]:
        """(overhead_timing=next-round) The iterations each job loses now to the overhead of the last decision:
        at most what it made since, none if it has ended."""
        lost, state.carry = state.carry, {}
        running = set(vc.running)
        for job, (seconds, since, rate) in state.owed.items():
            if job in running:
                lost[job] = lost.get(job, 0.0) + min(seconds, max(0.0, now - since)) * rate
        state.owed.clear()
        return lost

    def _charge_artifact_overheads(self, vc: VCView, ctx: SchedulingContext, total: int, state: VcState,
                                   lost: dict[JobView, float] | None = None,
                                   phantoms: list[Phantom] | None = None) -> None:
        """ElasticFlow's simulated overheads (see the ``overheads`` setting), charged as each job's restart delay
        (``overhead_timing=now``), or owed until the next decision and charged then (``next-round``)."""
        restart = is_restart_round(state.rounds)
        state.rounds += 1
        clear_after = restart and self.settings.restart_round == "after"
        if restart and not clear_after:
            state.cache.clear()
        later = self.settings.overhead_timing == "next-round"
        first_rank: dict[JobView, int] = {}
        if self.settings.overhead_cache == "nodes":
            ranks = self._artifact_ranks(vc, state, phantoms or [])
            first_rank = {job: ranks[job.job_id] for job in vc.running if job.job_id in ranks}
            for ghost in phantoms or []:
                if ghost.gpus and ghost.info.key in ranks:
                    held = ("", ((ranks[ghost.info.key], ghost.gpus),))
                    state.ghost_owed[ghost.info.key] = overhead_seconds(ghost.gpus, total, restart,
                                                                        cached=held in state.cache)
                    state.cache.add(held)
        elif self.settings.overhead_cache == "placement":
            at = 0
            ranked: dict[str, int] = getattr(self, "_order", {})
            for job in sorted(vc.running, key=lambda j: (-j.gpu_num, ranked.get(j.job_id, math.inf), _deadline(j),
                                                         j.submit_time, j.job_id)):
                first_rank[job] = at
                at += job.gpu_num
        for job in vc.running:
            if job in first_rank:
                held = ("", ((first_rank[job], job.gpu_num),))
            elif self.settings.overhead_cache == "ranks":
                held = ("", tuple(sorted((node.index, tuple(sorted(ids))) for node, ids in job.allocation)))
            else:
                held = (job.job_id, tuple(sorted((node.index, len(ids)) for node, ids in job.allocation)))
            delay = overhead_seconds(job.gpu_num, total, restart, cached=held in state.cache)
            state.cache.add(held)
            state.charged[job] = delay
            plan = [(node, len(ids)) for node, ids in job.allocation]
            if not later:
                ctx.resize(job, plan, delay=delay)
                continue
            rate = state.jobs[job].rate(job.gpu_num) if job in state.jobs else 0.0
            state.owed[job] = (delay, ctx.now, rate)
            behind = (lost or {}).pop(job, 0.0)
            if behind > 0 and rate > 0:
                ctx.resize(job, plan, delay=behind / rate)
        for job, behind in (lost or {}).items():  # lost by jobs that hold no GPUs now: charged at their next start
            if behind > 0 and job in state.jobs:
                state.carry[job] = behind
        if clear_after:  # (the artifact: cleared once this round's GPUs are in it)
            state.cache.clear()

    def _artifact_ranks(self, vc: VCView, state: VcState, phantoms: list[Phantom]) -> dict[str, int]:
        """(overhead_cache=nodes) Each job's first rank (by id) as the artifact's node bookkeeping places the
        running jobs and the phantoms again, in the hand-out's order."""
        if state.book is None:
            nodes = list(vc.nodes)
            switches = self.settings.switches or artifact_switches(len(nodes))
            per_node = max((node.gpu_count for node in nodes), default=1)
            state.book = NodeBook(switches, max(1, len(nodes) // switches), per_node)
        ranked: dict[str, int] = getattr(self, "_order", {})
        entries = [(job.job_id, job.gpu_num, _deadline(job), job.submit_time) for job in vc.running]
        entries += [(g.info.key, g.gpus, g.info.deadline, -math.inf) for g in phantoms if g.gpus]
        entries.sort(key=lambda e: (ranked.get(e[0], math.inf), e[2], e[3], e[0]))
        return state.book.round([(key, gpus, deadline) for key, gpus, deadline, _ in entries])


def _deadline(job: JobView) -> float:
    return math.inf if job.deadline is None else job.deadline


def _iterations_left(job: JobView, now: float) -> float:
    elastic = job.elastic
    assert elastic is not None
    return max(0.0, elastic.model.total - elastic.progress_at(job, now))


def place(vc: VCView, counts: dict[JobView, int]) -> dict[JobView, Plan]:
    """Plans giving each job of ``counts`` that many GPUs of ``vc`` (the counts must fit in its GPUs that are
    up): a running job keeps the GPUs it holds, as many as it keeps; new GPUs come from the nodes it holds,
    then from the node with the fewest free GPUs that still fits what it lacks (else the most free)."""
    nodes = list(vc.nodes)
    free = [node.free_gpus if node.up else 0 for node in nodes]  # by the node's position in ``nodes``
    position = {id(node): i for i, node in enumerate(nodes)}
    held: dict[JobView, dict[int, int]] = {}
    for job in vc.running:
        keep = counts.get(job, 0)
        kept: dict[int, int] = {}
        for node, ids in sorted(job.allocation, key=lambda a: -len(a[1])):
            i, take = position[id(node)], min(len(ids), keep)
            if take:
                kept[i] = take
            keep -= take
            free[i] += len(ids) - take
        held[job] = kept
    plans: dict[JobView, Plan] = {}
    for job, want in sorted(counts.items(), key=lambda item: -item[1]):
        plan = dict(held.get(job, {}))
        need = want - sum(plan.values())
        for i in list(plan):
            add = min(need, free[i])
            plan[i] += add
            free[i] -= add
            need -= add
        while need > 0:
            fitting = [f for f in free if f >= need]
            i = free.index(min(fitting) if fitting else max(free))  # (the first such node, as min and max pick)
            add = min(need, free[i])
            if add <= 0:
                raise ValueError(f"{job.job_id}: {want} GPUs do not fit in what is free")
            plan[i] = plan.get(i, 0) + add
            free[i] -= add
            need -= add
        plans[job] = [(nodes[i], gpus) for i, gpus in plan.items()]
    return plans


@register_policy("elasticflow")
class ElasticFlow(DeadlinePolicy):
    """ElasticFlow: a job is admitted only if its deadline can be met; spare GPUs go by marginal return.

    At each arrival batch (the jobs arriving at one instant) the admitted jobs and the newcomers are planned
    together, in deadline order, each at its *minimum satisfactory share* (the fewest GPUs that still meet its
    deadline, given what earlier deadlines take of the future); if any plan misses its deadline the whole batch
    is declined.  Every admitted job then gets its plan's GPUs now, and GPUs no plan uses now go, one level at
    a time, to the job whose plan's GPU-seconds grow most per GPU added (waiting jobs first).  Decisions are
    made again at every arrival, completion and step of a plan.  GPU counts are the A100 table's powers of two,
    up to ElasticFlow's per-model caps.  Jobs without a deadline are best-effort (see the module's docstring).
    Needs an ElasticFlow trace; ``--preset elasticflow-artifact`` adds the artifact's slot grid, batching and
    overheads.
    """

    cap_rule = "elasticflow"
    end_events = True

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        # the admission's plans (when, of which jobs): an admitted batch's decision plans the same jobs again
        self._admission: tuple[float, list[DeadlineJob], tuple[list[Any], Any, bool]] | None = None
        self._order: dict[str, int] = {}  # (overhead_cache=placement) each job's place in the last hand-out's order

    def admits(self, admitted: list[DeadlineJob], arriving: list[DeadlineJob], total: int, now: float) -> bool:
        jobs = [*admitted, *arriving]
        planned = plan_in_order(jobs, total, now, self.settings.slot or None)  # (admit's test, plans kept)
        self._admission = (now, jobs, planned)
        return planned[2]

    def counts(self, admitted: list[DeadlineJob], total: int, now: float) -> tuple[dict[str, int], float | None]:
        slot = self.settings.slot or None
        admission, self._admission = self._admission, None
        if self.settings.rerank == "lazy" and sum(max(job.levels, default=0) for job in admitted) <= total:
            # room for every job at its top level: no order of the hand-out gives other counts, and none will
            # until a job arrives or ends, so no plan is needed and no decision before then
            return {job.key: max(job.levels, default=0) for job in admitted}, None
        if admission and admission[0] == now and len(admission[1]) == len(admitted) and all(
                a is b for a, b in zip(admission[1], admitted, strict=True)):
            plans, line, _ = admission[2]
        else:
            plans, line, _ = plan_in_order(admitted, total, now, slot)
        for job, plan in zip(admitted, plans, strict=True):
            job.plan, job.gpus = plan, plan.gpus_at(now)
        order: list[DeadlineJob] = []
        if self.settings.gpu_time == "artifact":  # (as the artifact: its job list sorted by deadline first)
            admitted = sorted(admitted, key=lambda job: job.deadline)
        allocate_spare(admitted, line, now, slot, rerank=self.settings.rerank, gpu_time_rule=self.settings.gpu_time,
                       order_out=order)
        self._order = {job.key: i for i, job in enumerate(order or admitted)}
        steps = [t for job in admitted if job.plan is not None for t, _ in job.plan.steps if t > now]
        again = min(steps, default=None)
        if again is not None and self.settings.plan_steps == "before-ends":
            ends = [job.plan.end for job in admitted if job.plan is not None and job.plan.end > now]
            if ends and again >= min(ends):  # (the artifact: a scale event only before its first end event)
                again = None
        return {job.key: job.gpus for job in admitted}, again


@register_policy("edf")
class Edf(DeadlinePolicy):
    """Earliest deadline first, elastic and greedy, as ElasticFlow's artifact defines its EDF baseline.

    At every arrival and completion, jobs in deadline order each take as many GPUs as they can use (the
    largest measured count of their model and batch, at most 64) where that many are free, else the largest
    measured count that fits.  Without admission every job runs, late or not; with ``admission`` (the
    artifact's edf-accessctrl) an arrival batch is declined when planning it greedily with the admitted jobs
    would make any of them late.  Jobs without a deadline are best-effort.  Needs an ElasticFlow trace;
    ``--preset elasticflow-artifact --policy edf`` runs it with the artifact's slot grid and batching (the
    artifact's EDF pays no overheads).
    """

    Settings = EdfSettings

    def admits(self, admitted: list[DeadlineJob], arriving: list[DeadlineJob], total: int, now: float) -> bool:
        return not self.settings.admission or edf_admit(admitted, arriving, total, now, self.settings.slot or None)

    def counts(self, admitted: list[DeadlineJob], total: int, now: float) -> tuple[dict[str, int], float | None]:
        return edf_allocate(admitted, total), None

    def _charge_artifact_overheads(self, vc: VCView, ctx: SchedulingContext, total: int, state: VcState,
                                   lost: dict[JobView, float] | None = None,
                                   phantoms: list[Phantom] | None = None) -> None:
        """The artifact's EDF pays no overhead."""


__all__ = ["DeadlinePolicy", "Edf", "ElasticFlow", "place"]
