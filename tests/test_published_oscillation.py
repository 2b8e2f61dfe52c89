"""Seed 000's published figures, reproduced by the model over seeds 0..99.

The accepted ranges live in sim/replay.py beside the published values; the
model never reads them. Each test states how close the simulated median is.
"""

import numpy as np
import pytest
from prunesim.io import scenario_files as sc
from prunesim.runner import run_one
from prunesim.studies.replay import OSCILLATION, evaluate

SEEDS = range(100)


@pytest.fixture(scope="module")
def report():
    return OSCILLATION.run(list(SEEDS))


def naive_figures():
    return [f for f in OSCILLATION.figures if f.variant.startswith("naive")]


@pytest.mark.parametrize("figure", naive_figures(), ids=lambda f: f"{f.variant}:{f.metric}")
def test_naive_figure_is_reproduced(report, figure):
    result = next(r for r in report.figures if r.figure == figure)
    assert result.ok, (
        f"{figure.label}: published {figure.published}, simulated median {result.median:.3g} "
        f"not in [{figure.low}, {figure.high}]"
    )


def median(scenario, metric, policy="naive", seeds=SEEDS):
    values = [float(run_one(scenario, policy, s, trace="none").summary[metric]) for s in seeds]
    return float(np.median(values))


def share(scenario, metric, policy="naive", seeds=SEEDS):
    return float(np.mean([float(run_one(scenario, policy, s, trace="none").summary[metric]) > 0 for s in seeds]))


def test_a_longer_rationale_costs_more_and_pins_more_runs(oscillation):
    """Seed 000: the failure is the decision's own footprint. Grow it and the ratio and in-band passes grow."""
    longer = sc.replace(oscillation, {"decision.rationale_per_span": 150.0})
    assert median(longer, "overhead_ratio") > median(oscillation, "overhead_ratio")
    assert share(longer, "in_band_passes") > share(oscillation, "in_band_passes")


def test_more_slack_at_decision_time_removes_the_failure(oscillation):
    """Seed 000: trigger at 20k instead of 22k -> positive net on every pass, no oscillation."""
    slack = sc.replace(oscillation, {"trigger": 20000})
    assert median(slack, "net_negative_passes") == 0
    assert share(slack, "oscillating") < 0.25 < 0.5 <= share(oscillation, "oscillating")
    assert share(slack, "in_band_passes") < share(oscillation, "in_band_passes")


def test_a_soft_budget_has_no_cut_passes(oscillation):
    """Seed 000, condition 3: with a soft budget nothing is cut at the ceiling."""
    soft = sc.replace(oscillation, {"budget_kind": "soft"})
    assert median(soft, "cut_passes", seeds=range(30)) == 0
    assert median(oscillation, "cut_passes", seeds=range(30)) > 0


def test_later_passes_recycle_earlier_decision_artifacts(oscillation):
    """Condition 2 (self-eligibility): old indexes and rationales are candidates, and passes evict them."""
    recycled = 0
    for seed in range(10):
        t = run_one(oscillation, "naive", seed).trace()
        evicted_kinds = set(t["kind"][t["event"] == "evict"])
        recycled += bool(evicted_kinds & {"prune_index", "prune_rationale"})
    assert recycled >= 8


def test_oscillation_definition_both_ways():
    from prunesim.observe.metrics import is_oscillating

    assert is_oscillating(passes_after_trigger=8, band_width=900, mean_overhead=1000, in_band_passes=2)
    assert not is_oscillating(passes_after_trigger=8, band_width=900, mean_overhead=1000, in_band_passes=0)
    assert not is_oscillating(passes_after_trigger=8, band_width=2500, mean_overhead=1000, in_band_passes=2)
    assert not is_oscillating(passes_after_trigger=2, band_width=900, mean_overhead=1000, in_band_passes=2)
    assert not is_oscillating(passes_after_trigger=8, band_width=-1, mean_overhead=1000, in_band_passes=2)


def test_evaluate_reports_shares_for_yes_no_figures():
    from prunesim.studies.replay import Figure

    fig = Figure("v", "x", "oscillating", "yes", 0.5, 1.0, "share")
    res = evaluate(fig, [{"oscillating": True}, {"oscillating": False}, {"oscillating": True}])
    assert res.median == pytest.approx(2 / 3) and res.ok
