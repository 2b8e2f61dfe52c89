"""A sweep directory's files, read and checked the one way every reader shares.

``sweep``, ``aggregate`` and the ``plot sweep`` / ``plot phase`` figures all
read through here, so they agree on what a valid file is and on what a
problem is called:

* ``sweep.json`` must be the object a sweep writes: ``grid`` an object of
  scenario parameters to non-empty lists of single values, ``policies`` and
  ``seeds`` non-empty lists, ``columns`` the run_id, scenario, policy, seed,
  version and grid columns followed by metric columns;
* ``runs.csv`` must be UTF-8 CSV whose header is sweep.json's ``columns``.
  A last line without a line end is what a running or killed sweep leaves
  (rows are appended as runs finish): every reader ignores it. Every other
  row has the header's number of fields;
* for :func:`read_runs`, each row must also belong to the sweep (a policy,
  seed and grid value of sweep.json, the sweep's scenario and version), be
  the only row of its run (no repeated ``run_id`` or grid point), and hold a
  number (or nothing) in every metric column. A row that breaks this is
  refused with the line number: it would otherwise be counted.

Every problem is a :class:`~prunesim.errors.UserError` naming the file and,
for rows, the line.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prunesim.errors import UserError
from prunesim.io import atomic, inputs
from prunesim.model.agent_profiles import AgentParams
from prunesim.model.scenario import MAX_SEED, seed_problem
from prunesim.observe.cells import QUOTE, recover
from prunesim.observe.metrics import TEXT_METRICS

SWEEP_FILE = "sweep.json"
RUNS_FILE = "runs.csv"
LOCK_FILE = ".lock"
AGGREGATE_FILE = "aggregate.csv"
# aggregate.csv's, after policy and grid; share.. only for yes/no metrics (a Wilson 95% interval)
STAT_COLUMNS = ("metric", "n", "median", "mean", "ci_low", "ci_high", "share", "share_low", "share_high")
ID_COLUMNS = ("run_id", "scenario", "policy", "seed", "prunesim_version")
TEXT_COLUMNS = ("run_id", "scenario", "policy", "prunesim_version")
AGENT_KEYS = frozenset(f.name for f in dataclasses.fields(AgentParams))
_RUN_ID = re.compile(r"[0-9a-f]{16}")
_REDO = "delete that line and run the sweep command again to redo the run"


# -- bytes to lines -----------------------------------------------------------------
def complete_part(data: bytes) -> tuple[bytes, bytes]:
    """(the complete lines, the partial last line): what an interrupted append leaves is the second."""
    end = data.rfind(b"\n") + 1
    return data[:end], data[end:]


def read_bytes(path: Path, what: str, own: bool = False) -> bytes:
    """A sweep file's bytes (``own``: the sweep's own store, read back to resume it, not an input)."""
    if not path.exists() and not path.is_symlink():
        raise UserError(str(path.parent), path.name, f"missing: not a sweep directory (no {what})")
    try:
        return inputs.read_bytes(path, f"sweep's {what}", own=own)
    except UserError as err:
        raise UserError(str(path), None, f"{err.problem}, not the sweep's {what}" if err.problem.startswith(
            ("is a directory", "not a regular file")) else err.problem) from None


def parse_json(data: bytes, path: Path) -> Any:
    """A result file's JSON; bad UTF-8, bad JSON, huge numbers and deep nesting are one line naming the file."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(str(path), None, "not UTF-8 text (a binary or corrupted file?)") from None
    except (ValueError, RecursionError) as err:  # malformed, a number too long to convert, nested too deep
        raise inputs.malformed_json(path, err) from None


