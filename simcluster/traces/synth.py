"""Synthetic traces of any cluster, seeded: Venus-shaped by default, or from chosen job sizes, durations and
arrivals, at an offered load that the generator holds.

The defaults are shaped like Venus (Helios, SC'21), from the public September 2020 trace's summary figures:
GPU counts mostly 1 and 8 with a tail to 160; log-normal durations (median about 5 minutes, a heavy tail to
15 days); submissions in a daily cycle that peaks in the afternoon; a few users submit most jobs; each job is
one of the 14 profiled workloads in Venus' proportions.  With every shape at its default the arrival span is
GPU-seconds asked ÷ (``load`` × GPUs), the generator's first rule, kept so that seeded traces stay what they
were.  Any other shape (``sizes``, ``durations``, ``arrivals``: :mod:`simcluster.traces.synth_shapes`), a
``preset`` or ``hold_load=True`` *holds* the load instead: the span is found so that the realised offered
load (:mod:`simcluster.traces.realised`: the work that runs while jobs are still submitted) is ``load``,
which the first rule misses on large clusters, where long jobs spill past the last submission.

>>> from simcluster.traces.realised import realised_load
>>> spec = SynthSpec(jobs=3000, nodes=512, vcs=1, sizes="pow2:256", arrivals="poisson", load=0.9, seed=1)
>>> jobs = synthesize(spec).frame
>>> round(realised_load(jobs.submit_time, jobs.duration, jobs.gpu_num, capacity=512 * 8), 2)
0.9
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from simcluster.limits import MAX_JOBS, MAX_USERS
from simcluster.results import write_folder
from simcluster.settings.fields import setting
from simcluster.traces.joblog import JobLog
from simcluster.traces.realised import realised_load
from simcluster.traces.sizing import MAX_GPUS
from simcluster.traces.synth_shapes import (
    GPU_COUNTS,  # noqa: F401 — the Venus shapes, where callers have always found them
    LOG_DURATION_MEAN,  # noqa: F401
    LOG_DURATION_STD,  # noqa: F401
    MAX_DURATION,  # noqa: F401
    Arrivals,
    Durations,
    Sizes,
    normalise,
    parse_arrivals,
    parse_durations,
    parse_sizes,
)
from simcluster.traces.venus import DEFAULT_EPOCH

# (model, dataset, share of jobs, batch sizes seen) — the 14 workloads of the Lucid artifact
WORKLOADS = [
    ("PointNet", "ShapeNet", 4570, (32, 64, 128)), ("EfficientNet", "CIFAR-10", 3664, (32, 64, 128)),
    ("MobileNetV2", "CIFAR-10", 3624, (32, 64, 128)), ("ResNet18", "CIFAR-10", 2509, (32, 64, 128)),
    ("VGG", "CIFAR-10", 2392, (32, 64, 128)), ("PPO", "LunarLander", 1651, (32, 64, 128)),
    ("TD3", "BipedalWalker", 1615, (32, 64, 128)), ("NeuMF", "MovieLens", 1534, (64, 128)),
    ("MobileNetV3", "ImageNet", 736, (32, 64, 128)), ("BERT", "SQuAD", 656, (32,)),
    ("LSTM", "Wikitext2", 247, (64, 128)), ("DCGAN", "LSUN", 231, (32, 64, 128)),
    ("ResNet50", "ImageNet", 219, (32, 64, 128)), ("Transformer", "Multi30k", 211, (32, 64)),
]
AMP_SHARE = 0.43
DEFAULT_SHAPES = ("venus", "venus", "diurnal")  # sizes, durations, arrivals without a preset
# The documented mixes (docs/synthetic.md gives the source of every number): sizes, durations, arrivals.
PRESETS = {
    "venus-2020": ("venus", "venus", "diurnal"),
    "llm-era": (("1:0.55,2:0.07,4:0.07,8:0.17,16:0.06,32:0.04,64:0.03,"
                 "1024:0.0003,2048:0.00015,4096:0.00008,8192:0.00004,16384:0.00002"),
                "lognormal:mu=4.81,sigma=2.18,grow=0.32,max=1209600", "poisson"),
}
MIN_SPAN = 60.0  # seconds: arrivals squeezed tighter than this are not a cluster's workload
HOLD_TOLERANCE = 1e-4  # relative: how close the held load comes to its target before the search stops


class Shapes(NamedTuple):
    sizes: Sizes
    durations: Durations
    arrivals: Arrivals


@dataclass(frozen=True)
class SynthSpec:
    """What :func:`synthesize` draws: the cluster, the load, and the shapes of its jobs.

    Sizes, durations and arrivals left as None are the preset's, else Venus'; text values follow
    :mod:`simcluster.traces.synth_shapes`.  Every field is checked here, so a bad one fails before anything
    is drawn, with a message naming it:

    >>> SynthSpec(jobs=1000, nodes=2048, vcs=1, preset="llm-era").holds_load
    True
    >>> SynthSpec(sizes="pow2:1e12")
    Traceback (most recent call last):
    ...
    ValueError: sizes 'pow2:1e12': the largest size must be from 1 to 524,288, got '1e12'
    """

    jobs: int = setting(2000, "Number of jobs.")
    nodes: int = setting(32, "Nodes in the cluster, split among the VCs.")
    vcs: int = setting(4, "Number of virtual clusters.")
    gpus_per_node: int = setting(8, "GPUs per node.")
    load: float = setting(0.8, "Offered load: GPU-seconds asked per GPU-second available.")
    users: int = setting(50, "Number of users (a few submit most jobs).")
    seed: int = setting(0, "Random seed; the same seed gives the same trace.")
    start: str = setting("2020-09-01 00:00:00", "Submit time of the first day.")
    epoch: str = field(default=DEFAULT_EPOCH, metadata={"help": "Time zero of the simulation."})
    preset: str = setting("", "A documented mix whose sizes, durations and arrivals apply where those are "
                          "not given: venus-2020 or llm-era (docs/synthetic.md); it holds the load.")
    sizes: str | None = setting(None, "GPUs per job: venus, pow2:MAX[,decay=D], SIZE:WEIGHT,SIZE:WEIGHT,… "
                                "or trace:PATH (default: the preset's, else venus).")
    durations: str | None = setting(None, "Seconds per job: venus, lognormal:mu=M,sigma=S[,max=X][,grow=G] "
                                    "or trace:PATH (default: the preset's, else venus).")
    arrivals: str | None = setting(None, "When jobs come: diurnal, poisson or bursts:size=K (default: the "
                                   "preset's, else diurnal).")
    hold_load: bool | None = setting(None, "Choose the arrival span so that the realised offered load is "
                                     "`load` (default: whenever a preset or a shape but Venus' is given).")

    def __post_init__(self) -> None:
        for name in ("jobs", "nodes", "vcs", "gpus_per_node", "users", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):  # a bad value, as below
                raise ValueError(f"{name} must be a whole number, got {value!r}")  # noqa: TRY004
        for name in ("jobs", "nodes", "vcs", "gpus_per_node", "users"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name, most in (("jobs", MAX_JOBS), ("users", MAX_USERS)):  # each costs memory: bounded before drawing
            if getattr(self, name) > most:
                raise ValueError(f"{name} must be at most {most:,}, got {getattr(self, name):,}")
        if self.nodes * self.gpus_per_node > MAX_GPUS:
            raise ValueError(f"{self.nodes:,} nodes × {self.gpus_per_node:,} GPUs would be "
                             f"{self.nodes * self.gpus_per_node:,} GPUs, more than the limit of {MAX_GPUS:,} GPUs a "
                             "simulation may have")
        if self.vcs > self.nodes:
            raise ValueError(f"cannot split {self.nodes} nodes into {self.vcs} VCs")
        if not 0 < self.load or not math.isfinite(self.load):
            raise ValueError(f"load must be positive and finite, got {self.load}")
        if self.preset not in ("", *PRESETS):
            raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {self.preset!r}")
        if self.hold_load not in (None, True, False):
            raise ValueError(f"hold_load must be true or false, got {self.hold_load!r}")
        shapes = self.shapes()
        if self.holds_load and self.jobs < 2:
            raise ValueError(f"jobs must be at least 2 to hold a load (a span between two submissions), "
                             f"got {self.jobs}")
        if shapes.arrivals.burst > 1 and -(-self.jobs // shapes.arrivals.burst) < 2:
            raise ValueError(f"arrivals {shapes.arrivals.text!r}: {self.jobs} jobs in bursts of "
                             f"{shapes.arrivals.burst} make fewer than two bursts, so no span to hold a load")
        if shapes.sizes.path is None and not shapes.sizes.is_venus:  # a trace's: once read, when drawn
            _check_fits(self.sizes_named(), max(shapes.sizes.values), vc_nodes_of(self), self.gpus_per_node)

    def shapes(self) -> Shapes:
        """The sizes, durations and arrivals this spec draws from: its own, else its preset's, else Venus'."""
        base = PRESETS.get(self.preset, DEFAULT_SHAPES)
        sizes, durations, arrivals = (base[i] if given is None else given
                                      for i, given in enumerate((self.sizes, self.durations, self.arrivals)))
        return Shapes(parse_sizes(sizes), parse_durations(durations), parse_arrivals(arrivals))

    def sizes_named(self) -> str:
        """How errors name the sizes: the preset's, or as given."""
        return f"the {self.preset} preset's sizes" if self.sizes is None and self.preset else \
            f"sizes {self.shapes().sizes.text!r}"

    @property
    def holds_load(self) -> bool:
        """Whether the span is searched for the realised load (else the first rule: work ÷ capacity)."""
        if self.hold_load is not None:
            return self.hold_load
        return bool(self.preset) or tuple(s.text for s in self.shapes()) != DEFAULT_SHAPES


