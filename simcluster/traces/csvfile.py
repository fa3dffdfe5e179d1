"""A CSV file as text: every field a string, split at the delimiter its header uses (or the one given).

Job logs come comma-, semicolon-, tab- or pipe-separated (a spreadsheet in a European locale writes
semicolons).  The delimiter is told from the header line: of the four, the one it holds most outside
quotes (comma on a tie, and for a header of one column).  Errors about columns say which delimiter
split them, so a file read with the wrong one is recognised at once.

>>> detect_delimiter("job_id;vc;gpu_num;submit_time;duration")
';'
>>> detect_delimiter('"a,b";c;d')
';'
>>> parse_delimiter("tab"), parse_delimiter("\\\\t"), parse_delimiter("auto")
('\\t', '\\t', None)
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from simcluster.errors import TraceError
from simcluster.limits import MAX_HEADER_BYTES, check_csv, check_header

DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
_NAMED = {**{name: d for d, name in DELIMITERS.items()}, "\\t": "\t"}


def parse_delimiter(text: str | None) -> str | None:
    """``--delimiter``: one of the four characters or its name (``tab``, ``\\t``); None or ``auto``: detect."""
    if text is None or text == "auto":
        return None
    value = _NAMED.get(text.strip().lower(), text) if text.strip() else text
    if value not in DELIMITERS:
        raise ValueError(f"--delimiter must be auto, {', '.join(repr(d) for d in DELIMITERS if d != chr(9))}, tab "
                         f"or a name ({', '.join(DELIMITERS.values())}); got {text!r}")
    return value


def describe_delimiter(delimiter: str) -> str:
    """The delimiter by name and character, as errors show it.

    >>> describe_delimiter(";")
    "semicolon (';')"
    """
    return f"{DELIMITERS.get(delimiter, 'delimiter')} ({delimiter!r})"


def detect_delimiter(header: str) -> str:
    """The delimiter of a header line (see the module's docstring)."""
    counts = dict.fromkeys(DELIMITERS, 0)
    quoted = False
    for char in header:
        if char == '"':
            quoted = not quoted
        elif not quoted and char in counts:
            counts[char] += 1
    best = max(DELIMITERS, key=lambda d: counts[d])  # (max keeps the first of equals: comma)
    return best if counts[best] else ","


def first_line(path: Path) -> str | None:
    """The file's first line without its end, or None for a file that is not readable text; TraceError for a
    first line no table's header is (longer than :data:`~simcluster.limits.MAX_HEADER_BYTES`, or of more than
    :data:`~simcluster.limits.MAX_COLUMNS` columns), read with bounded memory."""
    try:
        with path.open("rb") as handle:
            head = handle.read(MAX_HEADER_BYTES + 1)
    except OSError:
        return None
    check_header(head, str(path))
    try:
        return head.split(b"\n", 1)[0].decode("utf-8-sig").rstrip("\r")
    except UnicodeDecodeError:
        return None


def file_delimiter(path: Path, given: str | None = None) -> str:
    """``given``, else the delimiter the file's header uses."""
    if given is not None:
        return given
    return detect_delimiter(first_line(path) or "")


def read_header(path: Path, delimiter: str | None = None) -> list[str] | None:
    """The header's column names (split at ``delimiter``, else the detected one); None for a file that is
    not readable text."""
    line = first_line(path)
    if line is None:
        return None
    return [c.strip() for c in next(csv.reader([line], delimiter=delimiter or detect_delimiter(line)), [])]


def read_csv(path: Path, delimiter: str | None = None) -> pd.DataFrame:
    """Every field as text ("" where empty), blank lines kept (so rows map to file lines)."""
    if not path.is_file():
        raise TraceError(path, "no such file")
    sep = file_delimiter(path, delimiter)  # (its header checked: see first_line)
    plain = _read_plain_csv(path, sep)  # (Arrow refuses a row longer than its 1 MiB blocks)
    if plain is not None:
        return plain
    check_csv(path)  # no line beyond the limit, before pandas builds anything of it
    try:
        return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True,
                           skip_blank_lines=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TraceError(path, f"not a readable CSV file with delimiter {describe_delimiter(sep)} ({exc}); "
                         "--delimiter names another") from exc


def release_arrow_memory() -> None:
    """Give the memory Arrow's pool keeps for reuse back to the system: its allocator keeps what a parse freed
    (tens of MiB for a 100k-job file), resident under the run's peak though the run allocates little through
    Arrow."""
    pa.default_memory_pool().release_unused()


def _read_plain_csv(path: Path, sep: str) -> pd.DataFrame | None:
    """What :func:`read_csv` reads, by Arrow's CSV reader (on a million rows about a sixth of pandas' CPU
    time), for a plain file: UTF-8 without a byte-order mark, no quotes, a header of distinct non-empty
    names, every row as long as the header and no field starting with a space (blank lines are rows of
    empty fields, as pandas reads them).  None for any other file, which pandas reads (and whose problems
    it reports).  One thread: on a shared machine Arrow's threads cost twice the CPU for the same work.
    """
    data = path.read_bytes()
    end = data.find(b"\n")
    if end <= 0 or data.startswith(b"\xef\xbb\xbf") or b'"' in data:
        return None
    try:
        names = data[:end].decode().rstrip("\r").split(sep)
    except UnicodeDecodeError:
        return None
    if not all(names) or len(set(names)) < len(names) or any(n != n.lstrip(" ") for n in names):
        return None
    as_text = pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.large_string()))  # (pandas' own string type)
    try:
        table = pa_csv.read_csv(pa.py_buffer(data), read_options=pa_csv.ReadOptions(use_threads=False),
                                parse_options=pa_csv.ParseOptions(delimiter=sep, quote_char=False,
                                                                  ignore_empty_lines=False),
                                convert_options=as_text)
    except (pa.ArrowException, ValueError):
        return None
    columns = table.columns
    if table.column_names != names or any(pc.any(pc.starts_with(c, " ")).as_py() for c in columns):
        return None
    text = pd.StringDtype("pyarrow", na_value=np.nan)  # pandas' "str", what read_csv(dtype=str) gives
    return pd.DataFrame({name: pd.arrays.ArrowStringArray(column, dtype=text)
                         for name, column in zip(names, columns, strict=True)})


