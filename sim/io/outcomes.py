"""Per-instance outcomes of real agents: files of one row per (experiment, instance) run.

The format is that of The Complexity Trap's per-instance cost files (arXiv 2508.21433; docs/outcomes.md):
``experiment, [strategy,] instance_id, cost, summary_cost, has_summary, summary_count, turn_count,
mean_reasoning_tokens, mean_completion_tokens, mean_prompt_tokens, outcome``. The ``strategy`` column is
optional (SWE-agent's files have it, OpenHands' do not); columns beyond these are ignored.

An *arm* is the rows of one experiment: one scaffold and model run on a set of instances, with the full context
(raw) or under a context policy. :func:`read` returns the arms of each file in the order they first appear.

A row with ``cost`` 0 and at most one turn is a run that failed to start. It stays in its arm (the arm's
figures count it as recorded: no cost, its turns) and is counted as **unsolved** whatever its ``outcome``
says; :attr:`Arm.started` marks the others. Anything else that is not a well-formed value is one
:class:`~prunesim.errors.UserError` naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from prunesim.errors import UserError
from prunesim.io.inputs import read_bytes

COLUMNS = ("experiment", "instance_id", "cost", "summary_cost", "has_summary", "summary_count", "turn_count",
           "mean_reasoning_tokens", "mean_completion_tokens", "mean_prompt_tokens", "outcome")
STRATEGY = "strategy"  # the optional column
_FLOATS = ("cost", "summary_cost", "mean_reasoning_tokens", "mean_completion_tokens", "mean_prompt_tokens")
_INTS = ("summary_count", "turn_count")
_BOOLS = {"true": True, "false": False, "1": True, "0": False}
FAILED_TO_START = "cost 0 and at most one turn: a run that failed to start, counted as unsolved"


@dataclass(frozen=True, eq=False)
class Arm:
    """One experiment's rows, as arrays in file order (one entry per instance)."""

    file: str  # the path as given
    experiment: str
    strategy: str  # "" when the file has no strategy column
    instances: tuple[str, ...]
    cost: np.ndarray  # the agent's own calls (the summarizer's are in summary_cost)
    summary_cost: np.ndarray
    summary_count: np.ndarray
    turns: np.ndarray  # turn_count: the agent's model calls as the scaffold counted them
    reasoning: np.ndarray  # mean tokens per call
    completion: np.ndarray
    prompt: np.ndarray
    solved: np.ndarray  # bool; False for a run that failed to start, whatever its outcome column said
    started: np.ndarray  # bool; False: cost 0 and at most one turn

    @property
    def n(self) -> int:
        return len(self.instances)

    @property
    def failed_to_start(self) -> int:
        return int((~self.started).sum())

    def total_cost(self) -> float:
        """``cost + summary_cost`` over the arm, in the file's own units."""
        return float(self.cost.sum() + self.summary_cost.sum())

    def subset(self, keep: np.ndarray) -> Arm:
        """The rows where ``keep`` (a boolean mask or an index array) selects, in that order."""
        idx = np.flatnonzero(keep) if np.asarray(keep).dtype == bool else np.asarray(keep)
        fields = {name: getattr(self, name)[idx] for name in _ARRAYS}
        return Arm(self.file, self.experiment, self.strategy, tuple(self.instances[i] for i in idx), **fields)


_ARRAYS = ("cost", "summary_cost", "summary_count", "turns", "reasoning", "completion", "prompt", "solved",
           "started")


@dataclass(frozen=True)
class OutcomeFile:
    """A file read: its arms and the SHA-256 of its bytes (a fit records what it was made from)."""

    path: str
    sha256: str
    arms: tuple[Arm, ...]


def read(path: str | os.PathLike) -> OutcomeFile:
    """The arms of one outcome file; one line naming the file, line and column for anything malformed."""
    where = os.fspath(path)
    data = read_bytes(path, "CSV file of outcomes", where)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(where, None, "not a text file (invalid UTF-8)") from None
    return OutcomeFile(where, hashlib.sha256(data).hexdigest(), tuple(parse(text, where)))


def read_all(paths: Iterable[str | os.PathLike]) -> list[OutcomeFile]:
    files = [read(p) for p in paths]
    if not files:
        raise UserError("outcomes", None, "no outcome files given")
    return files


