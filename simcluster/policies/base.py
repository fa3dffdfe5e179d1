"""What a scheduling policy is: the contract between a policy and the engine.

A policy orders jobs and says which to start or preempt; it never picks GPUs (that is the placement's
job) and never records metrics (the observers').  It acts through a :class:`SchedulingContext` that the
engine hands it for one VC at one instant, and reads the cluster through read-only views
(:mod:`simcluster.views`).  Built-in policies and plug-ins are written against this same contract;
``docs/policies/write-your-own.md`` is the guide.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

from simcluster.config import SimConfig
from simcluster.queue import submit_order
from simcluster.registry import Registry
from simcluster.settings.fields import ConfigError, check_range, coerce, did_you_mean
from simcluster.views import ClusterView, JobView, VCView


class SchedulingContext(Protocol):
    """What a policy may do to one VC at one instant (the ``ctx`` of :meth:`Policy.schedule`).

    Every decision goes through here; the policy never changes a job, a node or a queue itself.  A call
    takes effect at once: after ``try_start(job)`` returns True the job is running and its GPUs are taken.
    """

    @property
    def now(self) -> float:
        """The simulated time, in seconds."""
        ...

    @property
    def config(self) -> SimConfig:
        """The run's settings."""
        ...

    def try_start(self, job: JobView, gpu_type: str | None = None) -> bool:
        """Start a waiting job of this VC on idle GPUs the placement chooses (``gpu_type``: among that type's only,
        as Kueue admits a workload on one flavor's nodes); False (and nothing changes) if the placement finds none
        now."""
        ...

    def start_on(self, job: JobView, plan: Any, batch: Any = None, delay: float | None = None) -> None:
        """Start a waiting job on exactly these GPUs: a list of (node, count of its idle GPUs) or (node, [GPU
        indices]) — a policy that places jobs itself, or shares GPUs (``shares_gpus``).  An elastic job
        (``job.elastic``) takes as many GPUs as the plan gives, at ``batch`` (its scaling model's batch
        configuration; None: its user's), and owes ``delay`` seconds without progress first (None: the run's
        ``--restart-delay``)."""
        ...

    def resize(self, job: JobView, plan: Any, batch: Any = None, delay: float | None = None) -> None:
        """Change a running elastic job's GPUs to ``plan`` (as for :meth:`start_on`; the GPUs it holds count as
        free, and where the plan keeps them on a node it keeps them) and/or its ``batch`` (None: its user's on
        new GPUs, unchanged on the same).  It goes on from the progress it made after ``delay`` seconds without
        progress (None: the run's ``--restart-delay`` when its GPUs change, none when only its batch does; a
        given delay is charged even on the same GPUs, and replaces what is left of an unfinished restart).
        To move jobs across each other's GPUs, shrink or preempt first, then grow
        (:func:`~simcluster.sdk.apply_allocations` does it); a job resized twice at one instant pays one delay."""
        ...

    def resize_many(self, changes: Mapping[JobView, Any], batches: Mapping[JobView, Any] | None = None,
                    delay: float | None = None) -> None:
        """:meth:`resize` for several running jobs at once (job → plan; ``batches``: job → batch): every job
        leaves the GPUs it gives up before any takes new ones, so jobs may move onto each other's GPUs."""
        ...

    def decline(self, job: JobView) -> None:
        """Turn a waiting job away for good (admission control): it never runs and is reported declined."""
        ...

    def preempt(self, job: JobView, overhead: float | None = None, moving: bool = False) -> None:
        """Checkpoint a running job of this VC, free its GPUs and queue it again with its progress.  ``overhead``:
        restore seconds it owes (default: the configured preemption overhead, ``--preempt-overhead-*``);
        ``moving``: the policy restarts it elsewhere at once (counted as a migration, not a preemption)."""
        ...

    def stall(self, job: JobView, seconds: float) -> None:
        """Charge a running fixed-size job of this VC ``seconds`` without progress, from now: it keeps its GPUs and
        its progress, and its run ends ``seconds`` later (a start or restart cost that a simulator being
        reproduced charges; elastic jobs get theirs through :meth:`resize`'s ``delay``)."""
        ...

    def wake_at(self, when: float) -> None:
        """Run the policy on this VC again at ``when`` (a time, not a delay), even if nothing happens before.
        Timers at one instant are merged; ``when`` at or before now means "again at this instant, after
        this pass"."""
        ...

    def requeue(self, job: JobView) -> None:
        """A waiting job's :meth:`Policy.pending_key` has changed (the policy's own state changed, e.g. a
        promotion): put it where its new key says."""
        ...

    def reorder(self) -> None:
        """Every waiting job's key may have changed (e.g. a learned order was refreshed): sort the queue again."""
        ...

    def move(self, job: JobView, partition: str) -> None:
        """Send a job (waiting or running; it keeps its progress) to another partition's queue (a partition the
        policy declared in :meth:`Policy.partitions`, or a VC)."""
        ...

    @property
    def colocation(self) -> Any:
        """The colocation model (slowdowns, memory) when the policy shares GPUs."""
        ...

    @property
    def throughputs(self) -> Any:
        """The throughput table the jobs' per-type speeds come from (pairs included), or None."""
        ...

    def pair_speeds(self, a: JobView, b: JobView) -> tuple[float, float]:
        """Predicted speeds (shared ÷ alone) of two jobs sharing GPUs of this VC."""
        ...


