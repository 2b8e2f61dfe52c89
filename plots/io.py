"""Readers of result files: run directories and sweep directories, checked.

Every problem with the input (a missing directory or file, an unreadable or
corrupted file, a missing column, text where a number belongs) is a
:class:`prunesim.errors.UserError` naming the file (and line), so the command
line prints one line and exits 2 before any figure is written. As for every
reader of prunesim's files, a last line without a line end (an interrupted
write) is ignored. Sweep directories are read through
:mod:`prunesim.io.sweep_files`, as ``aggregate`` reads them.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from prunesim.errors import UserError, from_os_error
from prunesim.io import inputs, sweep_files
from prunesim.io.atomic import format_cell, parse_cell
from prunesim.io.labels import policy_label
from prunesim.io.results import CALL_COLUMNS, ENGINE_LEDGER_COLUMNS, EVENT_COLUMNS, LEDGER_COLUMNS, TRACE_COLUMNS
from prunesim.observe.metrics import TEXT_METRICS

# The columns each run file must have, and those of them that hold numbers.
# A ledger from before the cost columns must have the engine's; the cost columns are checked where present.
TABLES = {
    "trace": (TRACE_COLUMNS, set(TRACE_COLUMNS) - {"event", "kind", "key"}),
    "ledger": (ENGINE_LEDGER_COLUMNS, set(LEDGER_COLUMNS)),
    "events": (EVENT_COLUMNS, {"seq", "time_s", "turn"}),
    "calls": (CALL_COLUMNS, set(CALL_COLUMNS)),
}
SUMMARY_NUMBERS = ("window", "budget", "trigger", "scenario_trigger")
SUMMARY_MAX_TOKENS = 10**12  # the largest size a scenario accepts (prunesim.io.scenario_files)
NUMBER_WORDS = ("inf", "-inf", "nan")  # how result files write what JSON cannot


def read_csv(path: Path, columns=(), numeric=(), text=None) -> list[dict]:
    """Rows of a result CSV as dicts; ``columns`` must be in its header, ``numeric`` ones hold finite numbers.

    ``text``: when given, the only columns that may hold words, read as the text they hold (a transcript named
    ``007`` stays ``"007"``); every other cell is a number, a yes/no or blank (a corrupted cell is named, not
    read as a missing value and left out of a figure)."""
    header, body, _ = sweep_files.read_table(Path(path), Path(path).name)
    missing = [c for c in columns if c not in header]
    if missing:
        raise UserError(str(path), None, f"missing column(s) {', '.join(missing)} (not a prunesim result file?)")
    rows = []
    for n, cells in enumerate(body, start=2):
        row = {k: v if text is not None and k in text else parse_cell(v) for k, v in zip(header, cells, strict=True)}
        for c in numeric:
            if c not in row:  # an optional column this file does not have
                continue
            v = row[c]
            if isinstance(v, bool):
                continue
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise UserError(str(path), f"line {n}, column {c}", f"{cells[header.index(c)]!r} is not a number")
        if text is not None:
            words = [c for c, v in row.items() if isinstance(v, str) and c not in text]
            if words:
                shown = cells[header.index(words[0])]
                raise UserError(str(path), f"line {n}, column {words[0]}",
                                f"{shown[:40]!r}{'...' if len(shown) > 40 else ''} is not a number")
        rows.append(row)
    return rows


def read_json(path: Path) -> dict:
    raw = inputs.read_bytes(path, "result file")  # the one reader: a device or a pipe is refused unread
    data = sweep_files.parse_json(raw, path)
    if not isinstance(data, dict):
        raise UserError(str(path), None, "expected a JSON object")
    return data


def check_summary(summary: dict, where: str) -> None:
    """What the figures read from summary.json: identity, limits and metrics of the right types."""
    for key in ("scenario", "policy", "seed", "metrics"):
        if key not in summary:
            raise UserError(where, key, "missing")
    for key in ("scenario", "policy"):
        if not isinstance(summary[key], str):
            raise UserError(where, key, "must be a string")
    if type(summary["seed"]) is not int or sweep_files.seed_problem(summary["seed"]):  # a seed, as run takes one
        raise UserError(where, "seed", f"must be an integer from 0 to {sweep_files.MAX_SEED:,} (got "
                                       f"{json.dumps(summary['seed'])[:40]})")
    if not isinstance(summary["metrics"], dict):
        raise UserError(where, "metrics", "must be an object of metric -> value")
    for key in SUMMARY_NUMBERS:
        v = summary.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or (
                isinstance(v, float) and not math.isfinite(v))):  # an int of any size: the range below says so
            raise UserError(where, key, "must be a number")
        # Sizes in tokens, within what a scenario accepts: a corrupted 1e308 would draw an empty figure.
        if v is not None and not (0 <= v <= SUMMARY_MAX_TOKENS and float(v).is_integer()):
            raise UserError(where, key, f"must be a whole number of tokens from 0 to {SUMMARY_MAX_TOKENS:,} "
                                        f"(got {json.dumps(v)[:40]})")
    if not isinstance(summary.get("budget_kind", ""), str):
        raise UserError(where, "budget_kind", "must be a string")
    for name, v in summary["metrics"].items():
        if name in TEXT_METRICS and isinstance(v, str):  # a word (the agent's profile, its stop reason)
            continue
        if not (isinstance(v, float) or (isinstance(v, int) and _finite(v)) or v in NUMBER_WORDS):
            raise UserError(where, f"metrics.{name}", f"must be a number (got {json.dumps(v)[:40]})")


def _finite(v) -> bool:
    """A number a figure can draw: a finite float, or an int a float can hold (a corrupted 400-digit one cannot)."""
    if isinstance(v, int):
        return abs(v) <= 2**1023
    return math.isfinite(v)


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
        kind = inputs.special_kind(path)
        raise UserError(str(directory), name, f"not a regular file ({kind})" if kind
                        else f"missing: not a {what} directory")
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
        return f"{policy_label(self.policy)}, seed {self.seed}"

    def events_named(self, name: str) -> list[dict]:
        out = []
        for row in self.events:
            if row.get("event") == name:
                detail = row.get("detail")
                try:
                    row = {**row, "detail": json.loads(detail) if isinstance(detail, str) and detail else {}}
                except (ValueError, RecursionError):  # a detail that is not JSON carries nothing to draw
                    row = {**row, "detail": {}}
                out.append(row)
        return out


def read_run(path, need: tuple[str, ...] = ("trace", "ledger", "events"), optional: tuple[str, ...] = ()) -> Run:
    """Read a run directory: ``need`` names the CSV files that must be present, ``optional`` those read if they
    are; no other file is opened, so a broken file a figure does not use cannot stop it.

    A ledger written before the cost columns existed reads as it is: its rows
    lack them (see :func:`require_columns`).
    """
    path = _require_dir(Path(path), "run")
    summary = read_json(_require_file(path, "summary.json", "run"))
    check_summary(summary, str(path / "summary.json"))
    tables = {}
    for name, (columns, numeric) in TABLES.items():
        file = path / f"{name}.csv"
        if name in need:
            tables[name] = read_csv(_require_file(path, f"{name}.csv", "run"), columns, numeric)
        elif name in optional and file.is_file():
            tables[name] = read_csv(file, columns, numeric)
        else:
            tables[name] = []
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
        if metric in sweep_files.ID_COLUMNS:  # drawn, they would be an empty figure (text) or the seed numbers
            raise UserError("--metric", metric, "names the run, not a metric of it (prunesim metrics lists them)")
        if not self.runs or metric not in self.runs[0]:
            known = sorted(k for k in (self.runs[0] if self.runs else {})
                           if k not in self.grid and k not in sweep_files.ID_COLUMNS)
            raise UserError("--metric", metric, f"not a column of runs.csv (known: {', '.join(known)})")


def read_sweep(path) -> Sweep:
    """A sweep directory, checked as ``aggregate`` checks it; aggregate.csv only when it matches runs.csv."""
    path = _require_dir(Path(path), "sweep")
    meta = sweep_files.read_description(path)
    runs = sweep_files.read_runs(path, meta)
    if not runs:
        raise UserError(str(path / sweep_files.RUNS_FILE), None, "no runs yet")
    return Sweep(path, meta, runs, fresh_aggregate(path, meta, runs))


def fresh_aggregate(path: Path, meta: dict, runs: list[dict]) -> list[dict] | None:
    """aggregate.csv's rows when it was made from these runs; None when there is none or it is stale.

    aggregate.csv is derived from runs.csv: one older than runs.csv (a sweep
    resumed since), unreadable, or whose groups and counts differ from
    runs.csv's is not used. The figure is then computed from runs.csv, as when
    there is no aggregate.csv, and a note says so; the file is left alone.
    """
    agg = path / sweep_files.AGGREGATE_FILE
    if not agg.is_file():
        return None
    reason = None
    try:
        if agg.stat().st_mtime_ns < (path / sweep_files.RUNS_FILE).stat().st_mtime_ns:
            reason = "is older than runs.csv"
    except OSError as err:
        raise from_os_error(err, agg) from None
    table = None
    if reason is None:
        try:
            table = _read_aggregate(agg, meta)
        except UserError as err:
            reason = f"is unreadable ({err.problem})"
    if table is not None and _repeated(table, meta):
        reason, table = f"repeats the row of {_repeated(table, meta)}", None
    if table is not None and not _matches(table, runs, meta):
        reason, table = "does not match runs.csv", None
    if reason is None:
        return table
    print(f"prunesim: note: {agg} {reason}; the figure is computed from runs.csv (prunesim aggregate refreshes it)",
          file=sys.stderr)
    return None


def _read_aggregate(path: Path, meta: dict) -> list[dict]:
    grid = meta["grid"]
    header, body, _ = sweep_files.read_table(path, sweep_files.AGGREGATE_FILE,
                                             header=["policy", *grid, *sweep_files.STAT_COLUMNS])
    axes = {name: {format_cell(v): v for v in values} for name, values in grid.items()}
    rows = []
    for n, cells in enumerate(body, start=2):
        row = dict(zip(header, cells, strict=True))
        if row["policy"] not in meta["policies"]:
            raise UserError(str(path), f"line {n}", "a policy or grid value that is not the sweep's")
        for a in axes:
            owner = a.rpartition(":")[0]  # a per-policy axis is blank in other policies' rows, as in runs.csv
            if owner and owner != row["policy"]:
                if row[a] != "":
                    raise UserError(str(path), f"line {n}", f"{a} is set in a {row['policy']} row")
                row[a] = None
            elif row[a] in axes[a]:
                row[a] = axes[a][row[a]]
            else:
                raise UserError(str(path), f"line {n}", "a policy or grid value that is not the sweep's")
        for c in ("n", "median", "mean", "ci_low", "ci_high"):
            row[c] = parse_cell(row[c])
            if isinstance(row[c], bool) or not isinstance(row[c], (int, float)):
                raise UserError(str(path), f"line {n}, column {c}", "not a number")
        for c in ("share", "share_low", "share_high"):  # a yes/no metric's share and Wilson interval, else empty
            row[c] = None if row[c] == "" else parse_cell(row[c])
            if row[c] is not None and (isinstance(row[c], bool) or not isinstance(row[c], (int, float))):
                raise UserError(str(path), f"line {n}, column {c}", "not a number")
        rows.append(row)
    return rows


def _repeated(table: list[dict], meta: dict) -> str | None:
    """The first (policy, grid point, metric) that has two rows, worded; None when each has one: a figure would
    draw one of the two and leave the other out, whichever came last."""
    seen = set()
    for r in table:
        key = (r["policy"], *(format_cell(r[a]) for a in meta["grid"]), r["metric"])
        if key in seen:
            point = ", ".join(f"{a}={format_cell(r[a])}" for a in meta["grid"])
            return f"{r['policy']}, {point}, {r['metric']}" if point else f"{r['policy']}, {r['metric']}"
        seen.add(key)
    return None


def _matches(table: list[dict], runs: list[dict], meta: dict) -> bool:
    """The same (policy, grid point) groups as runs.csv, and each row's n what runs.csv gives that metric.

    (A file that leaves some metrics out still matches: the figure takes those from runs.csv.)
    """
    expected = _expected_counts(runs, meta)
    groups = {key[:-1] for key in expected}
    found = {(r["policy"], *(format_cell(r[a]) for a in meta["grid"])): None for r in table}
    if set(found) != groups:
        return False
    return all(expected.get((*g, r["metric"]), 0) == r["n"]
               for r in table for g in [(r["policy"], *(format_cell(r[a]) for a in meta["grid"]))])


def _expected_counts(runs: list[dict], meta: dict) -> dict:
    fixed = set(sweep_files.ID_COLUMNS) | set(meta["grid"])
    metrics = [c for c in meta["columns"] if c not in fixed]
    counts: dict = {}
    for r in runs:
        point = (r["policy"], *(format_cell(r[a]) for a in meta["grid"]))
        for m in metrics:
            v = r.get(m)
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                counts[(*point, m)] = counts.get((*point, m), 0) + 1
    return counts


def as_float(value) -> float:
    """A metric cell as a float: booleans are 0/1, ``inf`` stays infinite, text is NaN."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return math.nan
