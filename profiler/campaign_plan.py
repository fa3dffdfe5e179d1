"""A campaign plan: what to measure on a GPU, in priority order, as a TOML file.

A GPU may be lent for a few minutes at a time, so what matters most is measured first and every row is
kept (:mod:`profiler.campaign` runs a plan in chunks).  A plan has a name, the folder its tables go to
(``{gpu}`` is replaced by the GPU type, e.g. ``h100``), how each run is measured, and its stages, in
order; a stage lists job configurations to measure alone, or pairs to measure sharing the GPU, written
as ``"model,batchsize,amp"`` (the trace's own columns; one GPU per job)::

    [campaign]
    name = "h100"
    out = "traces/profiles/measured/{gpu}"

    [measure]
    window = 0.5
    cv_windows = 4
    cv_target = 0.03
    time_limit = 8.0
    warmup_steps = 10

    [[stage]]
    name = "pairs at batch 32"
    why = "every unordered pair of the 14 workloads, self-pairs included"
    pairs = [["ResNet18,32,0", "VGG,32,0"], ["ResNet18,32,0", "ResNet18,32,0"]]

    [[stage]]
    name = "repeatability"
    singles = ["ResNet18,32,0", "VGG,32,0"]
    pairs = [["ResNet18,32,0", "VGG,32,0"]]
    repeat = 3       # 3 rounds, each measuring every job alone and every pair, into the repeat tables

:func:`issue_plan` builds the plan of issues 33 and 44 from a trace's job log (``lucid-profile plan``).
"""

from __future__ import annotations

import json
import math
import random
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from profiler.measure import MeasureSettings
from profiler.plan import JobConfig, PairConfig, pair_plan
from profiler.runner import RunSettings
from workloads import Size, WorkloadSpec

Resolver = Callable[[str], WorkloadSpec]

REFERENCE_PARTNERS = ("TD3", "ResNet18", "ResNet50")
"""A light, a medium and a busy job on the H100 (16, 44 and 85 % GPU utilization alone at batch 32): the
partners each workload's batch-size extremes meet in :func:`cross_configuration_pairs`."""

_MEASURE_OPTIONS = {  # TOML name -> MeasureSettings field
    "window": "window_s", "cv_windows": "cv_windows", "cv_target": "cv_target", "time_limit": "time_limit_s",
    "warmup_steps": "warmup_steps",
}  # fmt: skip
_RUN_OPTIONS = {"sample_hz": "sample_hz", "startup_timeout": "startup_timeout_s", "seed": "seed"}
MAX_PLAN_BYTES = 10 << 20  # a plan of every pair of hundreds of configurations is a few hundred KB


class PlanError(ValueError):
    """A plan that cannot be run; the message names the file, the stage and the entry at fault."""


@dataclass(frozen=True)
class Stage:
    """One step of a plan: configurations alone, or pairs; or, when ``repeat`` > 0, either or both measured
    ``repeat`` times each, round by round."""

    name: str
    singles: tuple[JobConfig, ...] = ()
    pairs: tuple[PairConfig, ...] = ()
    repeat: int = 0
    why: str = ""

    @property
    def kind(self) -> str:
        return "repeat" if self.repeat else ("pair" if self.pairs else "single")


@dataclass(frozen=True)
class CampaignPlan:
    """Everything a campaign measures, in priority order, and how."""

    name: str
    out: str
    stages: tuple[Stage, ...]
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    sample_hz: float = 10.0
    startup_timeout_s: float = 600.0
    seed: int = 0
    description: str = ""

    def run_settings(self, device: str, size: Size, cpu_threads: int | None = None) -> RunSettings:
        return RunSettings(device=device, size=size, measure=self.measure, sample_hz=self.sample_hz,
                           startup_timeout_s=self.startup_timeout_s, seed=self.seed, cpu_threads=cpu_threads)


@dataclass(frozen=True)
class Item:
    """One row to measure: a configuration alone or a pair, or its ``repeat``-th repetition."""

    stage: int
    single: JobConfig | None = None
    pair: PairConfig | None = None
    repeat: int | None = None

    @property
    def configs(self) -> tuple[JobConfig, ...]:
        if self.single is not None:
            return (self.single,)
        assert self.pair is not None  # an item holds one or the other
        return (self.pair.first, self.pair.second)

    @property
    def label(self) -> str:
        text = self.single.label if self.single is not None else self.pair.label  # type: ignore[union-attr]
        return f"{text} (repeat {self.repeat})" if self.repeat else text

    @property
    def round(self) -> tuple[int, int]:
        """Items of one round are equally urgent: a stage, and a repetition within it."""
        return self.stage, self.repeat or 0


