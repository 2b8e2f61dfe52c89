"""The band and the oscillation verdict as a pure function of a recorded trace and ledger.

The metrics observers (:mod:`.window`, :mod:`.passes`) compute these figures
incrementally, as the run goes, without storing a trace. :func:`from_trace`
computes them again, independently, from what a run leaves on disk: the
utilization at every recorded point with its simulated time and turn
(``trace.csv``), and each pass's turn, index, rationale and evicted tokens
(``ledger.csv``). It reads nothing else: no in-band label, no gate reason. It
serves hand-made traces in tests, traces from other tools, and the check that
both computations agree.

>>> trace = {"time_s": [0, 1, 2, 3], "turn": [1, 2, 3, 4], "utilization": [100, 200, 150, 210]}
>>> v = from_trace(trace, [], trigger=200, budget=300, turns=4, end_time=4)
>>> v["first_trigger_turn"], v["band_floor"], v["share_above_trigger"], v["band_p10"], v["band_p90"]
(2, 150, 0.5, 150, 210)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .passes import gap_trend, half_of, is_pinned_under, oscillation_clauses
from .window import BAND_QUANTILES, QUANTILE_TOLERANCE, SHARE_DIGITS

FIGURES = (
    "first_trigger_turn",
    "band_floor",
    "band_width",
    "share_above_trigger",
    "share_at_ceiling",
    "band_p10",
    "band_p90",
    "passes_first_half",
    "passes_second_half",
    "pass_trend",
    "osc_keeps_pruning",
    "osc_tight_band",
    "osc_rate_holds",
    "osc_overhead_above_net",
    "oscillating",
    "pinned_under",
)


def from_trace(
    trace: Mapping[str, Sequence],
    ledger: Sequence[Mapping[str, float]],
    *,
    trigger: int,
    budget: int,
    turns: int,
    end_time: float | None = None,
) -> dict:
    """The figures of :data:`FIGURES`, from a trace and a ledger alone.

    ``trace`` has the columns ``time_s``, ``turn`` and ``utilization`` (one entry
    per recorded point, in order); ``ledger`` one mapping per pass with ``turn``,
    ``index``, ``rationale`` and ``evicted``. ``end_time`` is when the run ended
    (default: the last recorded time).
    """
    times = np.asarray(trace["time_s"], dtype=float)
    turn_of = np.asarray(trace["turn"], dtype=int)
    util = np.asarray(trace["utilization"], dtype=np.int64)
    end = float(times[-1]) if end_time is None and len(times) else float(end_time or 0.0)
    reached = np.flatnonzero(util >= trigger)
    out: dict = {}
    if len(reached) == 0:
        first = -1
        out.update(band_floor=-1, band_width=-1, share_above_trigger=0.0, share_at_ceiling=0.0,
                   band_p10=-1, band_p90=-1)
    else:
        i = int(reached[0])
        first = int(turn_of[i])
        levels = util[i:]
        # Each level holds until the next recorded point; the last until the end of the run.
        held = np.diff(np.append(times[i:], max(end, float(times[-1]))))
        total = float(held.sum())
        order = np.argsort(levels, kind="stable")
        if total > 0:
            weights, norm = held[order], total
        else:  # no time passed after the first trigger: every distinct level counts once
            _, firsts = np.unique(levels[order], return_index=True)
            weights = np.zeros(len(order))
            weights[firsts] = 1.0
            norm = float(len(firsts))
        cumulative = np.cumsum(weights)
        sorted_levels = levels[order]

        def quantile(q: float) -> int:
            return int(sorted_levels[int(np.searchsorted(cumulative, q * norm * (1 - QUANTILE_TOLERANCE)))])

        floor = int(levels.min())
        out.update(
            band_floor=floor,
            band_width=trigger - floor,
            share_above_trigger=round(float(held[levels > trigger].sum()) / total, SHARE_DIGITS) if total else 0.0,
            share_at_ceiling=round(float(held[levels >= budget].sum()) / total, SHARE_DIGITS) if total else 0.0,
            band_p10=quantile(BAND_QUANTILES[0]),
            band_p90=quantile(BAND_QUANTILES[1]),
        )
    out["first_trigger_turn"] = first
    halves = [half_of(int(p["turn"]), first, turns) for p in ledger]
    first_half, second_half = halves.count(0), halves.count(1)
    overhead = sum(int(p["index"]) + int(p["rationale"]) for p in ledger)
    net = sum(int(p["evicted"]) for p in ledger) - overhead
    n = len(ledger)
    trend = gap_trend(int(p["turn"]) for p, half in zip(ledger, halves, strict=True) if half is not None)
    clauses = oscillation_clauses(first_half + second_half, out["band_width"], overhead / n if n else 0.0, trend,
                                  overhead, net)
    out.update(passes_first_half=first_half, passes_second_half=second_half, pass_trend=trend, **clauses,
               oscillating=all(clauses.values()),
               pinned_under=is_pinned_under(trigger, out["band_p10"], out["band_p90"], overhead / n if n else 0.0))
    return {name: out[name] for name in FIGURES}


def ledger_rows(ledger: Sequence[Sequence], columns: Sequence[str]) -> list[dict]:
    """Ledger tuples (as a run's recorder keeps them) as mappings by column name."""
    return [dict(zip(columns, row, strict=True)) for row in ledger]
