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
from prunesim.studies import ranges
from prunesim.studies.replay import CALIBRATION_SEEDS, OSCILLATION, REPLAY_SEEDS, counted, why

SEEDS = REPLAY_SEEDS
MODEL_MD = Path(__file__).resolve().parents[1] / "docs" / "model.md"

# Every judged figure or contrast not counted as a reproduction on seeds 1000..1099 (out of range, not telling the
# seed's settings apart, or not specific), each explained in docs/model.md, "Where the model disagrees".
KNOWN_DISAGREEMENTS = {
    ("naive @22k", "pass_trend"),
    ("naive @22k", "oscillating"),
    ("naive @22k", "pinned_under"),
    ("naive @20k", "net_negative_passes"),
    ("naive @20k", "oscillating"),
    ("slack-gated", "passes"),
    ("slack-gated", "net_negative_passes"),
    ("contrast", "runs oscillating, 20k minus 22k"),
    ("contrast", "runs with a net-negative pass, 20k minus 22k"),
    ("contrast", "runs with a net-negative pass, gated minus naive"),
}


@pytest.fixture(scope="module")
def report():
    return OSCILLATION.run(list(SEEDS))


def judged():
    return [f for f in OSCILLATION.figures if f.judged] + list(OSCILLATION.targets().contrasts)


def name(item) -> tuple[str, str]:
    return ("contrast", item.label) if not hasattr(item, "fit") else (item.variant, item.metric)


def test_replay_seeds_are_disjoint_from_the_calibration_seeds():
    assert not set(SEEDS) & set(CALIBRATION_SEEDS)
    header = sc.resolve_path("oscillation-40").read_text().split("\n", 2)[1]
    assert "--seeds 0:100" in header  # the seeds the shipped scenario was fitted on


@pytest.mark.parametrize("item", judged(), ids=lambda f: ":".join(name(f)))
def test_each_figure_is_counted_or_a_documented_disagreement(report, item):
    result = next(r for r in report.judged if getattr(r, "figure", None) == item or getattr(r, "contrast", None)
                  == item)
    if name(item) in KNOWN_DISAGREEMENTS:
        assert not result.counted, f"{item.label} is now counted: update docs/model.md and this list"
    else:
        assert result.counted, f"{item.label}: {why(result, report)}"


def test_every_disagreement_is_explained_and_the_replay_says_why(report, capsys):
    section = MODEL_MD.read_text().split("## Where the model disagrees", 1)[1].split("\n## ", 1)[0]
    section = " ".join(section.split())  # (a label may be wrapped over two lines)
    for variant, metric in KNOWN_DISAGREEMENTS:
        assert (f"`{metric}`" if variant != "contrast" else metric) in section and variant in section, metric
    assert main(["replay", "oscillation"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for result in report.judged:  # a reason, computed from the runs, under every figure not counted
        reason = why(result, report)
        assert bool(reason) == (not counted(result, report)), ranges.key(result)
        if reason:
            assert f"    why: {reason}" in lines
    n = len(judged())
    assert f"{n - len(KNOWN_DISAGREEMENTS)} of {n} judged figures counted on these seeds" in out


def test_the_shipped_ranges_record_belongs_to_this_model(report):
    """The record the headline counts from was written by this model, scenario and targets: a change of any of
    them makes it stale, and `prunesim validate oscillation --ranges 9 --out ...` must write it again."""
    assert report.ranges is not None and report.ranges.current, (
        "scenarios/targets/seed-000.ranges.json is stale: rerun the command its 'command' field holds")
    assert report.ranges.ranges >= 5
    held = {k: v for k, v in report.ranges.holds.items()}
    assert set(held) == {ranges.key(r) for r in report.judged}


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
