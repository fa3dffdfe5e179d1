"""One run of a sweep, and what every part of a sweep shares about it: its spec, its trace, its row.

The bottom floor of :mod:`simcluster.experiments`: :mod:`~.sweep` (the grid and the queue), :mod:`~.backends`
(where runs execute), :mod:`~.split` (a run simulated VC by VC) and :mod:`~.notes` (what runs.csv notes)
import it, and it imports none of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcluster.atomic import atomic_write
from simcluster.config import SimConfig
from simcluster.traces import Trace, load_trace
from simcluster.traces.synth import SynthSpec, spec_from_text, synthesize

FIGURES = ("jobs", "avg_jct", "p50_jct", "p99_jct", "avg_queue", "p99_queue", "makespan", "gpu_utilization",
           "preemptions", "restarts", "shared_gpu_fraction", "jain_users", "rho_mean", "rho_p99", "rho_above_1",
           "unfinished_jobs")

# a run given a reliability option (docs/failures.md) also has these; runs.csv has their columns only in a sweep of
# such runs (RunsTable's reliability), so that other sweeps' runs.csv is as before
RELIABILITY_FIGURES = ("ettr_mean", "ettr_gpu_weighted", "interruptions")

TIMING_COLUMNS = ("sim_cpu_seconds", "load_cpu_seconds", "wall_seconds")  # differ run to run; not results

SYNTH_PREFIX = "synth:"


class SweepError(ValueError):
    """Bad sweep input (an unknown setting, an unreadable trace...): nothing is run or written."""


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: picklable, so it can travel to a worker process or a Ray task."""

    run_id: str
    trace: str  # an absolute path, or synth:jobs=…,nodes=…
    trace_name: str
    config: SimConfig
    params: tuple[tuple[str, str], ...] = ()  # the --set values, as given
    fmt: str = "csv"
    vc_config: str | None = None  # absolute path of the VC config CSV, for a trace given as a CSV file
    replica: int | None = None  # which replica of the trace (simcluster.experiments.replicas), if any
    perturb: str | None = None  # the perturbation that makes it (--perturb)
    trace_options: tuple[tuple[str, Any], ...] = ()  # the loader's options (run --duration-unit…)
    refused: str | None = None  # why its settings were refused when the grid was built (then never simulated)

    def row(self) -> dict[str, Any]:
        """The run's parameters, the first columns of its runs.csv row."""
        replica = {"replica": self.replica, "perturb": self.perturb} if self.replica is not None else {}
        from simcluster.plugins import policy_label

        return {**dict(self.params), "run_id": self.run_id, "trace": self.trace_name,
                "policy": policy_label(self.config.policy),  # a plug-in by its name, as the tables show it
                "placement": policy_label(self.config.placement, "placement"), "seed": self.config.seed, **replica}

    def identity(self) -> str:
        """A stable digest of everything that makes the run's results: trace, VC config, every setting,
        table format.  Recorded in the run's summary.json (``sweep_run``); a finished run whose
        identity differs (a changed preset, another --format) is run again."""
        what: dict[str, Any] = {"trace": self.trace, "vc_config": self.vc_config, "config": self.config.as_dict(),
                                "format": self.fmt}
        if self.replica is not None or self.trace_options:
            what |= {"replica": self.replica, "perturb": self.perturb, "trace_options": self.trace_options}
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]



_TRACES: OrderedDict[tuple[str, int, str | None, tuple[tuple[str, Any], ...]], Trace] = OrderedDict()
_TRACE_CACHE_SIZE = 4


def load_trace_arg(trace: str, gpus_per_node: int = 8, vc_config: str | None = None,
                   options: tuple[tuple[str, Any], ...] = ()) -> Trace:
    """A trace argument: a folder/CSV path, or ``synth:jobs=…,nodes=…,vcs=…,seed=…`` (SynthSpec fields)."""
    key = (trace, gpus_per_node, vc_config, options)
    if key in _TRACES:
        _TRACES.move_to_end(key)
        return _TRACES[key]
    loaded: Trace
    if trace.startswith(SYNTH_PREFIX):
        loaded = synthesize(synth_spec(trace, gpus_per_node))
    else:
        loaded = load_trace(Path(trace), vc_config and Path(vc_config), gpus_per_node=gpus_per_node, **dict(options))
    _TRACES[key] = loaded
    while len(_TRACES) > _TRACE_CACHE_SIZE:
        _TRACES.popitem(last=False)
    return loaded


