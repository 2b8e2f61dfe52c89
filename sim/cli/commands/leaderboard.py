"""prunesim leaderboard [DIR] --policies all --out OUT: every policy on the same transcripts (or seeds), reduced."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from prunesim.cli.commands._common import (
    add_set,
    add_transcript_options,
    check_transcript_options,
    non_negative_int,
    out_arg,
    parse_seeds,
    parse_sets,
    print_notes,
)
from prunesim.errors import UserError
from prunesim.io import output
from prunesim.io.scenario_files import check_replay_overrides, load
from prunesim.policies import parse_names
from prunesim.studies import leaderboard as lb
from prunesim.studies.transcript_replay import expand


def register(sub) -> None:
    p = sub.add_parser(
        "leaderboard",
        help="every policy on a folder of transcripts (or seeds of a scenario): costs and breakages, with intervals",
        description="Replay every transcript in DIR (or run --seeds of a synthetic --scenario) under each policy "
        "and reduce per policy: median and bootstrap 95%% interval over the transcripts or seeds of the input "
        "tokens billed relative to noop, decision tokens, peak utilization, re-retrievals, lost constraints, "
        "unrecorded evictions and forced truncations. Writes OUT/leaderboard.csv, OUT/runs.csv and "
        "OUT/leaderboard.json. See docs/leaderboard.md.",
    )
    p.add_argument("dir", type=Path, nargs="?", help="a folder of transcripts and/or workload files (searched "
                   "recursively); without it, --scenario is run over --seeds")
    p.add_argument("--policies", default="all", help="comma-separated policy names, or all (default: all)")
    p.add_argument("--scenario", help="the window and policy parameters (default for transcripts: transcript); "
                   "without DIR, the synthetic scenario to run")
    p.add_argument("--seeds", help="without DIR: the seeds, A:B (B excluded), a list or one integer "
                   "(default 0:20)")
    p.add_argument("--seed", type=non_negative_int, help="with DIR: the seed of the policies' random streams")
    add_set(p)
    add_transcript_options(p)
    p.add_argument("--out", type=_out_dir, required=True, help="the output folder")
    p.set_defaults(func=main)


def _out_dir(text: str) -> Path:
    return Path(out_arg(text))


def main(args) -> int:
    policies = parse_names(args.policies)
    output.check_folder(args.out, "--out")
    transcripts = args.dir is not None
    if transcripts and args.seeds is not None:
        raise UserError("--seeds", args.seeds, "runs seeds of a synthetic --scenario; with a folder of transcripts "
                                               "use --seed for the policies' streams")
    if not transcripts and args.seed is not None:
        raise UserError("--seed", str(args.seed), "applies to a folder of transcripts; without one, use --seeds")
    if transcripts:
        if not args.dir.is_dir():
            raise UserError(str(args.dir), None, "is not a folder")
        if not expand([args.dir]):
            raise UserError(str(args.dir), None, "holds no transcript or workload file (.json, .traj, .jsonl)")
        output.check_outside(args.out, [args.dir], "--out")
        check_transcript_options(args)
        overrides = parse_sets(args.set)
        check_replay_overrides(overrides)
        scenario = load(args.scenario or "transcript", overrides)
        seeds = None
    else:
        if args.scenario is None:
            raise UserError("leaderboard", None, "give a folder of transcripts, or --scenario to run seeds of a "
                                                 "synthetic scenario")
        scenario = load(args.scenario, parse_sets(args.set))
        seeds = parse_seeds(args.seeds or "0:20")
    rows: list[dict] = []
    tools: set[str] = set()
    failed = 0
    if transcripts:
        units = lb.transcript_units(args.dir, scenario, policies, args.seed, tools, tokenizer=args.tokenizer,
                                    calibration=args.calibration, sidechains=args.sidechains)
    else:
        units = lb.synthetic_units(scenario, policies, seeds)
    count = 0
    for unit in units:
        if isinstance(unit, tuple):
            failed += 1
            print(f"prunesim: error: {unit[1]}", file=sys.stderr)
            continue
        for warning in unit.warnings:
            print(f"prunesim: warning: {warning}", file=sys.stderr)
        rows.extend(lb.unit_rows(unit, policies, transcripts))
        count += 1
    print_notes(policies, scenario, frozenset(tools) if transcripts else None)
    if failed:  # a leaderboard over part of the folder would read as one over all of it
        print(f"prunesim: error: {failed} file(s) failed; nothing written (fix or move them)", file=sys.stderr)
        return 2
    table = lb.reduce(rows, policies)
    meta = {
        "source": str(args.dir) if transcripts else None,
        "scenario": scenario.to_dict(),
        "policies": policies,
        "units": count,
        "seeds": seeds,
        "seed": args.seed if transcripts else None,
        "tokenizer": args.tokenizer if transcripts else None,
        "calibration": args.calibration if transcripts else None,
        "sidechains": args.sidechains if transcripts else None,
    }
    try:
        with output.folder(args.out, "--out") as staging:  # the three files together, or none
            lb.write(staging, meta, rows, table)
    except OSError as err:
        raise UserError("--out", str(args.out), f"cannot write: {err.strerror or err}") from None
    what = f"{count} transcript(s) in {args.dir}" if transcripts else f"{count} seed(s) of {scenario.name}"
    print(format_table(table, policies, what))
    print(f"\nwritten: {args.out / lb.TABLE_FILE}, {args.out / lb.RUNS_FILE}, {args.out / lb.META_FILE}")
    return 0


def _num(x: float, ratio: bool) -> str:
    if math.isinf(x) or math.isnan(x):
        return str(x)
    if ratio:
        return f"{x:.3f}"
    if abs(x) >= 100 or float(x).is_integer():
        return f"{x:,.0f}"
    return f"{x:.1f}"


def format_table(table: list[dict], policies: list[str], what: str) -> str:
    """One row per policy: each figure's median and [interval]."""
    ratios = {f.name for f in lb.FIGURES if f.unit == "ratio"}
    cell = {}
    for r in table:
        ratio = r["figure"] in ratios
        cell[(r["policy"], r["figure"])] = (f"{_num(r['median'], ratio)} "
                                            f"[{_num(r['ci_low'], ratio)}, {_num(r['ci_high'], ratio)}]")
    figures = list(lb.FIGURE_NAMES)
    widths = [max(len(f), *(len(cell.get((p, f), "-")) for p in policies)) for f in figures]
    name_w = max(len("policy"), *(len(p) for p in policies))
    lines = [f"leaderboard: {what}; median [bootstrap 95% interval] over them, ratios against {lb.REFERENCE}",
             "  ".join([f"{'policy':{name_w}s}", *(f"{f:>{w}s}" for f, w in zip(figures, widths, strict=True))])]
    for p in policies:
        lines.append("  ".join([f"{p:{name_w}s}", *(f"{cell.get((p, f), '-'):>{w}s}"
                                                      for f, w in zip(figures, widths, strict=True))]))
    return "\n".join(lines)
