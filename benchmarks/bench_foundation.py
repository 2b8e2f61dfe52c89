"""Foundation benchmarks (not part of the test run).

    python benchmarks/bench_foundation.py

Prints the wall time of the oscillation replay over 100 seeds and the turn
rate of one 100,000-turn run with the full trace recorded.
"""

from __future__ import annotations

import argparse
import resource
import time

from prunesim.io import scenario_files as sc  # noqa: E402
from prunesim.runner import run_one  # noqa: E402
from prunesim.studies.replay import get_replay  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)  # no options: --help, or usage
    t0 = time.perf_counter()
    report = get_replay("oscillation").run(list(range(100)))
    t1 = time.perf_counter()
    runs = sum(len(v) for v in report.runs.values())
    print(f"replay oscillation, 100 seeds: {t1 - t0:.2f} s in-process ({runs} runs)")

    long = sc.replace(sc.load("oscillation-40"), {"turns": 100_000})
    for policy in ("naive", "recency"):
        t0 = time.perf_counter()
        result = run_one(long, policy, 0, trace="all")
        dt = time.perf_counter() - t0
        rows = len(result.recorder.trace["seq"])
        print(f"100,000 turns under {policy}, trace recorded ({rows:,} rows): {dt:.2f} s, {100_000 / dt:,.0f} turns/s")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
