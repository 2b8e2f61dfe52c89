"""prunesim fidelity: replayed utilization against the API's own prompt-token counts, and the prompt-cache
model and dollars against recorded bills (prunesim.studies.cache_fidelity)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from prunesim.cli.commands._common import add_set, parse_sets
from prunesim.errors import UserError
from prunesim.io.atomic import json_ready
from prunesim.io.scenario_files import load
from prunesim.io.transcripts import tokens
from prunesim.studies import cache_fidelity
from prunesim.studies.fidelity import calls_of, report
from prunesim.studies.transcript_replay import iter_sources


def register(sub) -> None:
    p = sub.add_parser("fidelity", help="compare replayed window sizes with the API's prompt-token counts")
    p.add_argument("dir", type=Path, help="a folder (or file) of transcripts and/or workload files")
    p.add_argument("--scenario", default="transcript", help="scenario (default: transcript)")
    add_set(p)
    p.add_argument("--tokenizer", default=tokens.DEFAULT, help=f"one of: {', '.join(tokens.NAMES)}")
    p.add_argument("--fit-on", type=Path, metavar="DIR",
                   help="fit the cache parameters on this folder and judge every run of DIR with them "
                        "(default: leave-one-out within DIR)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=main)


def main(args) -> int:
    if not args.dir.exists():
        raise UserError(str(args.dir), None, "no such file or folder")
    if args.fit_on is not None and not args.fit_on.exists():
        raise UserError("--fit-on", str(args.fit_on), "no such file or folder")
    base = load(args.scenario, parse_sets(args.set))
    tokens.get_counter(args.tokenizer)
    calls, skipped, failed = [], 0, 0
    reported: set[str] = set()
    for path, data in iter_sources([args.dir], args.tokenizer):
        if isinstance(data, UserError):
            failed += 1
            reported.add(str(path))
            print(f"prunesim: error: {data}", file=sys.stderr)
            continue
        c = calls_of(data, base)
        if c is None:
            skipped += 1
        else:
            calls.append(c)
    rep = report(calls, args.tokenizer, skipped)
    cache = cache_fidelity.report(args.dir, args.fit_on)
    for line in cache.pop("failed"):  # a file both readers failed on is reported once
        if not any(line.startswith(path) for path in reported):
            failed += 1
            print(f"prunesim: error: {line}", file=sys.stderr)
    if args.json:
        keys = ("cache_median_error", "cache_p90_error", "cost_median_error", "cost_p90_error")
        rep.update({k: cache[k] for k in keys})
        rep["cache"] = cache
        print(json.dumps(json_ready(rep), indent=2, sort_keys=True))
    else:
        print(format_report(rep))
        print(cache_fidelity.format_report(cache))
    return 2 if failed else 0


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
