"""Benchmarks of the decision commands: `prunesim recommend` and `prunesim tune` (not part of the test run).

    python benchmarks/bench_decisions.py                      # both, on ../shared/traces/claude-code-dev
    python benchmarks/bench_decisions.py --draws 500 --trials 50 --traces PATH

Each command runs in a fresh process through the command line's own ``main``
(reading the transcripts, every replay, the draws or trials, the printed
result); the same process then runs a bare SimPy loop of 1,000,000 timeouts,
three times, the fastest taken. Printed per command: its CPU time (user +
system: on a machine shared with other work the steadier figure), its wall
time, the loop's CPU time, and the ratio of the two CPU times. Issue 39's goals:
recommend with every policy and at least 500 draws at most 60 times the loop,
tune with 50 trials at most 120 times.

``--check`` also reruns recommend with the same arguments and ``--jobs 1`` and
compares the two ``recommend.json`` files byte for byte (same seed, same bytes,
whatever the number of processes). CPU time counts the pool's workers too.

``--null N`` instead runs the recommendation's statistics on N datasets where
the answer is known (two policies with the same cost distribution on each of 16
units, both cheaper than noop) and prints how often the 95% interval of their
difference covers 0 and how often one of them is named.

``--optimum FOLDER...`` instead plans the clairvoyant optimum on every unit of
each folder and prints, per folder: noop's total, the cheapest registered
policy's total, the optimum's (the engine's bill), and how far the planner's own
prediction was from that bill (median and 90th percentile over the units).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOALS = {"recommend": 60, "tune": 120}
LOOP = 1_000_000


def _cpu() -> float:
    """CPU seconds of this process and of the workers it has waited for (recommend's pool, --jobs)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total


def child(argv: list[str]) -> dict:
    import simpy
    from prunesim.cli import main

    cpu, wall = _cpu(), time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    loops = []
    for _ in range(3):
        env = simpy.Environment()

        def proc(env=env):
            for _ in range(LOOP):
                yield env.timeout(1.0)

        env.process(proc())
        start = _cpu()
        env.run()
        loops.append(_cpu() - start)
    return {"code": code, "cpu_s": cpu, "wall_s": wall, "loop_cpu_s": min(loops)}


def measure(argv: list[str]) -> dict:
    """One command in a fresh process, with an empty import cache (every transcript imported, as a first run)."""
    with tempfile.TemporaryDirectory(prefix="prunesim-bench-cache-") as cache:
        out = subprocess.run([sys.executable, __file__, "--child", json.dumps(argv)], capture_output=True,
                             text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": "0", "PRUNESIM_CACHE_DIR": cache})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=str(ROOT.parent / "shared" / "traces" / "claude-code-dev"))
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--policy", default="llm-summary:claude-code", help="the policy tune searches")
    ap.add_argument("--check", action="store_true", help="rerun recommend and compare its JSON byte for byte")
    ap.add_argument("--jobs", help="recommend's --jobs (default: not given, every core); with --check the rerun "
                    "takes --jobs 1, so that the two files compare one process with the pool")
    ap.add_argument("--optimum", nargs="+", metavar="FOLDER", help="report the optimum on these folders instead")
    ap.add_argument("--null", type=int, metavar="N", help="check the statistics on N null datasets instead")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    if args.optimum:
        for folder in args.optimum:
            optimum_report(Path(folder))
        return
    if args.null:
        null_report(args.null)
        return
    recommend = ["recommend", args.traces, "--policies", "all", "--draws", str(args.draws)]
    with tempfile.TemporaryDirectory() as tmp:
        runs = {
            "recommend": [*recommend, *(["--jobs", args.jobs] if args.jobs else []), "--out", f"{tmp}/a"],
            "tune": ["tune", args.traces, "--policy", args.policy, "--trials", str(args.trials)],
        }
        for name, argv in runs.items():
            r = measure(argv)
            ratio = r["cpu_s"] / r["loop_cpu_s"]
            print(f"{name:9s} {' '.join(argv[1:-2] if name == 'recommend' else argv[1:])}")  # --out aside
            print(f"          cpu {r['cpu_s']:.1f} s, wall {r['wall_s']:.1f} s; bare SimPy loop of {LOOP:,} "
                  f"timeouts {r['loop_cpu_s']:.2f} s cpu; ratio {ratio:.1f}x (goal at most {GOALS[name]}x)"
                  + ("" if r["code"] == 0 else f"; EXIT CODE {r['code']}"))
        if args.check:
            measure([*recommend, "--jobs", "1", "--out", f"{tmp}/b"])
            same = Path(f"{tmp}/a/recommend.json").read_bytes() == Path(f"{tmp}/b/recommend.json").read_bytes()
            print(f"recommend.json again with --jobs 1: {'the same bytes' if same else 'DIFFERENT'}")


def null_report(datasets: int, units: int = 16, seed: int = 2024) -> None:
    import dataclasses

    import numpy as np
    from prunesim.io.prices import pricing
    from prunesim.studies import recommend as rc
    from prunesim.studies.assumptions import Billing
    from prunesim.studies.recommend_units import Measured, UnitRuns, level_pairs
    from prunesim.studies.reprice import Stream

    flat = dataclasses.replace(pricing("claude-opus-4-5"), cache="none", input=1.0)  # $1 a million tokens

    def run(usd: float, acted: bool) -> dict:
        m = Measured(Stream(*(np.array([x], dtype=np.int64) for x in (round(usd * 1e6), 0, 0, 0))), acted, 0, 0,
                     10, None)
        return {pair: m for pair in level_pairs(set())}

    rng = np.random.default_rng(seed)
    covered = named = 0
    for _ in range(datasets):
        sizes = rng.lognormal(0.0, 0.8, units)
        data = [UnitRuns(f"u{i}", Billing(flat.model, True, flat),
                         {"noop": run(1.3 * b, False), "a": run(b * (1 + 0.05 * rng.standard_normal()), True),
                          "b": run(b * (1 + 0.05 * rng.standard_normal()), True)}) for i, b in enumerate(sizes)]
        rec = rc.recommend(data, ["noop", "a", "b"], [], draws=500, seed=int(rng.integers(1 << 30)))
        pair = next(p for p in rec.pairs if (p["policy"], p["against"]) == ("a", "b"))
        covered += pair["interval"][0] <= 0 <= pair["interval"][1]
        named += rec.winner is not None
    print(f"{datasets} null datasets of {units} units: the 95% interval covers 0 in {covered / datasets:.1%}; "
          f"a policy is named in {named / datasets:.1%} (the 0.9 rule's own rate: {2 * (1 - rc.CLEAR):.0%})")


def optimum_report(folder: Path) -> None:
    import numpy as np
    from prunesim.io.scenario_files import load_replay
    from prunesim.policies import every_policy
    from prunesim.studies import optimum
    from prunesim.studies.transcript_replay import iter_sources, replay, replay_scenario

    base = load_replay("transcript", {}, every_policy())
    noop = best = clair = 0.0
    errors, units, planned = [], 0, 0
    for _, data in iter_sources([folder]):
        if isinstance(data, Exception):
            continue
        scenario = replay_scenario(base, data)
        bills = {p: replay(data, base, p, None, trace="none", scenario=scenario)[0].summary["cost_usd"]
                 for p in every_policy()}
        plan = optimum.plan(data, base, None, scenario)
        noop, best, clair = noop + bills["noop"], best + min(bills.values()), clair + plan.billed_usd
        if plan.chosen != optimum.NONE:
            planned += 1
            errors.append(abs(plan.predicted_usd - plan.billed_usd) / plan.billed_usd)
        units += 1
    e = np.array(errors) if errors else np.zeros(1)
    print(f"{folder.name}: {units} units; noop ${noop:.2f}, the cheapest policy on each unit ${best:.2f}, the optimum "
          f"${clair:.2f} ({clair / noop:.3f} of noop); it removed something on {planned}; its planner's prediction "
          f"off the engine's bill by a median {np.median(e):.2%} (p90 {np.quantile(e, 0.9):.2%})")


if __name__ == "__main__":
    main()
