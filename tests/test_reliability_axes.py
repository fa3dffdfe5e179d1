"""The reliability study's axes and its answer (issue 54, item 4): spares (counts or shares of the job's nodes),
spare swap time and ``--exclude-after`` as lists beside the checkpoint interval, every combination a row with
its columns naming the values; figures in days of wall-clock; ``closed_form`` only where it applies, the table
saying why not elsewhere; ``reliability.html`` that opens with the answer, ``reliability_spares.png`` with
several spares values; ``--json`` one document (simcluster/experiments/reliability.py,
simcluster/cli/reliability.py, docs/planning.md).

The hand-checked case is a fault log of two servers replayed from its start: server n0 fails at day 1 and at
day 2 (an hour each), n1 at day 10, after the job has ended; the job runs 5 days of work on both servers,
checkpointing every hour of progress at 60 s, restarting in 300 s.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.experiments.reliability import (
    MAX_COMBINATIONS,
    answers,
    check_combinations,
    check_exclusions,
    check_spares,
    closed_form_gap,
    parse_spares,
    reliability_study,
    spare_count,
    spares_short,
)
from simcluster.faults import RateModel
from simcluster.limits import LimitError
from simcluster.paths import REPO_ROOT

DAY = 86_400.0
PNG = b"\x89PNG\r\n\x1a\n"
runner = CliRunner()


def lemon_log(tmp_path) -> str:
    """Server n0 fails twice in two days; n1 once, at day 10."""
    path = tmp_path / "lemon.csv"
    path.write_text("node,start,end,class\nn0,86400,90000,GPU\nn0,172800,176400,GPU\nn1,864000,867600,GPU\n")
    return str(path)


def lemon_study(tmp_path, **axes):
    return reliability_study([16], [3600.0], lemon_log(tmp_path), replicas=2, work=5 * DAY, faults_offset=0,
                             checkpoint_cost=60.0, restart_cost=300.0, **axes)


def row_of(table: pd.DataFrame, spares: int, exclusion: str | None, daly: bool = False) -> pd.Series:
    same = table["exclude_after"].isna() if exclusion is None else table["exclude_after"] == exclusion
    return table[(table["spare_nodes"] == spares) & same & (table["daly"] == daly)].iloc[0]


# --- the axes as given --------------------------------------------------------------------------------------------

def test_spares_are_counts_or_shares_of_the_job_s_nodes_rounded_up():
    assert parse_spares("0,8,16") == (0, 8, 16)
    assert parse_spares("2%, 5%") == ("2%", "5%")
    # 2 % of 2,048 nodes is 40.96 → 41; of 100 nodes exactly 2 (not 3 by a rounding error); 5 % of 64 is 3.2 → 4
    assert [spare_count("2%", n) for n in (2048, 100, 64, 8)] == [41, 2, 2, 1]
    assert spare_count("5%", 64) == 4 and spare_count("0%", 64) == 0 and spare_count("100%", 64) == 64
    assert check_spares(8) == (8,) and check_spares([0, " 2 %", 8.0]) == (0, "2%", 8)


@pytest.mark.parametrize("given, says", [
    ("150%", "--spare-nodes '150%': a share of the job's nodes must be from 0 % to 100 %"),
    ("-1", "--spare-nodes must be at least 0"),
    ("2.5", "--spare-nodes must be a whole number"),
    ("0,0", "--spare-nodes: 0 given twice"),
    ("x%", "--spare-nodes 'x%' (a share in %) must be a number"),
    ("8,,16", "--spare-nodes '8,,16': give comma-separated values, none empty"),
    (",".join(map(str, range(201))), "--spare-nodes: at most 200 values in one study, got 201"),
])
def test_bad_spares_are_refused_naming_the_option(given, says):
    with pytest.raises(LimitError) as caught:
        parse_spares(given)
    assert says in str(caught.value)


@pytest.mark.parametrize("given", ["3/x", "0/7", "3/-1", "3", "3/7/1"])
def test_a_bad_exclusion_rule_is_refused_naming_the_option(given):
    with pytest.raises(LimitError, match=r"--exclude-after '.*': give N/DAYS .* or none"):
        check_exclusions(given)
    assert check_exclusions(["none", "3/7"]) == (None, "3/7")


def test_more_than_200_combinations_are_refused_before_anything_runs():
    assert check_combinations(2, [0, 8], [0.0, 60.0], [None]) == 8
    with pytest.raises(LimitError, match=r"at most 200 combinations in one study .* got 3 × 67 × 1 × 1 = 201"):
        reliability_study([8, 16, 24], [3600.0], "mtbf=5d", replicas=2, work=3600.0, spare_nodes=list(range(67)))
    assert MAX_COMBINATIONS == 200


@pytest.mark.parametrize("options, says", [
    (["--spare-nodes", "150%"], "--spare-nodes '150%': a share of the job's nodes must be from 0 % to 100 %"),
    (["--spare-nodes", "-1"], "--spare-nodes must be at least 0"),
    (["--spare-swap", "0,-5m"], "--spare-swap must be at least 0"),
    (["--spare-swap", "0,40d"], "--spare-swap must be at most"),
    (["--exclude-after", "none,3/x"], "--exclude-after '3/x': give N/DAYS"),
    (["--gpus", "8,16", "--spare-nodes", ",".join(map(str, range(101)))], "at most 200 combinations"),
])
def test_the_command_refuses_bad_axes_in_words(tmp_path, options, says):
    done = runner.invoke(app, ["reliability", "--faults", "mtbf=5d", "--gpus", "8", "--checkpoint-interval", "1h",
                               "--replicas", "2", "--work", "1h", "--out", str(tmp_path), *options])
    assert done.exit_code == 2, done.output
    assert says in " ".join(done.output.split()), done.output
    assert "Traceback" not in done.output and not list(tmp_path.iterdir())


# --- rows and figures -----------------------------------------------------------------------------------------------

def test_a_list_of_one_value_is_the_single_value_study_exactly():
    one = reliability_study([8, 16], [1800.0, 7200.0], "mtbf=3d,repair=2h", replicas=3, work=DAY, spare_nodes=2,
                            spare_swap=60.0, exclude_after="3/7")
    listed = reliability_study([8, 16], [1800.0, 7200.0], "mtbf=3d,repair=2h", replicas=3, work=DAY,
                               spare_nodes=[2], spare_swap=[60.0], exclude_after=["3/7"])
    pd.testing.assert_frame_equal(one.table, listed.table)
    pd.testing.assert_frame_equal(one.runs, listed.runs)
    assert one.settings == listed.settings and one.settings["spare_nodes"] == 2


def test_every_combination_is_a_row_naming_its_values_in_order():
    study = reliability_study([8, 16], [3600.0], "mtbf=5d,repair=1h", replicas=2, work=DAY, spare_nodes=[0, "50%"],
                              spare_swap=[0.0, 600.0], exclude_after=[None, "2/1"])
    table = study.table
    assert len(table) == 2 * 2 * 2 * 2 * 2  # sizes × spares × swaps × exclusions × (the interval and Daly's)
    size = table[table["gpus"] == 16]
    assert size["daly"].tolist() == [False, True] * 8  # each combination at the interval, then at Daly's
    grid = size[~size["daly"]]
    assert grid["spare_nodes"].tolist() == [0] * 4 + [1] * 4  # 50 % of 2 nodes
    assert grid["spare_swap_s"].tolist() == [0.0, 0.0, 600.0, 600.0] * 2
    assert [None if pd.isna(e) else e for e in grid["exclude_after"]] == [None, "2/1"] * 4
    assert table["spare_share"].isna().sum() == 16 and set(table["spare_share"].dropna()) == {0.5}
    assert study.settings["spare_nodes"] == [0, "50%"] and study.settings["combinations"] == 16
    assert len(study.runs) == len(table) * 2


def test_wall_days_are_the_runs_wall_clock_and_the_figures_the_log_gives_by_hand(tmp_path):
    """No spares: each fault of n0 loses the work since the last checkpoint and waits its hour of repair, then
    the restart: 23 h done at t = 90,300 s, 45 h at 176,700 s, the last 75 h (74 checkpoints) end at 451,140 s.
    One spare: the first fault swaps it in at once (23 h at 86,700 s); n0's second fault finds it a spare, out
    of the job; the last 97 h end at 441,660 s."""
    study = lemon_study(tmp_path, spare_nodes=[0, 1])
    table, runs = study.table, study.runs
    none, one = row_of(table, 0, None), row_of(table, 1, None)
    assert none["wall_days_mean"] == pytest.approx(451_140 / DAY) and none["ettr_mean"] == pytest.approx(
        5 * DAY / 451_140)
    assert one["wall_days_mean"] == pytest.approx(441_660 / DAY) and one["interruptions_mean"] == 1
    assert none["interruptions_mean"] == 2
    for row in table.itertuples():
        walls = runs[(runs["spare_nodes"] == row.spare_nodes) & (runs["daly"] == row.daly)]["wall_days"]
        assert row.wall_days_mean == pytest.approx(walls.mean())
        assert row.wall_days_low <= row.wall_days_mean <= row.wall_days_high
        assert row.wall_days_runs_low <= row.wall_days_mean <= row.wall_days_runs_high


def test_an_exclusion_without_a_spare_to_replace_the_server_never_finishes(tmp_path):
    """At n0's second fault in 7 days it is out for good: with no spare its slot stays down and the job can never
    run again (ETTR 0, wall-clock infinite, the reason in words); with one spare the job finishes as without the
    rule (n0's second fault finds it out of the job)."""
    study = lemon_study(tmp_path, spare_nodes=[0, 1], exclude_after=["none", "2/7"])
    table = study.table
    stuck = row_of(table, 0, "2/7")
    assert stuck["unfinished_runs"] == 2 and stuck["ettr_mean"] == 0 and math.isinf(stuck["wall_days_mean"])
    assert stuck["unfinished_why"] == "the exclusion rule takes out more servers than the spares replace"
    assert math.isnan(stuck["ettr_rate_low"])  # the rate's propagation assumes a cost per fault: not for a job stuck
    assert row_of(table, 1, "2/7")["wall_days_mean"] == pytest.approx(441_660 / DAY)
    assert row_of(table, 0, None)["unfinished_runs"] == 0
    assert (study.runs.loc[study.runs["ettr"] == 0, "error"].str.contains("no progress under faults")).all()
    said = answers(table)[0]  # the best has the spare; with it the rule changes nothing
    assert said.headline.startswith("Best: checkpoint every 1.62 h (Daly's interval) with 1 spare, swap 0 s, no "
                                    "exclusion: ETTR 0.980 (runs 0.980–0.980), 5.10 days of wall-clock")
    assert said.headline.endswith("1 interruption (0.2 a day).")
    assert said.details[2] == ("Exclusion, each at its best interval (spares 1), against no exclusion (ETTR 0.980, 5.10 days): "
                               "exclusion 2/7: "
                               "ETTR 0.980, 5.10 days: +0.0 ETTR points, +0.00 days (not told apart at 2 replicas: "
                               "the means' 95 % CIs overlap).")


def test_spares_never_lose_to_none_in_expectation_on_a_rate_model():
    """mtbf 10 d, repair 2 d on 4 nodes: without a spare every fault waits 2 days; a spare takes its place."""
    study = reliability_study([32], [1800.0, 7200.0], "mtbf=10d,repair=2d", replicas=10, work=5 * DAY,
                              spare_nodes=[0, 1, 2, 4])
    table = study.table
    for interval, rows in table.groupby("interval_s"):
        by_spares = rows.set_index("spare_nodes")
        for spares in (1, 2, 4):
            assert by_spares.loc[spares, "ettr_mean"] >= by_spares.loc[0, "ettr_mean"], (interval, spares)
            assert by_spares.loc[spares, "wall_days_mean"] <= by_spares.loc[0, "wall_days_mean"], (interval, spares)
    assert (table.loc[table["spare_nodes"] == 4, "ettr_mean"] > table.loc[table["spare_nodes"] == 0, "ettr_mean"]
            .max() + 0.2).all()


# --- the closed form ------------------------------------------------------------------------------------------------

def test_spares_run_short_as_a_binomial_of_the_servers_down():
    model = RateModel.from_mtbf(10 * DAY, 2 * DAY)  # each server down 2/12 of the time
    assert spares_short(model, 8, 4, 1) == pytest.approx(1 - (5 / 6) ** 4)  # any of the 4 others down
    assert spares_short(model, 8, 4, 2) == pytest.approx(1 - (5 / 6) ** 5 - 5 * (1 / 6) * (5 / 6) ** 4)
    assert spares_short(model, 8, 4, 0) == 1.0


def test_the_closed_form_is_given_only_where_it_applies_and_the_table_says_why_not(tmp_path):
    rates = RateModel.from_mtbf(30 * DAY, 3600.0)
    assert closed_form_gap(rates, 8, 8, 8, "3/7") == "exclusion takes servers out"
    assert closed_form_gap(RateModel.from_mtbf(30 * DAY, 3600.0, shape=0.7), 8, 8, 8, None) == \
        "Weibull times (shape 0.7): not exponential"
    study = reliability_study([16], [3600.0], "mtbf=20d,repair=1h", replicas=2, work=DAY, spare_nodes=[0, 8],
                              exclude_after=[None, "3/7"])
    table = study.table
    applies = (table["spare_nodes"] == 8) & table["exclude_after"].isna()
    assert table.loc[applies, "closed_form"].between(0, 1).all() and (table.loc[applies, "closed_form_why"] == "").all()
    assert table.loc[~applies, "closed_form"].isna().all()
    assert set(table.loc[~applies, "closed_form_why"]) == {"no spares: a fault waits for its repair",
                                                           "exclusion takes servers out"}
    log = reliability_study([16], [3600.0], lemon_log(tmp_path), replicas=2, work=DAY, faults_offset=0)
    assert log.table["closed_form"].isna().all()
    assert (log.table["closed_form_why"] == "a replayed log: its faults are not exponential").all()
    done = runner.invoke(app, ["reliability", "--faults", "mtbf=20d,repair=1h", "--gpus", "16", "--checkpoint-interval",
                               "1h", "--replicas", "2", "--work", "1d", "--spare-nodes", "0,8", "--out",
                               str(tmp_path / "cli")], terminal_width=240)
    assert done.exit_code == 0, done.output
    assert "closed form n/a (a): no spares: a fault waits for its repair" in done.output
    assert "(a)" in done.output and "wall" in done.output


# --- the report -----------------------------------------------------------------------------------------------------

def test_the_page_leads_with_the_answer_and_the_spares_picture_comes_only_with_several_spares(tmp_path):
    study = reliability_study([16, 32], [1800.0, 7200.0], "mtbf=5d,repair=12h", replicas=3, work=DAY,
                              spare_nodes=[0, "50%"])
    written = study.write(tmp_path / "several", page=True)
    assert [p.name for p in written] == ["reliability.csv", "reliability.png", "reliability_spares.png",
                                         "reliability.html"]
    assert (tmp_path / "several" / "reliability_spares.png").read_bytes().startswith(PNG)
    page = (tmp_path / "several" / "reliability.html").read_text()
    answer = page.index('<h2 id="answer">')
    assert answer < page.index("Best: checkpoint every") < page.index("<table") < page.index("<img")
    assert page.index("<h3>16 GPUs (2 nodes)</h3>") < page.index("<h3>32 GPUs (4 nodes)</h3>") < page.index("<table")
    assert "Spares, each at its best interval, against none (ETTR " in page and "2 spares (50 %): ETTR" in page
    assert "ETTR points" in page and " days" in page and "queue" not in page.lower()
    single = reliability_study([16], [3600.0], "mtbf=5d,repair=12h", replicas=2, work=DAY, spare_nodes=2)
    assert [p.name for p in single.write(tmp_path / "one", page=True)] == ["reliability.csv", "reliability.png",
                                                                           "reliability.html"]
    assert [p.name for p in single.write(tmp_path / "plain")] == ["reliability.csv", "reliability.png"]
    single.write(tmp_path / "several", page=True)  # the same folder: the earlier spares picture is gone
    assert not (tmp_path / "several" / "reliability_spares.png").exists()


def test_the_answer_compares_each_spares_value_with_none_in_points_and_days():
    table = pd.DataFrame({"gpus": 64, "nodes": 8, "spare_nodes": [0, 1, 4], "spare_share": math.nan,
                          "spare_swap_s": 0.0, "exclude_after": None, "interval_s": 3600.0, "daly": False,
                          "replicas": 10, "ettr_mean": [0.50, 0.70, 0.95], "ettr_low": [0.45, 0.50, 0.94],
                          "ettr_high": [0.55, 0.80, 0.96], "ettr_runs_low": 0.4, "ettr_runs_high": 0.99,
                          "wall_days_mean": [4.0, 3.0, np.inf], "wall_days_runs_low": 2.0,
                          "wall_days_runs_high": 5.0, "interruptions_mean": 6.0, "unfinished_runs": [0, 0, 1],
                          "unfinished_why": ["", "", "at no moment are all its nodes up: too few spares"]})
    said = answers(table)[0]
    assert said.headline.startswith("Best: checkpoint every 1 h with 4 spares, swap 0 s, no exclusion: ETTR 0.950")
    assert "in 1 of 10 runs it never finishes (at no moment are all its nodes up: too few spares)" in said.headline
    spares = said.details[1]
    assert spares.startswith("Spares, each at its best interval, against none (ETTR 0.500, 4.00 days): 1 spare: ")
    assert "1 spare: ETTR 0.700, 3.00 days: +20.0 ETTR points, -1.00 days (not told apart at 10 replicas" in spares
    assert "4 spares: ETTR 0.950, never finishes in 1 of 10 runs: +45.0 ETTR points (told apart" in spares


# --- --json ---------------------------------------------------------------------------------------------------------

def test_json_prints_one_document_with_the_rows_the_answer_and_the_files(tmp_path):
    done = subprocess.run([sys.executable, "-m", "simcluster.cli", "reliability", "--faults", "mtbf=5d,repair=6h",
                           "--gpus", "8,16", "--checkpoint-interval", "30m,2h", "--replicas", "2", "--work", "1d",
                           "--spare-nodes", "0,1", "--spare-swap", "0,10m", "--exclude-after", "none,3/7",
                           "--out", str(tmp_path / "study"), "--json"], capture_output=True, text=True, check=False,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # one document: json.loads refuses anything after it
    rows = document["rows"]
    assert len(rows) == 2 * 2 * 2 * 2 * 3  # sizes × spares × swaps × exclusions × (two intervals and Daly's)
    assert {(r["spare_nodes"], r["spare_swap_s"], r["exclude_after"]) for r in rows} == {
        (s, w, e) for s in (0, 1) for w in (0.0, 600.0) for e in (None, "3/7")}
    assert all(r["wall_days_mean"] >= 1 for r in rows)
    assert document["settings"]["spare_swap_s"] == [0.0, 600.0]
    assert [a["gpus"] for a in document["answer"]] == [8, 16]
    assert document["answer"][0]["headline"].startswith("Best: checkpoint every")
    assert sorted(os.path.basename(p) for p in document["written"]) == [
        "reliability.csv", "reliability.html", "reliability.png", "reliability_spares.png"]
    assert len(pd.read_csv(tmp_path / "study" / "reliability.csv")) == len(rows)
