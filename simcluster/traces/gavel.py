"""Gavel's job-trace format (OSDI'20 artifact), and a Gavel-style synthetic generator.

One job per line, tab-separated, ten fields::

    job_type  command  working_directory  num_steps_arg  needs_data_dir  total_steps  scale_factor
    priority_weight  SLO  arrival_time

``job_type`` keys into the throughput table (e.g. ``ResNet-50 (batch size 64)``), ``total_steps``
is the job's length in iterations, ``scale_factor`` its GPU count, ``SLO`` −1 for none, and
``arrival_time`` seconds.  Every problem is reported with file, line (1 = first job; the format has
no header) and field; ``skip_invalid`` drops such lines instead and counts them.

The generator follows Gavel's ``generate_job``: job types drawn uniformly from the throughput
table, durations 10^U(1.5, 3) minutes for 80 % of jobs and 10^U(3, 4) for the rest, scale factors
1/2/4/8 with probabilities 70/10/15/5 % (job types that have no multi-GPU throughput stay at 1),
``total_steps`` = duration × the job's throughput on the reference GPU type (V100), Poisson
arrivals at ``jobs_per_hour``.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simcluster.errors import TraceError
from simcluster.limits import check_csv
from simcluster.settings.fields import setting
from simcluster.throughputs import ThroughputTable, job_key, job_type_name, load_throughputs
from simcluster.traces.hetero import FRAME_COLUMNS, HeteroTrace
from simcluster.traces.sizing import MAX_GPUS
from simcluster.traces.times import MAX_SECONDS

FIELDS = ["job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir", "total_steps",
          "scale_factor", "priority_weight", "SLO", "arrival_time"]


def _number(text: str, integer: bool = False) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or (integer and value != int(value)):
        return None
    return value


def _check(parts: list[str]) -> tuple[str, str] | tuple[str, int, int, float, float, float]:
    """(field, problem) for a bad line, else (job_type, steps, scale, weight, slo, arrival)."""
    if len(parts) != len(FIELDS):
        return "line", f"expected {len(FIELDS)} tab-separated fields, got {len(parts)}"
    job_type = parts[0].strip()
    if not job_type:
        return "job_type", "empty job type"
    steps = _number(parts[5], integer=True)
    if steps is None or steps <= 0:
        return "total_steps", f"must be a positive integer, got {parts[5]!r}"
    scale = _number(parts[6], integer=True)
    if scale is None or scale <= 0:
        return "scale_factor", f"must be a positive integer, got {parts[6]!r}"
    weight = _number(parts[7])
    if weight is None or weight <= 0:
        return "priority_weight", f"must be a positive number, got {parts[7]!r}"
    slo = _number(parts[8])
    if slo is None or (slo <= 0 and slo != -1):
        return "SLO", f"must be positive or -1 (none), got {parts[8]!r}"
    arrival = _number(parts[9])
    if arrival is None or arrival < 0:
        return "arrival_time", f"must be a non-negative number of seconds, got {parts[9]!r}"
    if arrival >= MAX_SECONDS:
        return "arrival_time", f"{parts[9]} is beyond the bound of {MAX_SECONDS:.0e} s (31.7 years)"
    if scale > MAX_GPUS:
        return "scale_factor", f"{parts[6]} is beyond the bound of {MAX_GPUS:,} GPUs"
    return job_type, int(steps), int(scale), weight, slo, arrival


def load_gavel_trace(path: str | Path, *, skip_invalid: bool = False) -> HeteroTrace:
    """Read and validate a Gavel ``.trace`` file."""
    t0 = time.process_time()
    path = Path(path)
    if not path.is_file():
        raise TraceError(path, "no such file")
    check_csv(path)  # no line beyond the limit (a .trace is a tab-separated table without a header)
    try:
        lines = path.read_text().splitlines()
    except UnicodeDecodeError as exc:
        raise TraceError(path, f"not a text file ({exc})") from exc
    rows: list[tuple] = []
    problems: list[tuple[int, str, str]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        checked = _check(line.rstrip("\n").split("\t"))
        if len(checked) == 2:
            problems.append((number, str(checked[0]), str(checked[1])))
            continue
        job_type, steps, scale, weight, slo, arrival = checked
        rows.append((f"j{len(rows)}", job_type, scale, 1000, steps, weight, slo, arrival, "", number))
    skipped: Counter[str] = Counter()
    if problems:
        if not skip_invalid:
            number, fld, msg = problems[0]
            more = f" ({len(problems) - 1} more invalid line(s); --skip-invalid drops them)" if len(problems) > 1 else ""
            raise TraceError(path, msg + more, line=number, field=fld)
        skipped = Counter(f"{fld}: {msg.split(',')[0]}" for _, fld, msg in problems)
    if not rows:
        raise TraceError(path, "no valid jobs in the trace")
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS)
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    return HeteroTrace(str(path), frame, "gavel", skipped=skipped, load_cpu_seconds=time.process_time() - t0)


# ----------------------------------------------------------------------------- synthetic
SCALE_FACTORS = {1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}


@dataclass(frozen=True)
class GavelSynthSpec:
    jobs: int = setting(100, "Number of jobs.")
    jobs_per_hour: float = setting(4.0, "Mean arrival rate (Poisson), jobs per hour.")
    multi_gpu: bool = setting(True, "Draw scale factors 1/2/4/8 (70/10/15/5 %); otherwise all jobs use 1 GPU.")
    reference_gpu: str = setting("v100", "GPU type on which the drawn duration holds (total_steps = duration × "
                                 "throughput there).")
    seed: int = setting(0, "Random seed; the same seed gives the same trace.")
    throughputs: str | None = setting(None, "Throughput table (Gavel's JSON or a folder); default: the shared one.")

    def __post_init__(self) -> None:
        if self.jobs <= 0:
            raise ValueError(f"jobs must be positive, got {self.jobs}")
        if not self.jobs_per_hour > 0:
            raise ValueError(f"--jobs-per-hour must be positive, got {self.jobs_per_hour}")


def synthesize_gavel(spec: GavelSynthSpec, table: ThroughputTable | None = None) -> HeteroTrace:
    table = table or load_throughputs(spec.throughputs)
    if spec.reference_gpu not in table.gpu_types:
        raise ValueError(f"reference GPU {spec.reference_gpu!r} not in the table ({', '.join(table.gpu_types)})")
    ref = table.gpu_types.index(spec.reference_gpu)
    rng = np.random.default_rng(spec.seed)
    bases = sorted({(m, b) for m, b, s in table.solo if s == 1 and table.solo[(m, b, s)][ref] > 0})
    rows = []
    arrival = 0.0
    for i in range(spec.jobs):
        model, batch = bases[int(rng.integers(len(bases)))]
        scale = 1
        if spec.multi_gpu:
            scale = int(rng.choice(list(SCALE_FACTORS), p=list(SCALE_FACTORS.values())))
            row = table.solo.get((model, batch, scale))
            if row is None or row[ref] <= 0:
                scale = 1
        minutes = 10 ** rng.uniform(1.5, 3) if rng.random() < 0.8 else 10 ** rng.uniform(3, 4)
        steps = max(1, int(minutes * 60 * table.solo[(model, batch, scale)][ref]))
        name = job_type_name((model, batch, scale))
        rows.append((f"j{i}", name, scale, 1000, steps, 1.0, -1.0, round(arrival, 6), "", i + 1))
        arrival += rng.exponential(3600.0 / spec.jobs_per_hour)
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS)
    return HeteroTrace(f"synthetic gavel-style (seed {spec.seed})", frame, "gavel")


def save_gavel_trace(trace: HeteroTrace, out: str | Path) -> Path:
    """Write in Gavel's format (``out`` a ``.trace`` file, or a folder that gets ``gavel.trace``)."""
    out = Path(out)
    if out.suffix != ".trace":
        out.mkdir(parents=True, exist_ok=True)
        out = out / "gavel.trace"
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for job_type, scale, steps, weight, slo, arrival in trace.frame[
            ["job_type", "gpu_num", "total_steps", "priority_weight", "slo", "submit_time"]].itertuples(index=False):
        key = job_key(job_type, int(scale))
        lines.append("\t".join([job_type, f"python3 train.py --model {key[0]}", key[0].lower(), "--num_steps", "1",
                                str(int(steps)), str(int(scale)), f"{weight:g}", f"{slo:f}", f"{arrival:g}"]))
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out)
    return out
