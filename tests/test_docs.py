"""The manual builds, and what it tells a reader to type or to look up exists.

What the README and docs/ say goes stale silently when the code moves; these checks catch it, fast
(no simulation runs: the `>>>` examples run as doctests, collected by pytest's ``--doctest-glob=*.md``):

- the site builds with ``mkdocs build --strict``: no broken link or anchor, no page left out of the nav;
- every ``lucid-sim …`` and ``lucid-profile …`` command line (in ``sh`` blocks and in inline code) names a
  command that exists (its ``--help`` exits 0) and only options that command has;
- every ``--option`` named anywhere is an option of some command (or of a benchmark script);
- every repository path (``simcluster/scope.py``, ``benchmarks/bench_gavel.py``) exists, and every dotted
  name (``simcluster.scope.settings_read``) imports;
- the README's relative links lead to files (the README is not part of the site).
"""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from simcluster.plugins import GROUPS

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]
PROGRAMS = ("lucid-sim", "lucid-profile")

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")  # a span may wrap to the next line
# folders of this repository whose paths the docs name; a path under them must exist
REPO_PATH = re.compile(r"^(?:simcluster|profiler|workloads|benchmarks|tests|traces|docs|examples)/[\w./-]*$")
DOTTED = re.compile(r"(?<![\w.])simcluster(?:\.\w+)+")
# options of tools other than ours that the docs name
OTHER_TOOLS = {"--strict", "--doctest-glob", "--doctest-modules"}


def rel(page: Path) -> str:
    return str(page.relative_to(REPO))


def fenced(text: str) -> Iterator[tuple[str, str]]:
    """(language, body) of each fenced block."""
    for match in FENCE.finditer(text):
        yield match.group(1), match.group(2)


def spans(text: str) -> list[str]:
    """Inline code spans, outside fenced blocks, each on one line."""
    return [" ".join(span.split()) for span in SPAN.findall(FENCE.sub("", text))]


def shell_lines(body: str) -> Iterator[str]:
    """The commands of a shell block: continuation lines joined, comments dropped, `&&` and `;` split."""
    for line in body.replace("\\\n", " ").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line)
        yield from (part.strip() for part in re.split(r"&&|;", line) if part.strip())


def command_lines() -> list[tuple[str, str]]:
    """(page, command line) for every line that runs one of our programs."""
    found = []
    for page in PAGES:
        text = page.read_text()
        candidates = [line for lang, body in fenced(text) if lang in ("sh", "bash") for line in shell_lines(body)]
        candidates += [part.strip() for span in spans(text) for part in re.split(r"&&|;", span)]
        found += [(rel(page), line) for line in candidates if line.split()[:1] and line.split()[0] in PROGRAMS]
    return found


def app_of(program: str) -> typer.Typer:
    """The Typer app behind a program's name (``[project.scripts]``)."""
    return importlib.import_module({"lucid-sim": "simcluster.cli", "lucid-profile": "profiler.cli"}[program]).app


def root_command(program: str) -> Any:
    return typer.main.get_command(app_of(program))


def resolve(line: str) -> tuple[str, list[str], Any, list[str]] | None:
    """The program, the command path, the command and the words after it; None where the line names a
    placeholder (``lucid-sim COMMAND --help``) instead of a command; LookupError for a command that does
    not exist."""
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    program, args = words[0], words[1:]
    if program == "lucid-sim" and args and args[0].startswith("-") and args[0] not in ("--help", "-h"):
        args.insert(0, "run")  # `lucid-sim --policy srtf …` is `lucid-sim run --policy srtf …`
    command, path = root_command(program), list[str]()
    while hasattr(command, "commands") and args and not args[0].startswith("-"):
        word = args.pop(0)
        if word.isupper() or "…" in word:
            return None
        if word not in command.commands:
            raise LookupError(f"{program} {' '.join([*path, word])}: no such command")
        command, path = command.commands[word], [*path, word]
    return program, path, command, args


def option_names(command: Any) -> set[str]:
    return {"--help", "-h"} | {name for param in command.params for name in (*param.opts, *param.secondary_opts)
                               if name.startswith("-")}


