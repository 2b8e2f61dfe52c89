"""The units of a study over every policy: a folder of transcripts, or a synthetic scenario over seeds.

Shared by ``leaderboard``, ``recommend`` and ``tune``: the same flags, the same
checks before any run, and the same handling of a file that fails.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from prunesim.cli.commands._common import (
    add_agent,
    add_prices,
    add_reaction,
    add_set,
    check_distinct,
    check_transcript_options,
    parse_seeds,
    scenario_sets,
    seed_arg,
)
from prunesim.errors import UserError
from prunesim.io import output
from prunesim.io.scenario_files import load, load_replay
from prunesim.model.scenario import Scenario
from prunesim.policies import parse_names
from prunesim.studies.pool import default_jobs
from prunesim.studies.transcript_replay import expand


def add_unit_arguments(p, policies: bool = True, jobs: bool = True) -> None:
    """DIR, --policies, --scenario, --seeds, --seed, --set, --prices, --reaction, --agent and (``jobs``) --jobs."""
    p.add_argument("dir", type=Path, nargs="?", help="a folder of transcripts and/or workload files (searched "
                   "recursively), or one such file; without it, --scenario is run over --seeds")
    if policies:
        p.add_argument("--policies", default="all", help="comma-separated policy names, or all (default: all)")
    p.add_argument("--scenario", help="the window and policy parameters (default for transcripts: transcript); "
                   "without DIR, the synthetic scenario to run")
    p.add_argument("--seeds", help="without DIR: the seeds, A:B (B excluded), a list or one integer "
                   "(default 0:20)")
    p.add_argument("--seed", type=seed_arg, help="with DIR: the seed of the policies' random streams")
    add_set(p)
    add_prices(p)
    add_reaction(p)
    add_agent(p)
    if not jobs:
        return
    p.add_argument("--jobs", type=int, default=None, help="processes that run the units, each transcript or seed "
                   "on one (default: every core; 1: this process only); the output is the same for any number")


@dataclass
class Inputs:
    policies: list[str]
    scenario: Scenario
    overrides: dict
    transcripts: bool
    seeds: list[int] | None
    jobs: int = 1  # processes that run the units (prunesim.studies.pool)


def read_inputs(args, command: str, outputs: tuple[str, ...], policies: list[str] | None = None) -> Inputs:
    """Every check a study makes before its first run; ``outputs``: the files it writes in ``args.out`` (none
    when it writes nothing)."""
    policies = parse_names(args.policies) if policies is None else policies
    jobs = default_jobs(args.jobs) if hasattr(args, "jobs") else 1
    out = getattr(args, "out", None)
    if out is not None:
        output.check_folder(out, "--out")
    transcripts = args.dir is not None
    if transcripts and args.seeds is not None:
        raise UserError("--seeds", args.seeds, "runs seeds of a synthetic --scenario; with transcripts (a folder or "
                                               "a file) use --seed for the policies' streams")
    if not transcripts and args.seed is not None:
        raise UserError("--seed", str(args.seed), "applies to transcripts (a folder or a file); without them, "
                                                  "use --seeds")
    overrides = scenario_sets(args)
    if transcripts:
        if not args.dir.exists():
            raise UserError(str(args.dir), None, "does not exist")
        files = expand([args.dir])  # a folder's transcripts, or the one file named
        if not files:
            raise UserError(str(args.dir), None, "holds no transcript or workload file (.json, .traj, .jsonl)")
        check_distinct(files)
        if out is not None:
            output.check_outside(out, [args.dir], "--out")
            for name in outputs:  # a transcript named as one of them would be replaced by it
                try:
                    output.check_not_input(out / name, files)
                except UserError:
                    raise UserError("--out", str(out), f"holds {name}, a transcript this {command} reads: "
                                    f"the {command}'s own {name} would replace it; give another folder") from None
        check_transcript_options(args)
        scenario = load_replay(args.scenario or "transcript", overrides, policies, prices=args.prices)
        return Inputs(policies, scenario, overrides, True, None, jobs)
    if args.scenario is None:
        raise UserError(command, None, "give a folder or file of transcripts, or --scenario to run seeds "
                                       "of a synthetic scenario")
    return Inputs(policies, load(args.scenario, overrides, policies, prices=args.prices), overrides, False,
                  parse_seeds(args.seeds or "0:20"), jobs)


def gather(units, keep=None) -> tuple[list, list[str]]:
    """The units that went through (each as ``keep(unit)`` gives it: what the command still needs of it) and the
    files that failed, each failure and warning said on stderr as it comes."""
    done, skipped = [], []
    for unit in units:
        if isinstance(unit, tuple):
            skipped.append(str(unit[0]))
            print(f"prunesim: error: {unit[1]}", file=sys.stderr)
            continue
        for warning in unit.warnings:
            print(f"prunesim: warning: {warning}", file=sys.stderr)
        done.append(unit if keep is None else keep(unit))
    return done, skipped


def partial(done: list, skipped: list[str], skip_bad: bool, command: str) -> bool:
    """Whether to write nothing (exit code 2), said in one line: a file failed without --skip-bad, or none went
    through. A result over part of a folder would read as one over all of it."""
    if skipped and (not skip_bad or not done):
        print(f"prunesim: {command}: {len(skipped)} file(s) failed; nothing written (fix or move them"
              + (")" if not done else ", or give --skip-bad to leave them out)"), file=sys.stderr)
        return True
    return False
