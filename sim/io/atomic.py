"""Result files' text: JSON and CSV cells as prunesim writes and reads them, and the writers.

The writers go through :mod:`prunesim.io.output`: a regular file is replaced
atomically (a reader, or a crash, sees the old file or the whole new one),
a symbolic link is written through and a device or pipe is written directly.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from prunesim.io import output
from prunesim.observe.cells import neutral
from prunesim.observe.recorder import csv_line


def write_bytes(path: Path, data: bytes) -> None:
    output.write_bytes(path, data)


def write_text(path: Path, text: str) -> None:
    output.write_text(path, text)


def json_ready(value):
    """Plain JSON values: infinities become the string "inf" (JSON has no infinity)."""
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if math.isnan(value):
            return "nan"
        return value
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return json_ready(value.item())
    return value


def dumps_json(value) -> str:
    return json.dumps(json_ready(value), indent=2, sort_keys=True) + "\n"


def write_json(path: Path, value) -> None:
    write_text(path, dumps_json(value))


def format_cell(value) -> str:
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(round(value, 6))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_cell(text: str):
    """A CSV cell as written by :func:`format_cell`, back as a value.

    Empty is None, ``true``/``false`` are booleans, then an int (one a float can hold), then a float
    (``inf`` included), else the text itself.
    """
    text = text.strip()
    if text == "":
        return None
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        value = int(text)
    except ValueError:
        pass
    else:
        try:
            float(value)  # every reader computes with floats: 400 digits is no number any run wrote
        except OverflowError:
            return text
        return value
    try:
        return float(text)
    except ValueError:
        return text


def csv_text(columns: Sequence[str], rows: Iterable[Sequence]) -> str:
    """A CSV file's text: each value as :func:`format_cell` writes it, each cell one a spreadsheet never runs as
    a formula (:mod:`prunesim.observe.cells`; :func:`parse_table` and every prunesim reader undo it)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([neutral(c) for c in columns])
    for row in rows:
        cells = [format_cell(v) for v in row]
        if "\r" in "".join(cells):  # one scan of the row's text: the rare row with a carriage return
            buf.write(csv_line(cells))  # quoted, as the streamed files write it
        else:
            writer.writerow([neutral(c) for c in cells])
    return buf.getvalue()


def write_csv(path: Path, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
    write_text(path, csv_text(columns, rows))
