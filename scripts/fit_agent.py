"""Refit the shipped agent fit (sim/model/agent_fit.json) on the outcome files of The Complexity Trap.

    python scripts/fit_agent.py [FILES ...] [--out FILE] [--replicates N] [--seed S] [--jobs J]

Fits every scaffold the files hold (sim/studies/agent_fit.py, docs/outcomes.md) and writes the fit with the
SHA-256 of each input file: the same inputs give the same bytes, and no date is written. The files are
third-party data, read where they are (PRUNESIM_OUTCOMES, else ../shared/outcomes beside the checkout).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from prunesim.io import outcomes
from prunesim.studies import agent_fit

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "sim" / "model" / agent_fit.FIT_FILE


def main() -> None:
    folder = Path(os.environ.get("PRUNESIM_OUTCOMES") or ROOT.parent / "shared" / "outcomes")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="*", default=sorted(folder.glob("*.csv")),
                        help=f"outcome files (default: every .csv in {folder})")
    parser.add_argument("--out", type=Path, default=OUT, help="the fit file to write")
    parser.add_argument("--replicates", type=int, default=agent_fit.REPLICATES)
    parser.add_argument("--seed", type=int, default=agent_fit.SEED)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    if not args.files:
        parser.error(f"no outcome files in {folder} (set PRUNESIM_OUTCOMES or name them)")
    fitted = agent_fit.fit(outcomes.read_all(args.files), args.replicates, args.seed, args.jobs)
    text = json.dumps(fitted.to_json(), indent=1, sort_keys=True) + "\n"
    args.out.write_text(text, encoding="utf-8")
    for name, s in sorted(fitted.scaffolds.items()):
        print(name, json.dumps(s.params.as_dict()))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