def parse(text: str, where: str) -> list[Arm]:
    """The arms of the CSV ``text`` (named ``where`` in errors), in order of first appearance."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as err:
        raise UserError(f"{where}:1", None, f"malformed CSV: {err}") from None
    if header is None or not any(h.strip() for h in header):
        raise UserError(where, None, "empty file: expected a header naming the columns " + ", ".join(COLUMNS))
    names = [h.strip() for h in header]
    seen: set[str] = set()
    for name in names:
        if name in seen and name in (*COLUMNS, STRATEGY):
            raise UserError(f"{where}:1", name, "column named twice")
        seen.add(name)
    missing = [c for c in COLUMNS if c not in seen]
    if missing:
        raise UserError(f"{where}:1", None, f"missing column(s) {', '.join(missing)} (an outcome file has "
                        f"{', '.join(COLUMNS[:1])}, [{STRATEGY},] {', '.join(COLUMNS[1:])})")
    col = {name: names.index(name) for name in (*COLUMNS, STRATEGY) if name in seen}
    by_arm: dict[str, dict] = {}
    keys: set[tuple[str, str]] = set()
    line = 1
    try:
        for row in reader:
            line = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(names):
                raise UserError(f"{where}:{line}", None, f"{len(row)} fields where the header has {len(names)}")
            _row(row, col, where, line, by_arm, keys)
    except csv.Error as err:
        raise UserError(f"{where}:{reader.line_num or line}", None, f"malformed CSV: {err}") from None
    if not by_arm:
        raise UserError(where, None, "no rows: the header is there but no run follows it")
    return [_arm(where, name, rows) for name, rows in by_arm.items()]


def _row(row: Sequence[str], col: dict[str, int], where: str, line: int, by_arm: dict, keys: set) -> None:
    at = f"{where}:{line}"
    experiment = row[col["experiment"]].strip()
    instance = row[col["instance_id"]].strip()
    if not experiment:
        raise UserError(at, "experiment", "empty")
    if not instance:
        raise UserError(at, "instance_id", "empty")
    if (experiment, instance) in keys:
        raise UserError(at, "instance_id", f"{instance!r} appears twice in experiment {experiment!r}")
    keys.add((experiment, instance))
    strategy = row[col[STRATEGY]].strip() if STRATEGY in col else ""
    values = {name: _number(row[col[name]], at, name) for name in _FLOATS}
    for name in _INTS:
        values[name] = _count(row[col[name]], at, name)
    flag = row[col["has_summary"]].strip().lower()
    if flag not in _BOOLS:
        raise UserError(at, "has_summary", f"expected True or False (got {row[col['has_summary']]!r})")
    outcome = row[col["outcome"]].strip()
    if outcome not in ("0", "1"):
        raise UserError(at, "outcome", f"expected 0 (unsolved) or 1 (solved) (got {outcome!r})")
    arm = by_arm.setdefault(experiment, {"strategy": strategy, "rows": []})
    if arm["strategy"] != strategy:
        raise UserError(at, STRATEGY, f"{strategy!r} where earlier rows of experiment {experiment!r} say "
                        f"{arm['strategy']!r}")
    arm["rows"].append((instance, values, outcome == "1"))


def _number(cell: str, at: str, name: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise UserError(at, name, f"expected a number (got {cell!r})") from None
    if not math.isfinite(value) or value < 0:
        raise UserError(at, name, f"must be a finite number >= 0 (got {cell.strip()})")
    return value


def _count(cell: str, at: str, name: str) -> int:
    value = _number(cell, at, name)
    if not value.is_integer():
        raise UserError(at, name, f"expected a whole number (got {cell.strip()})")
    return int(value)


def _arm(where: str, experiment: str, arm: dict) -> Arm:
    rows = arm["rows"]
    col = {name: np.array([r[1][name] for r in rows], dtype=float) for name in _FLOATS}
    turns = np.array([r[1]["turn_count"] for r in rows], dtype=np.int64)
    started = ~((col["cost"] == 0) & (turns <= 1))
    solved = np.array([r[2] for r in rows], dtype=bool) & started
    return Arm(where, experiment, arm["strategy"], tuple(r[0] for r in rows), col["cost"], col["summary_cost"],
               np.array([r[1]["summary_count"] for r in rows], dtype=np.int64), turns,
               col["mean_reasoning_tokens"], col["mean_completion_tokens"], col["mean_prompt_tokens"], solved,
               started)
