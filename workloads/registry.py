"""Workloads by the trace's model name; each workload module registers itself here."""

from __future__ import annotations

from collections.abc import Callable

from workloads.base import Builder, WorkloadSpec

_WORKLOADS: dict[str, WorkloadSpec] = {}


class UnknownWorkloadError(KeyError):
    """A model name that no workload is registered under; the message lists the valid ones."""

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


def register_workload(model: str, dataset: str, summary: str) -> Callable[[Builder], Builder]:
    """Register ``builder`` under the trace's ``model`` name (one workload per model name)."""

    def decorator(builder: Builder) -> Builder:
        if model in _WORKLOADS:
            raise ValueError(f"workload {model!r} is registered twice")
        _WORKLOADS[model] = WorkloadSpec(model=model, dataset=dataset, builder=builder, summary=summary)
        return builder

    return decorator


def get_workload(model: str) -> WorkloadSpec:
    """The workload registered under ``model``; UnknownWorkloadError naming the valid ones otherwise."""
    try:
        return _WORKLOADS[model]
    except KeyError:
        raise UnknownWorkloadError(
            f"unknown workload {model!r}; valid workloads: {', '.join(workload_names())}"
        ) from None


def workload_names() -> list[str]:
    return list(_WORKLOADS)


def all_workloads() -> list[WorkloadSpec]:
    return list(_WORKLOADS.values())
