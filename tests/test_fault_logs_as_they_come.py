"""Own fault logs as they come (issue 54, item 3): a monitoring export's columns and timestamps, the fleet observed
(``--fault-servers``) and open faults (``--open-faults``) for ``run`` and ``reliability`` as ``faults fit`` takes
them, and a warning where a CSV log's failing servers are taken for the fleet (docs/failures.md, "Fault logs").

The case that asked for it: a log of 4 failing servers replayed onto 560 nodes gave 872 faults in 30 days instead
of about 6, without a word.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import load_trace, simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.errors import TraceError
from simcluster.faults import read_fault_log
from simcluster.faults.log import DAY, column_map
from simcluster.limits import LimitError

EXPORT = """hostname,down_at,up_at,reason,ticket
gpu-07,2025-03-01T12:00:00Z,2025-03-01T16:00:00Z,xid79,T-1
gpu-02,2025-03-03T00:00:00+00:00,2025-03-04T00:00:00+00:00,nvlink,T-2
gpu-07,2025-03-02T12:00:00,,ecc,T-3
"""
COLUMNS = "node=hostname,start=down_at,end=up_at,class=reason"


def write(tmp_path, text: str, name: str = "export.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_monitoring_export_reads_through_its_column_names_and_iso_timestamps(tmp_path):
    log = read_fault_log(write(tmp_path, EXPORT), columns=COLUMNS, open_faults="span-end", span_s=10 * DAY)
    assert log.names == ("gpu-07", "gpu-02")
    # seconds since the earliest start (1 March, 12:00 UTC); a time without a zone is UTC
    assert [(f.server, f.start_s, f.end_s, f.cls, f.closed) for f in log.faults] == [
        (0, 0.0, 4 * 3600.0, "xid79", True), (0, DAY, 10 * DAY, "ecc", False),
        (1, 1.5 * DAY, 2.5 * DAY, "nvlink", True)]
    assert any("ISO 8601" in note and "2025-03-01T12:00:00Z" in note for note in log.notes)
    assert any("ticket" in note for note in log.notes)  # a column the mapping left unread is named


def test_unix_epoch_seconds_count_from_the_earliest_start(tmp_path):
    path = write(tmp_path, "node,start,end\na,1740830400,1740834000\nb,1740916800,1740920400\n")
    log = read_fault_log(path)
    assert [(f.start_s, f.end_s) for f in log.faults] == [(0.0, 3600.0), (DAY, DAY + 3600.0)]
    assert any("Unix epoch seconds" in note for note in log.notes)
    # seconds since the observation began stay as they are
    assert read_fault_log(write(tmp_path, "node,start,end\na,100,200\n", "plain.csv")).faults[0].start_s == 100.0


@pytest.mark.parametrize(("text", "columns", "words"), [
    (EXPORT.replace("2025-03-03T00:00:00+00:00", "yesterday"), COLUMNS, "line 3, field 'start'"),
    ("node,start,end\na,2025-03-01T00:00:00,soon\n", None, "line 2, field 'end'"),
    (EXPORT, "node=hostname,start=down_at,end=repaired_at", "repaired_at"),
    (EXPORT, "node=hostname,begin=down_at", "FIELD=COLUMN"),
    (EXPORT, "node=hostname,start=hostname", "given twice"),
    (EXPORT, None, "unknown column"),
])
def test_bad_columns_and_times_are_refused_naming_file_line_and_field(tmp_path, text, columns, words):
    with pytest.raises(TraceError) as error:
        read_fault_log(write(tmp_path, text), columns=columns, open_faults="span-end")
    assert words in str(error.value) and "export.csv" in str(error.value)


def test_column_map_reads_text_and_mappings():
    assert column_map({"Node": "Host"}) == {"node": "host"} and column_map(None) == {}


def one_job(nodes: int = 4):
    return load_trace(pd.DataFrame({"submit_time": [0], "gpu_num": [8], "duration": [3600]}), nodes=nodes)


def test_a_csv_logs_failing_servers_taken_for_the_fleet_are_warned_of_and_fault_servers_fixes_the_rate(tmp_path):
    log = write(tmp_path, "node,start,end\na,100,200\nb,300,600\n", "two.csv")
    taken = simulate(one_job(), SimConfig(faults=str(log), until=7200))
    fleet = simulate(one_job(), SimConfig(faults=str(log), fault_servers=400, until=7200))
    assert any("--fault-servers" in warning and "every one of which failed" in warning
               for warning in taken.summary["warnings"])
    assert not any("--fault-servers" in warning for warning in fleet.summary["warnings"])
    # 4 nodes, each a failing server's 600 s history replayed 12 times in 2 h, against 4 of 400 servers' histories
    assert taken.summary["failures"]["faults"] == 48
    assert fleet.summary["failures"]["faults"] < 10
    # the rate per server-day of up time: 2 faults over 600 s, 400 s of it down, on 2 servers or on 400
    assert taken.summary["failures"]["node_rate_per_day"] == pytest.approx(2 / (2 * 600 - 400) * DAY)
    assert fleet.summary["failures"]["node_rate_per_day"] == pytest.approx(2 / (400 * 600 - 400) * DAY)


def test_open_faults_span_end_lets_a_run_replay_a_log_with_a_server_that_never_recovers(tmp_path):
    log = write(tmp_path, "node,start,end\na,100,200\nb,300,\nc,5000,5100\n", "open.csv")
    with pytest.raises(TraceError, match="--open-faults span-end"):
        simulate(one_job(), SimConfig(faults=str(log), until=7200))
    result = simulate(one_job(), SimConfig(faults=str(log), open_faults="span-end", fault_servers=3, until=7200))
    # the job ends at 3,600 s: a's fault at 100 s and b's, which never ends, at 300 s (its node down for good)
    assert result.summary["failures"]["faults"] == 2 and result.jobs["end_time"].notna().all()


def test_options_that_read_a_log_are_refused_with_a_rate_model():
    with pytest.raises(LimitError, match="--fault-servers applies to a replayed fault log, not to a rate model"):
        simulate(one_job(), SimConfig(faults="mtbf=3d", fault_servers=5))


def test_the_cli_takes_them_on_run_faults_show_and_reliability(tmp_path):
    export = write(tmp_path, EXPORT)
    runner = CliRunner()
    shown = runner.invoke(app, ["faults", "show", str(export), "--columns", COLUMNS, "--open-faults", "span-end",
                                "--servers", "16", "--json"])
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.stdout)
    assert (summary["faults"], summary["servers"], summary["servers_failed"]) == (3, 16, 2)
    trace = write(tmp_path, "submit_time,gpu_num,duration\n0,8,3600\n", "jobs.csv")
    ran = runner.invoke(app, ["run", "--trace", str(trace), "--nodes", "4", "--faults", str(export), "--fault-columns", COLUMNS,
                              "--open-faults", "span-end", "--fault-servers", "2", "--until", "86400", "--json",
                              "--out", str(tmp_path / "run")])
    assert ran.exit_code == 0, ran.output
    summary = json.loads(ran.stdout)
    assert summary["failures"]["faults"] >= 1 and not any("--fault-servers" in w for w in summary["warnings"])
    bad = runner.invoke(app, ["run", "--trace", str(trace), "--nodes", "4", "--faults", str(export), "--until", "86400"])
    assert bad.exit_code != 0 and "unknown column" in bad.output and "--fault-columns" in bad.output


def test_a_log_beyond_the_fault_limit_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    """A 10M-row log took 4 minutes and 5.2 GB to show; a log's rows are now counted first."""
    from simcluster.faults import log

    monkeypatch.setattr(log, "MAX_FAULTS", 2)
    three = write(tmp_path, "node,start,end\na,1,2\nb,3,4\nc,5,6\n", "three.csv")
    with pytest.raises(TraceError, match="has 3 rows after its header, more than the limit of 2 faults"):
        read_fault_log(three)
    assert len(read_fault_log(write(tmp_path, "node,start,end\na,1,2\nb,3,4\n", "two.csv")).faults) == 2
