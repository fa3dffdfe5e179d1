"""``metadata.json`` next to the tables: where, when and how they were measured.

A throughput means little without the GPU, driver and library versions behind it.
The file also guards resumption: a table measured on one device is not silently
extended with rows measured on another.  A campaign (:mod:`profiler.campaign`) adds
a record of each chunk it ran: when, on what, how many rows, and why it stopped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
import torchvision

from profiler.nvml import Nvml, cuda_device_identity
from profiler.runner import RunSettings
from simcluster.atomic import atomic_write

METADATA_NAME = "metadata.json"


def metadata_path(table: Path) -> Path:
    return table.parent / METADATA_NAME


def describe_environment(settings: RunSettings, gpu_count: int, nvml: Nvml | None) -> dict[str, Any]:
    """Host, libraries and devices of this run (NVML for GPUs, so the parent never touches CUDA)."""
    gpus: list[dict[str, object]] = []
    driver = None
    if settings.device == "cuda" and nvml is not None:
        try:
            driver = nvml.driver_version()
            gpus = [nvml.describe(nvml.handle(cuda_device_identity(i, None))) for i in range(gpu_count)]
        except Exception:  # noqa: BLE001 - a description is not worth failing a sweep for
            gpus = []
    if settings.device == "cuda":
        device_name = str(gpus[0]["name"]) if gpus else "cuda (GPU name unknown: no NVML)"
    else:
        device_name = f"cpu ({platform.processor() or platform.machine()})"
    return {
        "device": settings.device,
        "device_name": device_name,
        "size": settings.size,
        "gpus": gpus,
        "driver": driver,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "python": platform.python_version(),
        "host": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        **describe_host(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def describe_host(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """What of the host moves a launch-bound job's speed between machines: the CPU model, its clock now, the
    cores this process may use and the load.  Keys whose source this system lacks are left out."""
    host: dict[str, Any] = {}
    try:
        lines = cpuinfo.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    models = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    clocks = [float(line.split(":", 1)[1]) for line in lines if line.startswith("cpu MHz")]
    if models:
        host["cpu_model"] = models[0]
    if clocks:
        host["cpu_mhz"] = {"min": min(clocks), "mean": round(sum(clocks) / len(clocks), 1), "max": max(clocks)}
    if hasattr(os, "sched_getaffinity"):
        host["cpus_usable"] = len(os.sched_getaffinity(0))
    if hasattr(os, "getloadavg"):
        host["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return host


def read_metadata(table: Path) -> dict[str, Any] | None:
    return _read_document(metadata_path(table))


def _read_document(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        loaded = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return loaded if isinstance(loaded, dict) else None


def resume_conflict(table: Path, environment: dict[str, Any]) -> str | None:
    """Why rows of this run must not join the existing ``table``, or None if they may."""
    if not table.exists():
        return None
    previous = (read_metadata(table) or {}).get("tables", {}).get(table.name, {}).get("environment")
    if not previous:
        return None
    for field in ("device_name", "size"):
        if previous.get(field) != environment.get(field):
            return (
                f"{table} was measured with {field} {previous.get(field)!r}, this run has "
                f"{environment.get(field)!r}; write to another --out (or remove the old table)"
            )
    return None


def write_metadata(
    table: Path, environment: dict[str, Any], settings: RunSettings, selection: dict[str, Any]
) -> Path:
    """Record this run's environment and settings under the table's name, keeping other tables' entries."""
    path = metadata_path(table)
    document = read_metadata(table) or {}
    tables = document.setdefault("tables", {})
    tables[table.name] = {
        "environment": environment,
        "settings": dataclasses.asdict(settings),
        "selection": selection,
    }
    # what the simulator's loader looks for: tables measured on a GPU, first for runs on that GPU type
    document["measured"] = all(t["environment"].get("device") == "cuda" for t in tables.values())
    document["device_name"] = environment.get("device_name")
    return _write_document(path, document)


def record_chunk(folder: Path, chunk: dict[str, Any], index: int | None = None) -> int:
    """Add a campaign chunk's record to ``folder``'s metadata.json (or replace record ``index``); its index.

    Written when a chunk starts and again when it ends, so a chunk cut off without warning is still
    there, with ``ended`` empty.
    """
    path = folder / METADATA_NAME
    document = _read_document(path) or {}
    chunks = document.setdefault("campaign", {}).setdefault("chunks", [])
    if index is None:
        chunks.append(chunk)
        index = len(chunks) - 1
    else:
        chunks[index] = chunk
    _write_document(path, document)
    return index


def _write_document(path: Path, document: dict[str, Any]) -> Path:
    text = json.dumps(document, indent=2, sort_keys=True, default=str) + "\n"
    return atomic_write(path, lambda handle: handle.write(text.encode()))