def plan_items(plan: CampaignPlan) -> list[Item]:
    """Every row of the plan in priority order: stage by stage, a repeat stage round by round (in each round
    the jobs alone, then the pairs)."""
    items: list[Item] = []
    for s, stage in enumerate(plan.stages):
        for r in range(1, stage.repeat + 1) if stage.repeat else (None,):
            items += [Item(s, single=config, repeat=r) for config in stage.singles]
            items += [Item(s, pair=p, repeat=r) for p in stage.pairs]
    return items


# ----------------------------------------------------------------------------- reading and writing
def parse_config(text: str, resolve: Resolver, where: str) -> JobConfig:
    """``"model,batchsize,amp"`` as a one-GPU job configuration; PlanError naming ``where`` if it is not one."""
    parts = [part.strip() for part in str(text).split(",")]
    if len(parts) != 3:
        raise PlanError(f"{where}: {text!r} is not 'model,batchsize,amp'")
    model, batch, amp = parts
    if not batch.isdigit() or int(batch) < 1:
        raise PlanError(f"{where}: batch size {batch!r} in {text!r} is not a positive integer")
    if amp not in ("0", "1"):
        raise PlanError(f"{where}: amp {amp!r} in {text!r} is not 0 or 1")
    try:
        spec = resolve(model)
    except KeyError as exc:
        raise PlanError(f"{where}: {exc}") from None
    return JobConfig(spec.model, spec.dataset, int(batch), amp == "1", 1)


def config_text(config: JobConfig) -> str:
    return f"{config.model},{config.batchsize},{int(config.amp)}"


def read_plan(path: Path, resolve: Resolver) -> CampaignPlan:
    """Read and check a plan; PlanError naming the file, the stage and the entry at fault."""
    try:
        if path.stat().st_size > MAX_PLAN_BYTES:
            raise PlanError(f"{path}: {path.stat().st_size:,} bytes, more than a plan may be ({MAX_PLAN_BYTES:,})")
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlanError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.object[exc.start:exc.start + 1]!r}); a "
                        "plan is a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{path}: not valid TOML: {exc}") from None
    head = document.get("campaign")
    if not isinstance(head, dict) or not isinstance(head.get("name"), str) or not isinstance(head.get("out"), str):
        raise PlanError(f"{path}: a [campaign] table with name and out (the tables' folder) is needed")
    measure, run = _options(document.get("measure", {}), path)
    stages = document.get("stage")
    if not isinstance(stages, list) or not stages:
        raise PlanError(f"{path}: no [[stage]]: a plan measures at least one stage")
    return CampaignPlan(name=head["name"], out=head["out"], description=str(head.get("description", "")),
                        stages=tuple(_stage(entry, i, path, resolve) for i, entry in enumerate(stages, 1)),
                        measure=measure, **run)


def _options(table: object, path: Path) -> tuple[MeasureSettings, dict[str, Any]]:
    if not isinstance(table, dict):
        raise PlanError(f"{path}, [measure]: expected a table of settings")
    unknown = sorted(set(table) - set(_MEASURE_OPTIONS) - set(_RUN_OPTIONS))
    if unknown:
        raise PlanError(f"{path}, [measure]: unknown setting(s) {', '.join(unknown)}; known: "
                        f"{', '.join([*_MEASURE_OPTIONS, *_RUN_OPTIONS])}")
    for name, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PlanError(f"{path}, [measure], {name}: expected a number, got {value!r}")
        if not math.isfinite(value):  # TOML has nan and inf, which no comparison refuses
            raise PlanError(f"{path}, [measure], {name}: must be a finite number, got {value!r}")
        if name in ("cv_windows", "warmup_steps", "seed") and not isinstance(value, int):
            raise PlanError(f"{path}, [measure], {name}: expected a whole number, got {value!r}")
    run = {_RUN_OPTIONS[k]: v for k, v in table.items() if k in _RUN_OPTIONS}
    try:
        measure = MeasureSettings(**{_MEASURE_OPTIONS[k]: v for k, v in table.items() if k in _MEASURE_OPTIONS})
        RunSettings(device="cpu", measure=measure, **run)  # its own checks (sample_hz, startup_timeout)
    except ValueError as exc:
        raise PlanError(f"{path}, [measure]: {exc}") from None
    return measure, run


