"""The report's interactive charts (plotly): zoom into a Gantt chart, hover a bar for its job, hide a line.

Each chart is a ``<div class="chart">`` made by plotly from :class:`~simcluster.experiments.pictures.Pictures`;
plotly.js itself is inlined once in the page, so ``report.html`` opens offline and anywhere.  Lines are
thinned to what a screen shows (binned time series, CDFs at a few hundred quantiles).

>>> import numpy as np
>>> charts = cdf_charts({"fifo": np.array([1.0, 2.0, 4.0])}, {"fifo": np.array([0.0, 1.0, 3.0])}, "")
>>> [title for title, _ in charts]
['JCT CDF', 'Queueing delay CDF']
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.offline import get_plotlyjs

from simcluster.experiments.pictures import Band, Gantt, GpuCounts, Pictures, cdf_points

HEIGHT = 460
Chart = tuple[str, str]  # (title, the chart's HTML)


def plotly_script() -> str:
    """plotly.js, to inline once per page (no network needed to view the report)."""
    return f"<script>{get_plotlyjs()}</script>"


def charts(pictures: Pictures) -> list[Chart]:
    """Every interactive chart of the report, in reading order."""
    found = [gantt_chart(g) for g in pictures.gantts] + [gpu_counts_chart(g) for g in pictures.gpu_counts]
    found += [line_chart(pictures.pending, "Queue length over time", "pending jobs", pictures.more),
              line_chart(pictures.busy, "GPUs in use over time", "GPUs in use", pictures.more)]
    return found + cdf_charts(pictures.jct, pictures.queue, pictures.more)


def _html(figure: go.Figure, title: str) -> Chart:
    figure.update_layout(title=title, height=HEIGHT, margin={"l": 70, "r": 20, "t": 50, "b": 50},
                         template="plotly_white", legend={"font": {"size": 11}})
    return title, figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False})


def line_chart(series: Mapping[str, Band], title: str, ylabel: str, more: str = "") -> Chart:
    """One line per configuration (its runs' mean), with a band from their minimum to maximum."""
    figure = go.Figure()
    palette = qualitative.Plotly
    for i, (label, (days, mean, low, high)) in enumerate(series.items()):
        colour = palette[i % len(palette)]
        if np.any(high > low):
            figure.add_trace(go.Scatter(x=np.concatenate([days, days[::-1]]), y=np.concatenate([high, low[::-1]]),
                                        fill="toself", fillcolor=colour, opacity=0.2, line={"width": 0},
                                        hoverinfo="skip", showlegend=False))
        figure.add_trace(go.Scatter(x=days, y=mean, mode="lines", name=label, line={"color": colour, "width": 1.5}))
    figure.update_xaxes(title="simulated time (days since the first submission)")
    figure.update_yaxes(title=ylabel, rangemode="tozero")
    return _html(figure, title + more)


def cdf_charts(jct: Mapping[str, np.ndarray], queue: Mapping[str, np.ndarray], more: str) -> list[Chart]:
    """The CDFs of JCT and of queueing delay across the compared configurations (log time axis)."""
    found = []
    for title, series, label in (("JCT CDF", jct, "job completion time (s)"),
                                 ("Queueing delay CDF", queue, "queueing delay (s; 0 drawn at 1 s)")):
        figure = go.Figure()
        for name, values in series.items():
            x, y = cdf_points(np.maximum(values, 1.0))
            figure.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name, line={"shape": "hv", "width": 1.5}))
        figure.update_xaxes(title=label, type="log")
        figure.update_yaxes(title="fraction of jobs", range=[0, 1.01])
        found.append(_html(figure, title + more))
    return found


def gantt_chart(gantt: Gantt) -> Chart:
    """Jobs on GPUs: a band per node, a bar per stretch a job held GPUs there; hover names the job."""
    bars = gantt.bars
    per_gpu = np.array([0.9 / max(gantt.gpus[int(r)], 1) for r in bars["row"]])
    bottom = (len(gantt.rows) - 1 - bars["row"].to_numpy()) + 0.05 + bars["gpu_low"].to_numpy() * per_gpu
    height = (bars["gpu_high"].to_numpy() - bars["gpu_low"].to_numpy() + 1) * per_gpu
    palette = qualitative.Alphabet
    colours = [palette[zlib.crc32(job.encode()) % len(palette)] for job in bars["job_id"]]
    hover = [f"job {job} ({vc})<br>GPUs {lo}–{hi}<br>{start:,.2f} h → {end:,.2f} h"
             for job, vc, lo, hi, start, end in bars[["job_id", "vc", "gpu_low", "gpu_high", "start", "end"]]
             .itertuples(index=False)]
    figure = go.Figure(go.Bar(base=bars["start"], x=bars["end"] - bars["start"], y=bottom + height / 2,
                              width=height, orientation="h", marker={"color": colours, "line": {"width": 0}},
                              hovertext=hover, hoverinfo="text", name="jobs"))
    figure.update_yaxes(tickvals=np.arange(len(gantt.rows)) + 0.5, ticktext=gantt.rows[::-1],
                        range=[0, max(len(gantt.rows), 1)], title="node (a band of its GPUs)")
    figure.update_xaxes(title="simulated time (hours since the first submission)",
                        range=list(gantt.hours) if gantt.hours[1] > gantt.hours[0] else None)
    figure.update_layout(bargap=0, showlegend=False)
    note = f" — {gantt.note}" if gantt.note else ""
    return _html(figure, f"Jobs on GPUs: {gantt.label}{note}")


def gpu_counts_chart(chart: GpuCounts) -> Chart:
    """Each elastic job's GPU count over time: a row per job, a bar per stretch at one count, coloured by it;
    hover names the job and the count."""
    bars = chart.bars
    total = len(chart.rows)
    hover = [f"job {job}<br>{int(gpus)} GPU(s)<br>{start:,.2f} h → {end:,.2f} h"
             for job, gpus, start, end in bars[["job_id", "gpus", "start", "end"]].itertuples(index=False)]
    figure = go.Figure(go.Bar(base=bars["start"], x=bars["end"] - bars["start"],
                              y=total - 1 - bars["row"].to_numpy() + 0.5, width=0.8, orientation="h",
                              marker={"color": np.log2(np.maximum(bars["gpus"].to_numpy(float), 1)),
                                      "colorscale": "Viridis", "line": {"width": 0},
                                      "colorbar": {"title": "GPUs", "tickvals": list(range(7)),
                                                   "ticktext": [str(2 ** i) for i in range(7)]}},
                              hovertext=hover, hoverinfo="text", name="jobs"))
    figure.update_yaxes(showticklabels=False, range=[0, max(total, 1)],
                        title=f"job ({total}, in submission order, first at the top)")
    figure.update_xaxes(title="simulated time (hours since the first submission)")
    figure.update_layout(bargap=0, showlegend=False)
    note = f" — {chart.note}" if chart.note else ""
    return _html(figure, f"GPUs per job: {chart.label}{note}")
