"""What a sweep tells whoever watches it (a Rich display, a test, nobody)."""

from __future__ import annotations

from typing import Any, Protocol

from profiler.runner import QuietObserver, RunObserver


class SweepObserver(RunObserver, Protocol):
    """A run observer that also hears about configurations starting and ending."""

    def on_config_start(self, label: str) -> None: ...

    def on_config_end(self, label: str, row: dict[str, Any]) -> None: ...

    def on_config_skipped(self, label: str, reason: str) -> None: ...


class QuietSweepObserver(QuietObserver):
    """Hears everything, shows nothing."""

    def on_config_start(self, label: str) -> None:
        pass

    def on_config_end(self, label: str, row: dict[str, Any]) -> None:
        pass

    def on_config_skipped(self, label: str, reason: str) -> None:
        pass
