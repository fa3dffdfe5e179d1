"""`lucid-sim faults show|fit`: one JSON document with --json, a table without, fitted.json that reads back,
and bad logs as one paragraph with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from simcluster.faults import load_fit
from simcluster.paths import REPO_ROOT

ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "120"}
LOG = "node,start,end,class\nn1,0,3600,GPU\nn2,100,7300,NIC\nn1,86400,90000,GPU\n"


def lucid_sim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simcluster.cli", "faults", *args], env=ENV, capture_output=True,
                          text=True, check=False, timeout=300)


def test_fit_prints_one_json_document_and_writes_a_fit_that_reads_back(tmp_path):
    log = tmp_path / "faults.csv"
    log.write_text(LOG)
    done = lucid_sim("fit", str(log), "--servers", "10", "--out", str(tmp_path / "fitted.json"), "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["servers"] == 10 and [c["class"] for c in printed["classes"]] == ["GPU", "NIC"]
    assert printed["classes"][0]["median_s"] == 3600
    assert load_fit(tmp_path / "fitted.json").faults == 3


def test_fit_and_show_print_tables(tmp_path):
    log = tmp_path / "faults.csv"
    log.write_text(LOG)
    fitted = lucid_sim("fit", str(log))
    assert fitted.returncode == 0, fitted.stderr
    assert "GPU" in fitted.stdout and "a fault every" in fitted.stdout
    shown = lucid_sim("show", str(log), "--json")
    assert json.loads(shown.stdout)["classes"] == {"GPU": 2, "NIC": 1}


def test_a_bad_log_is_one_paragraph_and_exit_status_2(tmp_path):
    log = tmp_path / "faults.csv"
    log.write_text("node,start,end\nn1,10,5\n")
    done = lucid_sim("fit", str(log), "--json")
    assert done.returncode == 2 and done.stdout == ""
    assert "line 2, field 'end'" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_python_api_fits_the_same_as_the_command(tmp_path):
    from simcluster import api

    log = tmp_path / "faults.csv"
    log.write_text(LOG)
    done = lucid_sim("fit", str(log), "--servers", "10", "--json")
    fitted = api.fit_log(log, servers=10)
    assert json.loads(done.stdout)["classes"][0]["median_s"] == fitted.classes[0].median_s
