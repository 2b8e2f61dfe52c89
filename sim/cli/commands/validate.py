"""prunesim validate NAME --blocks 10 --block-size 100 --first-seed 1000 --ranges 5: figures on unseen seeds."""

from __future__ import annotations

import json
import math

from prunesim.cli.commands import _common as common
from prunesim.cli.commands._common import add_engine, check_seed_blocks, engine_choice, out_arg, positive_int, seed_arg
from prunesim.errors import UserError
from prunesim.io import output
from prunesim.io.atomic import dumps_json, json_ready
from prunesim.io.scenario_files import load
from prunesim.studies import ranges
from prunesim.studies.replay import REPLAYS, FigureReplay
from prunesim.studies.validate import Validation, validate

# A figure outside its range (not holding in most ranges) is a finding about the model, not a failure of the
# machine (1) nor of the input (2): its own code (docs/cli.md, "Exit codes").
EXIT_OUT_OF_RANGE = 3
RECORD_MARKER = b'"kind": "ranges"'


def validatable() -> list[str]:
    """The replays with published figures: the only ones validate can judge (the others are told apart by
    ``prunesim replay`` alone)."""
    return sorted(n for n, r in REPLAYS.items() if isinstance(r, FigureReplay))


def register(sub) -> None:
    p = sub.add_parser("validate", help="judge a replay's figures on blocks of seeds never used for fitting")
    p.add_argument("name", help=f"one of: {', '.join(validatable())} (the replays with published figures)")
    p.add_argument("--blocks", type=positive_int, default=10, help="seed blocks in a range (default 10)")
    p.add_argument("--block-size", type=positive_int, default=100, help="seeds per block (default 100)")
    p.add_argument("--first-seed", type=seed_arg, default=1000,
                   help="first seed of the first block (default 1000; the shipped scenario was fitted on 0..99)")
    p.add_argument("--ranges", type=positive_int, default=5,
                   help="independent ranges of --blocks blocks, one after another (default 5): a figure holds when "
                        "it holds in most of them")
    p.add_argument("--out", type=out_arg, metavar="FILE",
                   help="also write the ranges record (which figure held in which range) that prunesim replay "
                        "reads for its headline; replaces only a ranges record")
    p.add_argument("--json", action="store_true", help="print the validation as JSON")
    add_engine(p)
    p.set_defaults(func=main)


def main(args) -> int:
    if args.name not in validatable():
        why = "has no published figures to validate" if args.name in REPLAYS else "is not a replay"
        raise UserError("validate", args.name or "''", f"{why} (validate takes: {', '.join(validatable())})")
    replay = REPLAYS[args.name]
    check_seed_blocks(args.first_seed, args.blocks, args.block_size)  # one range: its flags name what is at fault
    if args.ranges > 1 and args.blocks * args.ranges * args.block_size > common.MAX_SEEDS:
        raise UserError("--ranges", str(args.ranges), f"{args.ranges:,} ranges of {args.blocks:,} blocks of "
                        f"{args.block_size:,} seeds are {args.ranges * args.blocks * args.block_size:,} seeds; at "
                        f"most {common.MAX_SEEDS:,} in one command")
    check_seed_blocks(args.first_seed, args.blocks * args.ranges, args.block_size)
    if args.out is not None:
        output.check_file(args.out, "--out")
        output.check_own_kind(args.out, RECORD_MARKER, "a prunesim ranges record", "--out")
    engine = engine_choice(args, "validate", load(replay.scenario), replay.variants,
                           args.blocks * args.block_size * args.ranges)
    result = validate(replay, args.blocks, args.block_size, args.first_seed, engine=engine, n_ranges=args.ranges)
    if args.json:
        print(json.dumps(json_ready(result.as_dict()), indent=2, sort_keys=True))
    else:
        print(format_validation(result))
    if args.out is not None:
        record = result.record(ranges.fingerprint(replay), getattr(args, "command_line", None))
        output.write_text(args.out, dumps_json(record.as_dict()), "--out")
    return 0 if result.ok else EXIT_OUT_OF_RANGE


def _num(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        return str(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def format_validation(v: Validation) -> str:
    n = len(v.blocks)
    first, last = v.ranges[0][0], v.ranges[-1][1] - 1
    lines = [
        f"validate {v.name}: scenario {v.scenario}, {len(v.ranges)} range(s) of {n} blocks of {len(v.blocks[0])} seeds "
        f"({first}..{last}); a figure holds in a range when it is counted in all blocks but at most "
        f"{v.allowed_misses}, and holds when it does so in most ranges",
        f"{'variant':13s} {'figure':50s} {'published':>10s} {'accepted':>15s} {'first range':>19s}  "
        f"in range  counted  ranges  holds",
    ]
    for f in v.figures:
        t = f.target
        name = t.label if hasattr(t, "fit") else f"{t.label} (contrast)"
        spread = f"{_num(min(f.statistics))}..{_num(max(f.statistics))}"
        if t.judged:
            tail = (f"{sum(f.in_range):>4d}/{n:<3d} {sum(f.counted_blocks):>4d}/{n:<3d} {sum(f.held):>3d}/"
                    f"{len(f.held):<3d} {'yes' if f.holds else 'NO'}")
        else:
            tail = "     -        -       -     -"
        lines.append(f"{t.variant:13s} {name:50s} {t.published:>10s} {t.accepted_text():>15s} {spread:>19s}  {tail}")
    failing = v.failing
    judged = sum(f.target.judged for f in v.figures)
    lines.append(f"{judged - len(failing)} of {judged} figures hold"
                 + (f"; not holding: {', '.join(f'{f.target.variant}: {f.target.label}' for f in failing)}"
                    if failing else ""))
    return "\n".join(lines)
