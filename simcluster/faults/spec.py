"""A run's failure model from the text of ``--faults``: a fault log, a ``fitted.json`` or a rate model.

- a path ending in ``.json`` whose document is an object of schema ``simcluster-fault-fit``: the fit's model
  (:meth:`~simcluster.faults.FaultFit.model`, repairs drawn from the recorded times);
- any other path (InfiniteHBD JSON, CSV ``node,start,end[,class]``): the log replayed
  (:class:`~simcluster.faults.LogReplay`, ``offset_s`` into the log at the run's start; ``random``: drawn from
  the run's seed, :func:`~simcluster.faults.replay.random_offset`);
- ``mtbf=TIME[,repair=TIME|lognormal:MEDIAN:SIGMA][,shape=K][,per=node|gpu]``: a :class:`RateModel` (times in
  seconds or with a unit: ``30d``, ``4h``, ``90m``).

:func:`node_rate` is the rate at which one node of a model fails while up (what the Young/Daly interval and
the no-progress guard read); :func:`rate_evidence` the faults and exposure a rate was counted from, where it
was (a log, a fit), for an interval that carries the rate's own uncertainty.

>>> model = failure_model("mtbf=10d,repair=1h")
>>> round(1 / node_rate(model, 8) / 86_400, 3), model.classes[0].repair
(10.0, Repair.fixed(3600))
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcluster.errors import TraceError
from simcluster.faults.fit import load_fit
from simcluster.faults.log import FaultLog, OpenFaults, read_fault_log
from simcluster.faults.models import (
    MAX_HORIZON_S,
    MAX_SHAPE,
    MAX_SIGMA,
    MIN_SHAPE,
    FailureModel,
    RateModel,
    Repair,
)
from simcluster.faults.replay import LogReplay, random_offset
from simcluster.limits import LimitError, duration, number, shown
from simcluster.settings.reliability import MAX_MTBF_S, MIN_MTBF_S

RATE_KEYS = ("mtbf", "repair", "shape", "per")
RANDOM = "random"  # --faults-offset random: each run's own offset, drawn from its seed
Offset = float | str  # seconds into the log, or RANDOM


@dataclass(frozen=True)
class LogReading:
    """How a replayed fault log is read (``--fault-servers``, ``--open-faults``, ``--fault-columns``): what
    ``lucid-sim faults fit`` takes as options, so that a run replays the log its fit describes.

    >>> LogReading(servers=560).given()
    (('--fault-servers', 560),)
    """

    servers: int | None = None  # the fleet observed; None: the log's own count
    open_faults: OpenFaults = "error"
    columns: str | None = None

    @classmethod
    def of(cls, config: Any) -> LogReading:
        return cls(config.fault_servers or None, config.open_faults, config.fault_columns or None)

    def given(self) -> tuple[tuple[str, Any], ...]:
        """The options given that only a log reads (a rate model or a fit refuses them)."""
        return tuple((name, value) for name, value in (
            ("--fault-servers", self.servers), ("--open-faults", self.open_faults != "error" and self.open_faults),
            ("--fault-columns", self.columns)) if value)

    def read(self, path: Path) -> FaultLog:
        return read_fault_log(path, servers=self.servers, open_faults=self.open_faults, columns=self.columns)


def seconds(text: str, what: str, high: float | None = None) -> float:
    """``3600``, ``90m``, ``4h``, ``1h30m``, ``30d`` as seconds, at most ``high``: :func:`simcluster.limits.duration`,
    whose :class:`LimitError` names ``what`` and the text as given (a number that overflows with its unit,
    ``1e308d``, too).

    >>> seconds("90m", "--work")
    5400.0
    >>> seconds("1e308d", "--faults repair")
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --faults repair must be a finite time, got '1e308d'
    """
    return duration(text, what, high=high)


def is_rate_spec(spec: str) -> bool:
    return "=" in spec and not Path(spec).exists()


def rate_model(spec: str) -> RateModel:
    """A :class:`RateModel` from ``mtbf=…[,repair=…][,shape=…][,per=…]``; errors name ``--faults`` and the key."""
    given: dict[str, str] = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in RATE_KEYS:
            raise LimitError(f"--faults {shown(spec)}: {shown(part.strip())} is not one of "
                             f"{', '.join(k + '=' for k in RATE_KEYS)} (e.g. mtbf=30d,repair=4h)")
        if key in given:
            raise LimitError(f"--faults {shown(spec)}: {key}= given twice")
        given[key] = value.strip()
    if "mtbf" not in given:
        raise LimitError(f"--faults {shown(spec)}: a rate model needs mtbf= (mean time between failures of a node)")
    mtbf = _mtbf(given["mtbf"])
    repair = _repair(given.get("repair", "1h"))
    per = given.get("per", "node")
    if per not in ("node", "gpu"):
        raise LimitError(f"--faults per= must be node or gpu, got {shown(per)}")
    shape = number(given.get("shape", "1"), "--faults shape")
    if not MIN_SHAPE <= shape <= MAX_SHAPE:
        raise LimitError(f"--faults shape must be from {MIN_SHAPE:g} to {MAX_SHAPE:g} (the Weibull shape of the times "
                         f"between failures: 1 exponential, below 1 clustered; below {MIN_SHAPE:g} a run's faults "
                         f"swing from none to several times their mean), got {shown(given['shape'])}")
    return RateModel.from_mtbf(mtbf, repair, per=per, shape=shape)  # type: ignore[arg-type]


def _mtbf(text: str) -> float:
    """``mtbf=``: from :data:`MIN_MTBF_S` (a failure a second, the models' highest rate) to :data:`MAX_MTBF_S`
    (a million years: beyond it a unit mistake)."""
    mtbf = seconds(text, "--faults mtbf", high=MAX_MTBF_S)
    if mtbf < MIN_MTBF_S:
        raise LimitError(f"--faults mtbf must be at least {MIN_MTBF_S:g} s (a failure a second, the highest rate a "
                         f"model draws), e.g. 30d, got {shown(text)}")
    return mtbf


def _repair(text: str) -> Repair:
    """``repair=``: a fixed time or ``lognormal:MEDIAN:SIGMA``, each time at most the models' horizon."""
    if not text.lower().startswith("lognormal:"):
        return Repair.fixed(seconds(text, "--faults repair", high=MAX_HORIZON_S))
    parts = text.split(":")
    if len(parts) != 3:
        raise LimitError(f"--faults repair={shown(text)}: write lognormal:MEDIAN:SIGMA, e.g. lognormal:16h:1.2")
    median = seconds(parts[1], "--faults repair median", high=MAX_HORIZON_S)
    if median <= 0:
        raise LimitError(f"--faults repair median must be greater than 0, got {shown(parts[1])}")
    return Repair.lognormal(median, number(parts[2], "--faults repair sigma", low=0, high=MAX_SIGMA))


def offset_of(value: Any, what: str = "--faults-offset") -> Offset:
    """``--faults-offset``: ``random``, or a time into the log (``3600``, ``90d``) as seconds; a
    :class:`LimitError` naming ``what`` and the value as given otherwise.

    >>> offset_of("random"), offset_of("90d"), offset_of(3600)
    ('random', 7776000.0, 3600.0)
    >>> offset_of("soon")
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --faults-offset must be random or a time into the log (3600, 12h, 90d), got 'soon'
    """
    if isinstance(value, str) and value.strip().lower() == RANDOM:
        return RANDOM
    try:
        return seconds(value, what) if isinstance(value, str) else number(value, what, low=0)
    except LimitError:
        raise LimitError(f"{what} must be {RANDOM} or a time into the log (3600, 12h, 90d), got {shown(value)}") \
            from None


def failure_model(spec: str | os.PathLike[str], offset_s: Offset = 0.0, seed: int = 0,
                  reading: LogReading | None = None) -> FailureModel:
    """The model ``--faults`` names (module docstring); a replayed log starts ``offset_s`` into the log
    (``random``: :func:`~simcluster.faults.replay.random_offset` of the log's span and ``seed``) and is read as
    ``reading`` says.  Bad input: :class:`TraceError` naming the file and field, or :class:`LimitError` naming
    the option."""
    from simcluster.paths import resolve_data

    text = os.fspath(spec)
    offset = offset_of(offset_s)
    given = [name for name, value in (("--faults-offset", offset), *(reading.given() if reading else ())) if value]
    if is_rate_spec(text):
        if given:
            raise LimitError(f"{', '.join(given)} applies to a replayed fault log, not to a rate model")
        return rate_model(text)
    path = resolve_data(text)
    if not path.exists():
        raise TraceError(path, "no such fault log, fitted.json or rate model (a rate model: mtbf=30d,repair=4h)")
    if _is_fit(path):
        if given:
            raise LimitError(f"{', '.join(given)} applies to a replayed fault log, not to a fitted.json")
        return load_fit(path).model()  # every field checked, errors naming the file and field
    log = (reading or LogReading()).read(path)
    if offset == RANDOM:
        return LogReplay(log, offset_s=random_offset(log.span_s, seed))
    assert isinstance(offset, float)
    check_offset(offset, log.span_s, offset_s)
    return LogReplay(log, offset_s=offset)


def check_offset(offset: float, span_s: float, given: Any = None) -> float:
    """An offset into a log of ``span_s`` seconds: at most its span (the replay wraps round its end, but an
    offset beyond it is a mistake of unit or of log); :class:`LimitError` naming ``--faults-offset``.

    >>> check_offset(3600.0, 86_400.0)
    3600.0
    >>> check_offset(90 * 86_400.0, 30 * 86_400.0, "90d")
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --faults-offset must be at most the log's span, 2,592,000 s (30.0 days), got '90d'
    """
    if offset <= span_s:
        return offset
    shown_given = shown(given) if isinstance(given, str) else f"{offset:,.0f} s"
    raise LimitError(f"--faults-offset must be at most the log's span, {span_s:,.0f} s ({span_s / 86_400:,.1f} "
                     f"days), got {shown_given}")


def rate_evidence(faults: str | os.PathLike[str] | FailureModel, reading: LogReading | None = None
                  ) -> tuple[int, float] | None:
    """The faults and the servers' up time (s) a model's rate was counted from: a replayed log's, or a
    ``fitted.json``'s (its ``faults`` and ``exposure_server_days``); None for a rate given by hand, whose rate
    is taken as exact.

    >>> rate_evidence("mtbf=30d") is None
    True
    """
    if isinstance(faults, LogReplay):
        return len(faults.log.faults), _up_seconds(faults)
    if not isinstance(faults, (str, os.PathLike)) or is_rate_spec(os.fspath(faults)):
        return None
    from simcluster.paths import resolve_data

    path = resolve_data(os.fspath(faults))
    if _is_fit(path):
        fit = load_fit(path)
        return fit.faults, fit.exposure_server_days * 86_400.0
    return rate_evidence(LogReplay((reading or LogReading()).read(path)))


def _up_seconds(replay: LogReplay) -> float:
    """The logged servers' time up, in server-seconds: what a rate of faults per server is counted against."""
    log = replay.log
    return log.servers * log.span_s - log.down_server_seconds()


def _is_fit(path: Path) -> bool:
    """Whether ``path`` holds a JSON object, read by its content whatever its name (a ``fitted.json`` saved as
    ``fitted``; the InfiniteHBD log is a list of events, a CSV log starts with its header)."""
    if not path.is_file():
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise TraceError(path, f"cannot be read: {exc.strerror or exc}") from None
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{")


def node_rate(model: FailureModel, gpus_per_node: int) -> float:
    """Failures per second of one node while up: a rate model's, or a replayed log's faults ÷ its servers' up
    time."""
    if isinstance(model, RateModel):
        return model.node_rate(gpus_per_node)
    if isinstance(model, LogReplay):
        up = _up_seconds(model)
        return len(model.log.faults) / up if up > 0 else 0.0
    rate = getattr(model, "node_rate", None)
    return float(rate(gpus_per_node)) if callable(rate) else 0.0


def fleet_doubt(model: FailureModel | None, reading: LogReading, nodes: int) -> str | None:
    """A warning where a replayed CSV log's fleet is taken to be its servers: a CSV log lists only the servers that
    failed, so each of the run's ``nodes`` replays a failing server's history, and the run sees as many faults
    as a fleet of failing servers would, not the fleet observed.  None where the fleet was given or is the log's
    own (the InfiniteHBD JSON's stated 400)."""
    if not isinstance(model, LogReplay) or model.log.format != "csv" or reading.servers is not None:
        return None
    log = model.log
    return (f"--faults {log.path}: the fleet is taken to be the log's {log.servers:,} server(s), every one of which "
            f"failed (a CSV log lists only servers with faults), so each of the cluster's {nodes:,} nodes replays a "
            f"failing server's history: {node_rate(model, 1) * 86_400:,.3g} faults a day while up. Give "
            "--fault-servers with the servers observed, those that never failed included.")


def model_of(config: Any) -> FailureModel | None:
    """The failure model a run's settings name, resolved once: ``--faults``, or ``--node-mtbf`` as a rate model
    where spares or exclusion need one stream of server faults (``--node-mtbf`` alone keeps each node's own
    process, :func:`~simcluster.engine.failures.node_life`); None otherwise.  ``--faults-offset random`` draws
    the run's offset from ``--seed``."""
    if config.faults:
        return failure_model(config.faults, config.faults_offset, seed=config.seed, reading=LogReading.of(config))
    if config.node_mtbf > 0 and (config.spare_nodes or config.exclude_after):
        return RateModel.from_mtbf(config.node_mtbf, Repair.fixed(config.node_repair))
    return None