def synthesize(spec: SynthSpec) -> JobLog:
    """A trace with integer-second submit times, ready to simulate or save."""
    rng = np.random.default_rng(spec.seed)
    n = spec.jobs
    vc_nodes = _split_nodes(spec, rng)
    vc_names = list(vc_nodes)

    # jobs go to VCs in proportion to their size (each VC equally loaded); users live in one VC
    # each, and within a VC a Zipf-like few submit most jobs
    vcs = rng.choice(len(vc_names), size=n, p=normalise(list(vc_nodes.values())))
    user_vc = np.concatenate([np.arange(len(vc_names)), rng.integers(len(vc_names), size=max(0, spec.users - len(vc_names)))])
    users = np.empty(n, dtype=np.int64)
    for v in range(len(vc_names)):
        members = np.flatnonzero(user_vc == v)
        weight = 1.0 / np.arange(1, len(members) + 1) ** 1.1
        mine = vcs == v
        users[mine] = members[rng.choice(len(members), size=int(mine.sum()), p=normalise(weight))]

    shapes = spec.shapes()
    capacity = np.array([vc_nodes[v] * spec.gpus_per_node for v in vc_names])[vcs]
    gpu = _draw_sizes(spec, shapes.sizes, rng, capacity, vc_nodes)
    duration = shapes.durations.draw(rng, gpu)
    total_gpus = sum(vc_nodes.values()) * spec.gpus_per_node
    pattern = shapes.arrivals.pattern(rng, n)
    if spec.holds_load:
        span = held_span(spec.load, total_gpus, gpu, duration, lambda s: shapes.arrivals.times(pattern, s))
    else:
        span = float((gpu * duration).sum()) / (spec.load * total_gpus)
    submit = shapes.arrivals.times(pattern, span)
    offset = (pd.Timestamp(spec.start) - pd.Timestamp(spec.epoch)) // pd.Timedelta(seconds=1)

    kinds = rng.choice(len(WORKLOADS), size=n, p=normalise([w[2] for w in WORKLOADS]))
    options = np.array([[*w[3], *[w[3][-1]] * (3 - len(w[3]))] for w in WORKLOADS], dtype=np.int64)
    n_options = np.array([len(w[3]) for w in WORKLOADS])
    batch = options[kinds, (rng.random(n) * n_options[kinds]).astype(int)]
    frame = pd.DataFrame(
        {
            "job_id": [f"s{spec.seed}-{i}" for i in range(n)],
            "user": [f"u{u}" for u in users],
            "vc": np.array(vc_names, dtype=object)[vcs],
            "gpu_num": gpu.astype(np.int64),
            "submit_time": (submit.astype(np.int64) + offset),
            "duration": duration.astype(np.int64),
            "model": np.array([w[0] for w in WORKLOADS], dtype=object)[kinds],
            "dataset": np.array([w[1] for w in WORKLOADS], dtype=object)[kinds],
            "batchsize": batch,
            "amp": (rng.random(n) < AMP_SHARE).astype(np.int64),
        }
    )
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    notes = [_held_note(spec, submit, duration, gpu, total_gpus)] if spec.holds_load else []
    return JobLog(f"synth(seed={spec.seed}, jobs={n})", frame, vc_nodes, format="synthetic",
                 time_rule=f"seconds from {spec.epoch}", epoch=spec.epoch,
                 sizing=f"{len(vc_nodes)} VCs of the generator ({spec.nodes} nodes × {spec.gpus_per_node} GPUs)",
                 notes=notes)


