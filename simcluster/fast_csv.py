"""``DataFrame.to_csv(path, index=False)``, byte for byte, formatted by Arrow's kernels instead of per cell.

pandas turns every cell into a Python string and hands the rows to the csv module, the slow part of
writing a large run.  Here each column is formatted by Arrow (C++) in chunks of rows and the lines are
joined there.  Arrow and pandas do not format everything alike, so a column takes Arrow's text only where
the two agree:

- integers: Arrow's decimal text, as ``str(int)``;
- floats (pandas writes numpy's repr: ``3.0``, ``12.5``, ``1e-05``, ``1e+16``, an empty cell for NaN):
  whole values below 1e16 as their integer's text and ``.0``; other values from 1e-4 to 1e10 in Arrow's
  shortest round-trip text, which has the same digits; the rest (infinities, -0.0, tiny or huge values)
  by numpy itself, as pandas does;
- text: as it is, an empty cell for a missing value, and quoted as the csv module quotes (a value holding
  a comma, a quote or a newline, its quotes doubled);
- booleans: ``True`` and ``False``.

Anything else (another dtype, text with a carriage return, which Python versions quote differently, a
table of one column, labels that are not text) is written by pandas itself: :func:`write_csv` is the fast
path and ``to_csv`` its reference, held equal by tests/test_fast_csv.py; a probe at first use falls back
to numpy's float texts should an Arrow release format floats otherwise.
"""

from __future__ import annotations

import csv
import functools
import io
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

CHUNK = 1 << 16  # rows formatted at a time: their texts stay in the CPU's caches, and take little memory

