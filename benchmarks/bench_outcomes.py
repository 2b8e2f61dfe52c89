"""The outcome forecast's speed, as a ratio to a bare SimPy loop of 1,000,000 timeouts (a benchmark, not a test).

    python benchmarks/bench_outcomes.py [--outcomes FOLDER] [--only predict,validate] [--jobs N]

Issue 39's goals, on 2 cores: ``prunesim outcomes predict`` on one 500-instance arm at most 20 times the loop;
the cross-validation of the fit over every dev arm (``prunesim outcomes validate``) at most 300 times. Each
command runs as ``python -m prunesim ...`` in a fresh process (its start-up, imports and the loading of the
compiled kernel counted as a user meets them), right after the loop is timed in this process, so that both
meet the same load. Wall and CPU seconds (user + system of the finished child) are printed.

The arm is OpenHands' 500-instance raw arm forecast under ``observation-masking:openhands`` (the study's
M = 10) with the shipped fit: 100 bootstrap replicates, every grid point they need. The outcome files are
third-party data, read where they are (``--outcomes``, ``PRUNESIM_OUTCOMES`` or ``../shared/outcomes``).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import simpy

ROOT = Path(__file__).resolve().parent.parent
OUTCOMES = Path(os.environ.get("PRUNESIM_OUTCOMES") or ROOT.parent / "shared" / "outcomes")
RAW_ARM = "gemini-2.5-flash_maxiter_250_N_v0.43.0-no-hint-raw_agent-run_1"
GOALS = {"predict": 20.0, "validate": 300.0}


def bare_loop_seconds(n: int = 1_000_000) -> float:
    env = simpy.Environment()

    def loop():
        for _ in range(n):
            yield env.timeout(1.0)

    env.process(loop())
    start = time.perf_counter()
    env.run()
    return time.perf_counter() - start


def command(name: str, folder: Path, jobs: int | None) -> list[str]:
    jobs_args = ["--jobs", str(jobs)] if jobs else []
    if name == "predict":
        return ["outcomes", "predict", str(folder / "openhands.csv"), "--experiment", RAW_ARM, "--agent",
                "openhands", "--policy", "observation-masking:openhands", "--json"]
    return ["outcomes", "validate", str(folder / "sweagent.csv"), str(folder / "openhands.csv"), "--json",
            *jobs_args]


def timed(args: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "prunesim", *args], capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"prunesim {' '.join(args)}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outcomes", type=Path, default=OUTCOMES)
    parser.add_argument("--only", default="predict,validate")
    parser.add_argument("--jobs", type=int, default=None, help="the validate's processes (default: every core)")
    args = parser.parse_args()
    if not (args.outcomes / "openhands.csv").is_file():
        sys.exit(f"no outcome files in {args.outcomes} (set PRUNESIM_OUTCOMES or --outcomes)")
    timed(["outcomes", "fit"])  # the compiled kernel loaded (numba's cache) before anything is timed
    for name in args.only.split(","):
        loop = bare_loop_seconds()
        wall, cpu = timed(command(name, args.outcomes, args.jobs))
        ratio = wall / loop
        verdict = "met" if ratio <= GOALS[name] else "NOT met"
        print(f"{name:9s} wall {wall:7.1f} s  cpu {cpu:7.1f} s  loop {loop:5.2f} s  ratio {ratio:6.1f}x  "
              f"(goal <= {GOALS[name]:.0f}x: {verdict})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
