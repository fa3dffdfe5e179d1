"""The layer rules of pyproject.toml's [tool.importlinter] hold (policies never import the engine, ...).

`make lint` runs `lint-imports` too; this test makes `make test` hold the same rules.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_hold():
    pytest.importorskip("importlinter", reason="import-linter is in the test extra: pip install -e '.[test]'")
    # a process of its own, in the checkout: import-linter reads pyproject.toml from the working directory
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_the_cycle_contract_finds_a_cycle_through_a_packages_init_and_a_function_level_import(tmp_path):
    pytest.importorskip("importlinter", reason="import-linter is in the test extra: pip install -e '.[test]'")
    package = tmp_path / "cyc"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from cyc.sub import b\n")  # importing cyc.sub.a runs this
    (package / "sub" / "a.py").write_text("")
    (package / "sub" / "b.py").write_text("def later():\n    from cyc import c\n")  # a function-level import
    (package / "c.py").write_text("from cyc.sub import a\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.importlinter]\nroot_packages = ["cyc"]\n'
        'contract_types = ["acyclic_modules: tools.import_rules.AcyclicModulesContract"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "no cycle"\ntype = "acyclic_modules"\npackage = "cyc"\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode != 0 and "1 broken" in done.stdout, done.stdout + done.stderr
    assert "cyc.sub.b -> cyc.c" in done.stdout and "cyc.c -> cyc.sub " in done.stdout.replace("\n", " ")
    (package / "sub" / "b.py").write_text("")  # no import back: kept
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0 and "1 kept" in done.stdout, done.stdout + done.stderr
