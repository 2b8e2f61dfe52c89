"""prunesim replay-dir: every transcript in a folder under every policy, one CSV row each."""

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
from prunesim.studies.transcript_replay import REPLAY_METRICS, expand, iter_sources, replay

ID_COLUMNS = ("transcript", "format", "policy", "turns", "budget", "repeats")
COLUMNS = ID_COLUMNS + tuple(m for m in REPLAY_METRICS if m not in ID_COLUMNS) + tuple(
    m for m in METRIC_NAMES if m not in ID_COLUMNS and m not in REPLAY_METRICS
)


def register(sub) -> None:
    p = sub.add_parser("replay-dir", help="replay a folder of transcripts or workloads under several policies")
    p.add_argument("dir", type=Path, help="a folder of transcripts and/or workload files (searched recursively)")
    p.add_argument("--policies", required=True, help="comma-separated policy names, or all")
    p.add_argument("--scenario", default="transcript", help="scenario for the window and policies")
    add_set(p)
    p.add_argument("--seed", type=non_negative_int, help="seed of the policies' random streams")
    add_transcript_options(p)
    p.add_argument("--out", type=Path, help="CSV file (default: standard output)")
    p.set_defaults(func=main)


def main(args) -> int:
    if not args.dir.is_dir():
        raise UserError(str(args.dir), None, "is not a folder")
    policies = parse_names(args.policies)
    base = load(args.scenario, parse_sets(args.set))
    check_transcript_options(args)
    if args.out is not None and args.out.is_dir():
        raise UserError("--out", str(args.out), "is a folder; give a CSV file")
    if args.out is None:
        return _replay_all(args, base, policies, sys.stdout)
    # Created with the user's umask, renamed into place at the end.
    with StagedFiles(args.out.parent, "--out") as staged:
        code = _replay_all(args, base, policies, staged.open(args.out.name))
        if code:  # nothing could be replayed: an earlier result stays as it was
            staged.abort()
        else:
            staged.commit()
    return code


def _replay_all(args, base, policies, fh) -> int:
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(COLUMNS)
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
            for policy in policies:
                result, _ = replay(data, base, policy, args.seed)
                s = result.summary
                row = {"transcript": data.name, "format": data.header["format"], "policy": policy,
                       "turns": data.turns, "budget": result.scenario.budget, **s}
                idle[policy].add(s)
                writer.writerow([format_cell(row.get(c, "")) for c in COLUMNS])
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
        if summary["passes"] + summary["non_model_evictions"] == 0:
            self.never_acted += 1
            self.never_triggered += summary["first_trigger_turn"] < 0

    def note(self, policy: str) -> str:
        if not self.never_acted or policy == "noop":
            return ""
        idle = self.never_acted - self.never_triggered
        parts = [f"{self.never_triggered} never reached its trigger (lower the budget or the trigger)"] * bool(
            self.never_triggered) + [f"{idle} reached it with nothing it would remove"] * bool(idle)
        return f"{policy}: never acted on {self.never_acted} of {self.replays} transcript(s): {'; '.join(parts)}"
