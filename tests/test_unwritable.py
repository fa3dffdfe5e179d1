"""Every command that writes, pointed at a place it cannot write (a read-only folder, a path below a file, a disk
that fills up part-way): one paragraph naming the place, a non-zero exit, no traceback, nothing left behind;
and result folders that follow the umask, as their files do.

Read-only folders: ``chattr +i`` where it works (it stops root, which chmod does not), else writes into the
folder fail as on a read-only file system (tests/conftest.py's ``read_only_folder``).  A full disk: the
writer raises ENOSPC part-way.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simcluster import results
from simcluster.atomic import atomic_write
from simcluster.cli import app
from simcluster.errors import OutputError, WriteError
from simcluster.paths import DEFAULT_TRACE

runner = CliRunner()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """A run and a per-job record made from it: what validate and report read."""
    import pandas as pd

    root = tmp_path_factory.mktemp("inputs")
    assert runner.invoke(app, ["run", "-q", "--out", str(root / "run")]).exit_code == 0
    record = root / "record.csv"
    pd.read_csv(root / "run" / "jobs.csv")[["submit_time", "start_time", "end_time", "gpu_num"]].to_csv(record,
                                                                                                     index=False)
    return {"run": root / "run", "record": record}


def commands(inputs: dict[str, Path], out: Path) -> dict[str, list[str]]:
    """Each command that writes a folder, writing ``out``."""
    return {
        "run": ["run", "-q", "--out", str(out)],
        "sweep": ["sweep", "-q", "--trace", "synth:jobs=20,nodes=2,vcs=1", "--workers", "1", "--out", str(out)],
        "validate": ["validate", str(inputs["run"]), "--recorded", str(inputs["record"]), "--out", str(out)],
        "report": ["report", str(inputs["run"]), "--out", str(out), "-q"],
        "fragmentation": ["fragmentation", "--trace", str(inputs["run"]), "--out", str(out), "-q"],
        "trace convert": ["trace", "convert", str(DEFAULT_TRACE), "--out", str(out)],
        "trace synth": ["trace", "synth", "--jobs", "20", "--out", str(out)],
    }


NAMES = ["run", "sweep", "validate", "report", "fragmentation", "trace convert", "trace synth"]


@pytest.mark.parametrize("command", NAMES)
def test_a_command_into_a_read_only_folder_says_so_before_any_work(inputs, read_only_folder, command):
    out = read_only_folder / "results"
    result = runner.invoke(app, commands(inputs, out)[command])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert f"cannot write into {read_only_folder.resolve()}" in result.stderr, result.stderr
    assert "read-only" in result.stderr and len(result.stderr.strip().splitlines()) <= 3
    assert sorted(p.name for p in read_only_folder.iterdir()) == ["kept.txt"]


@pytest.mark.parametrize("command", NAMES)
def test_a_command_told_to_write_below_a_file_says_so_before_any_work(inputs, tmp_path, command):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine")
    result = runner.invoke(app, commands(inputs, blocker / "results")[command])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"{blocker.resolve()} is a file, not a folder" in result.stderr, result.stderr
    assert blocker.read_text() == "mine"


@pytest.mark.parametrize("command", ["sweep"])
def test_a_sweep_told_to_write_into_a_file_says_so(inputs, tmp_path, command):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine")
    result = runner.invoke(app, commands(inputs, blocker)[command])
    assert result.exit_code == 2 and "is a file, not a folder" in result.stderr, result.output
    assert blocker.read_text() == "mine"


@pytest.fixture
def full_disk(monkeypatch):
    """The disk fills up while a result folder is written: part of a file lands, then ENOSPC (tables, texts and
    images alike)."""
    real_write_bytes = Path.write_bytes

    def write_csv(frame, path):
        Path(path).write_text("job_id\n")
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    def write_bytes(self, data):
        if self.parent.name.endswith(".tmp"):  # inside a folder being written
            real_write_bytes(self, data[:10])
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real_write_bytes(self, data)

    monkeypatch.setattr(results, "write_csv", write_csv)
    monkeypatch.setattr(Path, "write_bytes", write_bytes)


def test_a_run_on_a_full_disk_says_where_and_leaves_nothing(tmp_path, full_disk):
    out = tmp_path / "results" / "run"
    result = runner.invoke(app, ["run", "-q", "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert f"cannot write into {out.parent}: No space left on device; nothing was written" in result.stderr
    assert "Traceback" not in result.output
    assert list(out.parent.iterdir()) == []  # no folder, no temporary one


def test_a_validation_and_a_report_on_a_full_disk_say_so(inputs, tmp_path, full_disk):
    for args in (["validate", str(inputs["run"]), "--recorded", str(inputs["record"])], ["report", str(inputs["run"])]):
        out = tmp_path / "out"
        result = runner.invoke(app, [*args, "--out", str(out)])
        assert result.exit_code == 1, result.output
        assert "cannot write into" in result.stderr and "No space left on device" in result.stderr
        assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_a_failed_atomic_write_leaves_no_file_and_is_an_output_error_and_an_os_error(tmp_path):
    def half(handle):
        handle.write(b"half a table")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(WriteError, match="cannot write into .*: No space left on device") as caught:
        atomic_write(tmp_path / "runs.csv", half)
    assert isinstance(caught.value, OSError) and isinstance(caught.value, OutputError)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_result_folders_follow_the_umask_as_their_files_do(tmp_path, mask):
    previous = os.umask(mask)
    try:
        run = runner.invoke(app, ["run", "-q", "--out", str(tmp_path / "run")])
        synth = runner.invoke(app, ["trace", "synth", "--jobs", "20", "--out", str(tmp_path / "trace")])
    finally:
        os.umask(previous)
    assert run.exit_code == 0 and synth.exit_code == 0, run.output + synth.output
    for folder, table in ((tmp_path / "run", "jobs.csv"), (tmp_path / "trace", "cluster_full_log.csv")):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~mask, folder
        assert stat.S_IMODE((folder / table).stat().st_mode) == 0o666 & ~mask, table
