"""Reports label their uncertainty as what it is: 95 % intervals over replicas (min–max only over seeds, or where
replicas are too few, and said so), paired differences of every headline figure with verdicts in words, and the
replica count where the seeds are."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.experiments.replicas import Interval
from simcluster.experiments.report import ReportError, write_report
from simcluster.experiments.sweep import build_grid, parse_sets, run_sweep
from simcluster.experiments.uncertainty import HEADLINE, _repeated_percentiles, verdict_text

SYNTH = "synth:jobs=300,nodes=4,vcs=2,seed=1"
runner = CliRunner()


@pytest.fixture(scope="module")
def replica_sweep(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("replicas")
    assert run_sweep(build_grid([SYNTH], ["fifo", "srtf"], [0], replicas=4, perturb="bootstrap"), out,
                     workers=2).failed == 0
    return out


@pytest.fixture(scope="module")
def seed_sweep(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("seeds")
    assert run_sweep(build_grid([SYNTH], ["fifo", "srtf"], [1, 2], parse_sets(["placement=random"])), out,
                     workers=2).failed == 0
    return out


@pytest.fixture(scope="module")
def replica_report(replica_sweep, tmp_path_factory):
    return write_report([replica_sweep], tmp_path_factory.mktemp("r") / "report")


def captions(page: str) -> dict[str, str]:
    return {name: html.unescape(text) for name, text in re.findall(r"<figcaption>([\w.-]+\.png): (.*?)</figcaption>",
                                                                   page)}


def test_every_headline_figure_gets_a_paired_difference_with_a_verdict(replica_report):
    differences = pd.read_csv(replica_report.folder / "differences.csv")
    assert set(differences["figure"]) == set(HEADLINE)
    assert (differences["n"] == 4).all() and differences["verdict"].str.len().gt(0).all()
    jct = differences.set_index("figure").loc["avg_jct"]
    assert jct["low"] <= jct["mean"] <= jct["high"]
    assert jct["rel_low"] <= jct["rel_mean"] <= jct["rel_high"]


@pytest.mark.parametrize("figure", ["avg JCT", "p99 JCT", "max wait", "share of jobs waiting > 4h"])
def test_verdicts_name_the_figure_in_html_and_markdown(replica_report, figure):
    page = html.unescape((replica_report.folder / "report.html").read_text())
    text = (replica_report.folder / "comparison.md").read_text()
    for document in (page, text):
        assert "Paired differences" in document
        assert re.search(rf"(fifo's|srtf's) {re.escape(figure)} is .*95 % interval|no difference in (the )?"
                         rf"{re.escape(figure)} can be told", document), figure


def test_a_replica_report_labels_its_bars_and_table_as_95_percent_intervals(replica_report):
    page = (replica_report.folder / "report.html").read_text()
    found = captions(page)
    for name in ("avg_jct.png", "queue_by_vc.png"):
        assert "95 % interval over 4 replicas" in found[name] and "min–max" not in found[name], found[name]
    assert "band: min–max over its replicas" in found["utilization.png"]
    assert "mean over the replicas with its 95 % interval" in page
    assert "each figure is the mean over a configuration's seeds" not in page
    assert "95 % interval" in (replica_report.folder / "comparison.md").read_text().splitlines()[0]


def test_the_seeds_column_shows_the_replica_count(replica_report):
    table = pd.read_csv(replica_report.folder / "comparison.csv")
    assert (table["seeds"] == "4 replicas").all() and (table["replicas"] == 4).all()
    page = (replica_report.folder / "report.html").read_text()
    assert "<td>4 replicas</td>" in page and "seeds / replicas" in page


def test_the_bars_drawn_are_the_intervals_in_the_table(replica_sweep, replica_report):
    from simcluster.experiments.aggregate import FIGURES, configurations
    from simcluster.experiments.report import bar_of, collect
    from simcluster.experiments.uncertainty import replica_uncertainty

    groups = configurations(collect([replica_sweep]))
    found = replica_uncertainty(groups, FIGURES)
    table = replica_report.table.set_index(["label", "vc"])
    for g in groups:
        (mean, low, high), kind = bar_of(g, "avg_jct", "all", found)
        row = table.loc[(g.label, "all")]
        assert kind == "95 % interval" and mean == pytest.approx(row["avg_jct"])
        assert (low, high) == (row["avg_jct_low"], row["avg_jct_high"]) and low < high


def test_a_seed_sweep_says_min_max_over_seeds_and_no_interval(seed_sweep, tmp_path):
    made = write_report([seed_sweep], tmp_path / "report")
    found = captions((tmp_path / "report" / "report.html").read_text())
    assert "min–max over seeds" in found["avg_jct.png"] and "95 %" not in found["avg_jct.png"]
    assert "band: min–max over its seeds" in found["pending.png"]
    assert not (tmp_path / "report" / "differences.csv").exists()
    assert set(made.table["seeds"]) == {"1;2"}


def test_too_few_replicas_for_an_interval_show_min_max_and_say_so(tmp_path):
    out = tmp_path / "sweep"
    assert run_sweep(build_grid([SYNTH], ["fifo"], [0], replicas=2, perturb="bootstrap"), out, workers=1).failed == 0
    made = write_report([out], tmp_path / "report")
    caption = captions((tmp_path / "report" / "report.html").read_text())["avg_jct.png"]
    assert "min–max where fewer than 3 replicas" in caption and "95 %" not in caption
    assert "avg_jct_low" not in made.table.columns
    assert any("too few for a 95 % interval" in note for note in made.notes)
    assert "too few for a 95 % interval" in (tmp_path / "report" / "comparison.md").read_text()


def test_metrics_choose_the_paired_differences_and_an_unknown_one_is_refused(replica_sweep, tmp_path):
    done = runner.invoke(app, ["report", str(replica_sweep), "--out", str(tmp_path / "r"), "--metrics",
                               "p99_jct,queue_over_1h", "--wait-bound", "1h"])
    assert done.exit_code == 0, done.output
    differences = pd.read_csv(tmp_path / "r" / "differences.csv")
    assert differences["figure"].tolist() == ["p99_jct", "queue_over_1h"]
    assert "queue_over_1h" in pd.read_csv(tmp_path / "r" / "comparison.csv").columns
    with pytest.raises(ReportError, match="--metrics avg_wait: not a figure"):
        write_report([replica_sweep], tmp_path / "r2", metrics=["avg_wait"])


def test_posthoc_replicas_give_every_headline_figure_an_interval(tmp_path, replica_sweep):
    runs = sorted((replica_sweep / "runs").iterdir())
    made = write_report([runs[0]], tmp_path / "r", replicas=25)
    overall = made.table[made.table["vc"] == "all"].iloc[0]
    for name in ("avg_jct", "p50_jct", "p99_jct", "max_queue", "queue_over_4h", "avg_bounded_slowdown"):
        assert overall[f"{name}_low"] <= overall[f"{name}_high"] and overall[f"{name}_replicas"] == 25, name


def test_weighted_percentiles_equal_those_of_the_repeated_values():
    rng = np.random.default_rng(3)
    for _ in range(50):
        values = np.sort(rng.exponential(100, rng.integers(1, 40)))
        times = rng.integers(0, 4, len(values))
        if not times.sum():
            continue
        qs = (0, 50, 99, 99.9, 100)
        assert _repeated_percentiles(values, times, qs) == pytest.approx(
            list(np.percentile(np.repeat(values, times), qs)), rel=1e-12)


def test_verdicts_say_lower_or_higher_with_the_interval_in_the_figures_terms():
    lower = verdict_text("a", "b", "p99_jct", Interval(-50, 5, -60, -40, 20), Interval(-0.12, 0.01, -0.15, -0.08, 20))
    assert lower == "a's p99 JCT is 12 % (95 % interval 8–15 %) lower than b's (20 paired replicas)"
    higher = verdict_text("a", "b", "max_queue", Interval(500, 5, 100, 900, 20), Interval(3.0, 0.5, 2.0, 4.5, 20))
    assert higher == "a's max wait is 4× b's (95 % interval 3–5.5×; 20 paired replicas)"
    tiny = verdict_text("a", "b", "avg_queue", Interval(-900, 5, -990, -800, 20),
                        Interval(-0.999, 0.001, -0.9995, -0.998, 20), Interval(739, 50, 500, 999, 20))
    assert tiny == "b's avg wait is 740× a's (95 % interval 501–1,000×; 20 paired replicas)"
    share = verdict_text("a", "b", "queue_over_4h", Interval(-0.021, 0.01, -0.028, -0.015, 20), None)
    assert share == "a's share of jobs waiting > 4h is 2.1 points (95 % interval 1.5–2.8 points) lower than b's " \
                    "(20 paired replicas)"
    untold = verdict_text("a", "b", "avg_jct", Interval(-5, 5, -10, 4, 20), Interval(-0.01, 0.01, -0.02, 0.01, 20))
    assert untold.startswith("a and b: no difference in avg JCT can be told")


def test_pairs_beyond_the_cap_are_said_and_a_baseline_gets_all_its_pairs(replica_sweep, tmp_path, monkeypatch):
    """A report once wrote 45 of 66 pairs without a word, the one asked about missing (issue 54)."""
    from simcluster.experiments import uncertainty

    monkeypatch.setattr(uncertainty, "MAX_PAIRS", 0)
    capped = write_report([replica_sweep], tmp_path / "capped")
    assert capped.uncertainty.differences == [] and capped.uncertainty.pairs_left_out == 1
    note = "1 pair(s) of configurations were not compared"
    assert any(note in line for line in capped.notes)
    assert note in (tmp_path / "capped" / "comparison.md").read_text()
    assert note in (tmp_path / "capped" / "report.html").read_text()
    asked = write_report([replica_sweep], tmp_path / "asked", baseline="fifo")
    assert asked.uncertainty.pairs_left_out == 0
    assert {(d.first, d.second) for d in asked.uncertainty.differences} == {("srtf", "fifo")}
