"""A plot's canvas: a matplotlib figure of a fixed pixel size on Agg (no display, no pyplot), and its PNG bytes.

The floor every plot of simcluster draws on (the report's, the fragmentation study's, the reliability study's),
so that none of them imports another's module to get it.
"""

from __future__ import annotations

import io

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

WIDTH, HEIGHT, DPI = 960, 540, 100  # pixels of every plot


def new_figure() -> tuple[Figure, Axes]:
    """A figure of WIDTH × HEIGHT pixels with one set of axes."""
    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes, WIDTH × HEIGHT pixels."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)  # no bbox_inches: the size stays WIDTH × HEIGHT
    return buffer.getvalue()