def blank_cells(text: pd.Series) -> pd.Series:
    """Which cells of stripped ``text`` hold nothing: empty, or a missing value as ``str()`` writes it.

    >>> blank_cells(pd.Series(["", "nan", "None", "8"])).tolist()
    [True, True, True, False]
    """
    return (text == "") | text.str.lower().isin(("nan", "none"))


def name_cells(column: pd.Series) -> pd.Series:
    """A column of names as stripped text, "" where a cell is missing (``nan``, ``None``).

    >>> name_cells(pd.Series([" rack ", "None", "nan"])).tolist()
    ['rack', '', '']
    """
    return column.astype(str).str.strip().replace({"nan": "", "None": ""})


def numbers(text: pd.Series, exact_ints: bool = False) -> pd.Series:
    """``pd.to_numeric(text, errors="coerce")``, fast for a column of plain numbers.

    Arrow casts such a column to floats in one C++ pass (on a million rows about ten times faster than
    pandas' parser).  It accepts a subset of what pandas does (no blanks, no surrounding spaces), with
    the same values, so a column it refuses goes to pandas, which coerces the bad values to NaN.
    ``exact_ints``: the caller keeps integers, so floats beyond 2**53 (where pandas keeps an exact
    int64) go to pandas too.

    >>> numbers(pd.Series(["8", "1e3", "0.5"])).tolist(), numbers(pd.Series(["8", "x", ""])).isna().tolist()
    ([8.0, 1000.0, 0.5], [False, True, True])
    """
    try:
        values = pc.cast(pa.array(text), pa.float64()).to_numpy(zero_copy_only=False) + 0.0  # (+0.0: "-0" is 0)
    except (pa.ArrowException, TypeError, ValueError):  # (not plain numbers, or not something Arrow reads)
        return pd.to_numeric(text, errors="coerce")
    if exact_ints and len(values) and not np.nanmax(np.abs(values), initial=0.0) < 2**53:
        return pd.to_numeric(text, errors="coerce")
    return pd.Series(values, index=text.index)