def parse_csv(data: bytes, path: Path) -> list[list[str]]:
    """Rows of complete CSV lines, each cell the text it was given (:func:`prunesim.observe.cells.recover`);
    bad UTF-8, NUL bytes and broken quoting are one line naming where."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise UserError(str(path), f"line {line}", "not UTF-8 text (a binary or corrupted file?)") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise UserError(str(path), f"line {line}", "holds a NUL byte (a binary or corrupted file?)")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        rows = list(reader)
    except csv.Error as err:
        raise UserError(str(path), f"line {reader.line_num}", f"not valid CSV ({err})") from None
    if QUOTE in text:  # a cell neutralized against spreadsheet formulas: back to the text it was given
        rows = [[recover(c) for c in row] for row in rows]
    return rows


def read_table(path: Path, what: str, header: list[str] | None = None,
               own: bool = False) -> tuple[list[str], list[list[str]], bool]:
    """Header, complete rows and whether a partial last line was ignored, of one CSV file.

    A file whose only line is its header, without a line end, is a header (a
    sweep can stop right after writing it), not a partial line. ``header``,
    when given, is the header the file must have.
    """
    data = read_bytes(path, what, own)
    body, tail = complete_part(data)
    if not body and tail:
        first = parse_csv(tail + b"\n", path)
        if first and (header is None or first[0] == header):
            body, tail = tail + b"\n", b""
    rows = parse_csv(body, path)
    if not rows:
        raise UserError(str(path), None, "has no header line (an empty file?)")
    found, body_rows = rows[0], rows[1:]
    if header is not None and found != header:
        raise UserError(str(path), "line 1", f"the header does not match the columns in {SWEEP_FILE} "
                        f"({_first_mismatch(found, header)}); an edited or foreign file?")
    for n, row in enumerate(body_rows, start=2):
        if len(row) != len(found):
            raise UserError(str(path), f"line {n}", f"has {len(row)} fields, the header {len(found)}")
    return found, body_rows, bool(tail)


def _first_mismatch(found: list[str], wanted: list[str]) -> str:
    for i, (a, b) in enumerate(zip(found, wanted, strict=False)):
        if a != b:
            return f"column {i + 1} is {a!r}, expected {b!r}"
    return f"{len(found)} columns, expected {len(wanted)}"


# -- sweep.json ----------------------------------------------------------------------
def read_description(out: str | Path, own: bool = False) -> dict:
    """sweep.json of a sweep directory, checked (see the module docstring); ``own`` as in :func:`read_bytes`."""
    out = Path(out)
    if not out.is_dir():
        what = "no such folder" if not out.exists() else "a file"
        raise UserError(str(out), None, f"not a sweep directory ({what})")
    path = out / SWEEP_FILE
    desc = parse_json(read_bytes(path, SWEEP_FILE, own), path)
    check_description(desc, str(path))
    return desc


def check_description(desc: Any, where: str, need_columns: bool = True) -> None:
    """UserError unless ``desc`` is a sweep description a sweep could have written."""
    if not isinstance(desc, dict):
        raise UserError(where, None, f"expected a JSON object describing the sweep, got {_kind(desc)}")
    scenario = desc.get("scenario")
    if not isinstance(scenario, dict):
        raise UserError(where, "scenario", f"expected an object (the resolved scenario), got {_kind(scenario)}")
    if not isinstance(desc.get("scenario_name"), str):
        raise UserError(where, "scenario_name", f"expected a string, got {_kind(desc.get('scenario_name'))}")
    if not isinstance(desc.get("prunesim_version"), str):
        raise UserError(where, "prunesim_version", f"expected a string, got {_kind(desc.get('prunesim_version'))}")
    grid = desc.get("grid")
    if not isinstance(grid, dict):
        raise UserError(where, "grid", f"expected an object of parameter -> values, got {_kind(grid)}")
    policies = desc.get("policies")
    for name, values in grid.items():
        # A per-policy axis is POLICY:PARAMETER (prunesim.studies.grid.split_axis); parameter names have no colon.
        policy, _, param = name.rpartition(":")
        if not _is_parameter(scenario, param) or param in ID_COLUMNS:
            raise UserError(where, f"grid.{name}", "not a parameter of the sweep's scenario")
        if policy and (not isinstance(policies, list) or policy not in policies):
            raise UserError(where, f"grid.{name}", f"{policy} is not one of the sweep's policies")
        if not isinstance(values, list) or not values:
            raise UserError(where, f"grid.{name}", f"expected a non-empty list of values, got {_kind(values)}")
        if any(not _is_single(v) for v in values):
            raise UserError(where, f"grid.{name}", "values must be numbers, strings or booleans")
        if len({atomic.format_cell(v) for v in values}) != len(values):
            raise UserError(where, f"grid.{name}", "a value is repeated")
    if not isinstance(policies, list) or not policies or not all(isinstance(p, str) and p for p in policies):
        raise UserError(where, "policies", "expected a non-empty list of policy names")
    if len(set(policies)) != len(policies):
        raise UserError(where, "policies", "a policy is repeated")
    seeds = desc.get("seeds")
    if not isinstance(seeds, list) or not seeds or not all(type(s) is int and seed_problem(s) is None for s in seeds):
        raise UserError(where, "seeds", f"expected a non-empty list of seeds (integers from 0 to {MAX_SEED:,})")
    if len(set(seeds)) != len(seeds):
        raise UserError(where, "seeds", "a seed is repeated")
    if not need_columns and "columns" not in desc:
        return
    columns = desc.get("columns")
    fixed = [*ID_COLUMNS, *grid]
    if (not isinstance(columns, list) or not all(isinstance(c, str) for c in columns)
            or columns[: len(fixed)] != fixed or len(set(columns)) != len(columns)):
        raise UserError(where, "columns", f"expected the list {', '.join(fixed)}, then metric columns")


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _is_single(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (bool, int, str))


def _is_parameter(scenario: dict, dotted: str) -> bool:
    """A single parameter of the resolved scenario; the ``[agent]`` table's keys too, which a scenario with no
    agent model leaves out of its record (Scenario.to_dict)."""
    if "agent" not in scenario and dotted.startswith("agent."):
        return dotted.partition(".")[2] in AGENT_KEYS
    node: Any = scenario
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return not isinstance(node, (dict, list))


# -- runs.csv ------------------------------------------------------------------------
def read_runs(out: str | Path, desc: dict | None = None) -> list[dict]:
    """The tidy table of a sweep directory: one dict per run, sorted by (policy, grid point, seed).

    Works on a sweep that is still running or was interrupted (a trailing
    partial line is ignored). Grid values come back as the types they were
    given. Rows that do not belong to the sweep, repeat a run or hold text in
    a metric column are refused (see the module docstring).
    """
    desc = read_description(out) if desc is None else desc
    path = Path(out) / RUNS_FILE
    header, body, _ = read_table(path, RUNS_FILE, header=desc["columns"])
    axes = {name: {atomic.format_cell(v): v for v in values} for name, values in desc["grid"].items()}
    policies = set(desc["policies"])
    seeds = {str(s): s for s in desc["seeds"]}
    seen_ids: dict[str, int] = {}
    seen_points: dict[tuple, int] = {}
    rows = []
    for n, cells in enumerate(body, start=2):
        where = f"line {n}"
        row: dict[str, Any] = {}
        for col, text in zip(header, cells, strict=True):
            if col in TEXT_COLUMNS or col in TEXT_METRICS:  # (a metric that is a word: the agent's stop reason)
                row[col] = text
            elif col == "seed":
                if text not in seeds:
                    raise UserError(str(path), where, f"seed {text!r} is not one of the sweep's seeds; {_REDO}")
                row[col] = seeds[text]
            elif col in axes and text == "" and ":" in col:  # a per-policy axis, blank in other policies' rows
                row[col] = None
            elif col in axes:
                if text not in axes[col]:
                    raise UserError(str(path), where, f"{col} = {text!r} is not on the sweep's grid; {_REDO}")
                row[col] = axes[col][text]
            else:
                value = atomic.parse_cell(text)
                if isinstance(value, str):
                    raise UserError(str(path), f"{where}, column {col}", f"{_short(text)} is not a number; {_REDO}")
                row[col] = value
        if not _RUN_ID.fullmatch(row["run_id"]):
            raise UserError(str(path), where, f"run_id {_short(row['run_id'])} is not a run id; {_REDO}")
        if row["policy"] not in policies:
            raise UserError(str(path), where, f"policy {_short(row['policy'])} is not one of the sweep's "
                            f"({', '.join(desc['policies'])}); {_REDO}")
        for col in axes:
            owner = col.rpartition(":")[0]
            if owner and (row[col] is None) != (row["policy"] != owner):
                raise UserError(str(path), where, f"{col} is {'blank' if row[col] is None else 'set'} in a "
                                f"{row['policy']} row; {_REDO}")
        if row["scenario"] != desc["scenario_name"] or row["prunesim_version"] != desc["prunesim_version"]:
            raise UserError(str(path), where, f"scenario or version differs from {SWEEP_FILE}; {_REDO}")
        point = (row["policy"], row["seed"], *(atomic.format_cell(row[a]) for a in axes))
        first = seen_ids.get(row["run_id"], seen_points.get(point))
        if first is not None:
            raise UserError(str(path), where, f"repeats the run on line {first} (same run_id or grid point, "
                            "policy and seed); delete one of the two lines")
        seen_ids[row["run_id"]] = seen_points[point] = n
        rows.append(row)
    return sorted(rows, key=sort_key(desc))


def _short(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def sort_key(desc: dict) -> Callable[[dict], tuple]:
    policies = {p: i for i, p in enumerate(desc["policies"])}
    seeds = {s: i for i, s in enumerate(desc["seeds"])}
    names = list(desc["grid"])
    positions = [{atomic.format_cell(v): i for i, v in enumerate(values)} for values in desc["grid"].values()]

    def key(row: dict) -> tuple:
        point = tuple(pos.get(atomic.format_cell(row[n]), len(pos)) for n, pos in zip(names, positions, strict=True))
        return (policies.get(row["policy"], len(policies)), point, seeds.get(row["seed"], len(seeds)), row["run_id"])

    return key
