"""A long run says up front what it will take, and shows how far it has come.

``prunesim run`` of :data:`~prunesim.studies.estimate.LARGE_TURNS` turns or more
prints, before it starts, the time, memory and disk the run will take as two
short runs of it measured them (:mod:`prunesim.studies.estimate`), with a
warning when the memory or the disk is more than the machine has; then a
progress bar on a terminal, or a line at every tenth of the run otherwise.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from prunesim.cli.commands._common import machine_memory
from prunesim.errors import UserError
from prunesim.model.events import Observer
from prunesim.studies.estimate import LARGE_TURNS, Estimate, estimate, pilots

STEPS = 10  # lines of progress written when stderr is not a terminal: one at every tenth of the run,
QUIET_MAX = 600.0  # and one at least every ten minutes (a run of days would otherwise say nothing for hours)


def _duration(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:,.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:,.1f} hours"
    if seconds >= 120:
        return f"{seconds / 60:,.0f} minutes"
    return f"{seconds:,.0f} s"


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
    """A long run's progress on stderr: tqdm's bar on a terminal, else a line at every tenth of the run and at
    least every ten minutes."""

    def __init__(self, turns: int, stream=None):
        self.turns = turns
        self.stream = sys.stderr if stream is None else stream
        self.every = max(1, turns // 1000)
        self.bar = None
        self.next_line = turns / STEPS
        self.started = self.said = time.perf_counter()
        if self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=turns, unit="turn", unit_scale=True, file=self.stream, dynamic_ncols=True,
                            leave=False)

    def on_turn_end(self, time_s, turn, utilization, appended_total, removed_total) -> None:
        if turn % self.every:
            return
        if self.bar is not None:
            self.bar.update(turn - self.bar.n)
            return
        now = time.perf_counter()
        if turn < self.turns and (turn >= self.next_line or now - self.said >= QUIET_MAX):
            left = (now - self.started) * (self.turns - turn) / turn
            print(f"prunesim: run: {100 * turn / self.turns:.0f}% ({turn:,} of {self.turns:,} turns), about "
                  f"{_duration(left)} left", file=self.stream, flush=True)
            self.said = now
            while self.next_line <= turn:
                self.next_line += self.turns / STEPS

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