def _stage(entry: object, number: int, path: Path, resolve: Resolver) -> Stage:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise PlanError(f"{path}, stage {number}: expected a table with a name")
    where = f"{path}, stage {number} ({entry['name']!r})"
    unknown = sorted(set(entry) - {"name", "why", "singles", "pairs", "repeat"})
    if unknown:
        raise PlanError(f"{where}: unknown key(s) {', '.join(unknown)}")
    singles, pairs = entry.get("singles", []), entry.get("pairs", [])
    repeat = entry.get("repeat", 0)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
        raise PlanError(f"{where}: repeat must be a whole number of times to measure each entry, got {repeat!r}")
    if not singles and not pairs:
        raise PlanError(f"{where}: give singles or pairs (not empty)")
    if singles and pairs and not repeat:
        raise PlanError(f"{where}: give either singles or pairs; only a repeat stage may hold both")
    parsed_singles = tuple(parse_config(text, resolve, f"{where}, singles[{i}]") for i, text in enumerate(singles))
    parsed_pairs = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, list) or len(pair) != 2:
            raise PlanError(f"{where}, pairs[{i}]: expected two configurations, got {pair!r}")
        first, second = (parse_config(text, resolve, f"{where}, pairs[{i}]") for text in pair)
        parsed_pairs.append(PairConfig(first, second))
    for name, values in (("singles", [c.key for c in parsed_singles]),
                         ("pairs", [p.unordered_key for p in parsed_pairs])):
        if len(set(values)) != len(values):
            raise PlanError(f"{where}: {name} lists an entry twice")
    return Stage(entry["name"], parsed_singles, tuple(parsed_pairs), repeat, str(entry.get("why", "")))


def plan_toml(plan: CampaignPlan) -> str:
    """The plan as TOML that :func:`read_plan` reads back to the same plan."""
    lines = ["# A lucid-profile campaign plan: lucid-profile campaign THIS_FILE (see docs/profile-campaign.md).",
             "[campaign]", f"name = {json.dumps(plan.name)}", f"out = {json.dumps(plan.out)}"]
    if plan.description:
        lines.append(f"description = {json.dumps(plan.description)}")
    lines += ["", "[measure]"]
    for name, attribute in _MEASURE_OPTIONS.items():
        lines.append(f"{name} = {getattr(plan.measure, attribute)!r}")
    for name, attribute in _RUN_OPTIONS.items():
        lines.append(f"{name} = {getattr(plan, attribute)!r}")
    for stage in plan.stages:
        lines += ["", "[[stage]]", f"name = {json.dumps(stage.name)}"]
        if stage.why:
            lines.append(f"why = {json.dumps(stage.why)}")
        if stage.repeat:
            lines.append(f"repeat = {stage.repeat}")
        if stage.singles:
            lines += ["singles = ["] + [f'  "{config_text(c)}",' for c in stage.singles] + ["]"]
        if stage.pairs:
            lines += ["pairs = ["] + [f'  ["{config_text(p.first)}", "{config_text(p.second)}"],'
                                      for p in stage.pairs] + ["]"]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- issue 33's plan
def trace_configurations(log: Path, resolve: Resolver, order: Sequence[str]) -> list[JobConfig]:
    """Each (model, batch size, AMP) a job log uses (``cluster_full_log.csv``: columns model, batchsize,
    amp), one GPU, workloads in ``order`` then batch size, AMP off first."""
    try:
        frame = pd.read_csv(log, usecols=["model", "batchsize", "amp"])
    except (OSError, ValueError) as exc:
        raise PlanError(f"{log}: cannot read model, batchsize and amp: {exc}") from None
    rank = {model: i for i, model in enumerate(order)}
    found = {(str(m), int(b), int(a)) for m, b, a in frame.dropna().itertuples(index=False, name=None)}
    unknown = sorted({m for m, _, _ in found if m not in rank})
    if unknown:
        raise PlanError(f"{log}: models with no workload: {', '.join(unknown)}")
    return [parse_config(f"{m},{b},{a}", resolve, str(log))
            for m, b, a in sorted(found, key=lambda k: (rank[k[0]], k[1], k[2]))]


