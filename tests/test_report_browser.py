"""The report's interactive page in a real browser: Debian's chromium, driven headless by playwright, opens
report.html; every chart must render with data and the console must stay free of errors.

Skips (saying why) only where no browser can be had: playwright not installed, or no chromium at
``/usr/bin/chromium`` (`.ci/run` installs Debian's package; browsers that download their own build
cannot be fetched here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.traces.synth import SynthSpec, save_trace, synthesize

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
runner = CliRunner()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    if not CHROMIUM.is_file():
        pytest.skip(f"no browser at {CHROMIUM}: apt-get install -y chromium (.ci/run does)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    trace = save_trace(synthesize(SynthSpec(jobs=300, nodes=6, vcs=2, seed=4)), root / "trace")
    for policy in ("fifo", "srtf"):
        done = runner.invoke(app, ["run", "--trace", str(trace), "--policy", policy, "--placements", "--out",
                                   str(root / policy), "--quiet"])
        assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["report", str(root / "fifo"), str(root / "srtf"), "--out", str(root / "report"),
                               "--quiet"])
    assert done.exit_code == 0, done.output
    return root / "report" / "report.html"


CHARTS = """() => [...document.querySelectorAll('section.chart')].map(section => {
    const plot = section.querySelector('.js-plotly-plot');
    if (!plot || !plot.calcdata) return {title: section.getAttribute('aria-label'), points: 0, drawn: 0};
    return {title: section.getAttribute('aria-label'),
            points: plot.calcdata.reduce((n, trace) => n + trace.length, 0),
            drawn: plot.querySelectorAll('.bars .point path, .scatterlayer path.js-line').length};
})"""


def test_every_chart_of_the_report_renders_with_data_and_the_console_has_no_errors(browser, report):
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(report.as_uri())
    page.wait_for_function("document.querySelectorAll('section.chart .js-plotly-plot .main-svg').length >= 6")
    charts = page.evaluate(CHARTS)
    titles = [c["title"] for c in charts]
    assert [t.split(":")[0] for t in titles[:2]] == ["Jobs on GPUs", "Jobs on GPUs"]
    assert titles[2:] == ["Queue length over time", "GPUs in use over time", "JCT CDF", "Queueing delay CDF"]
    for chart in charts:
        assert chart["points"] > 0 and chart["drawn"] > 0, chart
    gantt = charts[0]
    assert gantt["drawn"] >= 100  # a bar per run of a job on a node
    images = page.evaluate("() => [...document.images].map(i => i.naturalWidth)")
    assert images and all(width > 0 for width in images)
    assert errors == []
    page.close()
