"""prunesim aggregate DIR: medians and bootstrap intervals of a sweep's runs."""

from __future__ import annotations

import json
from pathlib import Path

from prunesim.cli.commands._common import non_negative_int, seed_arg
from prunesim.errors import UserError
from prunesim.io.atomic import json_ready
from prunesim.io.sweep_files import RUNS_FILE
from prunesim.studies.aggregate import (
    MAX_RESAMPLES,
    RESAMPLES,
    SEED,
    STAT_COLUMNS,
    aggregate,
    check_resamples,
    write_aggregate,
)


def register(sub) -> None:
    p = sub.add_parser(
        "aggregate",
        help="per policy and grid point: n, median, mean and a bootstrap 95%% interval of the median",
        description="Reads DIR/runs.csv (complete or not) and writes DIR/aggregate.csv atomically.",
    )
    p.add_argument("dir", type=Path, help="a sweep directory (holding sweep.json and runs.csv)")
    p.add_argument("--json", action="store_true", help="also print the table as JSON")
    p.add_argument(
        "--resamples", type=non_negative_int, default=RESAMPLES,
        help=f"bootstrap resamples, 1 to {MAX_RESAMPLES:,} (default {RESAMPLES})",
    )
    p.add_argument("--seed", type=seed_arg, default=SEED, help=f"bootstrap seed (default {SEED})")
    p.set_defaults(func=main)


def main(args) -> int:
    check_resamples(args.resamples)
    table = aggregate(args.dir, resamples=args.resamples, seed=args.seed)
    if not table:  # a sweep that has written its header and no run yet: an earlier aggregate.csv stays
        raise UserError(str(args.dir / RUNS_FILE), None, "holds no runs yet (only its header): nothing to aggregate")
    path = write_aggregate(args.dir, table)
    if args.json:
        print(json.dumps(json_ready(table), indent=2))
    else:
        groups = len({tuple(v for k, v in r.items() if k not in STAT_COLUMNS) for r in table})
        print(f"{path}: {len(table)} rows ({groups} policy x grid point groups)")
    return 0
