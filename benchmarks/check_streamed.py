"""Streamed files against the files an in-memory run writes, on longer runs than the tests use.

    python benchmarks/check_streamed.py

Every registered policy, ``--trace turns`` and ``all``, on oscillation-40
(2,000 turns), reentrancy-60 (600), long-session-2000 and transcript (300),
seed 3: ``prunesim.io.stream.stream_run`` must write the same bytes as
``write_run(run_one(...))``. Prints the event rows compared, by kind; exits 1
on the first difference.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from prunesim.io import scenario_files
from prunesim.io.results import write_run
from prunesim.io.stream import stream_run
from prunesim.policies import REGISTRY
from prunesim.runner import run_one

RUNS = (("oscillation-40", 2000), ("reentrancy-60", 600), ("long-session-2000", 2000), ("transcript", 300))
SEED = 3


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)  # no options: --help, or usage
    kinds: Counter = Counter()
    for name, turns in RUNS:
        scenario = scenario_files.load(name, {"turns": turns})
        for policy in sorted(REGISTRY):
            for mode in ("turns", "all"):
                with tempfile.TemporaryDirectory() as tmp:
                    recorded, streamed = Path(tmp) / "recorded", Path(tmp) / "streamed"
                    write_run(run_one(scenario, policy, SEED, trace=mode), recorded)
                    stream_run(scenario, policy, SEED, streamed, mode)
                    a, b = files_of(recorded), files_of(streamed)
                    if a != b:
                        differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
                        print(f"{name} {policy} --trace {mode}: {', '.join(differ)} differ")
                        return 1
                    for line in (streamed / "events.csv").read_text().splitlines()[1:]:
                        kinds[line.split(",")[3]] += 1
    print(f"all equal; event rows compared: {sum(kinds.values()):,}", dict(sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
