"""prunesim ablation NAME: every combination of the mechanisms, refitted and judged on unseen seed blocks."""

from __future__ import annotations

import sys
from pathlib import Path

from prunesim.cli.commands._common import (
    add_engine,
    check_seed_blocks,
    engine_choice,
    out_file_arg,
    parse_seeds,
    positive_int,
    seed_arg,
)
from prunesim.cli.commands.calibrate import check_out
from prunesim.errors import UserError
from prunesim.io import atomic, output
from prunesim.io.scenario_files import load
from prunesim.studies import ablation as study
from prunesim.studies.replay import REPLAYS, FigureReplay, get_replay


def register(sub) -> None:
    p = sub.add_parser("ablation", help="refit and validate a replay's scenario with each combination of mechanisms")
    p.add_argument("name", help=f"one of: {', '.join(sorted(REPLAYS))} (replays with published figures)")
    p.add_argument("--seeds", default="0:100", help="calibration seeds every candidate runs (default 0:100)")
    p.add_argument("--max-evals", type=positive_int, default=800, metavar="N",
                   help="each refit's budget of distinct candidates, as `prunesim calibrate --max-evals` "
                        "(default 800, the shipped fit's)")
    p.add_argument("--blocks", type=positive_int, default=10, help="validation blocks (default 10)")
    p.add_argument("--block-size", type=positive_int, default=100, help="seeds per block (default 100)")
    p.add_argument("--first-seed", type=seed_arg, default=1000, help="first validation seed (default 1000)")
    p.add_argument("--params", default=None, metavar="NAME,...",
                   help="the parameters each refit fits (default: every one of the targets' [bounds], the "
                        "shipped fit's)")
    add_table_flags(p)
    p.set_defaults(func=main)


def add_table_flags(p) -> None:
    """--out, --force, --quiet and --engine, as the ablation and the sensitivity study take them."""
    p.add_argument("--out", type=out_file_arg, default=None, help="also write the tidy table to this CSV file")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_engine(p)


def figure_replay(args, command: str) -> FigureReplay:
    """The replay ``args.name`` names, if it has published figures; --out checked before any work."""
    replay = get_replay(args.name)
    if not isinstance(replay, FigureReplay):
        raise UserError(command, args.name, "this replay has no published figures")
    if args.out is not None:
        check_out(args.out, args.force)
    return replay


def main(args) -> int:
    replay = figure_replay(args, "ablation")
    seeds = parse_seeds(args.seeds)
    check_seed_blocks(args.first_seed, args.blocks, args.block_size)
    base = load(replay.scenario)

    def progress(label: str, n: int, objective: float, best: float) -> None:
        if not args.quiet and (n == 1 or n % 50 == 0):
            print(f"ablation: {label}: {n} candidates, best {best:.4g}", file=sys.stderr, flush=True)

    names = None if args.params is None else [n.strip() for n in args.params.split(",")]
    runs = len(study.combinations()) * (args.max_evals * len(seeds) + args.blocks * args.block_size)
    engine = engine_choice(args, "ablation", base, replay.variants, runs)
    cases = study.ablation(replay, base, seeds, args.max_evals, args.blocks, args.block_size, args.first_seed,
                           progress, names, engine)
    rows = study.rows(cases)
    print(format_ablation(cases, seeds, args.max_evals))
    if args.out is not None:
        write_rows(args.out, study.COLUMNS, rows)
    return 0


def write_rows(path: Path, columns, rows: list[dict]) -> None:
    output.write_text(path, atomic.csv_text(columns, ([r[c] for c in columns] for r in rows)), "--out")


def format_ablation(cases: list[study.AblationCase], seeds: list[int], max_evals: int) -> str:
    first = cases[0].validation
    n = len(first.blocks)
    labels = [c.label for c in cases]
    widths = [max(len(label), 7) for label in labels]
    lines = [
        f"ablation {first.name}: each combination refitted on seeds {seeds[0]}..{seeds[-1]} "
        f"(--max-evals {max_evals}), judged on {n} blocks of {len(first.blocks[0])} seeds "
        f"({first.blocks[0][0]}..{first.blocks[-1][-1]}): blocks in range",
        f"{'variant':13s} {'figure':44s} {'accepted':>15s}  "
        + "  ".join(f"{label:>{w}s}" for label, w in zip(labels, widths, strict=True)),
    ]
    for i, f in enumerate(first.figures):
        if not f.target.judged:
            continue
        cells = []
        for case, w in zip(cases, widths, strict=True):
            g = case.validation.figures[i]
            mark = "" if g.misses <= case.validation.allowed_misses else "*"
            cells.append(f"{f'{sum(g.in_range)}/{n}{mark}':>{w}s}")
        lines.append(f"{f.target.variant:13s} {f.target.label:44s} {f.target.accepted_text():>15s}  "
                     + "  ".join(cells))
    judged = sum(1 for f in first.figures if f.target.judged)
    lines.append(f"{'figures holding':73s}  " + "  ".join(
        f"{f'{c.holding}/{judged}':>{w}s}" for c, w in zip(cases, widths, strict=True)))
    lines.append(f"{'fit objective (calibration seeds)':73s}  " + "  ".join(
        f"{c.calibration.objective:>{w}.3f}" for c, w in zip(cases, widths, strict=True)))
    lines.append("* the figure does not hold (misses in more blocks than allowed)")
    return "\n".join(lines)
