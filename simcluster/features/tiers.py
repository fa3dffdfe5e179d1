"""Tiers of work (docs/tiers.md): each job's priority, whether it is preemptible, and, with ``--kueue``, the Kueue
ClusterQueue its LocalQueue sends it to; per-queue and per-priority figures.

With ``--kueue`` the cluster's VCs are one pool (Kueue's ClusterQueues share nodes by quota, not by owning them:
:meth:`Tiers.cluster`); a job reaches a LocalQueue by its trace's ``local_queue`` column, else by its VC's name,
and its priority is its ``priority`` column, else its ``priority_class``'s value (a WorkloadPriorityClass of the
Kueue files).  What the files say that the simulator does not model is one warning per kind of thing.

>>> from simcluster.tiers.model import ClusterQueueSpec, KueueConfig, LocalQueueSpec
>>> kueue = KueueConfig({"a": ClusterQueueSpec("a")}, local_queues={"ml/team-a": LocalQueueSpec("team-a", "ml", "a")})
>>> kueue.cluster_queue_of("team-a"), kueue.cluster_queue_of("ml/team-a"), kueue.cluster_queue_of("other")
('a', 'a', None)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simcluster.cluster_spec import ONE_VC, ClusterSpec
from simcluster.features.base import Contribution, Ended, Feature
from simcluster.metrics.tiers import TierTimeline, nominal_gpus
from simcluster.settings.fields import ConfigError
from simcluster.settings.tiers import TierOptions, evicts_for_tiers, ranks_by_priority
from simcluster.tiers.eviction import Evictions, tier_rank
from simcluster.tiers.flavors import flavor_types
from simcluster.tiers.loaded import kueue_of
from simcluster.tiers.model import KueueConfig
from simcluster.traces.base import row_error
from simcluster.traces.tiers import TIER_COLUMNS

if TYPE_CHECKING:
    from simcluster.config import SimConfig
    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun
    from simcluster.traces.base import Trace

HOUR = 3600.0


class Tiers(Feature):
    name = "tiers"
    settings = TierOptions

    def cluster(self, spec: ClusterSpec, config: SimConfig, trace: Trace | None) -> ClusterSpec:
        """With ``--kueue``, the VCs' nodes as one pool that the ClusterQueues' quotas share."""
        if not config.kueue or spec.vcs == (ONE_VC,):
            return spec
        return replace(spec, groups=tuple(replace(g, vc=ONE_VC) for g in spec.groups))

    def in_play(self, run: ResolvedRun) -> bool:
        return bool(run.config.kueue) or (run.trace is not None and any(c in run.trace.frame for c in TIER_COLUMNS))

    def plan(self, run: ResolvedRun) -> TierPlan:
        """Each trace row's ClusterQueue, priority and preemptibility, checked against the Kueue files."""
        kueue = kueue_of(run.config.kueue) if run.config.kueue else None
        if kueue is not None and run.cluster.typed:
            flavor_types(kueue.flavors, run.cluster.gpu_types)  # (each flavor names one of them, or none: refused)
        if kueue is not None and "kueue" not in run.policy.cls.reads:
            raise ConfigError(f"--kueue: policy {run.policy.label.removeprefix('policy ')} does not read Kueue's "
                              "objects; run it with --policy kueue")
        trace = run.trace
        if trace is None:
            return TierPlan(kueue, None, None, None)
        frame = trace.frame
        priorities = _priorities(trace, _priority_classes(run.config.priority_classes, kueue))
        preemptible = frame["preemptible"].to_numpy(bool) if "preemptible" in frame else None
        queues = _cluster_queues(trace, kueue) if kueue is not None else None
        return TierPlan(kueue, priorities, preemptible, queues)

    def start(self, plan: TierPlan, jobs: list[Job], run: ResolvedRun) -> Contribution:
        for values, attribute in ((plan.priorities, "priority"), (plan.preemptible, "preemptible"),
                                  (plan.cluster_queues, "cluster_queue")):
            if values is not None:
                for job in jobs:
                    setattr(job, attribute, values[job.index])
        return TierResults(plan, run, _evictions(plan, run))


def _evictions(plan: TierPlan, run: ResolvedRun) -> Evictions | None:
    """The run's evictions where something may be evicted and its policy lets them act; None otherwise."""
    config = run.config
    if config.evict == "off" or not evicts_for_tiers(run.policy.cls):
        return None
    any_lower = config.evict == "lower-priority"
    some_preemptible = plan.preemptible is not None and any(plan.preemptible)
    mixed = plan.priorities is not None and len(set(plan.priorities)) > 1
    if not (some_preemptible or (any_lower and mixed)):
        return None
    interval = config.checkpoint_interval
    return Evictions(config.victims, config.eviction_cost, interval if isinstance(interval, (int, float)) else 0.0,
                     any_lower, config.seed)


