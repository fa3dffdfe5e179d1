"""A campaign on the CPU path: resident workers, chunks, a worker killed mid-row, the campaign itself killed.

Real worker processes measuring tiny jobs for about two seconds a row; the tests check behaviour, never
speed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import profiler_fakes
import pytest
from profiler_fakes import quick_settings
from typer.testing import CliRunner

from profiler.campaign import Budget, CampaignTables, run_campaign
from profiler.campaign_plan import CampaignPlan, Stage, parse_config
from profiler.cli import app
from profiler.observe import QuietSweepObserver
from profiler.plan import PairConfig
from profiler.pool import WorkerPool
from profiler.runner import JobRequest
from simcluster.colocation import (
    read_pair_table,
    read_repeat_table,
    read_single_repeat_table,
    read_single_table,
)

REPO = Path(__file__).resolve().parents[2]


def job(text: str):
    return parse_config(text, profiler_fakes.resolve, "test")


def pair(a: str, b: str) -> PairConfig:
    return PairConfig(job(a), job(b))


class Heard(QuietSweepObserver):
    """Records the rows a campaign finished, in order; ``on_window`` may do something to a row."""

    def __init__(self) -> None:
        self.ended: list[str] = []
        self.current = ""

    def on_config_start(self, label: str) -> None:
        self.current = label

    def on_config_end(self, label: str, row: dict[str, Any]) -> None:
        self.ended.append(label)


def campaign(plan: CampaignPlan, tables: CampaignTables, pool: WorkerPool, observer: Heard, **options: Any):
    return run_campaign(plan, tables, profiler_fakes.resolve, pool.settings, pool.run, observer,
                        held=lambda c: pool.holds(JobRequest(profiler_fakes.resolve(c.model), c.batchsize, c.amp, 1)),
                        **options)


PLAN = CampaignPlan("test", "unused", (
    Stage("pairs", pairs=(pair("Linear,4,0", "Linear,8,0"), pair("Linear,16,0", "Linear,32,0"),
                          pair("Linear,8,0", "Linear,16,0"))),
    Stage("alone", singles=(job("Linear,64,0"),)),
    Stage("again", pairs=(pair("Linear,4,0", "Linear,8,0"),), repeat=2),
), measure=quick_settings().measure)  # fmt: skip


def test_a_campaign_in_chunks_measures_every_row_once_in_the_plans_order(tmp_path: Path) -> None:
    tables = CampaignTables(tmp_path)
    with WorkerPool(quick_settings()) as pool:
        first = campaign(PLAN, tables, pool, heard := Heard(), budget=Budget(max_rows=3))
        # (a pair that seems faster shared than alone on a busy machine gets its solo runs measured again)
        assert first.stopped.endswith("--max-rows 3") and first.measured >= 3 and not first.done
        assert heard.ended[:2] == ["Linear bs4 (alone)", "Linear bs8 (alone)"]
        assert heard.ended[-1] == "Linear bs4 + Linear bs8"
        kept = read_pair_table(tmp_path / "pair.csv")

        second = campaign(PLAN, CampaignTables(tmp_path), pool, later := Heard())
        runs = pool.runs
    assert second.done and second.skipped == 1 and second.measured >= 7
    # the pair that keeps a built job (Linear bs8, after the first pair) goes before the one listed first;
    # then the next stage, then the repeats, round by round
    assert [label for label in later.ended if "(alone" not in label] == [
        "Linear bs8 + Linear bs16", "Linear bs16 + Linear bs32", "Linear bs64",
        "Linear bs4 + Linear bs8 (repeat 1)", "Linear bs4 + Linear bs8 (repeat 2)",
    ]  # fmt: skip
    pairs = read_pair_table(tmp_path / "pair.csv")
    assert len(pairs) == 3 and pairs.iloc[:1].equals(kept)  # the first chunk's row, as it was
    assert len(read_single_table(tmp_path / "single.csv")) == 5
    repeats = read_repeat_table(tmp_path / "pair_repeats.csv")
    assert list(repeats["repeat"]) == [1, 2]
    assert pool.started < runs  # workers are kept from one row to the next


def test_a_repeat_stage_judges_each_pair_against_the_solo_runs_of_its_own_round(tmp_path: Path) -> None:
    plan = CampaignPlan("test", "unused", (
        Stage("noise", singles=(job("Linear,4,0"), job("Linear,8,0")), pairs=(pair("Linear,4,0", "Linear,8,0"),),
              repeat=2),
    ), measure=quick_settings().measure)  # fmt: skip
    with WorkerPool(quick_settings()) as pool:
        summary = campaign(plan, CampaignTables(tmp_path), pool, heard := Heard())
    assert summary.done and summary.measured == 6
    # each round's solo runs, then its pair (a solo run the pair asked for first counts as the round's, once)
    assert [label for label in heard.ended if "+" in label] == [heard.ended[2], heard.ended[5]] == [
        "Linear bs4 + Linear bs8 (repeat 1)", "Linear bs4 + Linear bs8 (repeat 2)"]
    assert not (tmp_path / "single.csv").exists()  # a repeat stage leaves the single table alone
    solo = read_single_repeat_table(tmp_path / "single_repeats.csv").set_index(["batchsize", "repeat"])["iters_per_s"]
    repeats = read_repeat_table(tmp_path / "pair_repeats.csv")
    assert list(repeats["repeat"]) == [1, 2]
    for row in repeats.itertuples():
        assert row.iters_per_s1 > 0 and row.iters_per_s2 > 0  # kept even where the speeds look suspect
        if row.status == "ok":
            assert row.speed1 == pytest.approx(row.iters_per_s1 / solo[(4, row.repeat)])
            assert row.speed2 == pytest.approx(row.iters_per_s2 / solo[(8, row.repeat)])


def test_a_worker_killed_mid_row_fails_that_row_only_and_the_campaign_goes_on(tmp_path: Path) -> None:
    with WorkerPool(quick_settings()) as pool:

        class KillOnTheSecondPair(Heard):
            killed = False

            def on_window(self, job: int, iters_per_s: float, samples_per_s: float, gpu_util: float) -> None:
                if self.current == "Linear bs8 + Linear bs16" and not self.killed:  # the second pair: reuses bs8
                    os.kill(pool.pids[-1], signal.SIGKILL)
                    self.killed = True

        plan = CampaignPlan("test", "unused", PLAN.stages[:1], measure=quick_settings().measure)
        summary = campaign(plan, CampaignTables(tmp_path), pool, KillOnTheSecondPair())
    assert summary.done and summary.failed >= 1
    rows = read_pair_table(tmp_path / "pair.csv").set_index(["batchsize1", "batchsize2"])
    killed = rows.loc[(8, 16)]
    assert killed["status"] == "failed" and "SIGKILL" in killed["error"]
    for other in ((4, 8), (16, 32)):  # before and after it, on workers started anew  # measured (a busy machine may still make a solo run look suspect)
        assert rows.loc[other, "status"] == "ok" or "suspect" in rows.loc[other, "error"]


PLAN_FILE = """
[campaign]
name = "cpu"
out = "{folder}"

