"""Verdicts from observables: the oscillation test and the band, from a trace and a ledger alone.

Hand-made traces carry no in-band label and no gate reason; the observers are
fed the same events with in-band labels that contradict the truth, and must
reach the same verdict as the pure function.
"""

import pytest
from prunesim.io import scenario_files as sc
from prunesim.model.events import PassRecord, RunEnd
from prunesim.model.spans import Span
from prunesim.observe import RunContext
from prunesim.observe.metrics import summarize
from prunesim.observe.metrics.passes import PassMetrics, gap_trend, is_oscillating, oscillation_clauses
from prunesim.observe.metrics.verdict import FIGURES, from_trace, ledger_rows
from prunesim.observe.metrics.window import WindowMetrics
from prunesim.observe.recorder import LEDGER_COLUMNS
from prunesim.runner import run_one

TRIGGER, BUDGET, TURNS = 22000, 24000, 30


def hand_made(start: int, per_turn: int, overhead: int, evicted: int, pass_every: int):
    """A run as a list of recorded points (time, turn, utilization) and a ledger of passes.

    Each turn adds ``per_turn`` tokens at once; when utilization reaches the
    trigger on a turn ``pass_every`` allows, a pass writes ``overhead`` tokens
    (index, then rationale, one second each) and then evicts ``evicted``.
    """
    points, ledger, t, u, last_pass = [], [], 0.0, start, -99
    for turn in range(1, TURNS + 1):
        t += 2.0
        u += per_turn
        points.append((t, turn, u))
        if u >= TRIGGER and turn - last_pass >= pass_every:
            index, rationale = overhead * 3 // 5, overhead - overhead * 3 // 5
            before = u
            for size in (index, rationale):
                t += 1.0
                u += size
                points.append((t, turn, u))
            peak = u
            t += 0.5
            u -= evicted
            points.append((t, turn, u))
            ledger.append({"turn": turn, "index": index, "rationale": rationale, "evicted": evicted,
                           "before": before, "peak": peak, "after": u})
            last_pass = turn
    return points, ledger, t + 1.0


def trace_of(points):
    return {"time_s": [p[0] for p in points], "turn": [p[1] for p in points], "utilization": [p[2] for p in points]}


# The seed's pass (index 600 + rationale 400, evicting 1,800: net 800) against 500 tokens a turn:
# a pass every other turn, pinned in a band about a pass's overhead wide.
OSCILLATES = dict(start=18000, per_turn=500, overhead=1000, evicted=1800, pass_every=1)
# The same arrivals, but each pass frees 6,000 tokens: the window drops far below the trigger
# and passes become rare.
DOES_NOT = dict(start=18000, per_turn=500, overhead=1000, evicted=7000, pass_every=1)


def observed(points, ledger, end, in_band_label: int) -> dict:
    """Feed the metrics observers the same events the engine would publish; in-band labels as given."""
    scenario = sc.replace(sc.load("oscillation-40"), {"turns": TURNS})
    run = RunContext(scenario, "naive", 0, TRIGGER)
    observers = [WindowMetrics(run), PassMetrics(run)]
    pending = list(ledger)
    previous = points[0][2] - 1
    for i, (time, turn, u) in enumerate(points):
        span = Span(i, "tool_output", abs(u - previous), turn)
        for obs in observers:
            if u >= previous:
                obs.on_span_appended(time, turn, span, u - previous, u, 0, 0)
            else:
                obs.on_span_removed(time, turn, "evict", span, previous - u, u, 0, 0)
        previous = u
        if pending and pending[0]["turn"] == turn and pending[0]["after"] == u:
            p = pending.pop(0)
            net = p["evicted"] - p["index"] - p["rationale"]
            record = PassRecord(len(ledger) - len(pending), turn, time, p["before"], p["peak"], u, BUDGET - p["before"],
                                10, 3, 3, p["index"], p["rationale"], p["evicted"], net, 0, 3, in_band_label)
            for obs in observers:
                obs.on_prune_pass(time, record)
    for obs in observers:
        obs.on_run_end(RunEnd(end, previous, 0, 0, False, None, None))
    return summarize(observers)


