"""How long, how much memory and how much disk a long run will take, measured on short runs of itself.

A scenario of a billion turns runs for hours: ``prunesim run`` says so before it
starts (:data:`LARGE_TURNS` turns or more). The figures are not constants: the
same scenario, policy and seed run for two short lengths (:func:`pilots`: a
ten-thousandth of the run and three times that, from 1,000 to 30,000 turns), on
this machine, give the time a turn takes, the memory the run holds (its peak,
traced, at both lengths: what grows with the turns and what does not) and, for
a run written to files, the bytes its files take per turn. Each is extended in
a line from the shorter pilot through the longer one to the run's turns: a
rough figure (caches that fill early make the memory's line an upper bound; a
run whose passes grow rarer or denser as it goes runs faster or slower), which
the command says.
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

from prunesim.io.scenario_files import replace
from prunesim.model.scenario import Scenario
from prunesim.runner import run_one

LARGE_TURNS = 100_000  # below this a run takes seconds: nothing to announce


def pilots(turns: int) -> tuple[int, int]:
    """The turns of the two short runs a run of ``turns`` is measured on: long enough that what fills once (the
    window, the caches) weighs little in the line between them, short enough to take a minute at most."""
    first = min(max(turns // 10_000, 1_000), 10_000)
    return first, 3 * first


@dataclass(frozen=True)
class Estimate:
    turns: int
    pilots: tuple[int, int]  # the turns of the two short runs measured
    seconds: float  # for the whole run
    seconds_per_turn: float
    memory_measured: int  # bytes the longer pilot held at its peak
    memory: int  # what the line through the pilots' peaks reaches at the run's turns: at most this
    disk: int | None  # bytes of the files a run written as it goes leaves (None: nothing written)


def _linear(small: float, large: float, lengths: tuple[int, int], turns: int) -> float:
    """``small`` at ``lengths[0]`` turns, ``large`` at ``lengths[1]``: the line through both, at ``turns``."""
    slope = max(0.0, (large - small) / (lengths[1] - lengths[0]))
    return max(large, small + slope * (turns - lengths[0]))


def _pilot(scenario: Scenario, policy: str | None, seed: int | None, trace: str, files: bool) -> tuple[float, int, int]:
    """(seconds, peak bytes traced, bytes of files) of one short run, as the long one will run."""
    from prunesim.io.stream import stream_run

    with tempfile.TemporaryDirectory(prefix="prunesim-estimate-") as scratch:
        started = time.perf_counter()
        if files:
            stream_run(scenario, policy, seed, Path(scratch) / "run", trace)
        else:
            run_one(scenario, policy, seed, trace="none")
        seconds = time.perf_counter() - started
        disk = sum(p.stat().st_size for p in Path(scratch).rglob("*") if p.is_file())
    tracemalloc.start()
    try:
        run_one(scenario, policy, seed, trace="none")  # what a run holds, its files aside (they are streamed)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return seconds, peak, disk


def estimate(scenario: Scenario, policy: str | None, seed: int | None, trace: str = "none",
             files: bool = False) -> Estimate:
    """The run of ``scenario`` (its turns) under ``policy`` and ``seed``, measured on two short runs of it.

    ``files``: the run is written as it goes (``run --out``), with ``trace`` kept in trace.csv.
    """
    turns = scenario.turns
    lengths = pilots(turns)
    (t0, m0, d0), (t1, m1, d1) = [_pilot(replace(scenario, {"turns": n}, pin=False), policy, seed, trace, files)
                                  for n in lengths]
    per_turn = max(t1 - t0, 0.0) / (lengths[1] - lengths[0]) or t1 / lengths[1]
    return Estimate(turns, lengths, per_turn * turns, per_turn, int(m1), int(_linear(m0, m1, lengths, turns)),
                    int(_linear(d0, d1, lengths, turns)) if files else None)
