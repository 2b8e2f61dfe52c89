"""Benchmarks for sweeps and long runs (not part of the test run).

    python benchmarks/bench_sweep.py                 # everything (a few minutes on 2 cores)
    python benchmarks/bench_sweep.py --only sweep    # the reference sweep, --jobs 1 and 2
    python benchmarks/bench_sweep.py --only long     # 100k / 300k / 1M-turn runs and the SimPy floor
    python benchmarks/bench_sweep.py --only engines --repeats 3 [--against BEFORE/bin/python]
                                                     # the reference sweep on the SimPy engine and the kernel

The reference sweep is ``--grid trigger=16000:23500:250`` (31 points) x naive,
recency (and slack-gated when it is registered) x seeds 0:100 on
oscillation-40, run as a real ``python -m prunesim sweep`` command with ``--jobs 1``
and ``--jobs 2`` (wall seconds, and CPU seconds of the command and its workers);
parallel efficiency is T1 / (2 T2). Goals on a 2-core machine:
under 20 s with --jobs 2, efficiency >= 85%.

The long run is one run of N turns (``turns=N``, trace "none") in a fresh
process per N, reporting turns per second (of wall and of CPU time: on a
shared machine the CPU figure is the steadier) and the process's peak resident
memory (``ru_maxrss``), so flat memory shows as the same peak at 100k, 300k and
1M turns. In the same process, a bare SimPy loop schedules the same number of
events (two ``env.timeout`` per turn): the SimPy floor, and prunesim's event rate
as a fraction of it. Goals: >= 50,000 turns/s, peak < 300 MB and flat.

``--only engines`` runs the reference sweep as a whole command with ``--engine simpy`` and ``--engine
kernel``, ``--jobs 1`` and ``--jobs 2``, each ``--repeats`` times in turn (after one small sweep that loads
numba's cache), each in a fresh folder. A command's CPU seconds (user + system of it and its workers) and its
peak resident memory (the largest of its processes) come from ``os.wait4``; the least CPU of the repeats is
taken (the machine is shared: a run a neighbour slowed says nothing about the code). Between the sweeps the
benchmark's own process times a bare SimPy loop of 1,000,000 timeouts, the least of all its passes, and every
sweep's CPU is given as a multiple of it. Every ``runs.csv`` must be the same bytes, across engines, jobs and
repeats, and, with ``--against PYTHON`` (another install's interpreter: main's, say), as that install writes
it; the other install's sweeps are timed in the same rounds. The goal: the kernel's sweep at least 5 times
faster than the SimPy engine's, by CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def reference_policies() -> list[str]:
    from prunesim.policies import REGISTRY

    return ["naive", "recency"] + (["slack-gated"] if "slack-gated" in REGISTRY else [])


def sweep_command(out: Path, jobs: int, seeds: str) -> list[str]:
    return [
        sys.executable, "-m", "prunesim", "sweep", "oscillation-40", "--grid", "trigger=16000:23500:250",
        "--policies", ",".join(reference_policies()), "--seeds", seeds, "--jobs", str(jobs), "--quiet",
        "--out", str(out),
    ]


def bench_sweep(repeats: int, seeds: str) -> dict:
    times: dict[int, list[float]] = {1: [], 2: []}
    cpus: dict[int, list[float]] = {1: [], 2: []}  # user + system of the command and its workers
    outputs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(repeats):
            for jobs in (1, 2):
                out = Path(tmp) / f"j{jobs}-{rep}"
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run(sweep_command(out, jobs, seeds), cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
                times[jobs].append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus[jobs].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
                outputs[jobs] = (out / "runs.csv").read_bytes()
    t1, t2 = sorted(times[1])[len(times[1]) // 2], sorted(times[2])[len(times[2]) // 2]
    runs = outputs[1].count(b"\n") - 1
    return {
        "policies": reference_policies(),
        "runs": runs,
        "t1_s": round(t1, 2),
        "t2_s": round(t2, 2),
        "all_t1_s": [round(t, 2) for t in times[1]],
        "all_t2_s": [round(t, 2) for t in times[2]],
        "cpu_t1_s": round(sorted(cpus[1])[len(cpus[1]) // 2], 2),
        "cpu_t2_s": round(sorted(cpus[2])[len(cpus[2]) // 2], 2),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "efficiency": round(t1 / (2 * t2), 3),
        "runs_per_s_jobs2": round(runs / t2, 1),
        "identical_runs_csv": outputs[1] == outputs[2],
    }


ENGINE_JOBS = (("simpy", 1), ("kernel", 1), ("simpy", 2), ("kernel", 2))
BARE_TIMEOUTS = 1_000_000


def timed(cmd: list[str], python: str = sys.executable) -> dict:
    """Run ``python cmd`` (its output dropped); its wall seconds, CPU seconds with its workers', peak RSS in MB."""
    with tempfile.TemporaryFile() as err:  # (a file, not a pipe: a long error cannot block the child)
        start = time.perf_counter()
        proc = subprocess.Popen([python, *cmd[1:]], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # (a child's usage includes that of the workers it waited for)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.read().decode()}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}


def bare_loop_cpu(timeouts: int = BARE_TIMEOUTS) -> float:
    """CPU seconds of a bare SimPy loop of ``timeouts`` timeouts (two a turn), in this process."""
    import simpy

    env = simpy.Environment()
    env.process(bare_loop(env, timeouts // 2))
    start = time.process_time()
    env.run()
    return time.process_time() - start


def bench_engines(repeats: int, seeds: str, against: str | None) -> dict:
    """The reference sweep on both engines and both job counts (see the module docstring)."""
    installs = {"this": sys.executable, **({"against": against} if against else {})}
    with tempfile.TemporaryDirectory() as tmp:
        for name, python in installs.items():  # numba's cache: load (or compile) the kernel before any timing
            timed(sweep_command(Path(tmp) / f"warm-{name}", 1, "0:2") + ["--engine", "kernel"], python)
        runs: dict[tuple, list[dict]] = {}
        outputs: dict[tuple, bytes] = {}
        bare = [bare_loop_cpu()]
        loads = [os.getloadavg()[0]]
        for rep in range(repeats):
            for name, python in installs.items():
                for engine, jobs in ENGINE_JOBS:
                    out = Path(tmp) / f"{name}-{engine}-{jobs}-{rep}"
                    key = (name, engine, jobs)
                    runs.setdefault(key, []).append(
                        timed(sweep_command(out, jobs, seeds) + ["--engine", engine], python))
                    outputs[key + (rep,)] = (out / "runs.csv").read_bytes()
                    loads.append(os.getloadavg()[0])
            bare.append(bare_loop_cpu())
    loop = min(bare)
    rows = []
    for (name, engine, jobs), times in runs.items():
        best = min(times, key=lambda t: t["cpu_s"])
        rows.append({"install": name, "engine": engine, "jobs": jobs, "cpu_s": round(best["cpu_s"], 2),
                     "all_cpu_s": [round(t["cpu_s"], 2) for t in times], "wall_s": round(best["wall_s"], 2),
                     "peak_mb": round(max(t["peak_mb"] for t in times), 1), "loops": round(best["cpu_s"] / loop, 2)})
    cpu = {(r["install"], r["engine"], r["jobs"]): r["cpu_s"] for r in rows}
    speedups = {f"{name} --jobs {jobs}": round(cpu[(name, "simpy", jobs)] / cpu[(name, "kernel", jobs)], 2)
                for name in installs for jobs in (1, 2)}
    return {"runs": next(iter(outputs.values())).count(b"\n") - 1, "policies": reference_policies(),
            "bare_loop_cpu_s": round(loop, 3), "bare_loop_timeouts": BARE_TIMEOUTS, "rows": rows,
            "kernel_speedup_cpu": speedups, "identical_runs_csv": len(set(outputs.values())) == 1,
            "load_average": [round(min(loads), 1), round(max(loads), 1)]}


def bare_loop(env, n: int):
    """The bare SimPy loop every rate is measured against: two timeouts a turn, nothing else."""
    for _ in range(n):
        yield env.timeout(1.0)
        yield env.timeout(1.0)


def long_run_child(turns: int, policy: str) -> dict:
    """In a fresh process: one prunesim run of ``turns`` turns, then the bare SimPy loop."""
    import simpy
    from prunesim.io import scenario_files as scenario_mod
    from prunesim.runner import run_one

    sc = scenario_mod.load("oscillation-40", {"turns": turns})
    start, cpu_start = time.perf_counter(), time.process_time()
    result = run_one(sc, policy, 0, trace="none")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux

    env = simpy.Environment()
    env.process(bare_loop(env, turns))
    start, cpu_start = time.perf_counter(), time.process_time()
    env.run()
    floor, cpu_floor = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "turns": turns,
        "policy": policy,
        "seconds": round(elapsed, 3),
        "turns_per_s": round(turns / elapsed),
        "cpu_turns_per_s": round(turns / cpu),
        "passes": result.summary["passes"],
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "simpy_floor_s": round(floor, 3),
        "simpy_floor_turns_per_s": round(turns / floor),
        "ratio_to_simpy_floor": round(floor / elapsed, 3),
        "cpu_ratio_to_simpy_floor": round(cpu_floor / cpu, 3),
    }


def bench_long(sizes: list[int], policies: list[str]) -> list[dict]:
    rows = []
    for policy in policies:
        for turns in sizes:
            cmd = [sys.executable, __file__, "--child", str(turns), "--policy", policy]
            done = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
            rows.append(json.loads(done.stdout))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("sweep", "long", "engines"))
    ap.add_argument("--repeats", type=int, default=1, help="reference sweep repetitions (median quoted)")
    ap.add_argument("--seeds", default="0:100", help="seeds of the reference sweep")
    ap.add_argument("--sizes", default="100000,300000,1000000", help="long-run lengths in turns")
    ap.add_argument("--policies", default="naive,recency,noop", help="policies of the long runs")
    ap.add_argument("--against", metavar="PYTHON",
                    help="with --only engines: another install's interpreter, timed beside this one; its "
                    "runs.csv must be the same bytes")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--policy", default="naive", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(long_run_child(args.child, args.policy)))
        return 0
    report: dict = {"cpus": os.cpu_count()}
    if args.only in (None, "sweep"):
        report["sweep"] = s = bench_sweep(args.repeats, args.seeds)
        if not args.json:
            print(f"reference sweep: {s['runs']} runs ({', '.join(s['policies'])}); --jobs 1 {s['t1_s']} s, "
                  f"--jobs 2 {s['t2_s']} s ({s['runs_per_s_jobs2']} runs/s); efficiency T1/(2 T2) = "
                  f"{100 * s['efficiency']:.1f}%; runs.csv identical: {s['identical_runs_csv']}")
    if args.only == "engines":
        report["engines"] = e = bench_engines(args.repeats, args.seeds, args.against)
        if not args.json:
            print(f"reference sweep: {e['runs']} runs ({', '.join(e['policies'])}); bare SimPy loop of "
                  f"{e['bare_loop_timeouts']:,} timeouts {e['bare_loop_cpu_s']} s CPU; load average "
                  f"{e['load_average'][0]}-{e['load_average'][1]}")
            for r in e["rows"]:
                print(f"  {r['install']:8s} --engine {r['engine']:6s} --jobs {r['jobs']}: CPU {r['cpu_s']:6.2f} s "
                      f"= {r['loops']:5.2f} loops (all {r['all_cpu_s']}), wall {r['wall_s']:.2f} s, "
                      f"peak {r['peak_mb']} MB")
            print("  kernel faster than SimPy by CPU: "
                  + ", ".join(f"{k} x{v}" for k, v in e["kernel_speedup_cpu"].items())
                  + f"; runs.csv identical across all: {e['identical_runs_csv']}")
    if args.only in (None, "long"):
        sizes = [int(x) for x in args.sizes.split(",")]
        report["long"] = rows = bench_long(sizes, args.policies.split(","))
        if not args.json:
            print(f"{'policy':9s} {'turns':>9s} {'seconds':>8s} {'turns/s':>9s} {'peak MB':>8s} "
                  f"{'SimPy floor turns/s':>20s} {'prunesim/floor':>15s}")
            for r in rows:
                print(f"{r['policy']:9s} {r['turns']:>9,d} {r['seconds']:>8.2f} {r['turns_per_s']:>9,d} "
                      f"{r['peak_rss_mb']:>8.1f} {r['simpy_floor_turns_per_s']:>20,d} "
                      f"{r['ratio_to_simpy_floor']:>15.3f}")
    if args.json:
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
