"""The commands users wait on, whole, before and after a change (a benchmark, not a test).

    python benchmarks/bench_commands.py                                  # every command, this install
    python benchmarks/bench_commands.py --against BEFORE/bin/python      # and the code before a change
    python benchmarks/bench_commands.py --only list,leaderboard --repeat 5

Each command runs as ``python -m prunesim ...`` in a fresh process, so its
start-up (imports, argument parsing) is counted as a user meets it. With
``--against``, the other install's interpreter runs the same command in turn
with this one (A B A B ...), so that both meet the same load, and every
output it writes to stdout or to its ``--out`` folder must be byte-identical
between the two (the line naming the folder aside); the script stops at the
first difference. CPU seconds are user + system time of the finished child
(``RUSAGE_CHILDREN``), the steadier figure on a shared machine; wall seconds
are printed beside them. The median of ``--repeat`` runs is given.

After each command's runs, a fresh process of this install runs a bare SimPy
loop of 1,000,000 timeouts three times (the fastest taken), and the command's
median CPU time is given as a ratio to it, the figure issue 39's goals are set
in (``replay long-session`` at most 12 times the loop).

Goals (issue "speed where users wait", on 2 cores): ``replay long-session``
under 15 s; ``leaderboard`` on the 42 runs of ``../shared/traces/mini-swe-agent-dev``
at least a third faster than before; ``list`` under 0.3 s of CPU.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACES = Path(os.environ.get("PRUNESIM_TRACES", ROOT.parent / "shared" / "traces"))
COMMANDS = {
    "list": (["list"], "< 0.3 s CPU"),
    "leaderboard": (["leaderboard", str(TRACES / "mini-swe-agent-dev"), "--out", "{out}"], "1/3 faster"),
    "replay-oscillation": (["replay", "oscillation"], ""),
    "replay-long-session": (["replay", "long-session"], "< 15 s"),
}


def run(python: str, args: list[str]) -> tuple[float, float, dict[str, bytes]]:
    """(CPU s, wall s, outputs) of one fresh ``python -m prunesim ARGS``."""
    with tempfile.TemporaryDirectory(prefix="prunesim-bench-") as tmp:
        out = Path(tmp) / "out"
        argv = [a.replace("{out}", str(out)) for a in args]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([python, "-m", "prunesim", *argv], capture_output=True, cwd=tmp)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode:
            sys.exit(f"{python} -m prunesim {' '.join(argv)}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
        outputs = {"stdout": done.stdout.replace(str(out).encode(), b"OUT")}
        if out.is_dir():
            outputs.update({p.name: p.read_bytes() for p in sorted(out.iterdir())})
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return cpu, wall, outputs


LOOP = 1_000_000
LOOP_CODE = f"""
import resource, simpy
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
best = None
for _ in range(3):
    env = simpy.Environment()
    def proc(env=env):
        for _ in range({LOOP}):
            yield env.timeout(1.0)
    env.process(proc())
    start = cpu()
    env.run()
    took = cpu() - start
    best = took if best is None else min(best, took)
print(best)
"""


def loop_cpu(python: str) -> float:
    """CPU seconds of the fastest of three bare SimPy loops of LOOP timeouts, in a fresh process."""
    done = subprocess.run([python, "-c", LOOP_CODE], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(COMMANDS), help=f"comma-separated, of: {', '.join(COMMANDS)}")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", help="another install's python: the code before a change")
    args = ap.parse_args()
    names = args.only.split(",")
    unknown = [n for n in names if n not in COMMANDS]
    if unknown:
        ap.error(f"--only: unknown {', '.join(unknown)}")
    pythons = {"after": sys.executable, **({"before": args.against} if args.against else {})}
    print("| command | goal | " + " | ".join(f"{k} CPU s | {k} wall s" for k in pythons)
          + " | SimPy loop CPU s | after / loop" + (" | after / before (CPU) | outputs |" if args.against else " |"))
    print("| --- | --- |" + " ---: | ---: |" * len(pythons) + " ---: | ---: |"
          + (" ---: | --- |" if args.against else ""))
    for name in names:
        argv, goal = COMMANDS[name]
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in pythons}
        outputs: dict[str, dict[str, bytes]] = {}
        for _ in range(args.repeat):
            for label, python in pythons.items():
                cpu, wall, out = run(python, argv)
                times[label].append((cpu, wall))
                outputs.setdefault(label, out)
        cells = []
        medians = {}
        for label in pythons:
            cpu = statistics.median(c for c, _ in times[label])
            wall = statistics.median(w for _, w in times[label])
            medians[label] = cpu
            cells += [f"{cpu:.2f}", f"{wall:.2f}"]
        line = f"| {' '.join(argv[:2]) if name != 'leaderboard' else 'leaderboard mini-swe-agent-dev'} | {goal} | "
        loop = loop_cpu(sys.executable)
        cells += [f"{loop:.2f}", f"{medians['after'] / loop:.1f}x"]
        line += " | ".join(cells)
        if args.against:
            same = outputs["after"] == outputs["before"]
            line += f" | {medians['after'] / medians['before']:.3f} | {'identical' if same else 'DIFFER'} |"
            print(line, flush=True)
            if not same:
                differ = sorted(k for k in outputs["after"].keys() | outputs["before"].keys()
                                if outputs["after"].get(k) != outputs["before"].get(k))
                print(f"outputs differ: {', '.join(differ)}")
                return 1
        else:
            print(line + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