class Policy:
    """Base class of scheduling policies: FIFO queue order, and no hooks.

    The engine calls, for each run, in this order:

    * ``__init__(config)`` once (read settings here: ``self.config``, ``self.settings``);
    * :meth:`partitions`, :meth:`borrowed_nodes` and :meth:`attach` once, as the cluster is built;
    * per job, :meth:`on_submit` at its submit time (it may route the job to a partition), then
      :meth:`pending_key` each time it joins a queue;
    * :meth:`schedule` for each VC where something happened at an instant (a job arrived, finished, was
      preempted or evicted, a node came back, a timer rang), once per instant after every other event of it;
    * :meth:`on_run_start` / :meth:`on_run_stop` around each run of a job on GPUs, :meth:`on_finish` when
      a job ends; :meth:`report` once at the end.

    Hooks are called only where the policy defines them (its class overrides the base's, or the instance sets
    one on itself), so an unused hook costs nothing.  To switch off a hook that a class inherits, assign the
    base's back: ``on_run_start = Policy.on_run_start``.

    What a policy must not do: change a job, a node, a VC or a queue other than through the context; keep
    references to jobs or VCs across runs (a policy object lives for one run); depend on anything but the
    run's settings and its seed for random choices (``random.Random(self.config.seed)``).

    Capabilities are declared as class attributes: ``preemptive`` (reads the preemption overheads),
    ``shares_gpus`` (the engine loads a colocation model and times shared GPUs), ``own_placement`` (the
    policy places jobs itself: ``--placement`` is not read), ``one_type_per_job`` (a job runs on GPUs of one
    type only), ``vc_independent`` (decisions in a VC depend only on that VC: a sweep may simulate the VCs
    apart), ``default_estimator`` (the duration estimator ``--estimator auto`` means), ``reads`` (the
    policy-specific run settings it reads, e.g. ``quantum``), ``Settings`` (a frozen dataclass of the
    policy's own settings, fields made with :func:`~simcluster.config.setting`; read as ``self.settings``), and
    ``elastic`` (it resizes jobs while they run: each job gets its scaling model, ``job.elastic``, and runs in
    its own unit of progress; :meth:`SchedulingContext.resize`, :meth:`on_epoch`), and ``priority_first`` (True:
    where a trace gives priorities, waiting jobs are ordered by priority, higher first, before :meth:`pending_key`;
    False for a policy whose pass compares waiting jobs' keys with running jobs' or that allocates by its own
    model: the queue is left in its order, and no job is evicted for a higher tier, docs/tiers.md).
    """

    name: str = "?"
    family: ClassVar[str] = ""  # a group of related policies, for listings (Gavel's round policies: "gavel")
    preemptive: ClassVar[bool] = False
    shares_gpus: ClassVar[bool] = False
    own_placement: ClassVar[str | None] = None
    one_type_per_job: ClassVar[bool] = False
    vc_independent: ClassVar[bool] = False
    default_estimator: ClassVar[str | None] = None
    reads: ClassVar[frozenset[str]] = frozenset()
    Settings: ClassVar[type | None] = None
    elastic: ClassVar[bool] = False
    priority_first: ClassVar[bool] = True

    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig()
        self.settings: Any = policy_settings(type(self), self.config)
        self._time: Callable[[], float] = lambda: 0.0  # the run's clock (bind_clock)

    def bind_clock(self, clock: Callable[[], float]) -> None:
        """Called by the engine before :meth:`attach`: where :attr:`now` reads the simulated time."""
        self._time = clock

    @property
    def now(self) -> float:
        """The simulated time (in hooks that are not given it; ``schedule`` has ``ctx.now``)."""
        return self._time()

    @classmethod
    def uses_seed(cls, config: SimConfig) -> bool:
        """Whether the policy itself draws random numbers (learned models, random choices) under ``config``."""
        return False

    def partitions(self) -> dict[str, int]:
        """Partitions of the policy's own (name → nodes), e.g. lucid's profiler."""
        return {}

    def borrowed_nodes(self) -> dict[str, int]:
        """Nodes the policy's partitions take out of the trace's VCs (VC → nodes); the others come beside them."""
        return {}

    def attach(self, cluster: ClusterView) -> None:
        """Hook: the run's cluster, once built and before the first arrival (a policy with partitions of its own
        may keep what it reads of them, e.g. the queue of lucid's profiler)."""

    def pending_key(self, job: JobView) -> Any:
        """The queue order: waiting jobs are kept sorted by this key (ties: trace order).

        Called when a job joins a queue; the key must not change while the job waits, unless the policy says
        so with :meth:`SchedulingContext.requeue` (one job) or :meth:`SchedulingContext.reorder` (all).
        Keys of one queue must compare with each other."""
        return submit_order(job)

    def schedule(self, vc: VCView, ctx: SchedulingContext) -> None:
        """Decide for one VC: start waiting jobs (``ctx.try_start``), preempt running ones (``ctx.preempt``),
        set a timer (``ctx.wake_at``).  Iterating ``vc.pending`` or ``vc.running`` while starting or
        preempting is safe (each iteration walks what was there when it began)."""
        raise NotImplementedError

    def on_submit(self, job: JobView, now: float) -> str | None:
        """Hook: ``job`` has arrived, before it is queued (e.g. to estimate its duration).  Return the name of a
        partition of the policy's own to queue it there first (lucid's profiler), or None for its VC."""
        return None

    def on_finish(self, job: JobView, now: float) -> None:
        """Hook: ``job`` has finished (for policies that learn from finished jobs)."""

    def on_run_start(self, job: JobView, vc: VCView) -> None:
        """Hook: ``job`` has just got GPUs of ``vc`` and runs (a policy may keep its running jobs in its own
        order instead of sorting them at every pass); called again when the job's speed changes."""

    def on_epoch(self, job: JobView, now: float) -> Any:
        """Hook (elastic policies): ``job`` finished an epoch (``job.elastic.stage`` is the next one, where its
        speed changes); return its batch configuration from here on, or None to keep it (Pollux's agent picks
        the batch with the most goodput at every epoch)."""
        return None

    def on_run_stop(self, job: JobView, vc: VCView) -> None:
        """Hook: ``job`` has left its GPUs of ``vc`` (finished, preempted, evicted or moved) or its speed is about
        to change; called after the job's own accounting of the run."""

    def report(self) -> dict[str, Any]:
        """Figures the policy adds to ``summary.json`` (e.g. estimator quality)."""
        return {}

    def judged_ends(self) -> dict[str, float]:
        """Jobs whose deadline is judged by another time than their end here (job id → that time), as a
        simulator reproduced may judge them (ElasticFlow's by its last plan's end); asked once the run is over.
        The deadline figures use it, and jobs.csv gets a ``judged_end`` column when it is not empty."""
        return {}