def synth_spec(trace: str, gpus_per_node: int) -> SynthSpec:
    """The :class:`SynthSpec` of ``synth:field=value,…`` (commas inside a sizes, durations or arrivals
    value stay in it: :func:`simcluster.traces.synth.spec_from_text`); the run's GPUs per node unless it
    names its own.

    >>> synth_spec("synth:jobs=100,nodes=64,vcs=1,sizes=pow2:64,decay=1.5,load=0.9", 8).sizes
    'pow2:64,decay=1.5'
    """
    try:
        return spec_from_text(trace[len(SYNTH_PREFIX):], gpus_per_node=gpus_per_node)
    except ValueError as exc:
        raise SweepError(f"--trace {trace!r}: {exc}") from None



def with_identity(spec: RunSpec, summary: dict[str, Any]) -> dict[str, Any]:
    """The summary a sweep writes: the run's own, plus ``sweep_run``: its id, :meth:`RunSpec.identity`, and
    the trace as the sweep named it (a synthetic trace's whole spec, which its summary's ``trace`` lacks)."""
    replica = {"replica": spec.replica, "perturb": spec.perturb} if spec.replica is not None else {}
    return {**summary, "sweep_run": {"run_id": spec.run_id, "identity": spec.identity(), "trace": spec.trace,
                                     "trace_name": spec.trace_name, **replica}}


def ok_row(spec: RunSpec, summary: dict[str, Any], wall: float | None) -> dict[str, Any]:
    return {**spec.row(), "status": "ok", "error": "", **{k: summary.get(k) for k in FIGURES},
            **{k: summary[k] for k in RELIABILITY_FIGURES if k in summary},
            "sim_cpu_seconds": summary.get("sim_cpu_seconds"), "load_cpu_seconds": summary.get("load_cpu_seconds"),
            "wall_seconds": wall, "notes": ""}


def failed_row(spec: RunSpec, exc: BaseException, out: Path, wall: float) -> dict[str, Any]:
    """The runs.csv row of a run that raised ``exc``: status failed, the error in one line; the whole
    traceback goes to ``out/failed/<run-id>.txt``."""
    return _failed(spec, f"{type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc)), out, wall)


def refused_row(spec: RunSpec, out: Path) -> dict[str, Any]:
    """The runs.csv row of a run whose settings were refused when the grid was built
    (:attr:`RunSpec.refused`): failed, with that error; nothing was simulated.

    >>> import tempfile
    >>> from simcluster.config import SimConfig
    >>> spec = RunSpec("t-fifo-seed0", "synth:jobs=5", "t", SimConfig(), refused="ConfigError: too small")
    >>> row = refused_row(spec, Path(tempfile.mkdtemp()))
    >>> row["status"], row["error"]
    ('failed', 'ConfigError: too small')
    """
    why = spec.refused or "refused"
    details = f"{why}\n(refused when the sweep's grid was built: nothing was simulated)\n"
    return _failed(spec, why, details, out, 0.0)


def _failed(spec: RunSpec, message: str, details: str, out: Path, wall: float) -> dict[str, Any]:
    try:  # the whole story beside runs.csv, for the curious
        atomic_write(out / "failed" / f"{spec.run_id}.txt", lambda f: f.write(details.encode()))
    except OSError:
        pass
    return {**spec.row(), "status": "failed", "error": message.replace("\n", " "),
            **{k: None for k in FIGURES}, "sim_cpu_seconds": None, "load_cpu_seconds": None, "wall_seconds": wall,
            "notes": ""}



def cpu_count() -> int:
    """CPUs this process may use (the affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1
