"""prunesim validate NAME --blocks 10 --block-size 100 --first-seed 1000: figures on unseen seed blocks."""

from __future__ import annotations

import json
import math

from prunesim.cli.commands._common import add_engine, check_seed_blocks, engine_choice, positive_int, seed_arg
from prunesim.errors import UserError
from prunesim.io.atomic import json_ready
from prunesim.io.scenario_files import load
from prunesim.studies.replay import REPLAYS, FigureReplay
from prunesim.studies.validate import Validation, validate

EXIT_MISSED = 1


def validatable() -> list[str]:
    """The replays with published figures: the only ones validate can judge (the others are told apart by
    ``prunesim replay`` alone)."""
    return sorted(n for n, r in REPLAYS.items() if isinstance(r, FigureReplay))


def register(sub) -> None:
    p = sub.add_parser("validate", help="judge a replay's figures on blocks of seeds never used for fitting")
    p.add_argument("name", help=f"one of: {', '.join(validatable())} (the replays with published figures)")
    p.add_argument("--blocks", type=positive_int, default=10, help="number of seed blocks (default 10)")
    p.add_argument("--block-size", type=positive_int, default=100, help="seeds per block (default 100)")
    p.add_argument("--first-seed", type=seed_arg, default=1000,
                   help="first seed of the first block (default 1000; the shipped scenario was fitted on 0..99)")
    p.add_argument("--json", action="store_true", help="print the validation as JSON")
    add_engine(p)
    p.set_defaults(func=main)



def main(args) -> int:
    if args.name not in validatable():
        why = "has no published figures to validate" if args.name in REPLAYS else "is not a replay"
        raise UserError("validate", args.name or "''", f"{why} (validate takes: {', '.join(validatable())})")
    replay = REPLAYS[args.name]
    check_seed_blocks(args.first_seed, args.blocks, args.block_size)
    engine = engine_choice(args, "validate", load(replay.scenario), replay.variants, args.blocks * args.block_size)
    result = validate(replay, args.blocks, args.block_size, args.first_seed, engine=engine)
    if args.json:
        print(json.dumps(json_ready(result.as_dict()), indent=2, sort_keys=True))
    else:
        print(format_validation(result))
    return 0 if result.ok else EXIT_MISSED


def _num(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        return str(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def format_validation(v: Validation) -> str:
    n = len(v.blocks)
    lines = [
        f"validate {v.name}: scenario {v.scenario}, {n} blocks of {len(v.blocks[0])} seeds "
        f"({v.blocks[0][0]}..{v.blocks[-1][-1]}); a figure holds when it misses in at most {v.allowed_misses}",
        f"{'variant':13s} {'figure':44s} {'published':>10s} {'accepted':>15s} {'block medians':>19s}  "
        f"in range  holds",
    ]
    for f in v.figures:
        t = f.target
        spread = f"{_num(min(f.statistics))}..{_num(max(f.statistics))}"
        if t.judged:
            tail = f"{sum(f.in_range):>3d}/{n:<4d}  {'yes' if f.misses <= v.allowed_misses else 'NO'}"
        else:
            tail = "   -      -"
        lines.append(f"{t.variant:13s} {t.label:44s} {t.published:>10s} {t.accepted_text():>15s} {spread:>19s}  {tail}")
    failing = v.failing
    judged = sum(f.target.judged for f in v.figures)
    lines.append(f"{judged - len(failing)} of {judged} figures hold"
                 + (f"; missing: {', '.join(f'{f.target.variant}: {f.target.label}' for f in failing)}"
                    if failing else ""))
    return "\n".join(lines)