def held_span(load: float, total_gpus: int, gpu: np.ndarray, duration: np.ndarray, times_at: Any) -> float:
    """The arrival span (seconds) at which the jobs' realised offered load on ``total_gpus`` GPUs is ``load``.

    The realised load falls as the span grows (each job's share of the window, min(duration, window left) ÷
    window, does), so a geometric bisection finds it; submit times are whole seconds, so it lands within
    rounding of the target.  ``times_at(span)`` gives the submit times for a span.

    >>> gpu, duration = np.full(1000, 8), np.full(1000, 3600.0)
    >>> at = lambda span: np.floor(np.linspace(0, 1, 1000) * span)
    >>> span = held_span(0.5, 64, gpu, duration, at)
    >>> round(realised_load(at(span), duration, gpu, 64), 3)
    0.5
    """
    def realised(span: float) -> float:
        value = realised_load(times_at(span), duration, gpu, total_gpus)
        return math.inf if math.isnan(value) else value  # one instant: all the work, no window

    hi = max(float(np.dot(gpu, duration)) / (load * total_gpus), MIN_SPAN)  # the first rule's span
    for _ in range(200):  # the load falls towards 0 as the span grows, unless every job comes at one instant
        if realised(hi) <= load:
            break
        hi *= 2.0
    else:
        raise ValueError(f"load {load:g} cannot be held: the {len(gpu):,} jobs arrive at one instant")
    lo = hi
    while (most := realised(lo)) < load:
        if lo <= MIN_SPAN:
            raise ValueError(_unreachable(load, total_gpus, len(gpu), most))
        lo = max(lo / 2.0, MIN_SPAN)
    best, err = lo, abs(most / load - 1.0)
    while hi / lo > 1.0 + 1e-9 and err > HOLD_TOLERANCE:
        mid = math.sqrt(lo * hi)
        value = realised(mid)
        if abs(value / load - 1.0) < err:
            best, err = mid, abs(value / load - 1.0)
        lo, hi = (mid, hi) if value > load else (lo, mid)
    return best


