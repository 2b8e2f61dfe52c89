"""Seed 000's published figures, judged on seeds the scenario was never fitted on.

`oscillation-40` was fitted on seeds 0..99 (its header records the command); the
replay's default seeds, 1000..1099, are the ones judged here. The accepted
ranges follow from one rule (sim/studies/targets.py, docs/model.md). Where the
model disagrees with the seed, the disagreement is asserted and documented
(docs/model.md, "Where the model disagrees"): if the model starts to agree,
this test fails, and the documentation must change with it.
"""

from pathlib import Path

import numpy as np
import pytest
from prunesim.cli import main
from prunesim.io import scenario_files as sc
from prunesim.runner import run_one
from prunesim.studies.replay import CALIBRATION_SEEDS, OSCILLATION, REPLAY_SEEDS

SEEDS = REPLAY_SEEDS
MODEL_MD = Path(__file__).resolve().parents[1] / "docs" / "model.md"

# (variant, metric) of every figure outside its range on seeds 1000..1099, each explained in docs/model.md.
KNOWN_DISAGREEMENTS = {
    ("naive @22k", "oscillating"),
    ("naive @20k", "oscillating"),
    ("slack-gated", "passes"),
}


@pytest.fixture(scope="module")
def report():
    return OSCILLATION.run(list(SEEDS))


def judged():
    return [f for f in OSCILLATION.figures if f.judged]


def test_replay_seeds_are_disjoint_from_the_calibration_seeds():
    assert not set(SEEDS) & set(CALIBRATION_SEEDS)
    header = sc.resolve_path("oscillation-40").read_text().split("\n", 2)[1]
    assert "--seeds 0:100" in header  # the seeds the shipped scenario was fitted on


@pytest.mark.parametrize("figure", judged(), ids=lambda f: f"{f.variant}:{f.metric}")
def test_each_figure_is_in_range_or_a_documented_disagreement(report, figure):
    result = next(r for r in report.figures if r.figure == figure)
    if (figure.variant, figure.metric) in KNOWN_DISAGREEMENTS:
        assert not result.ok, f"{figure.label} now agrees with the seed: update docs/model.md and this list"
    else:
        assert result.ok, (
            f"{figure.label}: published {figure.published}, simulated {result.median:.3g} "
            f"not in {figure.accepted_text()}"
        )


def test_every_disagreement_is_explained_and_the_replay_says_so(report, capsys):
    section = MODEL_MD.read_text().split("## Where the model disagrees", 1)[1].split("\n## ", 1)[0]
    for variant, metric in KNOWN_DISAGREEMENTS:
        assert f"`{metric}`" in section and variant in section
    assert main(["replay", "oscillation"]) == 0
    out = capsys.readouterr().out
    misses = [ln for ln in out.splitlines() if ln.endswith("  NO")]
    assert len(misses) == len(KNOWN_DISAGREEMENTS)
    assert f"{len(KNOWN_DISAGREEMENTS)} of {len(judged())} figures outside their range" in out


def median(scenario, metric, policy="naive", seeds=SEEDS):
    values = [float(run_one(scenario, policy, s, trace="none").summary[metric]) for s in seeds]
    return float(np.median(values))


def share(scenario, metric, policy="naive", seeds=SEEDS):
    return float(np.mean([float(run_one(scenario, policy, s, trace="none").summary[metric]) > 0 for s in seeds]))


def test_a_longer_rationale_costs_more(oscillation):
    """Seed 000: the failure is the decision's own footprint. Grow it and the ratio and the net-negative runs grow."""
    longer = sc.replace(oscillation, {"decision.rationale_per_span": 2 * oscillation.decision.rationale_per_span})
    assert median(longer, "overhead_ratio") > median(oscillation, "overhead_ratio")
    assert share(longer, "net_negative_passes") > share(oscillation, "net_negative_passes")


def test_more_slack_at_decision_time_cuts_less_and_peaks_lower(oscillation):
    """Seed 000 at 20k: with slack fewer rationales are cut at the ceiling and the window peaks lower.

    (That no pass is net-negative in the median run holds at both triggers; that the oscillation disappears
    is a documented disagreement, and so is that runs with a net-negative pass are more common at 20k.)
    """
    slack = sc.replace(oscillation, {"trigger": 20000})
    assert median(slack, "cut_passes") == 0 == median(oscillation, "cut_passes")
    assert share(slack, "cut_passes") < share(oscillation, "cut_passes") / 4
    assert median(slack, "peak_utilization") < median(oscillation, "peak_utilization") - 1000
    assert share(slack, "net_negative_passes") > share(oscillation, "net_negative_passes")


def test_a_soft_budget_has_no_cut_passes(oscillation):
    """Seed 000, condition 3: with a soft budget nothing is cut at the ceiling."""
    soft = sc.replace(oscillation, {"budget_kind": "soft"})
    assert median(soft, "cut_passes", seeds=range(1000, 1030)) == 0
    assert share(oscillation, "cut_passes", seeds=range(1000, 1030)) > 0


def test_later_passes_recycle_earlier_decision_artifacts(oscillation):
    """Condition 2 (self-eligibility): old indexes and rationales are candidates, and passes evict them."""
    recycled = 0
    for seed in range(1000, 1010):
        t = run_one(oscillation, "naive", seed).trace()
        evicted_kinds = set(t["kind"][t["event"] == "evict"])
        recycled += bool(evicted_kinds & {"prune_index", "prune_rationale"})
    assert recycled >= 8
