"""prunesim compare SCENARIO --policies A,B: metrics side by side over many seeds."""

from __future__ import annotations

import json
import math

from prunesim import api
from prunesim.cli.commands._common import add_set, parse_seeds, parse_sets, print_notes
from prunesim.io.atomic import json_ready
from prunesim.policies import parse_names
from prunesim.studies.compare import compare


def register(sub) -> None:
    p = sub.add_parser("compare", help="run a scenario under several policies and print the metrics side by side")
    p.add_argument("scenario", help="a scenario file or the name of a shipped scenario")
    p.add_argument("--policies", default="naive,slack-gated", help="comma-separated policy names, or all "
                   "(default: naive,slack-gated)")
    p.add_argument("--seeds", default="0:100", help="seeds as A:B (B excluded), a list, or one integer")
    add_set(p)
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=main)


def main(args) -> int:
    policies = parse_names(args.policies)
    seeds = parse_seeds(args.seeds)
    scenario = api.load_scenario(args.scenario, parse_sets(args.set))
    print_notes(policies, scenario)
    result = compare(scenario, policies, seeds)
    if args.json:
        print(json.dumps(json_ready(result), indent=2, sort_keys=True))
    else:
        print(format_comparison(result))
    return 0


def _num(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if float(x).is_integer() or abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.2f}"


def format_comparison(result: dict) -> str:
    policies = result["policies"]
    seeds = result["seeds"]
    span = f"seeds {seeds[0]}..{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else "seeds"
    cells: dict[str, list[str]] = {}
    metrics = [m for m in result["metrics"][policies[0]]]
    for m in metrics:
        row = []
        for p in policies:
            r = result["metrics"][p].get(m)
            row.append("-" if r is None else f"{_num(r['median'])} ({_num(r['p10'])}..{_num(r['p90'])})")
        cells[m] = row
    widths = [max(len(p), *(len(cells[m][i]) for m in metrics)) for i, p in enumerate(policies)]
    name_w = max(len("metric"), *(len(m) for m in metrics))
    lines = [
        f"compare {result['scenario']}: {len(seeds)} {span}; median (p10..p90) over seeds",
        "  ".join([f"{'metric':{name_w}s}", *(f"{p:>{w}s}" for p, w in zip(policies, widths, strict=True))]),
    ]
    for m in metrics:
        lines.append("  ".join([f"{m:{name_w}s}", *(f"{c:>{w}s}" for c, w in zip(cells[m], widths, strict=True))]))
    return "\n".join(lines)
