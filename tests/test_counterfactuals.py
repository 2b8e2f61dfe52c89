"""The seed's condition-of-validity experiments as replay rows (sim/studies/counterfactuals.py)."""

import numpy as np
import pytest
from prunesim.io import scenario_files as sc
from prunesim.model.spans import Span
from prunesim.observe.metrics.intervals import wilson
from prunesim.policies.base import WindowView
from prunesim.runner import run_one
from prunesim.studies import counterfactuals as cf


def kinds_left(result):
    trace = result.trace()
    return [k for k, d in zip(trace["kind"].tolist(), trace["delta"].tolist(), strict=True) if d > 0]


def test_a_logged_rationale_never_enters_the_window(oscillation):
    r = run_one(oscillation, cf.NaiveLogged, 1000)
    assert r.summary["passes"] > 0
    assert not {"prune_index", "prune_rationale"} & set(kinds_left(r))
    assert {"prune_rationale"} <= set(kinds_left(run_one(oscillation, "naive", 1000)))


def test_a_protected_rationale_stays_in_the_window_and_is_never_evicted(oscillation):
    r = run_one(oscillation, cf.NaiveProtected, 1000)
    trace = r.trace()
    evicted = [k for k, e in zip(trace["kind"].tolist(), trace["event"].tolist(), strict=True)
               if e == "evict" and k in ("prune_index", "prune_rationale")]
    assert r.summary["passes"] > 0 and evicted == []


def test_the_assumed_yield_names_more_when_decided_with_more_room(oscillation):
    spans = [Span(i, "tool_output", 500, 1, stale_at=2) for i in range(1, 41)]
    oscillation = sc.replace(oscillation, {"trigger": 19000})  # both views are at or above the trigger
    freed = {}
    for headroom in (2000, 4000):
        policy = cf.NaiveHeadroomYield(oscillation, np.random.default_rng(0))
        view = WindowView(turn=30, utilization=oscillation.budget - headroom, budget=oscillation.budget,
                          size=oscillation.window, hard=True, spans=spans)
        (action,) = policy.decide(view)
        freed[headroom] = len(action.selected) * 500
    assert freed[2000] >= oscillation.decision.reclaim_target  # at the seed's own headroom: the scenario's target
    assert freed[4000] >= 2 * oscillation.decision.reclaim_target > freed[2000]


def test_a_does_not_hold_claim_is_judged_by_the_rule_of_a_published_no():
    case = cf.cases(sc.load("oscillation-40"))[0]
    runs = [{"oscillating": i < 15, "overhead_ratio": 1.0, "passes": 5, "net_negative_passes": 0,
             "truncated_tokens": 0} for i in range(100)]
    for r in runs:
        r.update(osc_keeps_pruning=True, osc_tight_band=r["oscillating"], osc_rate_holds=True,
                 osc_overhead_above_net=True)
    assert cf._summarize(case, runs, {}).agrees  # 15% of runs: at most 15%
    runs[15].update(oscillating=True, osc_tight_band=True)
    result = cf._summarize(case, runs, {})
    assert not result.agrees and result.interval == wilson(16, 100)
    # the reason is the runs': how many oscillate, and which clause holds how often
    assert result.as_dict()["why"] == ("16 of 100 runs oscillate (claim: at most 15%); clauses: >= 3 passes 1.00, "
                                       "tight band 0.16, trend >= 0 1.00, overhead > net 1.00")
    naive = [dict(r, oscillating=i < 60) for i, r in enumerate(runs)]
    why = cf._summarize(case, runs, {"naive @22k": naive}).why
    assert "against naive @22k on the same seeds -0.44 [" in why


@pytest.fixture(scope="module")
def report():
    from prunesim.studies.replay import OSCILLATION

    return OSCILLATION.run(list(range(1000, 1020)))


def test_the_replay_carries_every_counterfactual_in_its_json(report):
    rows = report.as_dict()["counterfactuals"]
    assert [r["counterfactual"] for r in rows] == [c.label for c in cf.cases(sc.load("oscillation-40"))]
    for r in rows:
        low, high = r["oscillating_interval"]
        assert low <= r["oscillating_share"] <= high and r["runs"] == 20
    assert [r["assumption"] for r in rows].count(True) == 2 and [r["bound"] for r in rows].count(True) == 1
    oracle = next(r for r in rows if r["bound"])
    assert oracle["why"].startswith("against the estimating gate on the same seeds: median passes")
