"""prunesim sweep: a scenario over a parameter grid x policies x seeds, in parallel and resumable."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from prunesim.cli.commands._common import (
    add_agent,
    add_engine,
    add_set,
    out_arg,
    parse_seeds,
    scenario_sets,
    warn_kernel_memory,
    warn_memory,
)
from prunesim.cli.commands._long_run import announce_study
from prunesim.errors import UserError
from prunesim.kernel.choice import record_bytes
from prunesim.policies import parse_names
from prunesim.studies.grid import inert_axes, parse_axes
from prunesim.studies.sweep import (
    EXECUTORS,
    RUNS_FILE,
    choose_engines,
    describe_engines,
    execute,
    finished_runs,
    plan_sweep,
)


def register(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a scenario over a parameter grid, policies and seeds (parallel, resumable)",
        description="Run every (grid point, policy, seed); rows go to OUT/runs.csv as runs finish. "
        "Run the same command again to resume. See docs/sweeps.md.",
    )
    p.add_argument("scenario", help="a scenario file or the name of a shipped scenario")
    p.add_argument(
        "--grid",
        action="append",
        metavar="NAME=VALUES",
        help="a scenario parameter (dotted names too) and its values: a range A:B:STEP (both ends included "
        "when the step lands on them) or a list a,b,c; repeatable (the cartesian product is run). "
        "POLICY:NAME=VALUES is an axis of that policy's runs only (slack-gated:gate.headroom=2000:6000:1000)",
    )
    p.add_argument("--policies", help="comma-separated policy names, or all (default: the scenario's policy)")
    p.add_argument("--seeds", default="0:100", help="seeds as A:B (B excluded), a list, or one integer (default 0:100)")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: every core)")
    add_set(p)
    add_agent(p)
    p.add_argument("--out", type=_out_dir, required=True, help="the sweep directory (runs.csv, sweep.json)")
    p.add_argument("--traces", action="store_true", help="also write each run's files to OUT/traces/<run_id>/")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--executor", default="local", help=f"one of: {', '.join(EXECUTORS)} (default local)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="a running Dask scheduler (with --executor dask)")
    add_engine(p)
    p.set_defaults(func=main)


def main(args) -> int:
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        raise UserError("--jobs", str(args.jobs), "must be at least 1")
    policies = parse_names(args.policies) if args.policies is not None else None
    plan = plan_sweep(
        args.scenario,
        parse_axes(args.grid),
        policies,
        parse_seeds(args.seeds),
        scenario_sets(args),
    )
    for line in inert_axes(plan.axes, plan.policies):  # before any run: an axis that moves nothing is a mistake
        print(line, file=sys.stderr)
    warn_memory(max(sc.turns for sc in plan.scenarios), recorded=args.traces, runs_at_once=jobs)
    if args.engine != "simpy":  # which engine runs what, before any run (execute chooses the same)
        done = finished_runs(args.out)  # a resumed sweep weighs what is left to run
        engines = choose_engines(plan, args.engine, args.traces, done)
        print(f"sweep: {describe_engines(plan, engines, args.traces)}", file=sys.stderr, flush=True)
        # the kernel holds each run's whole record, so that its workers at once need that many times it (on this
        # machine: a --scheduler's workers are elsewhere)
        on_kernel = [plan.scenarios[point] for (point, _), engine in engines.items() if engine == "kernel"]
        if on_kernel and not args.scheduler:
            largest = max(on_kernel, key=record_bytes)
            kernel_runs = sum(engines.get((r.point, r.policy)) == "kernel" for r in plan.runs if r.run_id not in done)
            warn_kernel_memory(record_bytes(largest), largest.turns, min(jobs, kernel_runs))
    announced = _announce(plan, args, jobs)
    stats = execute(
        plan,
        args.out,
        jobs=jobs,
        executor=args.executor,
        scheduler=args.scheduler,
        traces=args.traces,
        progress=("lines" if announced else True) if not args.quiet else False,
        engine=args.engine,
    )
    state = "complete" if stats.complete else "incomplete"
    per_policy = {p: sum(1 for r in plan.runs if r.policy == p) // len(plan.seeds) for p in plan.policies}
    if len(set(per_policy.values())) == 1:
        points = _count(next(iter(per_policy.values())), "grid point")
        shape = " x ".join((points, _count(len(plan.policies), "policy"), _count(len(plan.seeds), "seed")))
    else:  # policy-qualified axes: each policy has its own number of points
        points = ", ".join(f"{p} {n}" for p, n in per_policy.items())
        shape = f"grid points per policy: {points}; x {_count(len(plan.seeds), 'seed')}"
    print(
        f"sweep {args.out}: {stats.total} runs ({shape}), {stats.ran} run now, {stats.already_done} already done, "
        f"{stats.seconds:.1f} s, {state}; rows in {args.out / RUNS_FILE}"
    )
    return 0


def _announce(plan, args, jobs: int) -> bool:
    """A sweep whose runs left are many or long says first what they will take (_long_run); its progress is then
    written as lines when stderr is no terminal."""
    if args.quiet:
        return False
    done = finished_runs(args.out)
    left: dict[tuple[int, str], list[int]] = {}
    for spec in plan.runs:
        if spec.run_id not in done:
            left.setdefault((spec.point, spec.policy), []).append(spec.seed)
    groups = [(plan.scenarios[point], policy, seeds) for (point, policy), seeds in left.items()]
    note = "" if args.engine == "simpy" else ", on the SimPy engine: runs the kernel takes are faster"
    at_once = jobs if not args.scheduler else 1  # a --scheduler's workers are elsewhere, as many as it has
    return announce_study("sweep", groups, at_once, note)


def _out_dir(text: str) -> Path:
    return Path(out_arg(text))


def _count(n: int, word: str) -> str:
    plural = word[:-1] + "ies" if word.endswith("y") else word + "s"
    return f"{n} {word if n == 1 else plural}"
