"""prunesim sensitivity NAME: Sobol indices of a replay's figures over its fitted parameters' bounds (SALib)."""

from __future__ import annotations

import sys

from prunesim.cli.commands._common import engine_choice, parse_seeds, positive_int
from prunesim.cli.commands.ablation import add_table_flags, figure_replay, write_rows
from prunesim.io.scenario_files import load
from prunesim.studies import sensitivity as study
from prunesim.studies.grid import check_runs
from prunesim.studies.replay import REPLAYS


def register(sub) -> None:
    p = sub.add_parser("sensitivity", help="Sobol indices of a replay's figures over the fitted parameters' bounds")
    p.add_argument("name", help=f"one of: {', '.join(sorted(REPLAYS))} (replays with published figures)")
    p.add_argument("--seeds", default="0:20", help="the seeds every sample runs (default 0:20)")
    p.add_argument("--samples", type=positive_int, default=64, metavar="N",
                   help="Sobol base samples, a power of 2: N x (parameters + 2) points are run (default 64)")
    p.add_argument("--params", default=None, metavar="NAME,...",
                   help="the parameters to vary (default: every one of the targets' [bounds])")
    add_table_flags(p)
    p.set_defaults(func=main)


def main(args) -> int:
    study.check_base_samples(args.samples)
    replay = figure_replay(args, "sensitivity")
    seeds = parse_seeds(args.seeds)
    names = None if args.params is None else [n.strip() for n in args.params.split(",")]

    def progress(done: int, total: int) -> None:
        if not args.quiet and (done == total or done % 50 == 0):
            print(f"sensitivity: {done}/{total} points", file=sys.stderr, flush=True)

    base = load(replay.scenario)
    points = args.samples * (len(names or replay.targets(base).bounds) + 2)
    check_runs({"Sobol points": points, "seeds": len(seeds), "variants": len(replay.variants)}, "--samples")
    engine = engine_choice(args, "sensitivity", base, replay.variants, points * len(seeds))
    result = study.sensitivity(replay, base, seeds, args.samples, names, progress, engine)
    print(format_sensitivity(result))
    if args.out is not None:
        write_rows(args.out, study.COLUMNS, study.rows(result))
    return 0


def format_sensitivity(r: study.Sensitivity) -> str:
    short = [p.name.split(".")[-1] for p in r.params]
    widths = [max(len(s), 9) for s in short]
    lines = [
        f"sensitivity {r.name}: total Sobol index ST (first-order S1) of each figure, {r.points} points "
        f"({r.base_samples} base samples) over the [bounds], seeds {r.seeds[0]}..{r.seeds[-1]} at every point",
        f"{'variant':13s} {'figure':44s} " + " ".join(f"{s:>{w}s}" for s, w in zip(short, widths, strict=True)),
    ]
    for f in r.figures:
        cells = [f"{f'{f.st[p.name]:.2f} ({f.s1[p.name]:.2f})':>{w}s}" for p, w in zip(r.params, widths, strict=True)]
        note = f"  ({f.clipped} points clipped)" if f.clipped else ""
        lines.append(f"{f.target.variant:13s} {f.target.label:44s} " + " ".join(cells) + note)
    return "\n".join(lines)