def extremes(configs: Iterable[JobConfig]) -> tuple[JobConfig, JobConfig]:
    """A workload's lightest and busiest configurations: its smallest batch (with AMP where used there)
    and its largest (without AMP where used there)."""
    configs = list(configs)
    small, large = min(c.batchsize for c in configs), max(c.batchsize for c in configs)
    lightest = max((c for c in configs if c.batchsize == small), key=lambda c: c.amp)
    busiest = min((c for c in configs if c.batchsize == large), key=lambda c: c.amp)
    return lightest, busiest


def cross_configuration_pairs(configs: Sequence[JobConfig], base: Iterable[JobConfig],
                              partners: Sequence[str] = REFERENCE_PARTNERS) -> list[PairConfig]:
    """Pairs that cover each workload's batch-size range: its two extremes (:func:`extremes`) beside a
    light, a medium and a busy partner at ``base`` (batch 32, no AMP), and beside each other.

    Why: batch size and AMP change how busy a job keeps the GPU, and so how much it slows and is slowed;
    measured at one configuration per workload, the refit can only extrapolate that.  Both ends of each
    workload's range against the same three partners show how slowdown changes along it, and the pair of
    the two ends gives the interpolation a second point of the same model pair.  Extremes already measured
    at ``base`` are left out (the batch-32 stage has them).
    """
    at_base = {c.model: c for c in base}
    by_model: dict[str, list[JobConfig]] = {}
    for config in configs:
        by_model.setdefault(config.model, []).append(config)
    pairs: list[PairConfig] = []
    for model, own in by_model.items():
        lightest, busiest = extremes(own)
        for end in dict.fromkeys((lightest, busiest)):
            if end != at_base.get(model):
                pairs += [PairConfig(end, at_base[p]) for p in partners if p in at_base]
        if lightest != busiest:
            pairs.append(PairConfig(lightest, busiest))
    return list({p.unordered_key: p for p in pairs}.values())


def repeat_sample(pairs: Sequence[PairConfig], count: int = 10, seed: int = 0) -> list[PairConfig]:
    """``count`` of ``pairs`` drawn at random (seeded, so the plan is reproducible), in the pairs' order."""
    chosen = set(random.Random(seed).sample(range(len(pairs)), min(count, len(pairs))))
    return [p for i, p in enumerate(pairs) if i in chosen]


def issue_plan(log: Path, resolve: Resolver, order: Sequence[str], *, name: str = "h100",
               out: str = "traces/profiles/measured/{gpu}", batch: int = 32, repeats: int = 3,
               sample: int = 10) -> CampaignPlan:
    """Issues 33 and 44's campaign: first a repeatability sample (each workload alone and ``sample`` of the
    batch-``batch`` pairs, ``repeats`` rounds: without the noise no model error means anything), then the
    batch-``batch`` pairs, the trace's configurations alone and pairs across configurations; measured as the
    committed H100 tables were."""
    base = [parse_config(f"{model},{batch},0", resolve, "plan") for model in order]
    trace = trace_configurations(log, resolve, order)
    batch_pairs = pair_plan(base, include_self=True)
    measure = MeasureSettings(warmup_steps=10, window_s=0.5, cv_windows=4, cv_target=0.03, time_limit_s=8.0)
    stages = (
        Stage("repeatability", singles=tuple(base), pairs=tuple(repeat_sample(batch_pairs, sample)), repeat=repeats,
              why=f"each workload alone and {sample} of the batch-{batch} pairs drawn at random (seed 0), measured "
                  f"{repeats} times, round by round: the coefficient of variation of a solo throughput and of a "
                  "pair's speeds (target <= 3 %)"),
        Stage(f"pairs at batch {batch}", pairs=tuple(batch_pairs),
              why=f"every unordered pair of the {len(base)} workloads at batch {batch} without AMP, self-pairs "
                  "included (the pairs already in the tables are skipped)"),
        Stage("the trace's configurations alone", singles=tuple(trace),
              why=f"each model, batch size and AMP setting the trace's jobs use ({log.name}): the solo "
                  "throughputs of its jobs, and the refit's single-job data"),
        Stage("pairs across configurations", pairs=tuple(cross_configuration_pairs(trace, base)),
              why="each workload's lightest and busiest trace configuration beside a light, a medium and a busy "
                  f"partner ({', '.join(REFERENCE_PARTNERS)} at batch {batch}) and beside each other: how "
                  "slowdown changes across its batch-size range"),
    )
    return CampaignPlan(name=name, out=out, stages=stages, measure=measure,
                        description="issues 33 and 44: repeatability first, then the remaining batch-32 pairs, "
                                    "the trace's configurations alone, pairs across configurations")

