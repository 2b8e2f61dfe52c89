"""prunesim fidelity: replayed utilization against the API's own prompt-token counts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from prunesim.cli.commands._common import Tally, add_set, parse_sets
from prunesim.errors import UserError
from prunesim.io.atomic import json_ready
from prunesim.io.scenario_files import load
from prunesim.io.transcripts import tokens
from prunesim.studies.fidelity import calls_of, report
from prunesim.studies.transcript_replay import iter_sources


def register(sub) -> None:
    p = sub.add_parser("fidelity", help="compare replayed window sizes with the API's prompt-token counts")
    p.add_argument("dir", type=Path, help="a folder (or file) of transcripts and/or workload files")
    p.add_argument("--scenario", default="transcript", help="scenario (default: transcript)")
    add_set(p)
    p.add_argument("--tokenizer", default=tokens.DEFAULT, help=f"one of: {', '.join(tokens.NAMES)}")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=main)


def main(args) -> int:
    if not args.dir.exists():
        raise UserError(str(args.dir), None, "no such file or folder")
    base = load(args.scenario, parse_sets(args.set))
    tokens.get_counter(args.tokenizer)
    tally = Tally()
    calls, skipped = [], [0]

    def commit(path, results) -> None:
        for c in results:
            if c is None:
                skipped[0] += 1
            else:
                calls.append(c)

    tally.per_file(iter_sources([args.dir], args.tokenizer), lambda data: calls_of(data, base), commit)
    skipped = skipped[0]
    rep = report(calls, args.tokenizer, skipped)
    if args.json:
        print(json.dumps(json_ready(rep), indent=2, sort_keys=True))
    else:
        print(format_report(rep))
    if tally.failures:
        print(f"fidelity read {tally.done} file(s); {tally.summary()}", file=sys.stderr)
    return tally.exit_code()


def format_report(rep: dict) -> str:
    lines = [f"fidelity ({rep['tokenizer']} tokens): {rep['transcripts']} transcript(s) with API prompt counts, "
             f"{rep['skipped']} without"]
    for model, a in rep["scale"].items():
        lines.append(f"  scale {model or '(unknown model)'}: {a:.4f}")
    for r in rep["per_transcript"]:
        lines.append(f"  {r['transcript']:40s} {r['calls']:4d} calls  error {100 * r['error']:.2f}%")
    if rep["transcripts"]:
        lines.append(f"median error {100 * rep['median_error']:.2f}%, p90 error {100 * rep['p90_error']:.2f}%")
    return "\n".join(lines)
