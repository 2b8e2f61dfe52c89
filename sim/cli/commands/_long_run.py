"""A long run says up front what it will take, and shows how far it has come.

``prunesim run`` of :data:`~prunesim.studies.estimate.LARGE_TURNS` turns or more
prints, before it starts, the time, memory and disk the run will take as two
short runs of it measured them (:mod:`prunesim.studies.estimate`), with a
warning when the memory or the disk is more than the machine has; then a
progress bar on a terminal, or a line at every tenth of the run otherwise
(:mod:`prunesim.studies.progress`). ``sweep`` and ``compare`` do the same for
their runs in all (:func:`announce_study`: :data:`LARGE_STUDY_TURNS` turns, or a
run of ``LARGE_TURNS``), and ``run --workload`` for a workload of
``LARGE_TURNS`` turns (:func:`announce_workload`: its time is said once a
hundredth of it has run, as the replay itself measures it).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from prunesim.cli.commands._common import machine_memory
from prunesim.errors import UserError
from prunesim.model.events import Observer
from prunesim.studies.estimate import (
    LARGE_STUDY_TURNS,
    LARGE_TURNS,
    Estimate,
    estimate,
    estimate_study,
    pilots,
    study_turns,
)
from prunesim.studies.progress import Progress
from prunesim.studies.progress import duration as _duration

FIRST_SHARE = 0.01  # a long replay says its time once this share of its turns has run


def _size(n: float) -> str:
    for unit, scale in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n / 2**10:,.0f} KB"


def announce(scenario, policy: str | None, seed: int | None, trace: str, out: Path | None) -> bool:
    """Say what a long run will take (on stderr), before it starts; False when the run is not long."""
    if scenario.turns < LARGE_TURNS:
        return False
    short, long = pilots(scenario.turns)
    print(f"prunesim: run: {scenario.turns:,} turns: measuring what it will take on {short:,} and {long:,} turns "
          "of it first", file=sys.stderr, flush=True)
    try:
        est = estimate(scenario, policy, seed, trace, files=out is not None)
    except UserError as err:  # a short run of it is no scenario (a scripted event past its end): no figures
        print(f"prunesim: run: no estimate: {short:,} turns of it are not a scenario ({err.key or err.where}: "
              f"{err.problem}); the run goes on", file=sys.stderr, flush=True)
        return True
    print(f"prunesim: run: about {_duration(est.seconds)} on this machine ({est.seconds_per_turn * 1e6:,.0f} us a "
          f"turn); memory {_size(est.memory_measured)} at {long:,} turns, at most {_size(est.memory)} at the end "
          "(if it grew all run long as it did between the two)"
          + (f"; files in --out about {_size(est.disk)} (--trace {trace})" if est.disk is not None else ""),
          file=sys.stderr, flush=True)
    for line in _too_much(est, out):
        print(f"prunesim: warning: {line}", file=sys.stderr, flush=True)
    return True


def _too_much(est: Estimate, out: Path | None) -> list[str]:
    lines = []
    have = machine_memory()
    if have is not None and est.memory > have:
        lines.append(f"the run may need up to {_size(est.memory)} of memory; this machine has {_size(have)}")
    if est.disk is not None and out is not None:
        folder = next((p for p in (out, *out.resolve().parents) if p.exists()), None)
        if folder is not None:
            free = shutil.disk_usage(folder).free
            if est.disk > free:
                lines.append(f"--out: {out}: the run's files need about {_size(est.disk)}; {_size(free)} are free "
                             "there (--trace turns or none writes less)")
    return lines


class TurnProgress(Observer):
    """A long run's progress on stderr, by its turns (:class:`~prunesim.studies.progress.Progress`); with
    ``first`` (a replay nothing measured up front), a line of the time it will take once a hundredth has run."""

    def __init__(self, turns: int, stream=None, first: bool = False):
        self.turns = turns
        self.every = max(1, turns // 1000)
        self.progress = Progress(turns, "turn", "run", stream=stream)
        self.bar = self.progress.bar
        self.first = max(1, int(turns * FIRST_SHARE)) if first else None
        self.started = time.perf_counter()
        self.seen = 0

    def on_turn_end(self, time_s, turn, utilization, appended_total, removed_total) -> None:
        if turn % self.every:
            return
        if self.first is not None and turn >= self.first and turn < self.turns:
            spent = time.perf_counter() - self.started
            whole = _duration(spent * self.turns / turn)
            print(f"prunesim: run: turn {turn:,} of {self.turns:,} reached in {_duration(spent)}: about {whole} for "
                  "the whole replay at that pace", file=self.progress.stream, flush=True)
            self.first = None
        self.progress.update(turn - self.seen)
        self.seen = turn

    def close(self) -> None:
        self.progress.close()


def announce_workload(data) -> bool:
    """Say that a replay of a long workload will take a while (on stderr); False when it is not long. Its time is
    measured as it runs (TurnProgress with ``first``): a workload has no short run of itself to pilot."""
    if data.turns < LARGE_TURNS:
        return False
    print(f"prunesim: run: {data.name}: {data.turns:,} recorded turns; the time it takes is said once "
          f"{FIRST_SHARE:.0%} of them have run, then its progress", file=sys.stderr, flush=True)
    return True


def announce_study(command: str, groups, jobs: int = 1, note: str = "") -> bool:
    """Say what a study's runs will take (on stderr), before they start; False when they are few and short.

    ``groups``: (scenario, policy, seeds) of the runs left to run; ``jobs``: the runs at once; ``note``: what the
    measurement leaves out (the engine of a sweep's kernel runs)."""
    if not groups:
        return False
    turns, longest = study_turns(groups), max(sc.turns for sc, _, _ in groups)
    if turns < LARGE_STUDY_TURNS and longest < LARGE_TURNS:
        return False
    runs = sum(len(seeds) for _, _, seeds in groups)
    print(f"prunesim: {command}: {runs:,} runs, {turns:,} turns in all: measuring what they will take first",
          file=sys.stderr, flush=True)
    try:
        est = estimate_study(groups)
    except UserError as err:  # a short run of it is no scenario: no figures
        print(f"prunesim: {command}: no estimate: a short run of it is not a scenario ({err.key or err.where}: "
              f"{err.problem}); the runs go on", file=sys.stderr, flush=True)
        return True
    at_once = max(1, min(jobs, runs, os.cpu_count() or 1))
    workers = f" with {at_once} runs at once" if at_once > 1 else ""
    print(f"prunesim: {command}: about {_duration(est.seconds / at_once)} on this machine{workers} (timed on "
          f"{est.measured()}{note}); memory at most {_size(est.memory)} a run"
          + (f", {_size(est.memory * at_once)} for {at_once} at once" if at_once > 1 else ""),
          file=sys.stderr, flush=True)
    have = machine_memory()
    if have is not None and est.memory * at_once > have:
        print(f"prunesim: warning: the runs may need up to {_size(est.memory * at_once)} of memory; this machine has "
              f"{_size(have)}" + (" (fewer --jobs need less)" if at_once > 1 else ""), file=sys.stderr, flush=True)
    return True