def spec_from_text(body: str, **given: Any) -> SynthSpec:
    """A :class:`SynthSpec` from ``field=value,field=value`` (a sweep's ``synth:…`` without its prefix).

    Commas inside a value stay in it: an item that does not start with a field's name continues the sizes,
    durations or arrivals before it, so no quoting is needed.  ``given`` are defaults the text may override.

    >>> spec = spec_from_text("jobs=100,nodes=64,vcs=1,sizes=pow2:64,decay=1.5,durations=lognormal:mu=6,"
    ...                       "sigma=1")
    >>> spec.sizes, spec.durations
    ('pow2:64,decay=1.5', 'lognormal:mu=6,sigma=1')
    """
    names = {f.name for f in fields(SynthSpec)}
    values: dict[str, Any] = dict(given)
    last = None
    for item in filter(None, body.split(",")):
        key, equals, raw = item.partition("=")
        if equals and key in names:
            values[key], last = _typed(key, raw), key
        elif last in ("sizes", "durations", "arrivals"):
            values[last] += "," + item  # the value's own comma: pow2:512,decay=2
        else:
            valid = ", ".join(f.name for f in fields(SynthSpec))
            raise ValueError(f"unknown synthetic-trace field {key!r}; valid: {valid}")
    return SynthSpec(**values)


def vc_nodes_of(spec: SynthSpec) -> dict[str, int]:
    """The VCs and their nodes that :func:`synthesize` gives ``spec``, without drawing its jobs.

    >>> spec = SynthSpec(jobs=100, nodes=12, vcs=3, seed=4)
    >>> vc_nodes_of(spec) == synthesize(spec).vc_nodes
    True
    """
    return _split_nodes(spec, np.random.default_rng(spec.seed))  # the generator's first draw, as there


