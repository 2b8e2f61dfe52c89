"""prunesim replay-dir: every transcript in a folder under every policy (and grid point), one CSV row each.

``--grid`` takes the sweep's syntax (``NAME=VALUES``, ``POLICY:NAME=VALUES``):
each transcript is replayed at every grid point of every policy, and each axis
is a column named as given, after the identity columns. The points are planned
and validated by the sweep's own planner before anything is read or written.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from prunesim.cli.commands._common import (
    add_set,
    add_transcript_options,
    check_transcript_options,
    non_negative_int,
    parse_sets,
    print_notes,
    progress,
    report_line,
)
from prunesim.errors import UserError
from prunesim.io.atomic import format_cell
from prunesim.io.scenario_files import load
from prunesim.io.stream import StagedFiles
from prunesim.observe.metrics import METRIC_NAMES
from prunesim.policies import parse_names
from prunesim.studies.grid import inert_axes, parse_axes
from prunesim.studies.sweep import metric_column, plan_sweep
from prunesim.studies.transcript_replay import REPLAY_METRICS, expand, iter_sources, replay

ID_COLUMNS = ("transcript", "format", "policy", "turns", "budget", "repeats")
COLUMNS = ID_COLUMNS + tuple(m for m in REPLAY_METRICS if m not in ID_COLUMNS) + tuple(
    m for m in METRIC_NAMES if m not in ID_COLUMNS and m not in REPLAY_METRICS
)


def register(sub) -> None:
    p = sub.add_parser("replay-dir", help="replay a folder of transcripts or workloads under several policies")
    p.add_argument("dir", type=Path, help="a folder of transcripts and/or workload files (searched recursively), "
                   "or one such file")
    p.add_argument("--policies", required=True, help="comma-separated policy names, or all")
    p.add_argument("--scenario", default="transcript", help="scenario for the window and policies")
    add_set(p)
    p.add_argument("--grid", action="append", metavar="NAME=VALUES",
                   help="replay every transcript at each value (A:B:STEP or a,b,c; POLICY:NAME=VALUES for one "
                        "policy's runs only), as in prunesim sweep; repeatable: the cartesian product is replayed")
    p.add_argument("--seed", type=non_negative_int, help="seed of the policies' random streams")
    add_transcript_options(p)
    p.add_argument("--out", type=Path, help="CSV file (default: standard output)")
    p.set_defaults(func=main)


# Grid axes a replay cannot take: the transcript sets its turns; the seed and policies have their own flags.
_NOT_AXES = {"turns": "a replay runs the transcript's own turns", "seed": "use --seed", "policy": "use --policies"}


def main(args) -> int:
    if not args.dir.exists():
        raise UserError(str(args.dir), None, "does not exist")
    policies = parse_names(args.policies)
    sets = parse_sets(args.set)
    base = load(args.scenario, sets)
    axes = parse_axes(args.grid)
    for name in axes:
        param = name.rpartition(":")[2]
        if param in _NOT_AXES:
            raise UserError("--grid", name, f"cannot be swept here: {_NOT_AXES[param]}")
    plan = plan_sweep(base, axes, policies, [0]) if axes else None  # validates every point before any replay
    check_transcript_options(args)
    if args.out is not None and args.out.is_dir():
        raise UserError("--out", str(args.out), "is a folder; give a CSV file")
    runs = [(policy, base, {}) for policy in policies] if plan is None else [
        (spec.policy, plan.scenarios[spec.point], plan.points[spec.point]) for spec in plan.runs]
    for line in inert_axes(axes, policies):
        print(line, file=sys.stderr)
    if args.out is None:
        return _replay_all(args, base, policies, runs, list(axes), sys.stdout)
    # Created with the user's umask, renamed into place at the end.
    with StagedFiles(args.out.parent, "--out") as staged:
        code = _replay_all(args, base, policies, runs, list(axes), staged.open(args.out.name))
        if code:  # nothing could be replayed: an earlier result stays as it was
            staged.abort()
        else:
            staged.commit()
    return code


def columns(axes: list[str]) -> list[str]:
    """The CSV header: the identity columns, the grid axes as named, then the results.

    A result whose name is also an axis (``--grid budget=...``) is written as
    ``summary.<name>``, as in a sweep's runs.csv.
    """
    rest = [metric_column(c, axes) for c in COLUMNS if c not in ID_COLUMNS]
    ids = [metric_column(c, axes) for c in ID_COLUMNS]
    return ids[:3] + axes + ids[3:] + rest


def _replay_all(args, base, policies, runs, axes, fh) -> int:
    writer = csv.writer(fh, lineterminator="\n")
    header = columns(axes)
    writer.writerow(header)
    files = expand([args.dir])
    failed = rows = imported = 0
    failed_files: set[Path] = set()
    idle = {p: Idle() for p in policies}
    tools: set[str] = set()
    with progress(len(files)) as bar:
        done: Path | None = None
        for path, data in iter_sources([args.dir], args.tokenizer, args.calibration, args.sidechains, files=files):
            if path != done:
                if done is not None:
                    bar.update()
                done = path
            if isinstance(data, UserError):
                failed += 1
                failed_files.add(path)
                report_line(bar, "error", str(data))
                continue
            for w in data.warnings:
                report_line(bar, "warning", w)
            imported += 1
            tools.update(p["tool"] for p in data.parts if p.get("tool"))
            for policy, scenario, point in runs:
                result, _ = replay(data, scenario, policy, args.seed)
                s = result.summary
                row = {"transcript": data.name, "format": data.header["format"], "policy": policy,
                       "turns": data.turns, "budget": result.scenario.budget, **s}
                row = {metric_column(k, axes): v for k, v in row.items()}
                row.update(point)
                idle[policy].add(s)
                writer.writerow([format_cell(row.get(c, "")) for c in header])
                rows += 1
                del result
            fh.flush()
        if done is not None:
            bar.update()
    print_notes(policies, base, frozenset(tools))
    print(f"replayed {rows} row(s) from {imported} workload(s) in {len(files)} file(s); "
          f"{len(failed_files)} file(s) failed", file=sys.stderr)
    for policy, counts in idle.items():
        note = counts.note(policy)
        if note:
            print(note, file=sys.stderr)
    return 0 if imported else 2


class Idle:
    """Transcripts on which a policy never acted: a replay that never prunes says nothing about the policy."""

    def __init__(self):
        self.replays = self.never_acted = self.never_triggered = 0

    def add(self, summary: dict) -> None:
        self.replays += 1
        # A runtime policy acts by clearing or compacting, never by a pass.
        acts = ("passes", "non_model_evictions", "clearings", "compactions")
        if not any(summary.get(name, 0) for name in acts):
            self.never_acted += 1
            self.never_triggered += summary["first_trigger_turn"] < 0

    def note(self, policy: str) -> str:
        if not self.never_acted or policy == "noop":
            return ""
        idle = self.never_acted - self.never_triggered
        parts = [f"{self.never_triggered} never reached its trigger (lower the budget or the trigger)"] * bool(
            self.never_triggered) + [f"{idle} reached it with nothing it would remove"] * bool(idle)
        return f"{policy}: never acted in {self.never_acted} of {self.replays} replay(s): {'; '.join(parts)}"