# rows [start, stop) of a column → its pieces, each Arrow texts or one text for every row (``["3", ".0"]``)
Format = Callable[[int, int], list[Any]]


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``frame`` to ``path`` exactly as ``frame.to_csv(path, index=False)`` would."""
    formats = _formats(frame)
    if formats is None:
        frame.to_csv(path, index=False)
        return
    import pyarrow as pa
    import pyarrow.compute as pc

    with open(path, "wb") as out:
        out.write(_header(list(frame.columns)))
        for start in range(0, len(frame), CHUNK):
            stop = min(start + CHUNK, len(frame))
            pieces: list[Any] = []
            for k, form in enumerate(formats):
                pieces += [","] * (k > 0) + form(start, stop)
            pieces = _merged([*pieces, os.linesep])  # (commas, newline, columns of one value: one text)
            if len(pieces) == 1:  # every column the same value in these rows
                out.write(pieces[0].encode() * (stop - start))
                continue
            texts = [pa.scalar(p, pa.large_string()) if isinstance(p, str) else p for p in pieces]
            lines = pc.binary_join_element_wise(*texts, pa.scalar("", pa.large_string()))
            out.write(_text_buffer(lines))


def _merged(pieces: list[Any]) -> list[Any]:
    """``pieces`` with each run of neighbouring texts made one: fewer pieces for Arrow to join per line."""
    merged: list[Any] = []
    for piece in pieces:
        if isinstance(piece, str) and merged and isinstance(merged[-1], str):
            merged[-1] += piece
        else:
            merged.append(piece)
    return merged


def _formats(frame: pd.DataFrame) -> list[Format] | None:
    """A formatter per column, or None where a column (or the table) is not one this module writes."""
    labels = list(frame.columns)
    if len(labels) < 2 or not all(isinstance(label, str) and "\r" not in label for label in labels):
        return None  # (one column: the csv module quotes an empty cell alone on its line)
    formats = []
    for k in range(len(labels)):
        column = frame.iloc[:, k]
        dtype = column.dtype
        numbers = isinstance(dtype, np.dtype) and dtype.isnative  # (Arrow takes no byte-swapped numbers)
        if numbers and dtype.kind in "iu":
            formats.append(_integers(column.to_numpy()))
        elif numbers and dtype == np.float64:
            formats.append(_floats(column.to_numpy()))
        elif numbers and dtype.kind == "b":
            formats.append(_booleans(column.to_numpy()))
        elif isinstance(dtype, pd.StringDtype) or (
                dtype == object and pd.api.types.infer_dtype(column, skipna=True) in ("string", "empty")):
            text = _texts(column)
            if text is None:
                return None
            formats.append(text)
        else:
            return None
    return formats


def _header(labels: list[str]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator=os.linesep).writerow(labels)  # (quoted as pandas' csv writer does)
    return buffer.getvalue().encode()


def _integers(values: np.ndarray) -> Format:
    import pyarrow as pa
    import pyarrow.compute as pc

    def form(start: int, stop: int) -> list[Any]:
        part = values[start:stop]
        if part[0] == part.min() == part.max():
            return [str(part[0])]
        return [pc.cast(pa.array(part), pa.large_string())]

    return form


def _booleans(values: np.ndarray) -> Format:
    import pyarrow as pa
    import pyarrow.compute as pc

    def form(start: int, stop: int) -> list[Any]:
        part = values[start:stop]
        if part.all() or not part.any():
            return [str(bool(part[0]))]
        return [pc.if_else(pa.array(part), pa.scalar("True", pa.large_string()),
                           pa.scalar("False", pa.large_string()))]

    return form


def _floats(values: np.ndarray) -> Format:
    import pyarrow as pa
    import pyarrow.compute as pc

    dot_zero, empty = pa.scalar(".0", pa.large_string()), pa.scalar("", pa.large_string())
    arrow_agrees = _arrow_floats_agree()

    def form(start: int, stop: int) -> list[Any]:
        x = values[start:stop]
        if x[0] == x.min() == x.max() and (x[0] != 0 or np.signbit(x).all() or not np.signbit(x).any()):
            return [str(x[:1].astype(str)[0])]  # (NaN compares unequal, 0.0 equal to -0.0: neither passes)
        size = np.abs(x)
        with np.errstate(invalid="ignore"):  # (NaN and infinities are not whole)
            whole = (np.trunc(x) == x) & (size < 1e16) & ~((x == 0) & np.signbit(x))  # -0.0: numpy's "-0.0"
        if whole.all():  # (the usual column of seconds: ".0" joined with the line, not in a pass of its own)
            return [_whole(x), ".0"]
        missing = np.isnan(x)
        arrow = ~whole & (size >= 1e-4) & (size < 1e10) if arrow_agrees else np.zeros(len(x), bool)
        text = pc.cast(pa.array(x), pa.large_string())  # Arrow's text: right for the values in `arrow`
        if whole.any():
            text = pc.if_else(pa.array(whole), pc.binary_join_element_wise(_whole(np.where(whole, x, 0)),
                                                                           dot_zero, empty), text)
        if missing.any():
            text = pc.if_else(pa.array(missing), empty, text)
        numpy_text = ~(whole | arrow | missing)
        if numpy_text.any():
            text = pc.replace_with_mask(text, pa.array(numpy_text),
                                        pa.array(x[numpy_text].astype(str), pa.large_string()))
        return [text]

    return form


def _whole(x: np.ndarray) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.cast(pa.array(x.astype(np.int64)), pa.large_string())


@functools.cache
def _arrow_floats_agree() -> bool:
    """Whether Arrow's shortest text of floats from 1e-4 to 1e10 is numpy's (it is for every Arrow tested;
    a release that formats them otherwise makes those values take numpy's slower way)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    probe = np.array([0.1, 0.3 + 0.6, 12.5, 1 / 3, -2 / 3, 1.0001e-4, 0.00012345678901234, 9999999999.5,
                      123456.789, 2 ** 0.5 * 1e9, -7.25e-3])
    return pc.cast(pa.array(probe), pa.string()).to_pylist() == probe.astype(str).tolist()


def _texts(column: pd.Series) -> Format | None:
    """Text as the csv module writes it, or None for text it quotes differently across Python versions."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = pa.array(column, from_pandas=True)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = pc.fill_null(values.cast(pa.large_string()), pa.scalar("", pa.large_string()))
    used = _text_buffer(values).to_pybytes()  # (ASCII bytes: never part of another UTF-8 character)
    if b"\r" in used:
        return None
    if b"," not in used and b'"' not in used and b"\n" not in used:
        return lambda start, stop: [values.slice(start, stop - start)]
    quote = pa.scalar('"', pa.large_string())
    empty = pa.scalar("", pa.large_string())

    def form(start: int, stop: int) -> list[Any]:
        part = values.slice(start, stop - start)
        quoted = pc.binary_join_element_wise(quote, pc.replace_substring(part, '"', '""'), quote, empty)
        return [pc.if_else(pc.match_substring_regex(part, '[,"\n]'), quoted, part)]

    return form


def _text_buffer(values: Any) -> Any:
    """The UTF-8 bytes of an Arrow large_string array's values, one after the other (an Arrow buffer)."""
    import pyarrow as pa

    if not len(values) or values.buffers()[2] is None:
        return pa.py_buffer(b"")
    offsets = np.frombuffer(values.buffers()[1], np.int64)
    first, last = int(offsets[values.offset]), int(offsets[values.offset + len(values)])
    return values.buffers()[2].slice(first, last - first)
