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


LARGE_STUDY_TURNS = 10 * LARGE_TURNS  # turns in all of a study's runs past which it says what it will take
SAMPLE_SECONDS = 1.0  # a study of short runs is timed on its own first runs, for about this long


@dataclass(frozen=True)
class StudyEstimate:
    runs: int
    turns: int  # in all the runs
    seconds: float  # for all the runs, one after the other (a caller with workers divides)
    memory: int  # bytes the largest run holds at its peak (at most: the line through its pilots, when long)
    sampled: int  # runs of the study timed, as it runs them (short runs)
    piloted: int  # short runs of a long run timed in its place (2 per policy whose longest run is long)

    def measured(self) -> str:
        """What the figures were measured on, in words."""
        said = [f"{self.sampled} of its runs"] if self.sampled else []
        return " and ".join(said + ([f"{self.piloted} short runs of its longest"] if self.piloted else []))


def study_turns(groups: list[tuple[Scenario, str | None, list[int]]]) -> int:
    """Turns in all the runs of ``groups``: (scenario, policy, seeds) each."""
    return sum(sc.turns * len(seeds) for sc, _, seeds in groups)


def estimate_study(groups: list[tuple[Scenario, str | None, list[int]]]) -> StudyEstimate:
    """Many runs, measured per policy on its group of the most turns: a run of :data:`LARGE_TURNS` turns or more
    by :func:`estimate` (two short pilots), shorter runs by timing that group's first seeds for about
    :data:`SAMPLE_SECONDS`; each group's runs take the seconds a turn took, times their turns."""
    per_turn: dict[str | None, float] = {}
    memory, sampled, piloted = 0, 0, 0
    for policy in dict.fromkeys(p for _, p, _ in groups):
        sc, _, seeds = max((g for g in groups if g[1] == policy), key=lambda g: g[0].turns)
        if sc.turns >= LARGE_TURNS:
            est = estimate(sc, policy, seeds[0])
            per_turn[policy], peak = est.seconds_per_turn, est.memory
            piloted += 2
        else:
            per_turn[policy], peak, n = _sample(sc, policy, seeds)
            sampled += n
        memory = max(memory, peak)
    seconds = sum(per_turn[p] * sc.turns * len(seeds) for sc, p, seeds in groups)
    return StudyEstimate(sum(len(s) for _, _, s in groups), study_turns(groups), seconds, memory, sampled, piloted)


def _sample(scenario: Scenario, policy: str | None, seeds: list[int]) -> tuple[float, int, int]:
    """(seconds a turn took, peak bytes of one run, runs timed): the first seeds, one after another, until
    :data:`SAMPLE_SECONDS` have passed (their own seeds: the study's first runs, as it will run them)."""
    started, n = time.perf_counter(), 0
    for seed in seeds:
        run_one(scenario, policy, seed, trace="none")
        n += 1
        if time.perf_counter() - started >= SAMPLE_SECONDS:
            break
    per_turn = (time.perf_counter() - started) / (n * max(scenario.turns, 1))
    tracemalloc.start()
    try:
        run_one(scenario, policy, seeds[0], trace="none")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return per_turn, peak, n
