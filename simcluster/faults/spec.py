"""A run's failure model from the text of ``--faults``: a fault log, a ``fitted.json`` or a rate model.

- a path ending in ``.json`` whose document is an object of schema ``simcluster-fault-fit``: the fit's model
  (:meth:`~simcluster.faults.FaultFit.model`, repairs drawn from the recorded times);
- any other path (InfiniteHBD JSON, CSV ``node,start,end[,class]``): the log replayed
  (:class:`~simcluster.faults.LogReplay`, ``offset_s`` into the log at the run's start);
- ``mtbf=TIME[,repair=TIME|lognormal:MEDIAN:SIGMA][,shape=K][,per=node|gpu]``: a :class:`RateModel` (times in
  seconds or with a unit: ``30d``, ``4h``, ``90m``).

:func:`node_rate` is the rate at which one node of a model fails while up (what the Young/Daly interval and
the no-progress guard read).

>>> model = failure_model("mtbf=10d,repair=1h")
>>> round(1 / node_rate(model, 8) / 86_400, 3), model.classes[0].repair
(10.0, Repair.fixed(3600))
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from simcluster.errors import TraceError
from simcluster.faults.fit import load_fit
from simcluster.faults.log import read_fault_log
from simcluster.faults.models import FailureModel, RateModel, Repair
from simcluster.faults.replay import LogReplay
from simcluster.limits import LimitError, number, shown

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0}
RATE_KEYS = ("mtbf", "repair", "shape", "per")


def seconds(text: str, what: str) -> float:
    """``3600``, ``90m``, ``4h``, ``30d`` as seconds; :class:`LimitError` naming ``what`` otherwise."""
    text = text.strip()
    scale = _UNITS.get(text[-1:].lower(), None) if text else None
    value = text[:-1] if scale is not None else text
    return number(value, what, low=0) * (scale or 1.0)


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
    mtbf = seconds(given["mtbf"], "--faults mtbf")
    if mtbf <= 0:
        raise LimitError(f"--faults mtbf must be greater than 0, got {shown(given['mtbf'])}")
    repair_text = given.get("repair", "1h")
    if repair_text.lower().startswith("lognormal:"):
        parts = repair_text.split(":")
        if len(parts) != 3:
            raise LimitError(f"--faults repair={shown(repair_text)}: write lognormal:MEDIAN:SIGMA, e.g. lognormal:16h:1.2")
        repair = Repair.lognormal(seconds(parts[1], "--faults repair median"), number(parts[2], "--faults repair sigma"))
    else:
        repair = Repair.fixed(seconds(repair_text, "--faults repair"))
    per = given.get("per", "node")
    if per not in ("node", "gpu"):
        raise LimitError(f"--faults per= must be node or gpu, got {shown(per)}")
    shape = number(given.get("shape", "1"), "--faults shape", above=0, high=100)
    return RateModel.from_mtbf(mtbf, repair, per=per, shape=shape)  # type: ignore[arg-type]


def failure_model(spec: str | os.PathLike[str], offset_s: float = 0.0) -> FailureModel:
    """The model ``--faults`` names (module docstring).  Bad input: :class:`TraceError` naming the file and
    field, or :class:`LimitError` naming the option."""
    from simcluster.paths import resolve_data

    text = os.fspath(spec)
    if is_rate_spec(text):
        if offset_s:
            raise LimitError("--faults-offset applies to a replayed fault log, not to a rate model")
        return rate_model(text)
    path = resolve_data(text)
    if not path.exists():
        raise TraceError(path, "no such fault log, fitted.json or rate model (a rate model: mtbf=30d,repair=4h)")
    if _is_fit(path):
        if offset_s:
            raise LimitError("--faults-offset applies to a replayed fault log, not to a fitted.json")
        return load_fit(path).model()  # every field checked, errors naming the file and field
    log = read_fault_log(path)
    if offset_s > log.span_s:
        raise LimitError(f"--faults-offset must be at most the log's span, {log.span_s:,.0f} s, got {offset_s:g}")
    return LogReplay(log, offset_s=offset_s)


def _is_fit(path: Path) -> bool:
    """Whether ``path`` holds a JSON object (a ``fitted.json``; the InfiniteHBD log is a list of events)."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(4096).lstrip().startswith(b"{")
    except OSError as exc:
        raise TraceError(path, f"cannot be read: {exc.strerror or exc}") from None


def node_rate(model: FailureModel, gpus_per_node: int) -> float:
    """Failures per second of one node while up: a rate model's, or a replayed log's faults ÷ its servers' up
    time."""
    if isinstance(model, RateModel):
        return model.node_rate(gpus_per_node)
    if isinstance(model, LogReplay):
        log = model.log
        up = log.servers * log.span_s - log.down_server_seconds()
        return len(log.faults) / up if up > 0 else 0.0
    rate = getattr(model, "node_rate", None)
    return float(rate(gpus_per_node)) if callable(rate) else 0.0


def model_of(config: Any) -> FailureModel | None:
    """The failure model a run's settings name, resolved once: ``--faults``, or ``--node-mtbf`` as a rate model
    where spares or exclusion need one stream of server faults (``--node-mtbf`` alone keeps each node's own
    process, :func:`~simcluster.engine.failures.node_life`); None otherwise."""
    if config.faults:
        return failure_model(config.faults, config.faults_offset)
    if config.node_mtbf > 0 and (config.spare_nodes or config.exclude_after):
        return RateModel.from_mtbf(config.node_mtbf, Repair.fixed(config.node_repair))
    return None