def options_in(words: list[str]) -> list[str]:
    """The option names among a command's words: `[--ray-address auto]` and `--set=x` included."""
    names = [re.split(r"[=/]", word.strip("[]"))[0] for word in words]
    return [name for name in names if re.fullmatch(r"--?[a-zA-Z][\w-]*", name)]


def is_placeholder(line: str) -> bool:
    try:
        return resolve(line) is None
    except LookupError:
        return False


LINES = [(page, line) for page, line in command_lines() if not is_placeholder(line)]


def test_the_docs_name_commands_at_all():
    assert len(LINES) > 40, LINES  # the scan itself works: the manual is full of command lines


@pytest.mark.parametrize(("page", "line"), LINES, ids=[f"{p}: {line[:60]}" for p, line in LINES])
def test_every_command_line_names_a_command_and_its_options(page, line):
    try:
        resolved = resolve(line)
    except LookupError as error:
        pytest.fail(f"{page}: `{line}`: {error}")
    assert resolved is not None
    program, path, command, args = resolved
    unknown = [name for name in options_in(args) if name not in option_names(command)]
    assert not unknown, f"{page}: `{line}`: {program} {' '.join(path)} has no option {', '.join(unknown)}"


def named_commands() -> list[tuple[str, tuple[str, ...]]]:
    found = set()
    for _, line in LINES:
        try:
            resolved = resolve(line)
        except LookupError:
            continue  # reported by the test above
        if resolved is not None:
            found.add((resolved[0], tuple(resolved[1])))
    return sorted(found)


@pytest.mark.parametrize(("program", "path"), named_commands(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_every_command_the_docs_name_answers_help(program, path):
    result = CliRunner().invoke(app_of(program), [*path, "--help"])
    assert result.exit_code == 0, result.output


def every_option_of_ours() -> set[str]:
    names: set[str] = set()

    def walk(command: Any) -> None:
        names.update(option_names(command))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    for program in PROGRAMS:
        walk(root_command(program))
    for script in (REPO / "benchmarks").glob("*.py"):
        names.update(re.findall(r"""["'](--[\w-]+)["']""", script.read_text()))
    return names | OTHER_TOOLS


def test_every_option_the_docs_name_exists():
    known = every_option_of_ours()
    missing = sorted({f"{rel(page)}: {name}" for page in PAGES for span in spans(page.read_text())
                      for name in options_in(span.split()) if name.startswith("--") and name not in known})
    assert not missing, missing


def test_every_repository_path_the_docs_name_exists():
    missing = []
    for page in PAGES:
        text = page.read_text()
        words = [w for span in spans(text) for w in span.split()]
        words += [w for lang, body in fenced(text) if lang in ("sh", "bash") for line in shell_lines(body)
                  for w in line.split()]
        for before, word in zip(["", *words], words):
            path = word.rstrip(".,:;)").rstrip("/")
            if before == "--out" or not REPO_PATH.match(path + "/") or "…" in path:
                continue  # an output the command writes, or no path of ours
            if not (REPO / path).exists():
                missing.append(f"{rel(page)}: {path}")
    assert not missing, missing


def imports(dotted: str) -> bool:
    """Whether ``a.b.c`` is a module, or an attribute of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        try:
            for name in parts[cut:]:
                found = getattr(found, name)
        except AttributeError:
            return False
        return True
    return False


def test_every_dotted_name_the_docs_name_imports():
    names = {(rel(page), name) for page in PAGES for span in spans(page.read_text()) for name in DOTTED.findall(span)}
    assert names
    groups = set(GROUPS.values())  # entry-point groups (simcluster.placements), not modules
    assert not [f"{page}: {name}" for page, name in sorted(names) if name not in groups and not imports(name)]


def test_the_readme_links_lead_to_files():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    relative = [link for link in links if "://" not in link]
    assert relative
    assert not [link for link in relative if not (REPO / link).exists()]


def test_the_manual_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install '.[docs]' (make test installs it)")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                            str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                           check=False, capture_output=True, text=True, cwd=REPO)
    assert build.returncode == 0, build.stderr
    assert (tmp_path / "site" / "policies" / "write-your-own" / "index.html").is_file()