[measure]
window = 0.25
cv_windows = 3
cv_target = 0.5
time_limit = 2.0
warmup_steps = 2

[[stage]]
name = "pairs"
pairs = [["NeuMF,8,0", "TD3,8,0"], ["NeuMF,8,0", "PPO,8,0"], ["TD3,8,0", "PPO,8,0"]]
"""


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def rows_in(path: Path) -> int:
    try:
        return len(read_pair_table(path))
    except ValueError:  # not written yet
        return 0


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the workers through /proc (Linux)")
def test_a_campaign_killed_mid_chunk_keeps_every_row_and_the_next_chunk_finishes(tmp_path: Path) -> None:
    folder = tmp_path / "tables"
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN_FILE.replace("{folder}", str(folder)))
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-m", "profiler.cli", "campaign", str(plan), "--device", "cpu"],
                               cwd=tmp_path, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while rows_in(folder / "pair.csv") < 1 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = children(process.pid)
        process.send_signal(signal.SIGKILL)  # the GPU taken back: no clean-up, no last word
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    kept = read_pair_table(folder / "pair.csv")  # whole rows only: every write was a rename
    assert 1 <= len(kept) < 3
    metadata = json.loads((folder / "metadata.json").read_text())
    assert metadata["campaign"]["chunks"][-1]["ended"] is None  # a chunk that never ended says so
    deadline = time.monotonic() + 30  # workers notice their parent is gone and end themselves
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not [pid for pid in workers if _alive(pid)]

    result = CliRunner().invoke(app, ["campaign", str(plan), "--device", "cpu", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["done"] and summary["skipped"] == len(kept)
    final = read_pair_table(folder / "pair.csv")
    assert len(final) == 3 and final.iloc[: len(kept)].equals(kept)  # the rows measured before the kill, unchanged
    chunks = json.loads((folder / "metadata.json").read_text())["campaign"]["chunks"]
    assert len(chunks) == 2 and chunks[-1]["stopped"] == "plan done" and chunks[-1]["measured"] == summary["measured"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash and timeout")
def test_the_device_script_resumes_from_its_work_folder_when_the_checkout_lacks_the_last_chunks_rows(
        tmp_path: Path) -> None:
    """A warm lent machine gets a fresh checkout per call; the chunk before's rows live outside it."""
    checkout = tmp_path / "checkout"
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN_FILE.replace("{folder}", str(checkout / "measured" / "{gpu}")))
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
                   "CAMPAIGN_WORK": str(tmp_path / "work"), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def chunk(out: Path, *options: str) -> subprocess.CompletedProcess[str]:
        out.mkdir()
        return subprocess.run(["bash", str(REPO / "profiler" / "device_chunk.sh"), str(plan), "5", "--device", "cpu",
                               *options], cwd=REPO, env={**environment, "OUT": str(out)}, capture_output=True,
                              text=True, timeout=300, check=False)

    first = chunk(tmp_path / "out1", "--max-rows", "3")  # NeuMF alone, TD3 alone, their pair
    assert first.returncode == 0, first.stderr + first.stdout
    assert json.loads((tmp_path / "out1" / "chunk.json").read_text())["measured"] >= 3
    assert (tmp_path / "out1" / "folder.txt").read_text().strip() == str(checkout / "measured" / "cpu")
    assert not (checkout / "measured" / "cpu").exists()  # nothing was committed between the calls
    second = chunk(tmp_path / "out2")
    assert second.returncode == 0, second.stderr + second.stdout
    summary = json.loads((tmp_path / "out2" / "chunk.json").read_text())
    assert summary["done"] and summary["skipped"] == 1  # the first chunk's pair, kept in the work folder
    assert len(read_pair_table(tmp_path / "out2" / "pair.csv")) == 3
    chunks = json.loads((tmp_path / "out2" / "metadata.json").read_text())["campaign"]["chunks"]
    assert len(chunks) == 2

    committed = checkout / "measured" / "cpu"  # the tables copied back and committed; the machine given back
    committed.mkdir(parents=True)
    for name in ("single.csv", "pair.csv", "metadata.json"):
        shutil.copy(tmp_path / "out2" / name, committed / name)
    shutil.rmtree(tmp_path / "work")
    third = chunk(tmp_path / "out3")
    assert third.returncode == 0, third.stderr + third.stdout
    assert json.loads((tmp_path / "out3" / "chunk.json").read_text())["skipped"] == 3  # seeded from the checkout


@pytest.mark.parametrize("where", ["file", "below a file"])
def test_a_campaign_told_to_write_into_or_below_a_file_says_so_before_measuring(tmp_path: Path, where: str) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN_FILE.replace("{folder}", str(tmp_path / "tables")))
    taken = tmp_path / "taken.txt"
    taken.write_text("mine")
    out = taken if where == "file" else taken / "tables"
    result = CliRunner().invoke(app, ["campaign", str(plan), "--device", "cpu", "--out", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "taken.txt" in result.output and taken.read_text() == "mine"


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_profile_time_limit_of_nan_or_infinity_is_refused_by_name(tmp_path: Path, value: str) -> None:
    result = CliRunner().invoke(app, ["single", "--device", "cpu", "--time-limit", value, "--out", str(tmp_path / "t")])
    assert result.exit_code == 2 and "'--time-limit'" in result.output, result.output  # a range or finiteness error
    assert "Traceback" not in result.output
    assert not (tmp_path / "t").exists()