@dataclass(frozen=True, eq=False)
class TierPlan:
    """What the trace's rows and the Kueue files say of each job (by trace row), None where nothing does."""

    kueue: KueueConfig | None
    priorities: tuple[int, ...] | None
    preemptible: tuple[bool, ...] | Any
    cluster_queues: tuple[str, ...] | None

    @property
    def tiered(self) -> bool:
        """Whether the trace gives its jobs tiers: priorities, or which are preemptible."""
        return self.priorities is not None or self.preemptible is not None


def _priority_classes(path: str | None, kueue: KueueConfig | None) -> dict[str, int]:
    """The priority classes by name: ``--priority-classes``' file's and the Kueue files' (a name both give must
    have one value)."""
    known = dict(kueue.priority_classes) if kueue is not None else {}
    if not path:
        return known
    given = kueue_of(path).priority_classes
    if not given:
        raise ConfigError(f"--priority-classes {path}: no WorkloadPriorityClass or PriorityClass in it")
    for name, value in given.items():
        if known.get(name, value) != value:
            raise ConfigError(f"--priority-classes {path}: class {name!r} has value {value} there and "
                              f"{known[name]} in --kueue's files")
    return known | dict(given)


def _priorities(trace: Trace, known: dict[str, int]) -> tuple[int, ...] | None:
    frame = trace.frame
    if "priority_class" in frame:
        classes = frame["priority_class"].tolist()
        given = frame["priority"].tolist() if "priority" in frame else [0] * len(classes)
        out = []
        for row, (name, value) in enumerate(zip(classes, given, strict=True)):
            if name and name not in known:
                listed = ", ".join(sorted(known)) or ("none: give --priority-classes FILE, or the "
                                                      "WorkloadPriorityClasses in --kueue's files")
                raise row_error(trace, row, "priority_class", f"priority class {name!r} is not defined (defined: "
                              f"{listed})")
            out.append(known[name] if name else int(value))
        return tuple(out)
    if "priority" in frame:
        return tuple(frame["priority"].astype(np.int64).tolist())
    return None


def _cluster_queues(trace: Trace, kueue: KueueConfig) -> tuple[str, ...]:
    """Each row's ClusterQueue: by its ``local_queue`` column, else by its VC's name as a LocalQueue's (or, with no
    LocalQueue of that name, a ClusterQueue's)."""
    frame = trace.frame
    column = "local_queue" if "local_queue" in frame else "vc"
    names = frame[column].tolist()
    known: dict[str, str | None] = {}
    out = []
    for row, name in enumerate(names):
        if name not in known:
            found = kueue.cluster_queue_of(name)
            if found is None and column == "vc" and name in kueue.cluster_queues:
                found = name
            known[name] = found
        found = known[name]
        if found is None:
            listed = ", ".join(sorted(kueue.local_queues)[:8]) or "none"
            how = "local queue" if column == "local_queue" else "VC (no local_queue column: its VC names its queue)"
            raise row_error(trace, row, column, f"{how} {name!r} is no LocalQueue of --kueue's files (LocalQueues: "
                          f"{listed})")
        out.append(found)
    return tuple(out)


