"""Readers of result files: run directories and sweep directories.

Every problem with the input (a missing directory or file, an unreadable file)
is a :class:`sim.errors.UserError`, so the command line prints one line and
exits 2 before any figure is written.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from prunesim.errors import UserError
from prunesim.io.atomic import parse_cell


def read_csv(path: Path) -> list[dict]:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            return [{k: parse_cell(v) for k, v in row.items()} for row in csv.DictReader(fh)]
    except OSError as err:
        raise UserError(str(path), None, f"cannot read ({err.strerror or err})") from None
    except csv.Error as err:
        raise UserError(str(path), None, f"not a readable CSV file ({err})") from None


def read_json(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as err:
        raise UserError(str(path), None, f"cannot read ({err.strerror or err})") from None
    except json.JSONDecodeError as err:
        raise UserError(str(path), None, f"not valid JSON ({err.msg} at line {err.lineno})") from None
    if not isinstance(data, dict):
        raise UserError(str(path), None, "expected a JSON object")
    return data


def _require_dir(path: Path, what: str) -> Path:
    path = Path(path)
    if not path.exists():
        raise UserError(str(path), None, f"no such {what} directory")
    if not path.is_dir():
        raise UserError(str(path), None, f"not a directory (expected a {what} directory)")
    return path


def _require_file(directory: Path, name: str, what: str) -> Path:
    path = directory / name
    if not path.is_file():
        raise UserError(str(directory), name, f"missing: not a {what} directory")
    return path


@dataclass
class Run:
    """One run directory: summary.json plus whichever CSV files were asked for."""

    path: Path
    summary: dict
    trace: list[dict] = field(default_factory=list)
    ledger: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)  # calls.csv: one row per model call (absent in older runs)

    @property
    def metrics(self) -> dict:
        return self.summary.get("metrics", {})

    @property
    def policy(self) -> str:
        return str(self.summary.get("policy", "?"))

    @property
    def seed(self) -> int:
        return int(self.summary.get("seed", -1))

    @property
    def scenario(self) -> str:
        return str(self.summary.get("scenario", "?"))

    @property
    def label(self) -> str:
        return f"{self.policy}, seed {self.seed}"

    def events_named(self, name: str) -> list[dict]:
        out = []
        for row in self.events:
            if row.get("event") == name:
                detail = row.get("detail")
                try:
                    row = {**row, "detail": json.loads(detail) if isinstance(detail, str) and detail else {}}
                except json.JSONDecodeError:
                    row = {**row, "detail": {}}
                out.append(row)
        return out


def read_run(path, need: tuple[str, ...] = ("trace", "ledger", "events")) -> Run:
    """Read a run directory; ``need`` names the CSV files that must be present.

    A ledger written before the cost columns existed reads as it is: its rows
    lack them (see :func:`require_columns`).
    """
    path = _require_dir(Path(path), "run")
    summary = read_json(_require_file(path, "summary.json", "run"))
    for key in ("scenario", "policy", "seed", "metrics"):
        if key not in summary:
            raise UserError(str(path / "summary.json"), key, "missing")
    tables = {}
    for name in ("trace", "ledger", "events", "calls"):
        file = path / f"{name}.csv"
        if name in need:
            tables[name] = read_csv(_require_file(path, f"{name}.csv", "run"))
        else:
            tables[name] = read_csv(file) if file.is_file() else []
    return Run(path, summary, **tables)


def require_columns(run: Run, table: str, columns: tuple[str, ...]) -> None:
    """A run's table has these columns, or a one-line error saying the run is older than they are."""
    rows = getattr(run, table)
    if rows and any(c not in rows[0] for c in columns):
        missing = next(c for c in columns if c not in rows[0])
        raise UserError(str(run.path / f"{table}.csv"), missing,
                        "missing column: written by an older prunesim; run it again")


@dataclass
class Sweep:
    """A sweep directory: sweep.json, runs.csv and (if present) aggregate.csv."""

    path: Path
    meta: dict
    runs: list[dict]
    aggregate: list[dict] | None

    @property
    def grid(self) -> dict[str, list]:
        return dict(self.meta.get("grid", {}))

    @property
    def scenario_name(self) -> str:
        sc = self.meta.get("scenario")
        if isinstance(sc, dict):
            return str(sc.get("name", "?"))
        return str(sc) if sc else str(self.runs[0].get("scenario", "?")) if self.runs else "?"

    @property
    def seeds(self) -> list[int]:
        return sorted({int(r["seed"]) for r in self.runs if isinstance(r.get("seed"), int)})

    @property
    def policies(self) -> list[str]:
        seen = []
        for p in list(self.meta.get("policies", [])) + [r.get("policy") for r in self.runs]:
            if p is not None and str(p) not in seen:
                seen.append(str(p))
        return seen

    def check_param(self, param: str, flag: str) -> None:
        if param not in self.grid:
            known = ", ".join(self.grid) or "none"
            raise UserError(flag, param, f"not a grid parameter of this sweep (grid: {known})")
        if self.runs and param not in self.runs[0]:
            raise UserError(str(self.path / "runs.csv"), param, "grid parameter has no column")

    def check_metric(self, metric: str) -> None:
        if not self.runs or metric not in self.runs[0]:
            known = sorted(k for k in (self.runs[0] if self.runs else {}) if k not in self.grid)
            raise UserError("--metric", metric, f"not a column of runs.csv (known: {', '.join(known)})")


def read_sweep(path) -> Sweep:
    path = _require_dir(Path(path), "sweep")
    meta = read_json(_require_file(path, "sweep.json", "sweep"))
    if not isinstance(meta.get("grid", {}), dict):
        raise UserError(str(path / "sweep.json"), "grid", "expected an object of parameter -> values")
    runs = read_csv(_require_file(path, "runs.csv", "sweep"))
    if not runs:
        raise UserError(str(path / "runs.csv"), None, "no runs")
    agg_file = path / "aggregate.csv"
    aggregate = read_csv(agg_file) if agg_file.is_file() else None
    return Sweep(path, meta, runs, aggregate)


def as_float(value) -> float:
    """A metric cell as a float: booleans are 0/1, ``inf`` stays infinite, text is NaN."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return math.nan