@pytest.mark.parametrize("case,expected", [(OSCILLATES, True), (DOES_NOT, False)], ids=["oscillates", "does-not"])
def test_hand_made_traces_get_the_same_verdict_both_ways(case, expected):
    points, ledger, end = hand_made(**case)
    pure = from_trace(trace_of(points), ledger, trigger=TRIGGER, budget=BUDGET, turns=TURNS, end_time=end)
    assert pure["oscillating"] is expected
    # In-band labels that say the opposite of the truth change nothing: the verdict never reads them.
    for label in (0, 1):
        live = observed(points, ledger, end, in_band_label=label)
        assert {k: live[k] for k in FIGURES} == pure
        assert live["in_band_passes"] == label * len(ledger)


def test_the_oscillating_hand_made_run_shows_the_seeds_signature():
    points, ledger, end = hand_made(**OSCILLATES)
    v = from_trace(trace_of(points), ledger, trigger=TRIGGER, budget=BUDGET, turns=TURNS, end_time=end)
    overhead = sum(p["index"] + p["rationale"] for p in ledger) / len(ledger)
    assert 0 <= v["band_width"] < 2 * overhead and v["pass_trend"] >= 0
    points, ledger, end = hand_made(**DOES_NOT)
    quiet = from_trace(trace_of(points), ledger, trigger=TRIGGER, budget=BUDGET, turns=TURNS, end_time=end)
    assert quiet["band_width"] > 2 * overhead  # what makes it not oscillate


def test_band_shares_and_quantiles_are_time_weighted():
    # 22,000 for 1 s, 23,000 for 3 s, 24,000 (the ceiling) for 1 s, 21,000 for 5 s.
    trace = {"time_s": [0, 10, 11, 14, 15], "turn": [1, 2, 2, 2, 3], "utilization": [10000, 22000, 23000, 24000,
                                                                                       21000]}
    v = from_trace(trace, [], trigger=TRIGGER, budget=BUDGET, turns=3, end_time=20)
    assert v["first_trigger_turn"] == 2 and v["band_floor"] == 21000 and v["band_width"] == 1000
    assert v["share_above_trigger"] == pytest.approx(0.4) and v["share_at_ceiling"] == pytest.approx(0.1)
    assert v["band_p10"] == 21000 and v["band_p90"] == 23000
    # No trigger: no band.
    v = from_trace({"time_s": [0, 1], "turn": [1, 2], "utilization": [100, 200]}, [], trigger=TRIGGER,
                   budget=BUDGET, turns=2)
    assert (v["first_trigger_turn"], v["band_floor"], v["band_p10"], v["oscillating"]) == (-1, -1, -1, False)


@pytest.mark.parametrize("policy", ["naive", "slack-gated", "recency", "tombstoned"])
def test_real_runs_agree_with_the_pure_function(oscillation, policy):
    for seed in range(1000, 1012):
        for scenario in (oscillation, sc.replace(oscillation, {"trigger": 20000})):
            r = run_one(scenario, policy, seed)
            s = r.summary
            v = from_trace(r.trace(), ledger_rows(r.ledger, LEDGER_COLUMNS), trigger=s["acting_trigger"],
                           budget=scenario.budget, turns=scenario.turns, end_time=s["sim_time_s"])
            for name in FIGURES:
                assert v[name] == pytest.approx(s[name], abs=1e-6), (policy, seed, name)


def test_the_verdict_needs_every_clause():
    base = dict(passes_after_trigger=8, band_width=900, mean_overhead=1000, pass_trend=0.0, sum_overhead=8000,
                sum_net=6000)
    assert is_oscillating(**base) and all(oscillation_clauses(**base).values())
    for change, clause in (({"passes_after_trigger": 2}, "osc_keeps_pruning"), ({"band_width": 2500}, "osc_tight_band"),
                           ({"band_width": -1}, "osc_tight_band"), ({"pass_trend": -0.5}, "osc_rate_holds"),
                           ({"sum_net": 8000}, "osc_overhead_above_net")):
        assert not is_oscillating(**(base | change)), change
        assert [k for k, v in oscillation_clauses(**(base | change)).items() if not v] == [clause]


def test_the_gap_trend_is_the_fitted_shortening_of_the_gaps():
    assert gap_trend([]) == gap_trend([5]) == gap_trend([5, 9]) == 0.0  # fewer than two gaps: no slope
    assert gap_trend([1, 5, 8, 10, 11]) == 3.0  # gaps 4, 3, 2, 1: one turn shorter each, three over the run
    assert gap_trend([1, 2, 4, 7]) == -2.0  # gaps 1, 2, 3: passes come less often
    assert gap_trend([2, 4, 6, 8, 10]) == 0.0
    assert gap_trend([1, 5, 6, 10]) == 0.0  # gaps 4, 1, 4: no linear trend
