"""Reading record-per-line session files (Claude Code, Codex CLI) robustly.

A runtime appends one JSON record per line while the session runs, so a file
copied or read mid-session can end in a partial line. That last line is
dropped with a warning; a malformed line anywhere else means the file is
damaged and is an error naming the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from prunesim.errors import UserError
from prunesim.io import inputs

PEEK_BYTES = 1 << 16


def peek_records(path: Path, limit: int = 5) -> list:
    """The first few records of a JSON-lines file that parse (for format detection); [] if none."""
    out = []
    try:
        with inputs.open_input(path) as fh:
            head = fh.read(PEEK_BYTES)
    except (OSError, UserError):  # the full read says what is wrong
        return out
    if b"\x00" in head:
        return out
    for raw in head.split(b"\n"):
        raw = raw.strip()
        if not raw:
            continue
        try:
            out.append(json.loads(raw.decode("utf-8-sig")))
        except (ValueError, UnicodeDecodeError, RecursionError):
            break  # a partial first record (very long line) or one nested past the stack: the full read says so
        if len(out) >= limit:
            break
    return out


def first_record_type(path: Path) -> dict | None:
    """The first record of a JSON-lines file if it is an object whose first line fits the peek window."""
    records = peek_records(path, 1)
    return records[0] if records and isinstance(records[0], dict) else None


def read_records(path: Path, warnings: list[str]) -> Iterator[tuple[int, dict]]:
    """(line number, record) for every object record; a truncated last line becomes a warning."""
    where = str(path)
    with inputs.open_input(path, "transcript file") as fh:
        head = fh.read(4096)
        if b"\x00" in head:
            raise UserError(where, None, "binary file, not a transcript")
        fh.seek(0)
        pending: tuple[int, ValueError] | None = None  # a line that did not parse: fatal unless it is the last
        lineno = 0
        for raw in fh:
            lineno += 1
            if pending is not None and raw.strip():
                raise inputs.malformed_json(where, pending[1], pending[0])
            try:
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                raise UserError(f"{where}:{lineno}", None, "not a text file (invalid UTF-8)") from None
            if not text.strip():
                continue
            try:
                rec = json.loads(text)
            except ValueError as err:  # malformed, or an integer of thousands of digits
                pending = (lineno, err)
                continue
            except RecursionError as err:
                raise inputs.malformed_json(where, err, lineno) from None
            if not isinstance(rec, dict):
                raise UserError(f"{where}:{lineno}", None, f"expected a JSON object, got {type(rec).__name__}")
            yield lineno, rec
        if pending is not None:
            warnings.append(f"{where}:{pending[0]}: truncated last line ignored "
                            f"({inputs.json_problem(pending[1], pending[0])})")