POLICIES: Registry[type[Policy]] = Registry("policy")


def start_in_order_until_blocked(vc: VCView, ctx: SchedulingContext) -> None:
    """Start queued jobs in queue order; the first that cannot be placed blocks the rest (head-of-line)."""
    first, try_start = vc.pending.first, ctx.try_start
    while (job := first()) is not None and try_start(job):
        pass


# --- a policy's own settings ---------------------------------------------------------------------------

def settings_fields(cls: type) -> dict[str, dataclasses.Field]:
    """The fields of a policy's Settings dataclass (types resolved), by name; empty without one."""
    settings = getattr(cls, "Settings", None)
    if settings is None:
        return {}
    if not (isinstance(settings, type) and dataclasses.is_dataclass(settings)):
        raise ConfigError(f"policy {cls.__name__}: Settings must be a dataclass (with fields made by sdk.setting)")
    hints = typing.get_type_hints(settings)
    found = {}
    for f in dataclasses.fields(settings):
        f.type = hints.get(f.name, f.type)
        found[f.name] = f
    return found


def policy_settings(cls: type, config: SimConfig) -> Any:
    """The policy's Settings built from ``config.policy_settings`` (each value coerced to its field's type and
    checked against its range), or None for a policy that declares none; :class:`ConfigError` names the
    setting and the policy."""
    given = config.policy_settings
    fields = settings_fields(cls)
    label = getattr(cls, "name", "?")
    label = cls.__name__ if label in ("?", "") else label
    if not fields:
        if given:
            raise ConfigError(f"policy {label} declares no settings of its own, but {len(given)} were given "
                              f"({', '.join(n for n, _ in given)})")
        return None
    values: dict[str, Any] = {}
    for name, value in given:
        f = fields.get(name)
        where = f"policy {label}"
        if f is None:
            raise ConfigError(f"{where}: unknown setting {name!r}{did_you_mean(name, fields)}")
        if not f.metadata.get("help"):  # a plain dataclass field: coerce by its type alone
            f = dataclasses.field(default=f.default, metadata={"help": "", "min": None, "max": None, "above": None,
                                                                "choices": (), "cli": None})  # type: ignore[assignment]
            f.name, f.type = name, fields[name].type
        values[name] = coerce(f, value, where)
        check_range(f, values[name], where)
    return getattr(cls, "Settings")(**values)  # noqa: B009  (cls is any class a spec named)


def describe_settings(cls: type) -> list[dict[str, Any]]:
    """Each setting a policy declares: name, type, default and help (for ``lucid-sim policies NAME``)."""
    rows = []
    for name, f in settings_fields(cls).items():
        default = f.default if f.default is not dataclasses.MISSING else None
        kind = getattr(f.type, "__name__", str(f.type))
        rows.append({"name": name, "type": kind, "default": default, "help": f.metadata.get("help", ""),
                     "choices": list(f.metadata.get("choices", ()) or ())})
    return rows


def settings_as_dict(settings: Any) -> dict[str, Any]:
    """A Settings instance as a plain mapping (for summary.json)."""
    if settings is None:
        return {}
    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        return dataclasses.asdict(settings)
    return dict(settings)