def save_trace(trace: JobLog, out: Path, epoch: str = DEFAULT_EPOCH) -> Path:
    """Write ``cluster_full_log.csv`` (Venus columns, wall-clock submit times) and ``vc_config.csv``."""
    frame = trace.frame.copy()
    stamps = pd.Timestamp(epoch) + pd.to_timedelta(frame["submit_time"], unit="s")
    frame["submit_time"] = stamps.dt.strftime("%Y-%m-%d %H:%M:%S")
    frame.insert(3, "jobname", "")
    frame.insert(5, "cpu_num", frame["gpu_num"])
    frame.insert(6, "state", "COMPLETED")
    config = pd.DataFrame({"vc": list(trace.vc_nodes), "num": list(trace.vc_nodes.values())})
    return write_folder(Path(out), {"cluster_full_log.csv": frame, "vc_config.csv": config})


def _split_nodes(spec: SynthSpec, rng: np.random.Generator) -> dict[str, int]:
    share = rng.dirichlet(np.full(spec.vcs, 2.0))
    nodes = np.maximum(1, np.floor(share * spec.nodes).astype(int))
    while nodes.sum() > spec.nodes:
        nodes[np.argmax(nodes)] -= 1
    nodes[np.argmax(share)] += spec.nodes - nodes.sum()
    return {f"vc{i}": int(k) for i, k in enumerate(nodes)}


def _draw_sizes(spec: SynthSpec, sizes: Sizes, rng: np.random.Generator, capacity: np.ndarray,
                vc_nodes: dict[str, int]) -> np.ndarray:
    """GPUs per job.  Venus' counts are cut to half the job's VC (no VC is filled by one job: the first
    version's rule); any other size must fit every VC whole, and a size that does not is refused, since
    cutting a 16,384-GPU job to a small VC would silently change the workload."""
    values, weights = sizes.table()
    if not sizes.is_venus:
        _check_fits(spec.sizes_named(), int(values.max()), vc_nodes, spec.gpus_per_node)
    gpu = rng.choice(values, size=len(capacity), p=weights)
    return np.minimum(gpu, np.maximum(1, capacity // 2)) if sizes.is_venus else gpu


def _check_fits(named: str, largest: int, vc_nodes: dict[str, int], gpus_per_node: int) -> None:
    """Refuse sizes of which the largest does not fit the smallest VC."""
    name, nodes = min(vc_nodes.items(), key=lambda item: item[1])
    if largest > nodes * gpus_per_node:
        raise ValueError(f"{named}: a job of {largest:,} GPUs does not fit VC {name!r} of "
                         f"{nodes * gpus_per_node:,} GPUs ({nodes:,} nodes × {gpus_per_node}); give more "
                         "nodes, fewer VCs, or sizes whose largest fits")


def _unreachable(load: float, total_gpus: int, jobs: int, most: float) -> str:
    needed = math.ceil(jobs * load / most * 1.2) if most > 0 else None
    more = f"about {needed:,}" if needed else "many more"
    return (f"load {load:g} cannot be held: submitted within {MIN_SPAN:.0f} s, these {jobs:,} jobs still "
            f"offer only {most:.3f} of {total_gpus:,} GPUs within their submission window; give more jobs "
            f"(at least {more}) or a lower load")


def _held_note(spec: SynthSpec, submit: np.ndarray, duration: np.ndarray, gpu: np.ndarray,
               total_gpus: int) -> str:
    got = realised_load(submit, duration, gpu, total_gpus)
    return (f"synthetic: arrival span chosen so that the realised offered load (work within the submission "
            f"window) is {got:.3f}, target {spec.load:g}")


def _typed(key: str, raw: str) -> Any:
    """A ``synth:`` value as its field's type."""
    kind = {"jobs": int, "nodes": int, "vcs": int, "gpus_per_node": int, "users": int, "seed": int,
            "load": float}.get(key, str)
    if key == "hold_load":
        flags = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
        if raw.lower() not in flags:
            raise ValueError(f"field 'hold_load' expects true or false, got {raw!r}")
        return flags[raw.lower()]
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"field {key!r} expects {kind.__name__}, got {raw!r}") from None
