"""The compiled kernel beside the SimPy engine: byte-identical summaries, and its rate against a bare SimPy loop.

For each policy the kernel covers, runs of random scenarios (prunesim.kernel.differential.random_scenario)
go to both engines, in two shapes: ``--runs`` scenarios of one seed each (every run prepares its scenario and
draws its seed's workload chunk: the worst case), and the same number of runs as a study makes them,
``--runs / --seeds`` scenarios each on the same ``--seeds`` seeds (a calibration's candidates: the seeds'
draws are made once). Every summary must be the same bytes on both engines. The kernel runs as the studies
run it, one :class:`prunesim.kernel.summary.Kernel` for all the runs of a shape. CPU time of each engine is
taken over the same runs (the kernel's loading and compiling done first, and reported apart; the kernel's
runs and the bare loop each the least of REPEATS passes), and in the same process a bare SimPy loop of two
timeouts a turn runs as many turns: the ratio is turns per CPU second of the kernel over the bare loop's turns
per CPU second (the goal is >= 0.5).

    python benchmarks/bench_kernel.py --runs 1000 [--turns 60] [--seeds 100] [--calibrate SEEDS] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_sweep's bare loop


REPEATS = 3  # the kernel's runs and the bare loop are each timed this many times, the least CPU taken (the
# machine is shared: a pass a neighbour slowed says nothing about either); the SimPy engine runs once


def bare_loop_cpu(turns: int) -> float:
    """CPU seconds of a SimPy process that yields two timeouts per turn for ``turns`` turns."""
    import simpy
    from bench_sweep import bare_loop

    env = simpy.Environment()
    env.process(bare_loop(env, turns))
    start = time.process_time()
    env.run()
    return time.process_time() - start


def bench(policy: str, runs: int, turns: int, seeds: int) -> list[dict]:
    """Both shapes of runs of ``policy`` (see the module docstring), each on both engines."""
    from prunesim.kernel.choice import summary
    from prunesim.kernel.differential import random_scenario
    from prunesim.kernel.summary import Kernel

    rng = np.random.default_rng([2026, runs, turns, len(policy)])
    distinct = [(random_scenario(rng, turns), [int(rng.integers(0, 2**32))]) for _ in range(runs)]
    common = rng.integers(0, 2**32, seeds).tolist()
    study = [(random_scenario(rng, turns), common) for _ in range(max(1, runs // seeds))]
    start = time.process_time()
    summary(distinct[0][0], policy, distinct[0][1][0], "kernel")  # load (or compile) the loop once
    load_s = time.process_time() - start
    rows = []
    for shape, cases in (("one seed each", distinct), (f"{seeds} seeds each", study)):
        out = {}
        start = time.process_time()
        out["simpy"] = [summary(sc, policy, seed, "simpy") for sc, seeds_of in cases for seed in seeds_of]
        out["simpy_cpu_s"] = time.process_time() - start
        cpu = []
        for _ in range(REPEATS):  # each pass a fresh kernel: it draws every seed again
            kernel = Kernel()
            start = time.process_time()
            out["kernel"] = [s for sc, seeds_of in cases for s in kernel.summaries(sc, policy, seeds_of)]
            cpu.append(time.process_time() - start)
        out["kernel_cpu_s"] = min(cpu)
        rows.append(compare(policy, shape, cases, out, load_s))
    return rows


def compare(policy: str, shape: str, cases, out: dict, load_s: float) -> dict:
    from prunesim.kernel.differential import differences, summary_bytes

    mismatched = [(i, differences(a, b)[:3]) for i, (a, b) in enumerate(zip(out["simpy"], out["kernel"], strict=True))
                  if summary_bytes(a) != summary_bytes(b)]
    total = sum(sc.turns * len(seeds_of) for sc, seeds_of in cases)
    bare = min(bare_loop_cpu(total) for _ in range(REPEATS))
    return {
        "policy": policy, "shape": shape, "runs": len(out["kernel"]), "turns": total, "identical": not mismatched,
        "mismatched": mismatched[:5], "kernel_load_cpu_s": round(load_s, 2),
        "simpy_cpu_s": round(out["simpy_cpu_s"], 2), "kernel_cpu_s": round(out["kernel_cpu_s"], 2),
        "kernel_speedup": round(out["simpy_cpu_s"] / out["kernel_cpu_s"], 1),
        "kernel_turns_per_cpu_s": round(total / out["kernel_cpu_s"]),
        "bare_simpy_turns_per_cpu_s": round(total / bare),
        "kernel_ratio_to_bare_simpy": round(bare / out["kernel_cpu_s"], 3),
        "passes": sum(s["passes"] for s in out["kernel"]),
    }


def bench_calibrate(seeds: int, max_evals: int) -> dict:
    """A short `prunesim calibrate oscillation-40` (two of its parameters), SimPy only against the kernel for the
    naive variants (slack-gated stays on SimPy): the same fit, and the CPU of each."""
    from prunesim.io.scenario_files import load, replace
    from prunesim.kernel.choice import EngineChoice
    from prunesim.studies.calibrate import calibrate, parse_params
    from prunesim.studies.targets import load_targets

    base = load("oscillation-40")
    targets = load_targets("seed-000", base)
    params = parse_params("workload.tool_output.mean,decision.index_per_candidate", base, targets)
    work = {v.label: (replace(base, v.overrides) if v.overrides else base, v.policy) for v in targets.variants}
    fits, cpu = {}, {}
    for name, engine in (("simpy", None), ("auto", EngineChoice("auto", work, 10**12))):
        start = time.process_time()
        fits[name] = calibrate(base, targets, params, list(range(seeds)), max_evals, None, engine)
        cpu[name] = round(time.process_time() - start, 2)
    a, b = fits["simpy"], fits["auto"]
    same = a.fitted == b.fitted and a.objective == b.objective and repr(a.figures) == repr(b.figures)
    return {"candidates": a.evaluations, "seeds": seeds, "identical_fit": same, "simpy_cpu_s": cpu["simpy"],
            "kernel_cpu_s": cpu["auto"], "engines": EngineChoice("auto", work, 10**12).describe()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000, help="random scenarios per policy (default 1000)")
    ap.add_argument("--turns", type=int, default=60, help="turns per run (default 60)")
    ap.add_argument("--seeds", type=int, default=100, help="seeds of each scenario in the study shape (default 100)")
    ap.add_argument("--calibrate", type=int, default=0, metavar="SEEDS",
                    help="also a short calibration of oscillation-40 on this many seeds, on both engines")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from prunesim.kernel.choice import KERNEL_POLICIES
    rows = [row for policy in KERNEL_POLICIES for row in bench(policy, args.runs, args.turns, args.seeds)]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['policy']:6s} {r['runs']} runs ({r['shape']}), {r['turns']:,} turns, {r['passes']:,} passes: "
                  f"identical {r['identical']}; CPU simpy {r['simpy_cpu_s']} s, kernel {r['kernel_cpu_s']} s "
                  f"(x{r['kernel_speedup']}; loading {r['kernel_load_cpu_s']} s); kernel "
                  f"{r['kernel_turns_per_cpu_s']:,} turns/s = {r['kernel_ratio_to_bare_simpy']} of a bare SimPy "
                  f"loop ({r['bare_simpy_turns_per_cpu_s']:,} turns/s of two timeouts)")
    ok = all(r["identical"] for r in rows)
    if args.calibrate:
        cal = bench_calibrate(args.calibrate, 10)
        print(json.dumps(cal) if args.json else
              f"calibrate oscillation-40, 2 parameters, {cal['candidates']} candidates x {cal['seeds']} seeds: "
              f"identical fit {cal['identical_fit']}; CPU simpy {cal['simpy_cpu_s']} s, with the kernel "
              f"{cal['kernel_cpu_s']} s ({cal['engines']})")
        ok = ok and cal["identical_fit"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
