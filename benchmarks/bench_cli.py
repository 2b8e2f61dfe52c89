"""Benchmarks of the command users run: `prunesim run` over long runs (not part of the test run).

    python benchmarks/bench_cli.py speed            # 1M-turn runs of oscillation-40, the goals' table
    python benchmarks/bench_cli.py memory           # peak RSS at 100k and 1M turns, every policy
    python benchmarks/bench_cli.py speed --turns 200000 --policies noop,naive   # a quicker look
    python benchmarks/bench_cli.py speed --turns 100000 --against OTHER/bin/python   # before/after a change

Each measurement is one fresh process that runs ``prunesim run oscillation-40
--set turns=N`` through the command line's own ``main`` (argument parsing,
scenario loading, the run, the files, the printed summary), then, in the same
process, a bare SimPy loop that schedules the same number of timeouts (two per
turn, as the agent does), three times, the fastest taken. Reported per run: turns per second of wall time and
of CPU time (user + system: on a machine shared with other work, CPU time is
the steadier figure), the SimPy loop's rate measured the same way, the ratio
prunesim / SimPy, and the process's peak resident memory (``ru_maxrss``).

Modes: ``none`` is ``--trace none`` without ``--out`` (the default without
``--out``); ``turns`` and ``all`` write into a temporary ``--out`` folder. How
much slower a mode is than ``none`` is given two ways: from CPU time, and from
the ratios to SimPy (which cancels a process running slower than another on a
busy machine, but carries the noise of the short SimPy loop itself).

Goals (issue 17), 1M turns: --trace none: noop >= 200,000, recency >= 150,000,
naive >= 70,000, tombstoned >= 35,000 turns/s; --trace turns --out: no more than
25% slower than none; --trace all --out: naive >= 25,000 turns/s. Peak RSS under
150 MB and flat from 100k to 1M turns for every registered policy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOALS = {"noop": 200_000, "recency": 150_000, "naive": 70_000, "tombstoned": 35_000}
ALL_GOAL_NAIVE = 25_000
LOOP_REPEATS = 3


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(turns: int, policy: str, mode: str, out: str | None) -> dict:
    import contextlib
    import io

    import simpy
    from prunesim.cli import main

    argv = ["run", "oscillation-40", "--policy", policy, "--set", f"turns={turns}", "--trace", mode]
    if out:
        argv += ["--out", out]
    wall, cpu = time.perf_counter(), _cpu()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    if code != 0:
        raise SystemExit(f"prunesim exited {code}")
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def loop(env, n):
        for _ in range(n):
            yield env.timeout(1.0)
            yield env.timeout(1.0)

    # The loop is short next to the run and the machine is shared: the fastest of three is its rate.
    floor_wall = floor_cpu = float("inf")
    for _ in range(LOOP_REPEATS):
        env = simpy.Environment()
        env.process(loop(env, turns))
        wall_0, cpu_0 = time.perf_counter(), _cpu()
        env.run()
        floor_wall = min(floor_wall, time.perf_counter() - wall_0)
        floor_cpu = min(floor_cpu, _cpu() - cpu_0)
    return {
        "policy": policy, "mode": mode, "turns": turns,
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "turns_per_s_wall": round(turns / wall), "turns_per_s_cpu": round(turns / cpu),
        "simpy_turns_per_s_wall": round(turns / floor_wall), "simpy_turns_per_s_cpu": round(turns / floor_cpu),
        "ratio_cpu": round(floor_cpu / cpu, 3),
        "peak_rss_mb": round(peak_kb / 1024, 1),
    }


def measure(turns: int, policy: str, mode: str, python: str = sys.executable) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "run") if mode != "none" else ""
        cmd = [python, __file__, "--child", str(turns), "--policy", policy, "--mode", mode, "--out", out]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        return json.loads(done.stdout)


def speed(turns: int, policies: list[str]) -> list[dict]:
    rows = []
    for policy in policies:
        modes = ["none", "turns"] + (["all"] if policy == "naive" else [])
        for mode in modes:
            rows.append(measure(turns, policy, mode))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def compare(turns: int, policies: list[str], modes: list[str], against: str, repeat: int) -> list[dict]:
    """Each (policy, mode) measured ``repeat`` times under ``against`` (another install's interpreter: the
    code before a change) and under this one, alternately, so that both meet the same load."""
    rows = []
    for policy in policies:
        for mode in modes:
            runs: dict[str, list[dict]] = {"before": [], "after": []}
            for _ in range(repeat):
                runs["before"].append(measure(turns, policy, mode, against))
                runs["after"].append(measure(turns, policy, mode))
            row = {"policy": policy, "mode": mode, "turns": turns, "repeat": repeat}
            for side, got in runs.items():
                row[f"{side}_cpu"] = statistics.median(r["turns_per_s_cpu"] for r in got)
                row[f"{side}_ratio"] = statistics.median(r["ratio_cpu"] for r in got)
                row[f"{side}_simpy_cpu"] = statistics.median(r["simpy_turns_per_s_cpu"] for r in got)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def print_compare(rows: list[dict]) -> None:
    print("| policy | --trace | before turns/s (CPU) | after turns/s (CPU) | change | before / SimPy | after / SimPy | "
          "SimPy turns/s (CPU) | goal |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        goal = f">= {GOALS[r['policy']]:,}" if r["mode"] == "none" and r["policy"] in GOALS else ""
        print(f"| {r['policy']} | {r['mode']} | {r['before_cpu']:,.0f} | {r['after_cpu']:,.0f} | "
              f"{100 * (r['after_cpu'] / r['before_cpu'] - 1):+.0f}% | {r['before_ratio']:.3f} | "
              f"{r['after_ratio']:.3f} | {r['after_simpy_cpu']:,.0f} | {goal} |")


def memory(sizes: list[int], policies: list[str]) -> list[dict]:
    rows = []
    for policy in policies:
        for turns in sizes:
            rows.append(measure(turns, policy, "none"))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def print_speed(rows: list[dict]) -> None:
    none = {r["policy"]: r for r in rows if r["mode"] == "none"}
    print("| policy | --trace | turns/s (CPU) | turns/s (wall) | SimPy turns/s (CPU) | prunesim / SimPy | goal | "
          "slower than none (CPU) | (ratio) | peak MB |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    for r in rows:
        if r["mode"] == "none":
            goal = f">= {GOALS[r['policy']]:,}" if r["policy"] in GOALS else ""
        elif r["mode"] == "turns":
            goal = "<= 25% slower than none"
        else:
            goal = f">= {ALL_GOAL_NAIVE:,}" if r["policy"] == "naive" else ""
        base = none.get(r["policy"])
        # Slower than --trace none, each measured against the SimPy loop of its own process (processes on
        # a shared machine run at different speeds; the ratio to the loop beside it cancels that out).
        slower = f"{100 * (base['ratio_cpu'] / r['ratio_cpu'] - 1):+.0f}%" if base else ""
        slower_cpu = f"{100 * (base['turns_per_s_cpu'] / r['turns_per_s_cpu'] - 1):+.0f}%" if base else ""
        print(f"| {r['policy']} | {r['mode']} | {r['turns_per_s_cpu']:,} | {r['turns_per_s_wall']:,} | "
              f"{r['simpy_turns_per_s_cpu']:,} | {r['ratio_cpu']:.3f} | {goal} | {slower_cpu} | {slower} | "
              f"{r['peak_rss_mb']} |")


def print_memory(rows: list[dict]) -> None:
    print("| policy | turns | peak RSS MB | turns/s (CPU) |")
    print("| --- | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['policy']} | {r['turns']:,} | {r['peak_rss_mb']} | {r['turns_per_s_cpu']:,} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="?", choices=("speed", "memory"), default="speed")
    ap.add_argument("--turns", type=int, default=1_000_000, help="run length for speed")
    ap.add_argument("--sizes", default="100000,1000000", help="run lengths for memory")
    ap.add_argument("--policies", default=None, help="comma-separated (default: the goals' four for speed, "
                    "every registered policy for memory)")
    ap.add_argument("--against", help="another install's python (the code before a change): each figure is "
                    "measured under both, alternately, and printed side by side")
    ap.add_argument("--repeat", type=int, default=3, help="with --against: runs of each, the median taken")
    ap.add_argument("--modes", default="none", help="with --against: the --trace modes compared")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--policy", help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.policy, args.mode, args.out)))
        return 0
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    if args.what == "speed" and args.against:
        policies = args.policies.split(",") if args.policies else list(GOALS)
        print_compare(compare(args.turns, policies, args.modes.split(","), args.against, args.repeat))
    elif args.what == "speed":
        policies = args.policies.split(",") if args.policies else list(GOALS)
        print_speed(speed(args.turns, policies))
    else:
        from prunesim.policies import REGISTRY

        policies = args.policies.split(",") if args.policies else sorted(REGISTRY)
        print_memory(memory([int(x) for x in args.sizes.split(",")], policies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
