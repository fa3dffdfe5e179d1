"""What a sweep tells whoever watches it (a Rich display, a test, nobody)."""

from __future__ import annotations

from typing import Any, Protocol

from profiler.runner import RunObserver


class SweepObserver(RunObserver, Protocol):
    """A run observer that also hears about configurations starting and ending."""

    def on_config_start(self, label: str) -> None: ...

    def on_config_end(self, label: str, row: dict[str, Any]) -> None: ...

    def on_config_skipped(self, label: str, reason: str) -> None: ...


class QuietSweepObserver:
    """Hears everything, shows nothing."""

    def on_phase(self, text: str) -> None:
        pass

    def on_window(self, job: int, iters_per_s: float, samples_per_s: float, gpu_util: float) -> None:
        pass

    def on_warning(self, text: str) -> None:
        pass

    def on_config_start(self, label: str) -> None:
        pass

    def on_config_end(self, label: str, row: dict[str, Any]) -> None:
        pass

    def on_config_skipped(self, label: str, reason: str) -> None:
        pass
