"""A campaign plan: read from TOML with errors that name the entry, in the issue's order, and the order of work."""

from __future__ import annotations

from pathlib import Path

import profiler_fakes
import pytest

from profiler.campaign import Budget, CampaignTables, Chunk, gpu_type_name, next_item, pending_items
from profiler.campaign_plan import (
    REFERENCE_PARTNERS,
    CampaignPlan,
    Item,
    PlanError,
    Stage,
    extremes,
    issue_plan,
    parse_config,
    plan_items,
    plan_toml,
    read_plan,
)
from profiler.plan import JobConfig, PairConfig
from profiler.tables import pair_row, single_row
from simcluster.paths import shared_data_dir
from workloads import get_workload, workload_names

resolve = profiler_fakes.resolve


def job(text: str) -> JobConfig:
    return parse_config(text, resolve, "test")


PLAN = """
[campaign]
name = "test"
out = "tables/{gpu}"

[measure]
window = 0.25
cv_windows = 3
time_limit = 2.0

[[stage]]
name = "pairs"
pairs = [["NeuMF,8,0", "TD3,8,0"], ["NeuMF,8,0", "PPO,8,0"], ["TD3,8,0", "PPO,8,0"]]

[[stage]]
name = "alone"
singles = ["NeuMF,16,1", "TD3,16,0"]

[[stage]]
name = "again"
pairs = [["NeuMF,8,0", "TD3,8,0"], ["TD3,8,0", "PPO,8,0"]]
repeat = 2
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(text)
    return path


def test_a_plan_reads_its_stages_in_order_and_writes_back_the_same(tmp_path: Path) -> None:
    plan = read_plan(write(tmp_path, PLAN), resolve)
    assert [s.kind for s in plan.stages] == ["pair", "single", "repeat"]
    assert plan.measure.window_s == 0.25 and plan.measure.time_limit_s == 2.0 and plan.measure.warmup_steps == 10
    assert plan.stages[1].singles == (JobConfig("NeuMF", "MovieLens", 16, True, 1), job("TD3,16,0"))
    assert read_plan(write(tmp_path, plan_toml(plan)), resolve) == plan


def test_rows_come_stage_by_stage_and_a_repeat_stage_round_by_round(tmp_path: Path) -> None:
    items = plan_items(read_plan(write(tmp_path, PLAN), resolve))
    assert [i.label for i in items] == [
        "NeuMF bs8 + TD3 bs8", "NeuMF bs8 + PPO bs8", "TD3 bs8 + PPO bs8",
        "NeuMF bs16 amp", "TD3 bs16",
        "NeuMF bs8 + TD3 bs8 (repeat 1)", "TD3 bs8 + PPO bs8 (repeat 1)",
        "NeuMF bs8 + TD3 bs8 (repeat 2)", "TD3 bs8 + PPO bs8 (repeat 2)",
    ]  # fmt: skip


def test_a_repeat_stage_may_measure_jobs_alone_and_pairs_each_round_alone_first(tmp_path: Path) -> None:
    text = PLAN.replace('name = "again"\n', 'name = "again"\nsingles = ["TD3,8,0", "PPO,8,0"]\n')
    plan = read_plan(write(tmp_path, text), resolve)
    assert read_plan(write(tmp_path, plan_toml(plan)), resolve) == plan
    assert [i.label for i in plan_items(plan) if i.stage == 2] == [
        "TD3 bs8 (repeat 1)", "PPO bs8 (repeat 1)", "NeuMF bs8 + TD3 bs8 (repeat 1)", "TD3 bs8 + PPO bs8 (repeat 1)",
        "TD3 bs8 (repeat 2)", "PPO bs8 (repeat 2)", "NeuMF bs8 + TD3 bs8 (repeat 2)", "TD3 bs8 + PPO bs8 (repeat 2)",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("NeuMF,8,0", "Nothing,8,0"), "stage 1 ('pairs'), pairs[0]: unknown workload 'Nothing'"),
        (('"NeuMF,16,1"', '"NeuMF,16,2"'), "stage 2 ('alone'), singles[0]: amp '2' in 'NeuMF,16,2' is not 0 or 1"),
        (('"TD3,16,0"', '"TD3,sixteen,0"'), "singles[1]: batch size 'sixteen'"),
        (("window = 0.25", "window = 0.25\nspeed = 3"), "[measure]: unknown setting(s) speed"),
        (("time_limit = 2.0", "time_limit = 0.1"), "[measure]: time_limit_s (0.1) must be at least one window"),
        (("repeat = 2", "repeat = -1"), "stage 3 ('again'): repeat must be a whole number"),
        (("time_limit = 2.0", "time_limit = nan"), "[measure], time_limit: must be a finite number, got nan"),
        (("time_limit = 2.0", "time_limit = inf"), "[measure], time_limit: must be a finite number, got inf"),
        (("time_limit = 2.0", "time_limit = 1e9"), "time_limit_s must be at most 3,600"),
        (("cv_windows = 3", "cv_windows = 2.5"), "[measure], cv_windows: expected a whole number"),
        (('singles = ["NeuMF,16,1", "TD3,16,0"]', 'singles = ["TD3,16,0", "TD3,16,0"]'), "singles lists an entry twice"),
        (('name = "alone"', 'name = "alone"\npairs = [["TD3,8,0", "TD3,8,0"]]'), "only a repeat stage may hold both"),
        (('singles = ["NeuMF,16,1", "TD3,16,0"]', 'singles = []'), "stage 2 ('alone'): give singles or pairs"),
        (("[campaign]", "[campaigns]"), "a [campaign] table with name and out"),
    ],
)
def test_a_broken_plan_is_refused_naming_the_file_stage_and_entry(tmp_path: Path, edit: tuple[str, str],
                                                                   message: str) -> None:
    path = write(tmp_path, PLAN.replace(*edit))
    with pytest.raises(PlanError) as refused:
        read_plan(path, resolve)
    assert message in str(refused.value) and str(path) in str(refused.value)


def test_a_plan_not_in_utf8_is_refused_naming_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_bytes(PLAN.replace('name = "test"', 'name = "t\xe9st"').encode("latin-1"))
    with pytest.raises(PlanError, match=r"not UTF-8 text \(byte \d+: b'\\xe9'\)") as refused:
        read_plan(path, resolve)
    assert str(path) in str(refused.value)


def test_within_a_round_a_row_that_reuses_a_held_job_goes_first_but_never_past_the_round(tmp_path: Path) -> None:
    items = plan_items(read_plan(write(tmp_path, PLAN), resolve))
    td3, ppo = job("TD3,8,0"), job("PPO,8,0")
    assert next_item(items, lambda c: False) == items[0]
    assert next_item(items, lambda c: c == ppo) == items[1]  # NeuMF + PPO: keeps PPO
    assert next_item(items[3:], lambda c: c == td3) == items[3]  # TD3 alone at 16 is not TD3 at 8: the first
    repeats = items[5:]
    assert next_item(repeats[1:], lambda c: c == job("NeuMF,8,0")) == repeats[1]  # round 1 before round 2


def test_rows_in_the_tables_are_skipped_in_either_order_and_failed_ones_only_when_not_retried(
    tmp_path: Path,
) -> None:
    plan = read_plan(write(tmp_path, PLAN), resolve)
    tables = CampaignTables(tmp_path / "tables")
    ppo_first = PairConfig(job("PPO,8,0"), job("NeuMF,8,0"))
    tables.pair.add(pair_row(ppo_first, None, (1.0, 1.0), error="measured the other way round, failed"))
    tables.single.add(single_row(job("TD3,16,0"), profiler_fakes_outcome()))
    left = [i.label for i in pending_items(plan, tables)]
    assert "NeuMF bs8 + PPO bs8" not in left and "TD3 bs16" not in left and len(left) == 7
    assert "NeuMF bs8 + PPO bs8" in [i.label for i in pending_items(plan, tables, retry_failed=True)]


def profiler_fakes_outcome():  # an ok single run
    from profiler.nvml import GpuSummary
    from profiler.runner import JobMeasurement, RunOutcome

    return RunOutcome(True, "", (JobMeasurement(100.0, float("nan")),), GpuSummary.unavailable())


def test_a_chunk_starts_no_row_it_does_not_expect_to_finish() -> None:
    clock = profiler_fakes.FakeClock()
    chunk = Chunk(Budget(minutes=1.0), first_row_s=30.0, clock=clock)
    assert chunk.refuses() is None
    clock.advance(31.0)  # a first row would not end within the minute any more
    assert "of --minutes 1 spent" in chunk.refuses()
    chunk = Chunk(Budget(minutes=1.0), first_row_s=30.0, clock=clock)
    chunk.record(20.0, 3)
    clock.advance(20.0)
    assert chunk.refuses() is None  # 20 s spent, the longest row took 20 s
    clock.advance(21.0)
    assert chunk.refuses() is not None
    rows = Chunk(Budget(max_rows=3), first_row_s=30.0, clock=clock)
    rows.record(1.0, 2)
    assert rows.refuses() is None
    rows.record(1.0, 1)
    assert rows.refuses() == "3 row(s) measured, --max-rows 3"


def test_the_gpu_type_names_the_tables_folder() -> None:
    assert gpu_type_name("NVIDIA H100 80GB HBM3") == "h100"
    assert gpu_type_name("NVIDIA H200") == "h200"
    assert gpu_type_name("NVIDIA GeForce RTX 4090") == "rtx4090"


# ----------------------------------------------------------------------------- issue 33's plan
def venus_log() -> Path:
    log = shared_data_dir() / "venus_sept" / "cluster_full_log.csv"
    if not log.is_file():
        pytest.skip(f"reference data not found at {log} (set SIMCLUSTER_DATA to the shared data folder)")
    return log


def test_the_issue_plan_measures_in_the_issues_order() -> None:
    import pandas as pd

    plan = issue_plan(venus_log(), get_workload, workload_names())
    repeat, pairs, alone, cross = plan.stages  # the noise first (issue 44)
    assert len(pairs.pairs) == 105 and {p.first.batchsize for p in pairs.pairs} == {32}  # 14 * 15 / 2
    assert {c.model for p in pairs.pairs for c in (p.first, p.second)} == set(workload_names())
    trace = pd.read_csv(venus_log(), usecols=["model", "batchsize", "amp"]).drop_duplicates()
    assert {(c.model, c.batchsize, int(c.amp)) for c in alone.singles} == set(trace.itertuples(index=False, name=None))
    assert len(alone.singles) == 66
    assert repeat.repeat == 3 and len(repeat.pairs) == 10 and set(repeat.pairs) <= set(pairs.pairs)
    assert [c.model for c in repeat.singles] == list(workload_names()) and {c.batchsize for c in repeat.singles} == {32}
    for model in workload_names():  # each workload's lightest and busiest trace configuration meets every partner
        lightest, busiest = extremes([c for c in alone.singles if c.model == model])
        for end in {lightest, busiest} - {job(f"{model},32,0")}:
            partners = {c.model for p in cross.pairs if end in (p.first, p.second) for c in (p.first, p.second)}
            assert set(REFERENCE_PARTNERS) <= partners | {end.model}
    assert {c for p in cross.pairs for c in (p.first, p.second)} <= set(alone.singles) | {
        parse_config(f"{m},32,0", get_workload, "t") for m in workload_names()}  # their solo runs are planned


def test_the_committed_h100_plan_is_the_issue_plan() -> None:
    committed = Path(__file__).resolve().parents[2] / "docs" / "h100-campaign.toml"
    assert read_plan(committed, get_workload) == issue_plan(venus_log(), get_workload, workload_names())


def test_extremes_are_the_smallest_batch_with_amp_and_the_largest_without() -> None:
    configs = [job(t) for t in ("TD3,32,0", "TD3,64,0", "TD3,128,0")]
    assert extremes(configs) == (job("TD3,32,0"), job("TD3,128,0"))
    assert extremes([job("NeuMF,64,0"), job("NeuMF,64,1"), job("NeuMF,128,1")]) == (job("NeuMF,64,1"),
                                                                                     job("NeuMF,128,1"))


def test_an_item_is_one_row() -> None:
    stage = Stage("s", singles=(job("TD3,8,0"),))
    assert plan_items(CampaignPlan("p", "out", (stage,))) == [Item(0, single=job("TD3,8,0"))]
