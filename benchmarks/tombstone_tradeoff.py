"""The tombstone budget against re-retrievals over a 2,000-turn session (figures for docs/policies.md).

    python benchmarks/tombstone_tradeoff.py [--seeds 0:5] [--policy tombstoned]

Runs long-session-2000 under ``--policy`` for every ``[tombstone] budget`` and
``digest_max`` below, over the seeds, and prints a markdown table of medians over
seeds: re-retrievals and overrides per 100 turns, tokens held at the end by
tombstones and by the digest, tokens lost to forced truncation, and the input
tokens billed. Not part of the test run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prunesim.cli.commands._common import parse_seeds  # noqa: E402
from prunesim.io import scenario_files as scenario_mod  # noqa: E402
from prunesim.runner import run_one  # noqa: E402

BUDGETS = (0, 500, 1000, 2000, 4000, 8000, 16000)
DIGEST_MAX = (0, 1000, 250)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0:5")
    ap.add_argument("--policy", default="tombstoned")
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    print(f"long-session-2000 under {args.policy}, seeds {args.seeds}: medians over seeds")
    print("| tombstone budget | digest max | re-retrievals / 100 turns | overrides / 100 turns | tombstone tokens "
          "| digest tokens | folds | truncated tokens | input billed (M tokens) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for budget in BUDGETS:
        for digest_max in DIGEST_MAX if budget else (0,):
            sc = scenario_mod.load("long-session-2000", {"tombstone.budget": budget,
                                                         "tombstone.digest_max": digest_max})
            rows = [run_one(sc, args.policy, seed, trace="none").summary for seed in seeds]

            def med(metric, rows=rows):
                return float(np.median([r[metric] for r in rows]))

            per100 = 100 / sc.turns
            print(f"| {budget or 'none'} | {digest_max or 'none'} | {med('re_retrievals') * per100:.2f} | "
                  f"{med('override_retrievals') * per100:.2f} | {med('tombstone_tokens'):,.0f} | "
                  f"{med('digest_tokens'):,.0f} | {med('tombstone_folds'):.0f} | {med('truncated_tokens'):,.0f} | "
                  f"{med('input_tokens_billed') / 1e6:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
