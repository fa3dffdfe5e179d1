"""Fitting a fault log: per-class rates and repair times, with 95 % intervals, saved as ``fitted.json``.

- **Rate** of a class: its faults ÷ the servers' *up* time in server-days (servers × span less the time
  they were down): the rate at which a running server fails, which is what a job on it sees and what
  :class:`~simcluster.faults.RateModel` draws from.  Interval: exact Poisson (Garwood):
  ``[χ²(0.025; 2n)/2, χ²(0.975; 2n+2)/2] ÷ exposure``.
- **Share** of a class: its faults ÷ all faults, with the exact binomial (Clopper-Pearson) interval.
- **Repair** of a class: the recorded repair times of its closed faults; the median with the distribution-
  free interval between two order statistics (binomial ranks), the quartiles, and a log-normal fit
  (μ, σ of the logarithm of the positive times: a repair of 0 is one shorter than the log's resolution).

``fitted.json`` (:data:`SCHEMA`, version :data:`VERSION`; docs/failures.md) keeps every repair time, so a run
can draw repairs from them (``repair="empirical"``, the default) or from the log-normal fit.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from simcluster.errors import TraceError
from simcluster.faults.log import DAY, MAX_FAULTS, MAX_SERVERS, MAX_SPAN_S, FaultLog, read_fault_log
from simcluster.faults.models import MAX_SIGMA, FaultClass, RateModel, Repair
from simcluster.limits import shown

SCHEMA = "simcluster-fault-fit"
VERSION = 1
MAX_FIT_BYTES = 1 << 28
CONFIDENCE = 0.95
_LOG_SPAN = math.log(MAX_SPAN_S)  # a log-normal repair's μ: its median e^μ from 3e-10 s to a century


@dataclass(frozen=True)
class ClassFit:
    """One class's fit.  Rates are per server-day of up time; times in seconds."""

    level: str
    cls: str
    faults: int
    share: float
    share_low: float
    share_high: float
    rate: float
    rate_low: float
    rate_high: float
    repairs_s: tuple[float, ...]  # the recorded repair times of its closed faults, sorted
    median_s: float | None
    median_low_s: float | None
    median_high_s: float | None
    lognormal_mu: float | None
    lognormal_sigma: float | None

    @property
    def key(self) -> str:
        return f"{self.level}/{self.cls}" if self.level else self.cls

    def quantile_s(self, q: float) -> float | None:
        """The empirical ``q``-quantile of the repair times (linear between order statistics)."""
        if not self.repairs_s:
            return None
        position = q * (len(self.repairs_s) - 1)
        low = math.floor(position)
        high = min(low + 1, len(self.repairs_s) - 1)
        return self.repairs_s[low] + (position - low) * (self.repairs_s[high] - self.repairs_s[low])


