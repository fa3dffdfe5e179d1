from __future__ import annotations

import os
import tempfile
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import settings

# the same examples on every run, so that a red CI names a change, not a draw (a search for new failing examples:
# HYPOTHESIS_PROFILE=explore)
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# models trained once per table are kept between runs (simcluster.models.cache): the tests keep theirs apart from
# the user's, in a folder of this session
os.environ.setdefault("SIMCLUSTER_CACHE", tempfile.mkdtemp(prefix="simcluster-cache-"))

from simcluster.paths import shared_data_dir
from simcluster.traces import JobLog


@pytest.fixture(scope="session")
def venus_sept() -> Path:
    path = shared_data_dir() / "venus_sept"
    if not (path / "cluster_full_log.csv").is_file():
        pytest.skip(f"reference data not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    return path


def write_source(folder: Path, name: str, text: str) -> Path:
    """``text``, dedented, as the file ``folder/name`` (a plug-in's source; the folder made if need be)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def make_trace(rows: list[tuple], vc_nodes: dict[str, int]) -> JobLog:
    """rows: (vc, gpu_num, submit_time, duration) in trace order."""
    frame = pd.DataFrame(rows, columns=["vc", "gpu_num", "submit_time", "duration"])
    frame.insert(0, "job_id", [f"j{i}" for i in range(len(rows))])
    frame["user"] = "u"
    return JobLog("test", frame, vc_nodes)


@pytest.fixture
def read_only_folder(tmp_path, monkeypatch) -> Path:
    """A folder nobody may write into, root included: made immutable (``chattr +i``, which stops root, where
    chmod does not); where chattr is refused, writes into it are made to fail as a read-only file system's
    do (``os.access``, ``os.mkdir`` and ``os.open`` say EROFS for paths inside it)."""
    import errno
    import os
    import shutil
    import subprocess

    folder = tmp_path / "read-only"
    folder.mkdir()
    (folder / "kept.txt").write_text("mine")
    chattr = shutil.which("chattr")
    if chattr and subprocess.run([chattr, "+i", str(folder)], capture_output=True, check=False).returncode == 0:
        yield folder
        subprocess.run([chattr, "-i", str(folder)], capture_output=True, check=False)
        return
    inside = str(folder.resolve())

    def below(path) -> bool:
        return os.path.abspath(os.fsdecode(path)).startswith(inside)

    real_access, real_mkdir, real_open = os.access, os.mkdir, os.open

    def access(path, mode, *args, **kwargs):
        return False if below(path) and mode & os.W_OK else real_access(path, mode, *args, **kwargs)

    def mkdir(path, *args, **kwargs):
        if below(path):
            raise OSError(errno.EROFS, "Read-only file system", os.fsdecode(path))
        return real_mkdir(path, *args, **kwargs)

    def open_(path, flags, *args, **kwargs):
        if below(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)
    yield folder
