"""Fault logs: the InfiniteHBD JSON and the plain CSV read to known answers, and every bad input an error
naming the file, the event or line, and the field."""

from __future__ import annotations

import json

import pytest

from simcluster.errors import TraceError
from simcluster.faults import INFINITEHBD_SERVERS, read_fault_log
from simcluster.faults.log import DAY


def event(node, days, kind, cls="GPU", level="Hardware Failure", desc="GPU Lost", **extra):
    return {"node_id": node, "event_time": days, "event_type": kind,
            "fault_type": {"Level": level, "Class": cls, "Desc": desc}, **extra}


def small_log():
    """Two servers: a 1-day GPU fault of a, a NIC fault of b from day 2 to 2.5, and a second GPU fault of a
    from day 10 to 10.25 that a Fan fault overlaps (day 10.1 to 11)."""
    return [event("a", 1.0, "fault_start"), event("a", 2.0, "fault_end"),
            event("b", 2.0, "fault_start", cls="NIC"), event("b", 2.5, "fault_end", cls="NIC"),
            event("a", 10.0, "fault_start"), event("a", 10.1, "fault_start", cls="Fan"),
            event("a", 10.25, "fault_end"), event("a", 11.0, "fault_end", cls="Fan"),
            event("c", 20.0, "fault_start", cls="Unknown Error", level="Other Failure"),
            event("c", 20.0, "fault_end", cls="Unknown Error", level="Other Failure")]


def write_json(tmp_path, events, name="log.json"):
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


def test_an_infinitehbd_log_gives_its_faults_in_seconds_with_class_and_repair(tmp_path):
    log = read_fault_log(write_json(tmp_path, small_log()))
    assert log.format == "infinitehbd"
    assert [(f.server, f.start_s / DAY, round(f.repair_s / DAY, 6), f.cls) for f in log.faults] == [
        (0, 1.0, 1.0, "GPU"), (1, 2.0, 0.5, "NIC"), (0, 10.0, 0.25, "GPU"), (0, 10.1, 0.9, "Fan"),
        (2, 20.0, 0.0, "Unknown Error")]
    assert log.names == ("a", "b", "c")
    assert log.faults[0].key == "Hardware Failure/GPU"


def test_the_infinitehbd_default_counts_the_servers_that_never_failed(tmp_path):
    log = read_fault_log(write_json(tmp_path, small_log()))
    assert log.servers == INFINITEHBD_SERVERS == 400
    assert log.span_s == 20 * DAY  # from 0 to the last event
    assert read_fault_log(write_json(tmp_path, small_log()), servers=3, span_s=30 * DAY).servers == 3


def test_overlapping_faults_count_twice_and_merge_into_one_outage(tmp_path):
    log = read_fault_log(write_json(tmp_path, small_log()), servers=3)
    assert len(log.faults) == 5
    spans = {server: [(a / DAY, round(b / DAY, 6)) for a, b in s] for server, s in log.outages().items()}
    assert spans[0] == [(1.0, 2.0), (10.0, 11.0)]
    assert log.down_server_seconds() == pytest.approx((1.0 + 0.5 + 1.0) * DAY)
    assert any("overlap" in note for note in log.notes)
    assert log.summary()["availability"] == pytest.approx(1 - 2.5 / (3 * 20))


def test_unsorted_events_are_sorted_and_noted(tmp_path):
    events = small_log()
    log = read_fault_log(write_json(tmp_path, events[::-1][:2][::-1] + events[:-2]))
    assert len(log.faults) == 5
    assert any("not in time order" in note for note in log.notes)


def test_a_csv_log_reads_seconds_and_defaults_to_the_servers_seen(tmp_path):
    path = tmp_path / "faults.csv"
    path.write_text("node,start,end,class\nn1,100,400,GPU\nn2,50,60,NIC\nn1,1000,1500,\n")
    log = read_fault_log(path)
    assert log.format == "csv"
    assert [(log.names[f.server], f.start_s, f.end_s, f.cls) for f in log.faults] == [
        ("n2", 50.0, 60.0, "NIC"), ("n1", 100.0, 400.0, "GPU"), ("n1", 1000.0, 1500.0, "unclassified")]
    assert log.servers == 2 and log.span_s == 1500.0


def test_a_server_that_never_recovers_is_an_error_or_down_to_the_end(tmp_path):
    path = tmp_path / "faults.csv"
    path.write_text("node,start,end\nn1,100,\nn2,50,60\n")
    with pytest.raises(TraceError, match=r"faults.csv, line 2, field 'end': .*never ends"):
        read_fault_log(path)
    log = read_fault_log(path, open_faults="span-end", span_s=1000)
    assert [(f.end_s, f.closed) for f in log.faults] == [(60.0, True), (1000.0, False)]
    events = small_log()[:-1]
    with pytest.raises(TraceError, match=r"log.json, event 8, field 'event_type': .*never ends"):
        read_fault_log(write_json(tmp_path, events))