@dataclass(frozen=True)
class FaultFit:
    """A log's fit: ``source`` says what was fitted; ``classes`` by faults, most first."""

    source: dict[str, Any]
    servers: int
    span_days: float
    exposure_server_days: float
    faults: int
    rate: float
    rate_low: float
    rate_high: float
    classes: tuple[ClassFit, ...]

    def interruption_interval_s(self, servers: int) -> float:
        """Mean time between faults that a job spanning ``servers`` servers sees (s)."""
        return DAY / (self.rate * servers) if self.rate > 0 else math.inf

    def model(self, repair: Literal["empirical", "lognormal", "median"] = "empirical") -> RateModel:
        """A per-node :class:`RateModel` with this fit's classes, for a cluster of any size.  A class with no
        recorded repair time (all its faults open) is repaired after the median of all recorded times."""
        every = sorted(t for c in self.classes for t in c.repairs_s)
        fallback = every[len(every) // 2] if every else 0.0
        classes = []
        for c in self.classes:
            if not c.repairs_s:
                fix = Repair.fixed(fallback)
            elif repair == "empirical":
                fix = Repair.empirical(c.repairs_s)
            elif repair == "lognormal" and c.lognormal_mu is not None:
                fix = Repair.lognormal(math.exp(c.lognormal_mu), c.lognormal_sigma or 0.0)
            elif repair in ("median", "lognormal"):
                fix = Repair.fixed(c.median_s or 0.0)
            else:
                raise ValueError(f"repair must be empirical, lognormal or median, got {repair!r}")
            classes.append(FaultClass(c.key, c.rate / DAY, fix))
        return RateModel(tuple(classes), per="node")

    def to_dict(self) -> dict[str, Any]:
        classes = []
        for c in self.classes:
            entry = asdict(c)
            entry["class"] = entry.pop("cls")
            entry["repairs_s"] = [round(t, 3) for t in c.repairs_s]
            entry["quantiles_s"] = {f"p{q}": c.quantile_s(q / 100) for q in (10, 25, 50, 75, 90)}
            classes.append(entry)
        return {"schema": SCHEMA, "version": VERSION, "source": self.source, "servers": self.servers,
                "span_days": self.span_days, "exposure_server_days": self.exposure_server_days,
                "faults": self.faults, "rate_per_server_day": self.rate, "rate_low": self.rate_low,
                "rate_high": self.rate_high, "confidence": CONFIDENCE, "classes": classes}

    def save(self, path: str | os.PathLike[str]) -> Path:
        from simcluster.atomic import atomic_write
        from simcluster.results import to_json

        text = to_json(self.to_dict(), indent=2).encode() + b"\n"
        return atomic_write(path, lambda handle: handle.write(text))


def poisson_interval(count: int, exposure: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Exact (Garwood) interval of a Poisson rate: ``count`` events in ``exposure``."""
    from scipy.stats import chi2

    alpha = 1 - confidence
    low = chi2.ppf(alpha / 2, 2 * count) / 2 if count else 0.0
    high = chi2.ppf(1 - alpha / 2, 2 * count + 2) / 2
    return float(low) / exposure, float(high) / exposure


def share_interval(count: int, total: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a proportion."""
    from scipy.stats import beta

    alpha = 1 - confidence
    low = beta.ppf(alpha / 2, count, total - count + 1) if count else 0.0
    high = beta.ppf(1 - alpha / 2, count + 1, total - count) if count < total else 1.0
    return float(low), float(high)


def median_interval(ordered: tuple[float, ...], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Distribution-free interval of a median: order statistics at binomial(n, ½) ranks."""
    from scipy.stats import binom

    n = len(ordered)
    alpha = 1 - confidence
    low = int(binom.ppf(alpha / 2, n, 0.5))  # 1-based rank of the lower bound
    high = n + 1 - low if low >= 1 else n
    return ordered[max(low, 1) - 1], ordered[min(high, n) - 1]


def fit_faults(log: FaultLog) -> FaultFit:
    """Fit ``log`` (a :class:`~simcluster.faults.FaultLog`)."""
    exposure = (log.servers * log.span_s - log.down_server_seconds()) / DAY
    total = len(log.faults)
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for fault in log.faults:
        groups[(fault.level, fault.cls)].append(fault)
    classes = []
    for (level, cls), faults in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        n = len(faults)
        repairs = tuple(sorted(f.repair_s for f in faults if f.closed))
        median = low = high = mu = sigma = None
        if repairs:
            median = _median(repairs)
            low, high = median_interval(repairs)
            logs = [math.log(t) for t in repairs if t > 0]
            if logs:
                mu = sum(logs) / len(logs)
                sigma = math.sqrt(sum((x - mu) ** 2 for x in logs) / (len(logs) - 1)) if len(logs) > 1 else 0.0
        classes.append(ClassFit(level, cls, n, n / total, *share_interval(n, total), n / exposure,
                                *poisson_interval(n, exposure), repairs, median, low, high, mu, sigma))
    source = {"path": Path(log.path).name, "format": log.format, "notes": list(log.notes)}
    return FaultFit(source, log.servers, log.span_days, exposure, total, total / exposure,
                    *poisson_interval(total, exposure), tuple(classes))


def fit_log(path: str | os.PathLike[str], **read: Any) -> FaultFit:
    """:func:`fit_faults` of :func:`~simcluster.faults.read_fault_log` ``(path, **read)``."""
    return fit_faults(read_fault_log(path, **read))


def _median(ordered: tuple[float, ...]) -> float:
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def load_fit(path: str | os.PathLike[str]) -> FaultFit:
    """Read ``fitted.json`` back, checking it: :class:`~simcluster.errors.TraceError` naming the file and field."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FIT_BYTES:
            raise TraceError(path, f"is {size:,} bytes, more than the limit of {MAX_FIT_BYTES:,} for fitted faults")
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise TraceError(path, f"cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TraceError(path, "is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"is not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    return fit_from_dict(data, str(path))


def fit_from_dict(data: Any, where: str = "fitted faults") -> FaultFit:
    """A :class:`FaultFit` from its :meth:`FaultFit.to_dict` form, every field checked."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise TraceError(where, f"is not a fit of fault rates (its 'schema' must be {SCHEMA!r}; made by "
                         "`lucid-sim faults fit LOG --out fitted.json`)", field="schema")
    if data.get("version") != VERSION:
        raise TraceError(where, f"has version {shown(data.get('version'))}; this simcluster reads version {VERSION}",
                         field="version")
    servers = _count(data, "servers", where, low=1)
    faults = _count(data, "faults", where, low=0, high=MAX_FAULTS)
    top = {name: _real(data, name, where) for name in ("span_days", "exposure_server_days", "rate_per_server_day",
                                                       "rate_low", "rate_high")}
    if top["exposure_server_days"] <= 0:
        raise TraceError(where, "must be positive", field="exposure_server_days")
    entries = data.get("classes")
    if not isinstance(entries, list) or not entries:
        raise TraceError(where, "must be a non-empty list of fault classes", field="classes")
    classes = []
    for i, entry in enumerate(entries):
        at = f"classes[{i}]"
        if not isinstance(entry, dict):
            raise TraceError(where, "must be an object", field=at)
        names = {}
        for name in ("level", "class"):
            value = entry.get(name)
            if not isinstance(value, str) or (name == "class" and not value):
                raise TraceError(where, f"must be a string, got {shown(value)}", field=f"{at}.{name}")
            names[name] = value
        n = _count(entry, "faults", where, low=0, high=MAX_FAULTS, prefix=at)
        numbers = {name: _real(entry, name, where, prefix=at) for name in
                   ("share", "share_low", "share_high", "rate", "rate_low", "rate_high")}
        if not numbers["share"] <= 1:
            raise TraceError(where, "must be at most 1", field=f"{at}.share")
        repairs = entry.get("repairs_s")
        if not isinstance(repairs, list) or len(repairs) > MAX_FAULTS:
            raise TraceError(where, "must be a list of repair times in seconds", field=f"{at}.repairs_s")
        times = tuple(sorted(_real({"t": t}, "t", where, prefix=f"{at}.repairs_s[{j}]") for j, t in enumerate(repairs)))
        optional = {name: _real(entry, name, where, prefix=at, optional=True, signed=name == "lognormal_mu")
                    for name in ("median_s", "median_low_s", "median_high_s", "lognormal_mu", "lognormal_sigma")}
        classes.append(ClassFit(names["level"], names["class"], n, numbers["share"], numbers["share_low"],
                                numbers["share_high"], numbers["rate"], numbers["rate_low"], numbers["rate_high"],
                                times, **optional))
    source = data.get("source") if isinstance(data.get("source"), dict) else {}
    return FaultFit(source, servers, top["span_days"], top["exposure_server_days"], faults,
                    top["rate_per_server_day"], top["rate_low"], top["rate_high"], tuple(classes))


def _count(data: dict[str, Any], name: str, where: str, low: int, high: int = 10_000_000, prefix: str = "") -> int:
    value = data.get(name)
    field = f"{prefix}.{name}" if prefix else name
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise TraceError(where, f"must be a whole number from {low} to {high:,}, got {shown(value)}", field=field)
    return value


def _real(data: dict[str, Any], name: str, where: str, prefix: str = "", optional: bool = False,
          signed: bool = False) -> Any:
    """Field ``name`` of ``data``: a finite number within its :func:`_bounds`, or a :class:`TraceError` naming
    the file ``where`` and the field's path (``classes[0].repairs_s[3]``)."""
    value = data.get(name)
    field = f"{prefix}.{name}" if prefix and name != "t" else (prefix or name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TraceError(where, f"must be a finite number, got {shown(value)}", field=field)
    if value < 0 and not signed:
        raise TraceError(where, f"must be non-negative, got {shown(value)}", field=field)
    low, high, meaning = _bounds(field)
    if not low <= value <= high:
        shown_low, shown_high = (f"{b:,.0f}" if float(b).is_integer() else f"{b:.4g}" for b in (low, high))
        raise TraceError(where, f"must be from {shown_low} to {shown_high} ({meaning}), got {shown(value)}", field=field)
    return float(value)


def _bounds(field: str) -> tuple[float, float, str]:
    """What a field of ``fitted.json`` may hold and why: the bounds a run's fault model checks (a rate of at most
    one fault a second per server, times within a century), so that a value a model would refuse is refused
    here, where the file and field can be named.

    >>> _bounds("classes[2].repairs_s[7]")
    (0.0, 3153600000.0, 'seconds, at most a century')
    """
    name = field.rpartition(".")[2].partition("[")[0] or field
    if name.startswith("rate"):
        return 0.0, DAY, "faults per server-day, at most one a second"
    if name.startswith("share"):
        return 0.0, 1.0, "a fraction of the faults"
    if name == "lognormal_mu":
        return -_LOG_SPAN, _LOG_SPAN, "the logarithm of seconds, within a century"
    if name == "lognormal_sigma":
        return 0.0, MAX_SIGMA, "of the logarithm of seconds"
    if name == "span_days":
        return 0.0, MAX_SPAN_S / DAY, "days, at most a century"
    if name == "exposure_server_days":
        return 0.0, MAX_SERVERS * MAX_SPAN_S / DAY, "server-days, at most a century of the most servers"
    return 0.0, MAX_SPAN_S, "seconds, at most a century"
