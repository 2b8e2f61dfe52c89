"""How often clear-tool-uses:langchain and LangChain's own ClearToolUsesEdit agree, call by call.

    python scripts/langchain_agreement.py TRACES [--first]

Replays every development transcript under TRACES (the folders of
tests/test_langchain_differential.py; ``--first``: the first file of each) at the
test's seven settings (``--first``: up to each run's 150th call, as the test's
default run), beside LangChain's code (tests/langchain_reference.py), and
prints, per setting and in all, the runs whose every call agrees, the calls, those
before which LangChain cleared something, those that differ, and the prompt tokens
each side sent. Needs the ``test`` extra (langchain).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path)
    parser.add_argument("--first", action="store_true", help="only the first file of each folder")
    args = parser.parse_args(argv)
    if not args.traces.is_dir():
        print(f"prunesim: error: {args.traces}: no such folder", file=sys.stderr)
        return 2
    sys.path.insert(0, str(TESTS))
    from langchain_reference import compare
    from prunesim.studies.transcript_replay import expand, iter_workloads
    from test_langchain_differential import DEV, FAST_CALLS, SETTINGS, first_calls

    runs = []
    for folder in DEV:
        files = expand([args.traces / folder]) if (args.traces / folder).is_dir() else []
        for path in files[:1] if args.first else files:
            runs.extend(first_calls(data, FAST_CALLS) if args.first else data for data in iter_workloads(path))
    total = {"agree": 0, "calls": 0, "clearing": 0, "differ": 0, "theirs": 0, "ours": 0}
    print(f"{'setting':<22}{'runs agreeing':>15}{'calls':>9}{'clearing':>10}{'differ':>8}"
          f"{'LangChain tokens':>18}{'prunesim tokens':>18}")
    for setting in SETTINGS:
        row = dict.fromkeys(total, 0)
        for data in runs:
            bad, theirs, ours = compare(data, setting)
            row["agree"] += not bad
            row["calls"] += data.turns
            row["clearing"] += sum(1 for c in theirs if c.outputs)
            row["differ"] += len(bad)
            row["theirs"] += sum(c.tokens for c in theirs)
            row["ours"] += sum(c.tokens for c in ours)
        for key in total:
            total[key] += row[key]
        print(f"{setting.name:<22}{row['agree']:>9} of {len(runs):<3}{row['calls']:>9,}{row['clearing']:>10,}"
              f"{row['differ']:>8}"
              f"{row['theirs']:>18,}{row['ours']:>18,}")
    print(f"{'all':<22}{total['agree']:>9} of {len(runs) * len(SETTINGS):<3}{total['calls']:>9,}"
          f"{total['clearing']:>10,}{total['differ']:>8}"
          f"{total['theirs']:>18,}{total['ours']:>18,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
