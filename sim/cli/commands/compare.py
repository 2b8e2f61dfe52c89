"""prunesim compare SCENARIO --policies A,B: metrics side by side over many seeds."""

from __future__ import annotations

import json
import math
from pathlib import Path

from prunesim import api
from prunesim.cli.commands._common import add_agent, add_set, out_arg, parse_seeds, print_notes, scenario_sets
from prunesim.cli.commands._long_run import announce_study
from prunesim.errors import UserError
from prunesim.io import atomic, output
from prunesim.io.atomic import json_ready
from prunesim.io.labels import policy_labels
from prunesim.policies import get_policy, parse_names
from prunesim.studies.compare import STAT_COLUMNS, check_metrics, compare, rows
from prunesim.studies.progress import Progress

FORMATS = ("table", "csv", "json")


def register(sub) -> None:
    p = sub.add_parser("compare", help="run a scenario under several policies and print the metrics side by side")
    p.add_argument("scenario", help="a scenario file or the name of a shipped scenario")
    p.add_argument("--policies", default="naive,slack-gated", help="comma-separated policy names, or all "
                   "(default: naive,slack-gated)")
    p.add_argument("--seeds", default="0:100", help="seeds as A:B (B excluded), a list, or one integer")
    add_set(p)
    add_agent(p)
    p.add_argument("--metrics", help="comma-separated metric names to show, in this order (default: all)")
    p.add_argument("--format", choices=FORMATS, help="table (default), csv (one row per policy and metric) or json")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.add_argument("--out", type=out_arg, help="write to this file (format from its .csv/.json suffix unless --format)")
    p.set_defaults(func=main)


def main(args) -> int:
    policies = parse_names(args.policies)
    seeds = parse_seeds(args.seeds)
    metrics = None
    if args.metrics is not None:
        metrics = [m.strip() for m in args.metrics.split(",")]
        if not all(metrics):
            raise UserError("--metrics", args.metrics, "expected a comma-separated list of metric names")
        check_metrics(metrics)
    fmt = output_format(args)
    if args.out is not None:
        if output.names_folder(args.out):
            raise UserError("--out", args.out, "names a folder; give a file")
    scenario = api.load_scenario(args.scenario, scenario_sets(args), policies, given_as="--set")
    if args.out is not None:  # after reading the scenario (its extends chain): an output onto any of it is refused
        output.check_file(args.out, "--out")
    print_notes(policies, scenario)
    for name in policies:  # an unknown name before any run or measurement of them
        get_policy(name, where="--policies")
    groups = [(scenario, name, seeds) for name in policies]
    progress = Progress(len(policies) * len(seeds), "run", "compare") if announce_study("compare", groups) else None
    try:
        result = compare(scenario, policies, seeds, metrics, tick=progress.update if progress else None)
    finally:
        if progress:
            progress.close()
    if fmt == "json":
        text = json.dumps(json_ready(result), indent=2, sort_keys=True) + "\n"
    elif fmt == "csv":
        table = rows(result)
        text = atomic.csv_text(("policy", "metric", *STAT_COLUMNS),
                               ([("" if r[c] is None else r[c]) for c in ("policy", "metric", *STAT_COLUMNS)]
                                for r in table))
    else:
        text = format_comparison(result) + "\n"
    if args.out is None:
        print(text, end="")
    else:
        output.write_text(args.out, text, "--out")
        if output.kind_of(args.out) != "stream":
            print(args.out)
    return 0


def output_format(args) -> str:
    if args.json and args.format not in (None, "json"):
        raise UserError("--json", None, f"contradicts --format {args.format}")
    if args.json:
        return "json"
    if args.format:
        return args.format
    suffix = Path(args.out).suffix if args.out is not None else ""
    if suffix in (".csv", ".json"):
        return suffix[1:]
    return "table"


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
    metrics = list(dict.fromkeys(m for p in policies for m in result["metrics"][p]))
    for m in metrics:
        row = []
        for p in policies:
            r = result["metrics"][p].get(m)
            if r is None:
                row.append("-")
            elif "share" in r:
                row.append(f"{r['share']:.2f} [{r['share_low']:.2f}..{r['share_high']:.2f}] of seeds")
            else:
                row.append(f"{_num(r['median'])} ({_num(r['p10'])}..{_num(r['p90'])})")
        cells[m] = row
    shown = policy_labels(policies)  # a policy from a file by its class, not its whole path
    heads = [shown[p] for p in policies]
    widths = [max(len(h), *(len(cells[m][i]) for m in metrics)) for i, h in enumerate(heads)]
    name_w = max(len("metric"), *(len(m) for m in metrics))
    lines = [
        f"compare {result['scenario']}: {len(seeds)} {span}; median (p10..p90) over seeds; yes/no metrics: "
        "share of seeds where true [Wilson 95%]",
        "  ".join([f"{'metric':{name_w}s}", *(f"{h:>{w}s}" for h, w in zip(heads, widths, strict=True))]),
    ]
    for m in metrics:
        lines.append("  ".join([f"{m:{name_w}s}", *(f"{c:>{w}s}" for c, w in zip(cells[m], widths, strict=True))]))
    return "\n".join(lines)