@pytest.mark.parametrize(("change", "where", "field"), [
    (lambda e: e[3].update(extra=1), "event 3", "extra"),
    (lambda e: e[3]["fault_type"].update(Severity="x"), "event 3", "fault_type.Severity"),
    (lambda e: e[2].update(event_type="fault_middle"), "event 2", "event_type"),
    (lambda e: e[1].pop("node_id"), "event 1", "node_id"),
    (lambda e: e[4].update(event_time=-1), "event 4", "event_time"),
    (lambda e: e[4].update(event_time=float("nan")), "event 4", "event_time"),
    (lambda e: e[4].update(event_time=float("inf")), "event 4", "event_time"),
    (lambda e: e[4].update(event_time=1e9), "event 4", "event_time"),
    (lambda e: e[4].update(event_time="soon"), "event 4", "event_time"),
    (lambda e: e[4].update(node_id=None), "event 4", "node_id"),
    (lambda e: e[5].update(fault_type="Fan"), "event 5", "fault_type"),
    (lambda e: e[5]["fault_type"].pop("Class"), "event 5", "fault_type.Class"),
    (lambda e: e[3]["fault_type"].update(Class="GPU"), "event 3", "event_type"),  # closes no NIC start
])
def test_each_bad_json_event_names_the_file_event_and_field(tmp_path, change, where, field):
    events = small_log()
    change(events)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(events, allow_nan=True))
    with pytest.raises(TraceError) as caught:
        read_fault_log(path)
    message = str(caught.value)
    assert message.startswith(f"{path}, {where}, field '{field}'"), message
    assert "\n" not in message


@pytest.mark.parametrize(("text", "line", "field", "says"), [
    ("node,start,end,zone\n", 1, "zone", "unknown column"),
    ("node,start\n", 1, "end", "lacks"),
    ("node,start,end\nn1,100,50\n", 2, "end", "ends before it starts"),
    ("node,start,end\nn1,-5,50\n", 2, "start", "non-negative"),
    ("node,start,end\nn1,nan,50\n", 2, "start", "finite"),
    ("node,start,end\nn1,5,inf\n", 2, "end", "finite"),
    ("node,start,end\nn1,5,1e20\n", 2, "end", "century"),
    ("node,start,end\nn1,5,x\n", 2, "end", "number"),
    ("node,start,end\n,5,6\n", 2, "node", "empty"),
    ("node,start,end\nn1,5\n", 2, None, "2 fields"),
])
def test_each_bad_csv_row_names_the_file_line_and_field(tmp_path, text, line, field, says):
    path = tmp_path / "faults.csv"
    path.write_text(text)
    with pytest.raises(TraceError) as caught:
        read_fault_log(path)
    error = caught.value
    assert (error.path, error.line, error.field) == (str(path), line, field)
    assert says in error.message


def test_files_that_are_not_fault_logs_say_so_in_one_line(tmp_path):
    cases = {"latin.csv": "node,start,end\nn\xe9,1,2\n".encode("latin-1"), "broken.json": b'[{"node_id": 1,',
             "object.json": b'{"events": []}', "empty.json": b"[]", "empty.csv": b"",
             "long.csv": b"node,start,end\n" + b"x" * (2 << 20) + b",1,2\n"}
    expected = {"latin.csv": "not UTF-8", "broken.json": "not valid JSON", "object.json": "JSON list",
                "empty.json": "no faults", "empty.csv": "empty", "long.csv": "longer than"}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(TraceError) as caught:
            read_fault_log(path)
        assert str(caught.value).startswith(str(path)) and expected[name] in str(caught.value), (name, caught.value)
    with pytest.raises(TraceError, match="cannot be read"):
        read_fault_log(tmp_path / "missing.json")


def test_servers_and_span_are_checked_against_the_log(tmp_path):
    path = write_json(tmp_path, small_log())
    with pytest.raises(TraceError, match="fewer than the 3 servers that failed"):
        read_fault_log(path, servers=2)
    with pytest.raises(TraceError, match="ends before the last event"):
        read_fault_log(path, span_s=DAY)
    many = [event(f"s{i}", 1.0, kind) for i in range(401) for kind in ("fault_start", "fault_end")]
    with pytest.raises(TraceError, match="401 servers failed.*--servers"):
        read_fault_log(write_json(tmp_path, many, "many.json"))