class TierResults(Contribution):
    """Columns ``priority``, ``preemptible``, ``cluster_queue`` where the run has them; JCT, wait and preemption
    figures per ClusterQueue and per priority (``tiers``); the Kueue files' notes as warnings."""

    def __init__(self, plan: TierPlan, run: ResolvedRun, evictions: Evictions | None) -> None:
        self.plan = plan
        policy = run.policy.cls
        self.kueue_policy = "kueue" in policy.reads
        self.ranked = ranks_by_priority(policy) and plan.tiered
        self.evictions = evictions
        if self.ranked:
            self.queue_rank = tier_rank
        kueue = plan.kueue
        if kueue is not None and plan.cluster_queues:
            self.shares: TierTimeline | None = TierTimeline(kueue.cluster_queues)
        elif plan.tiered:
            self.shares = TierTimeline(tier_of=partial(tier_label, plan.priorities is not None,
                                                       plan.preemptible is not None))
        else:
            self.shares = None
        self.observers = tuple(o for o in (evictions, self.shares) if o is not None)
        if evictions is not None:
            self.pass_steps = (evictions,)

    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        reported = ended.reported
        if self.plan.priorities is not None:
            jobs["priority"] = [job.priority for job in reported]
        if self.plan.preemptible is not None:
            jobs["preemptible"] = [job.preemptible for job in reported]
        if self.plan.cluster_queues is not None:
            jobs["cluster_queue"] = [job.cluster_queue for job in reported]
        if self.evictions is not None:
            jobs["evictions"] = [job.evictions for job in reported]
        return jobs

    def figures(self, ended: Ended, jobs: pd.DataFrame) -> dict[str, Any]:
        groups = {}
        if "cluster_queue" in jobs:
            groups["by_cluster_queue"] = tier_figures(jobs, "cluster_queue")
        if "priority" in jobs:
            groups["by_priority"] = tier_figures(jobs, "priority")
        if "preemptible" in jobs:
            groups["by_preemptible"] = tier_figures(jobs, "preemptible")
        if self.evictions is not None:
            groups["evictions"] = self.evictions.figures()
        if self.shares is not None:
            kueue = self.plan.kueue
            groups["timeline"] = self.shares.figures(*_window(ended), ended.gpus,
                                                     nominal_gpus(kueue) if kueue is not None else None)
        return {"tiers": groups} if groups else {}

    def tables(self, ended: Ended) -> dict[str, pd.DataFrame]:
        """``tiers_timeline``: each ClusterQueue's (without Kueue, each tier's) GPUs over the run (time-averaged
        intervals), for the report."""
        return {} if self.shares is None else {"tiers_timeline": self.shares.share_over_time(*_window(ended))}

    def warnings(self, ended: Ended) -> list[str]:
        kueue = self.plan.kueue
        out = [f"--kueue: not modelled: {note}" for note in kueue.not_modeled] if kueue is not None else []
        policy = ended.run.policy
        name = policy.label.removeprefix("policy ")
        if self.kueue_policy and self.plan.preemptible is not None:
            out.append("the kueue policy preempts by priority and its ClusterQueues' rules: the trace's preemptible "
                       "column is not read (give preemptible jobs a lower priority class)")
        if self.plan.tiered and not self.kueue_policy and not self.ranked:
            out.append(f"policy {name} orders its queue by its own key (its passes compare waiting with running jobs, "
                       "or it allocates by its own model): the trace's priorities do not order it")
        elif self.ranked and self.evictions is None and ended.run.config.evict != "off" \
                and not evicts_for_tiers(policy.cls) and not policy.cls.preemptive and self.plan.preemptible is not None:
            out.append(f"policy {name} places or shares GPUs itself: its preemptible jobs are not evicted for "
                       "higher tiers")
        return out


def tier_label(by_priority: bool, by_kind: bool, job: Job) -> str:
    """A job's tier without Kueue, for the share over time: its priority, and whether it is spot (preemptible).

    >>> from simcluster.job import Job
    >>> job = Job(0, "j", "vc0", 8, 0, 60, priority=2, preemptible=True)
    >>> tier_label(True, True, job), tier_label(False, True, job), tier_label(True, False, job)
    ('priority 2, spot', 'spot', 'priority 2')
    """
    parts = [f"priority {job.priority}"] if by_priority else []
    if by_kind:
        parts.append("spot" if job.preemptible else "guaranteed")
    return ", ".join(parts)


def _window(ended: Ended) -> tuple[float, float]:
    """The run's span: from its first submission to when it stopped."""
    start = float(min((job.submit_time for job in ended.jobs), default=0.0))
    return start, max(float(ended.end), start)


def tier_figures(jobs: pd.DataFrame, by: str) -> dict[str, dict[str, Any]]:
    """Per value of column ``by``: jobs, finished, mean and 95th-percentile JCT and queueing delay (hours), and
    preemptions.

    >>> jobs = pd.DataFrame({"q": ["a", "a", "b"], "jct": [3600.0, 7200.0, 1800.0], "queue": [0.0, 3600.0, 0.0],
    ...                      "preemptions": [0, 2, 0], "end_time": [3600.0, 9000.0, 1800.0]})
    >>> tier_figures(jobs, "q")["a"]
    {'jobs': 2, 'finished': 2, 'jct_mean_h': 1.5, 'jct_p95_h': 1.95, 'queue_mean_h': 0.5, 'queue_p95_h': 0.95, 'preemptions': 2}
    """
    out: dict[str, dict[str, Any]] = {}
    for value, group in jobs.groupby(by, sort=True):
        finished = group["end_time"].notna()
        jct = group.loc[finished, "jct"].to_numpy(float) if "jct" in group else np.array([])
        queue = group["queue"].to_numpy(float) if "queue" in group else np.array([])
        out[str(value)] = {
            "jobs": len(group), "finished": int(finished.sum()),
            "jct_mean_h": _hours(np.mean(jct)) if len(jct) else None,
            "jct_p95_h": _hours(np.percentile(jct, 95)) if len(jct) else None,
            "queue_mean_h": _hours(np.nanmean(queue)) if len(queue) else None,
            "queue_p95_h": _hours(np.nanpercentile(queue, 95)) if len(queue) else None,
            "preemptions": int(group["preemptions"].sum()),
        }
    return out


def _hours(seconds: float) -> float:
    return round(float(seconds) / HOUR, 4)
