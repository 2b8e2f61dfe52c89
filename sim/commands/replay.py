"""prunesim replay NAME: a published failure, simulated over many seeds."""

from __future__ import annotations

import json

from sim.atomic import json_ready
from sim.replay import REPLAYS, get_replay

from ._common import parse_seeds


def register(sub) -> None:
    p = sub.add_parser("replay", help="replay a published failure over many seeds")
    p.add_argument("name", help=f"one of: {', '.join(sorted(REPLAYS))}")
    p.add_argument("--seeds", default="0:100", help="seeds as A:B (B excluded), a list, or one integer")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=main)


def main(args) -> int:
    replay = get_replay(args.name)
    seeds = parse_seeds(args.seeds)
    report = replay.run(seeds)
    if args.json:
        print(json.dumps(json_ready(report.as_dict()), indent=2, sort_keys=True))
    else:
        print(format_report(report))
    return 0


def _num(x: float) -> str:
    if x != x or abs(x) == float("inf"):
        return str(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def format_report(report) -> str:
    lines = [
        f"replay {report.name}: scenario {report.scenario}, {len(report.seeds)} seeds",
        f"{'variant':13s} {'figure':44s} {'published':>10s} {'median':>9s} {'p10..p90':>17s}  in range",
    ]
    for r in report.figures:
        f = r.figure
        spread = f"{_num(r.p10)}..{_num(r.p90)}"
        lines.append(
            f"{f.variant:13s} {f.label:44s} {f.published:>10s} {_num(r.median):>9s} {spread:>17s}  "
            f"{'yes' if r.ok else 'NO'}"
        )
    return "\n".join(lines)
