"""prunesim replay-dir: every transcript in a folder under every policy, one CSV row each."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from prunesim.cli.commands._common import add_set, non_negative_int, parse_sets
from prunesim.errors import UserError
from prunesim.io.atomic import format_cell
from prunesim.io.scenario_files import load
from prunesim.io.stream import StagedFiles
from prunesim.io.transcripts import tokens
from prunesim.observe.metrics import METRIC_NAMES
from prunesim.policies import get_policy
from prunesim.studies.transcript_replay import REPLAY_METRICS, iter_sources, replay

ID_COLUMNS = ("transcript", "format", "policy", "turns", "repeats")
COLUMNS = ID_COLUMNS + tuple(m for m in REPLAY_METRICS if m not in ID_COLUMNS) + tuple(
    m for m in METRIC_NAMES if m not in ID_COLUMNS and m not in REPLAY_METRICS
)


def register(sub) -> None:
    p = sub.add_parser("replay-dir", help="replay a folder of transcripts or workloads under several policies")
    p.add_argument("dir", type=Path, help="a folder of transcripts and/or workload files (searched recursively)")
    p.add_argument("--policies", required=True, help="comma-separated policy names")
    p.add_argument("--scenario", default="transcript", help="scenario for the window and policies")
    add_set(p)
    p.add_argument("--seed", type=non_negative_int, help="seed of the policies' random streams")
    p.add_argument("--tokenizer", default=tokens.DEFAULT, help=f"one of: {', '.join(tokens.NAMES)}")
    p.add_argument("--out", type=Path, help="CSV file (default: standard output)")
    p.set_defaults(func=main)


def main(args) -> int:
    if not args.dir.is_dir():
        raise UserError(str(args.dir), None, "is not a folder")
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if not policies:
        raise UserError("--policies", args.policies, "no policy named")
    for name in policies:
        get_policy(name)
    base = load(args.scenario, parse_sets(args.set))
    tokens.get_counter(args.tokenizer)
    if args.out is not None and args.out.is_dir():
        raise UserError("--out", str(args.out), "is a folder; give a CSV file")
    if args.out is None:
        return _replay_all(args, base, policies, sys.stdout)
    # Created with the user's umask, renamed into place at the end.
    with StagedFiles(args.out.parent, "--out") as staged:
        code = _replay_all(args, base, policies, staged.open(args.out.name))
        staged.commit()
    return code


def _replay_all(args, base, policies, fh) -> int:
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(COLUMNS)
    failed = rows = 0
    for _path, data in iter_sources([args.dir], args.tokenizer):
        if isinstance(data, UserError):
            failed += 1
            print(f"prunesim: error: {data}", file=sys.stderr)
            continue
        for policy in policies:
            result, _ = replay(data, base, policy, args.seed)
            s = result.summary
            row = {"transcript": data.name, "format": data.header["format"], "policy": policy,
                   "turns": data.turns, **s}
            writer.writerow([format_cell(row.get(c, "")) for c in COLUMNS])
            rows += 1
            del result
        fh.flush()
    print(f"replayed {rows} row(s); {failed} file(s) failed", file=sys.stderr)
    return 2 if failed else 0
