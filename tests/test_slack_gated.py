"""The decision boundary, the slack-gated policy and its fallbacks."""

from __future__ import annotations

import ast
import csv
import dataclasses
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.io import scenario_files as sc
from prunesim.io.results import write_run
from prunesim.model.spans import Span
from prunesim.observe.metrics.intervals import wilson
from prunesim.observe.recorder import LEDGER_COLUMNS as LEDGER
from prunesim.policies import REGISTRY
from prunesim.policies.base import BoundaryEvent, Evict, ModelPass, Summarize, Truncate, WindowView
from prunesim.policies.boundary import REASONS, IndexEstimate, PassEstimate, net_negative_bound
from prunesim.policies.decision import plan_pass
from prunesim.policies.slack_gated import SlackGatedPolicy, evaluate_boundary
from prunesim.runner import run_one

# -- the boundary: a table of cases -------------------------------------------------
# (utilization, budget, sizes, index, rationale, factor) -> (reason, headroom, overhead, reclaimable, margin)
CASES = {
    "runs with slack and a paying plan": ((20000, 24000, [900, 800, 700], 500, 300, 1.5),
                                          ("run", 4000, 800, 1600, 450.0)),
    "headroom exactly the overhead is not in band": ((23200, 24000, [1500, 1000], 500, 300, 1.5),
                                                     ("run", 800, 800, 1700, 450.0)),
    "headroom one below the overhead is in band": ((23201, 24000, [1500, 1000], 500, 300, 1.5),
                                                   ("decision_in_band", 799, 800, 1700, 450.0)),
    "reclaimable exactly the margin is refused": ((20000, 24000, [1250], 500, 300, 1.5),
                                                  ("insufficient_net", 4000, 800, 450, 450.0)),
    "reclaimable one above the margin runs": ((20000, 24000, [1251], 500, 300, 1.5),
                                              ("run", 4000, 800, 451, 450.0)),
    "empty candidate list: nothing to prune": ((20000, 24000, [], 500, 300, 1.5),
                                               ("insufficient_net", 4000, 800, -800, 450.0)),
    "empty candidates, free decision, zero margin": ((20000, 24000, [], 0, 0, 0.0),
                                                     ("insufficient_net", 4000, 0, 0, 0.0)),
    "negative headroom is over budget": ((24001, 24000, [5000], 10, 10, 1.5),
                                         ("over_budget", -1, 20, 4980, 15.0)),
    "headroom exactly zero with no overhead is not over budget": ((24000, 24000, [100], 0, 0, 1.5),
                                                                  ("run", 0, 0, 100, 0.0)),
    "over budget wins over in band and insufficient net": ((25000, 24000, [], 500, 300, 1.5),
                                                           ("over_budget", -1000, 800, -800, 450.0)),
    "in band wins over insufficient net": ((23900, 24000, [], 500, 300, 1.5),
                                           ("decision_in_band", 100, 800, -800, 450.0)),
    "margin factor zero: any positive net runs": ((20000, 24000, [801], 500, 300, 0.0),
                                                  ("run", 4000, 800, 1, 0.0)),
    "margin factor zero: zero net is refused": ((20000, 24000, [800], 500, 300, 0.0),
                                                ("insufficient_net", 4000, 800, 0, 0.0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_boundary_table(case):
    args, (reason, headroom, overhead, reclaimable, margin) = CASES[case]
    d = evaluate_boundary(*args)
    assert (d.reason, d.headroom, d.overhead, d.reclaimable, d.margin) == (reason, headroom, overhead, reclaimable,
                                                                           margin)
    assert d.run is (reason == "run")


def test_boundary_default_margin_factor_is_one_and_a_half():
    assert evaluate_boundary(0, 100, [50], 0, 10).margin == 15.0


def test_boundary_decision_is_frozen_and_plain():
    d = evaluate_boundary(20000, 24000, [2000], 500, 300)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.run = False
    assert d.as_dict() == {"run": True, "reason": "run", "headroom": 4000, "overhead": 800, "reclaimable": 1200,
                           "margin": 450.0}


@pytest.mark.parametrize("args", [
    (0, 100, [-1], 0, 0, 1.5),
    (0, 100, [10], -1, 0, 1.5),
    (0, 100, [10], 0, -1, 1.5),
    (0, 100, [10], 0, 0, -0.5),
])
def test_boundary_rejects_negative_sizes(args):
    with pytest.raises(ValueError):
        evaluate_boundary(*args)


def test_boundary_module_needs_only_the_standard_library():
    """A real runtime can import policies/boundary.py without the simulator or numpy."""
    tree = ast.parse((Path(__file__).parents[1] / "policies" / "boundary.py").read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import"
            modules.add(node.module.split(".")[0])
    assert modules <= {"__future__", "collections", "dataclasses", "math"}


sizes = st.integers(0, 20_000)


@given(utilization=st.integers(0, 40_000), budget=st.integers(1, 40_000), stale=st.lists(sizes, max_size=12),
       index=st.integers(0, 3_000), rationale=st.integers(0, 3_000),
       factor=st.floats(0, 5, allow_nan=False, allow_infinity=False))
def test_when_the_gate_runs_the_pass_pays_more_than_the_margin(utilization, budget, stale, index, rationale, factor):
    d = evaluate_boundary(utilization, budget, stale, index, rationale, factor)
    assert d.reason in REASONS and d.run is (d.reason == "run")
    if d.run:
        # the pass that follows, on the same inputs: evicts `stale`, pays index + rationale
        assert sum(stale) - index - rationale > factor * rationale
        # and it fits in the room left, so a hard ceiling never cuts its rationale
        assert budget - utilization >= index + rationale >= 0


# -- the policy on hand-built views -------------------------------------------------
def make_view(turn=30, utilization=None, budget=24000, n=40, size=200):
    """A window of a pinned system prompt and ``n`` spans spread over ``turn`` turns, most of them stale."""
    spans = [Span(0, "system", 8000, 0, pinned=True)]
    for i in range(1, n + 1):
        kind = ("reasoning", "tool_call", "tool_output")[i % 3]
        spans.append(Span(i, kind, size + 5 * i, turn=i * turn // (n + 1), stale_at=i * turn // (n + 1) + 2))
    used = sum(s.tokens for s in spans)
    return WindowView(turn, used if utilization is None else utilization, budget, 32000, True, spans)


def gated(oscillation, **gate):
    """The scenario with [gate] values; ``trigger`` is given as the utilization it means (trigger - lead).

    A gate trigger above the scenario's moves the scenario's trigger up to it (the lead cannot be negative).
    """
    overrides = {}
    if "trigger" in gate:
        trigger = gate.pop("trigger")
        if trigger == -1:
            gate["lead"] = 0
        elif trigger > oscillation.trigger:
            overrides["trigger"], gate["lead"] = trigger, 0
        else:
            gate["lead"] = oscillation.trigger - trigger
    return sc.replace(oscillation, overrides | {f"gate.{k}": v for k, v in gate.items()})


def test_slack_gated_is_registered():
    assert REGISTRY["slack-gated"] is SlackGatedPolicy
    assert SlackGatedPolicy.model_driven


def test_below_its_trigger_it_does_nothing_and_draws_nothing(oscillation):
    scenario = gated(oscillation, trigger=20000)
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    view = make_view(utilization=19999)
    assert SlackGatedPolicy(scenario, rng).decide(view) == []
    assert rng.bit_generator.state == state


def test_gate_trigger_defaults_to_the_scenario_trigger(oscillation):
    assert SlackGatedPolicy(gated(oscillation, trigger=-1), np.random.default_rng(0)).trigger == oscillation.trigger
    assert SlackGatedPolicy(gated(oscillation, trigger=19000), np.random.default_rng(0)).trigger == 19000


def test_random_stream_advances_the_same_whether_it_runs_or_refuses(oscillation):
    view = make_view(utilization=17000, size=600)  # its three largest candidates pay for its index
    runs = gated(oscillation, trigger=15000, margin_factor=0.0)
    refuses = gated(oscillation, trigger=15000, margin_factor=1000.0)
    rng_run, rng_refuse = np.random.default_rng(7), np.random.default_rng(7)
    ran = SlackGatedPolicy(runs, rng_run).decide(view)
    refused = SlackGatedPolicy(refuses, rng_refuse).decide(view)
    assert ran[0].reason == "run" and isinstance(ran[1], ModelPass)
    assert refused[0].reason == "insufficient_net" and not any(isinstance(a, ModelPass) for a in refused)
    assert rng_run.bit_generator.state == rng_refuse.bit_generator.state
    # the pass it runs is the plan drawn from that stream
    assert ran[1] == plan_pass(view, runs.decision, np.random.default_rng(7)).as_pass()


def test_an_oracle_run_is_recorded_with_the_numbers_behind_it(oscillation):
    view = make_view()
    actions = SlackGatedPolicy(gated(oscillation, trigger=15000, margin_factor=0.0, knowledge="oracle"),
                               np.random.default_rng(7)).decide(view)
    event, p = actions
    assert isinstance(event, BoundaryEvent)
    n = event.numbers
    assert n["knowledge"] == "oracle" and n["headroom"] == view.budget - view.utilization
    assert n["overhead"] == p.overhead == n["index"] + n["rationale"]
    assert n["reclaimable"] == n["selected_tokens"] - n["overhead"]
    assert n["margin"] == 0.0 and n["risk_bound"] == 0.0
    json.dumps(n)  # goes into events.csv as JSON


def _candidate_sizes(view, scenario):
    """The sizes of the candidates the index lists (the view's spans are unpinned and no constraint)."""
    cutoff = view.turn - scenario.decision.protect_recent_turns
    return [s.tokens for s in view.spans if not s.pinned and s.turn <= cutoff]


def test_an_estimating_run_is_recorded_with_its_estimates_and_never_the_plan(oscillation):
    view = make_view(utilization=17000, size=600)
    scenario = gated(oscillation, trigger=15000, margin_factor=0.5)
    event, p = SlackGatedPolicy(scenario, np.random.default_rng(7)).decide(view)
    n = event.numbers
    assert event.reason == "run" and isinstance(p, ModelPass)
    sizes = sorted(_candidate_sizes(view, scenario), reverse=True)
    assert n["knowledge"] == "estimate" and n["candidate_tokens"] == sum(sizes)
    # before any pass: the seed's ~3 selections, holding what the index's 3 largest candidates hold
    assert n["expected_selections"] == scenario.gate.prior_selections == 3 and n["yield_ratio"] == 1.0
    assert n["favoured_tokens"] == sum(sizes[:3]) == n["expected_yield"]
    assert n["expected_rationale"] == scenario.gate.prior_rationale == 400
    assert n["overhead"] == p.index_tokens + n["expected_rationale"]
    assert n["reclaimable"] == n["expected_yield"] - n["overhead"]
    assert n["margin"] == 0.5 * n["expected_rationale"]
    assert n["risk_bound"] == 1.0 and math.isinf(n["spread_net"])  # no spread before a pass: no guarantee
    assert not {"rationale", "selected", "selected_tokens"} & set(n)  # what only the model call tells
    json.dumps(n)


def test_a_fixed_prior_yield_is_the_gate_of_before(oscillation):
    """gate.prior_yield set: the running mean of yields from that prior, at most what the candidates hold."""
    view = make_view(utilization=17000)
    scenario = gated(oscillation, trigger=15000, margin_factor=0.5, prior_yield=1800.0)
    policy = SlackGatedPolicy(scenario, np.random.default_rng(7))
    event, p = policy.decide(view)
    n = event.numbers
    assert isinstance(policy.estimate, PassEstimate) and event.reason == "run"
    assert n["expected_yield"] == min(1800, sum(_candidate_sizes(view, scenario)))
    assert n["reclaimable"] == n["expected_yield"] - n["overhead"]
    assert not {"expected_selections", "yield_ratio", "favoured_tokens"} & set(n)
    named = sum(s.tokens for s in view.spans if s.id in p.selected)
    assert policy.estimate.expected_yield == (1800 + named) / 2


def test_in_a_large_window_the_index_lets_the_gate_run_where_a_fixed_prior_never_does():
    """long-session-2000's index of hundreds of candidates costs more than a fixed 1,800 tokens: that gate refuses
    every pass and learns nothing. Reading what the index's largest candidates hold, the gate runs, and learns
    that a pass names less than as many of the largest candidates hold."""
    long = sc.load("long-session-2000")
    view = make_view(turn=300, utilization=150_000, budget=180_000, n=600, size=300)
    fixed = SlackGatedPolicy(sc.replace(long, {"gate.prior_yield": 1800.0}), np.random.default_rng(1))
    index = SlackGatedPolicy(long, np.random.default_rng(1))
    for _ in range(5):
        refused = fixed.decide(view)[0]
        assert refused.reason == "insufficient_net" and refused.numbers["index"] > 1800
        ran, p = index.decide(view)[:2]
        assert ran.reason == "run" and isinstance(p, ModelPass)
    assert fixed.estimate.n == 1 and index.estimate.n == 6
    assert index.estimate.sum_ratio / index.estimate.ratio_n < 1
    assert index.estimate.sum_selections / index.estimate.n > 3  # asked to free 30k, it names more than 3


def test_the_estimates_learn_from_the_passes_the_gate_runs(oscillation):
    view = make_view(utilization=17000, size=600)
    scenario = gated(oscillation, trigger=15000, margin_factor=0.0)
    policy = SlackGatedPolicy(scenario, np.random.default_rng(3))
    first = policy.decide(view)
    assert first[0].reason == "run"
    ran, expected = first[1], first[0].numbers
    est = policy.estimate
    assert est.n == 2 and est.expected_rationale == (400 + ran.rationale_tokens) / 2
    named = sum(s.tokens for s in view.spans if s.id in ran.selected)
    sizes = sorted(_candidate_sizes(view, scenario), reverse=True)
    k = len(ran.selected)
    assert est.sum_selections / est.n == (3 + k) / 2
    ratio = named / sum(sizes[:k])
    assert 0 < ratio <= 1 and est.sum_ratio / est.ratio_n == (1 + ratio) / 2
    error = (named - ran.rationale_tokens) - (expected["expected_yield"] - expected["expected_rationale"])
    assert est.net_variance == pytest.approx(error ** 2 / 2)  # the prior's error 0 and this one
    learned = est.expected_rationale
    second = policy.decide(view)[0].numbers
    assert second["expected_rationale"] == learned != 400
    assert second["expected_selections"] == (3 + k) / 2 and second["yield_ratio"] == (1 + ratio) / 2
    assert 0 < second["risk_bound"] < 1 and math.isfinite(second["spread_net"])
    refusing = SlackGatedPolicy(gated(oscillation, trigger=15000, margin_factor=1000.0), np.random.default_rng(3))
    refusing.decide(view)
    assert refusing.estimate.n == 1  # a refusal teaches nothing: no pass was run


def test_the_forecast_reads_the_largest_candidates_for_a_fractional_count():
    est = IndexEstimate(prior_selections=2.5, prior_rationale=100)
    f = est.forecast([100, 700, 300, 500])
    assert f.sizes == (700, 500, 300, 100) and f.held == 1600
    assert f.selections == 2.5 and f.favoured == 700 + 500 + 0.5 * 300 == f.expected_yield
    assert est.forecast([]).expected_yield == 0 and est.forecast([40, 60]).favoured == 100  # fewer than 2.5
    est.observe(f, 2, 600, 120)  # named 2 spans of 600 tokens: 600 / (700 + 500) of the two largest
    assert est.sum_ratio / est.ratio_n == (1 + 0.5) / 2
    est.observe(est.forecast([10, 20]), 0, 0, 40)  # named nothing: counts as a pass, not as a ratio
    assert (est.n, est.ratio_n, est.sum_selections) == (3, 2, 4.5)
    with pytest.raises(ValueError):
        est.forecast([10, -1])
    with pytest.raises(ValueError):
        IndexEstimate(prior_selections=-1, prior_rationale=0)


@given(passes=st.lists(st.tuples(st.lists(st.integers(1, 5_000), min_size=1, max_size=30), st.data()),
                       max_size=6),
       prior=st.floats(0.1, 12, allow_nan=False))
def test_the_learned_ratio_stays_a_share_and_the_yield_within_what_the_candidates_hold(passes, prior):
    est = IndexEstimate(prior_selections=prior, prior_rationale=300)
    for sizes, data in passes:
        f = est.forecast(sizes)
        assert 0 <= f.expected_yield <= f.favoured <= f.held == sum(sizes)
        named = data.draw(st.lists(st.sampled_from(range(len(sizes))), unique=True, max_size=len(sizes)))
        est.observe(f, len(named), sum(sizes[i] for i in named), 200)
        assert 0 <= est.sum_ratio / est.ratio_n <= 1


def test_an_estimating_gate_decides_the_same_whatever_plan_the_model_would_draw(oscillation):
    """The decision reads the window, the index and the estimates: two streams that draw different plans decide
    alike, down to every number, while the oracle's decision follows its own plan."""
    view = make_view(utilization=17000)
    for knowledge in ("estimate", "oracle"):
        scenario = gated(oscillation, trigger=15000, knowledge=knowledge, margin_factor=0.7)
        answers, plans = [], []
        for seed in range(12):
            answers.append(SlackGatedPolicy(scenario, np.random.default_rng(seed)).decide(view)[0].numbers)
            plans.append(plan_pass(view, scenario.decision, np.random.default_rng(seed)).rationale_tokens)
        assert len(set(plans)) > 1  # the plans do differ
        distinct = {json.dumps(a, sort_keys=True) for a in answers}
        assert len(distinct) == 1 if knowledge == "estimate" else len(distinct) > 1


def test_the_bound_matches_cantelli_on_a_known_sample():
    est = PassEstimate(prior_yield=1000, prior_rationale=200)
    for y, r in ((1200, 300), (600, 250), (1500, 400)):
        est.observe(y, r)
    nets = [800, 900, 350, 1100]  # yield - rationale, the prior first
    mean = sum(nets) / 4
    var = sum((x - mean) ** 2 for x in nets) / 3
    assert est.net_variance == pytest.approx(var)
    spreads = est.spreads()
    assert spreads["spread_net"] == pytest.approx(math.sqrt(var))
    assert spreads["spread_rationale"] == pytest.approx(np.std([200, 300, 250, 400], ddof=1))
    assert spreads["spread_yield"] == pytest.approx(np.std([1000, 1200, 600, 1500], ddof=1))
    assert net_negative_bound(mean - 100, est.net_variance) == pytest.approx(var / (var + (mean - 100) ** 2))
    assert net_negative_bound(0.0, var) == 1.0  # an expected net of nothing guarantees nothing


@pytest.mark.parametrize("fallback", ["recency", "truncate", "template"])
def test_fallbacks_cost_no_decision_tokens_and_free_towards_the_low_water_mark(oscillation, fallback):
    view = make_view()
    scenario = gated(oscillation, trigger=view.utilization - 500, low_water_gap=1500, margin_factor=1000.0,
                     fallback=fallback, truncate_keep=50, template_tokens=200)
    event, *actions = SlackGatedPolicy(scenario, np.random.default_rng(3)).decide(view)
    assert event.reason == "insufficient_net" and event.numbers["fallback"] == fallback
    assert actions and not any(isinstance(a, ModelPass) for a in actions)
    tokens = {s.id: s for s in view.spans}
    need = view.utilization - (view.utilization - 500 - 1500)
    if fallback == "recency":
        (a,) = actions
        assert isinstance(a, Evict)
        freed = sum(tokens[i].tokens for i in a.span_ids)
        # oldest first, and no more spans than needed
        assert list(a.span_ids) == sorted(a.span_ids)
        assert freed >= need and freed - tokens[a.span_ids[-1]].tokens < need
    elif fallback == "truncate":
        assert all(isinstance(a, Truncate) and tokens[a.span_id].kind == "tool_output" for a in actions)
        freed = sum(tokens[a.span_id].tokens - a.keep_tokens for a in actions)
        assert freed >= need
    else:
        (a,) = actions
        assert isinstance(a, Summarize) and a.summary_tokens == 200
        assert sum(tokens[i].tokens for i in a.span_ids) - 200 >= need
    assert all(tokens[i].turn <= view.turn - oscillation.decision.protect_recent_turns
               for a in actions for i in getattr(a, "span_ids", (getattr(a, "span_id", None),)))


def test_template_fallback_never_writes_a_summary_that_frees_nothing(oscillation):
    view = make_view(n=3, size=20)
    scenario = gated(oscillation, trigger=1000, margin_factor=1000.0, fallback="template", template_tokens=5000)
    event, *actions = SlackGatedPolicy(scenario, np.random.default_rng(0)).decide(view)
    assert event.reason == "insufficient_net" and actions == []


# -- the policy in the engine -------------------------------------------------------
def test_every_oracle_gated_pass_is_net_positive_and_the_budget_holds_over_100_seeds(oscillation):
    oracle = sc.replace(oscillation, {"gate.knowledge": "oracle"})
    rows = 0
    for seed in range(100):
        result = run_one(oracle, "slack-gated", seed, trace="turns")
        assert result.summary["peak_utilization"] <= oscillation.budget, seed
        assert result.summary["net_negative_passes"] == 0 and result.summary["cut_passes"] == 0, seed
        for row in result.ledger:
            d = dict(zip(LEDGER, row, strict=True))
            assert d["net"] > 0 and d["in_band"] == 0, (seed, d)
            rows += 1
    assert rows > 100


def test_each_oracle_run_decision_is_followed_by_a_pass_that_clears_its_margin(oscillation):
    oracle = sc.replace(oscillation, {"gate.knowledge": "oracle"})
    for seed in range(20):
        result = run_one(oracle, "slack-gated", seed, trace="turns")
        runs = [e.detail for e in result.events if e[3] == "boundary" and e.detail["reason"] == "run"]
        assert len(runs) == len(result.ledger) == result.summary["gate_runs"]
        for numbers, row in zip(runs, result.ledger, strict=True):
            d = dict(zip(LEDGER, row, strict=True))
            assert d["index"] == numbers["index"] and d["rationale"] == numbers["rationale"]
            assert d["evicted"] == numbers["selected_tokens"]
            assert d["net"] == numbers["reclaimable"] > numbers["margin"]


def test_an_estimating_gate_runs_some_net_negative_passes_and_its_bound_covers_them(oscillation):
    """Under estimates the guarantee is a bound, measured: passes do turn out net-negative (counted in the ledger),
    and their share over 200 seeds lies below the mean of the bounds the gate gave for them (Cantelli's is loose,
    and a failure here says the estimates mislead the gate)."""
    negative = passes = 0
    bound = 0.0
    for seed in range(200):
        s = run_one(oscillation, "slack-gated", seed, trace="none").summary
        negative, passes = negative + s["net_negative_passes"], passes + s["passes"]
        assert s["gate_runs"] == s["passes"]
        bound += s["gate_risk_bound"] * s["gate_runs"] if s["gate_runs"] else 0.0
    assert negative > 0
    assert wilson(negative, passes)[1] < bound / passes < 1
    traced = run_one(oscillation, "slack-gated", 7, trace="turns")
    runs = [e.detail for e in traced.events if e[3] == "boundary" and e.detail["reason"] == "run"]
    assert len(runs) == len(traced.ledger) and all(d["knowledge"] == "estimate" for d in runs)


def test_naive_and_gated_meet_the_same_workload(oscillation):
    def arrivals(policy, seed):
        t = run_one(oscillation, policy, seed).trace()
        return [(turn, kind, delta) for turn, event, kind, delta in zip(t["turn"], t["event"], t["kind"], t["delta"],
                                                                        strict=True)
                if event == "append" and kind in ("reasoning", "tool_call", "tool_output")]

    per_turn = 1 if oscillation.workload.turn_unit else 3  # a turn unit is one span (docs/model.md)
    for seed in (0, 5):
        gated_arrivals = arrivals("slack-gated", seed)
        assert len(gated_arrivals) == per_turn * oscillation.turns  # nothing cut: the gate keeps room
        naive_arrivals = arrivals("naive", seed)
        # identical until naive's first forced truncation cuts an arrival short
        pairs = zip(gated_arrivals, naive_arrivals, strict=False)  # naive may lose whole arrivals at the ceiling
        same = sum(1 for _ in itertools.takewhile(lambda ab: ab[0] == ab[1], pairs))
        assert same >= per_turn * 15


def test_refusal_states_are_separate_in_events_and_summary(oscillation, tmp_path):
    # A gate trigger near the ceiling leaves no slack to decide; a normal one mostly finds nothing worth pruning.
    tight = gated(oscillation, trigger=oscillation.budget - 300)
    seen = set()
    for seed in range(5):
        for scenario, name in ((tight, "tight"), (oscillation, "normal")):
            out = tmp_path / f"{name}-{seed}"
            write_run(run_one(scenario, "slack-gated", seed), out)
            with open(out / "events.csv", newline="") as f:
                reasons = [json.loads(r["detail"])["reason"] for r in csv.DictReader(f) if r["event"] == "boundary"]
            metrics = json.loads((out / "summary.json").read_text())["metrics"]
            for reason, key in (("run", "gate_runs"), ("over_budget", "refusals_over_budget"),
                                ("decision_in_band", "refusals_decision_in_band"),
                                ("insufficient_net", "refusals_insufficient_net")):
                assert reasons.count(reason) == metrics[key]
            seen |= set(reasons)
    assert {"decision_in_band", "insufficient_net", "run"} <= seen


def test_a_soft_budget_run_over_budget_is_refused_as_over_budget(oscillation):
    soft = sc.replace(oscillation, {"budget_kind": "soft", "trigger": 23000, "gate.lead": 0, "decision.select_max": 1,
                                    "decision.select_mean": 1, "gate.low_water_gap": 0, "gate.fallback": "truncate",
                                    "gate.truncate_keep": 2000, "turns": 80})
    s = run_one(soft, "slack-gated", 0, trace="none").summary
    assert s["peak_utilization"] > soft.budget
    assert s["refusals_over_budget"] > 0


# -- bad [gate] input ----------------------------------------------------------------
@pytest.mark.parametrize("key,value,problem", [
    ("gate.fallback", "magic", "must be one of"),
    ("gate.truncate_keep", -1, "must not be negative"),
    ("gate.template_tokens", -10, "must not be negative"),
    ("gate.low_water_gap", -1, "must not be negative"),
    ("gate.margin_factor", -0.5, "must not be negative"),
    ("gate.prior_yield", -1, "must not be negative"),
    ("gate.prior_rationale", -0.5, "must not be negative"),
    ("gate.prior_selections", 0, "must be positive"),
    ("gate.knowledge", "psychic", "must be one of"),
    ("gate.lead", 30000, "puts the gate at -8000 (trigger - lead), outside 0..24000"),
    ("gate.lead", -2001, "puts the gate at 24001"),
    ("gate.nonsense", 1, "unknown key"),
])
def test_bad_gate_values_name_the_key(oscillation, key, value, problem):
    for policy in ("slack-gated", "slack-gated+tombstoned"):
        with pytest.raises(UserError) as err:
            sc.replace(oscillation, {key: value}, policy=policy)
        assert err.value.key == key and problem in str(err.value)
    # For a policy that never reads [gate], only what makes the file unreadable (a value of no type the table
    # takes, an unknown key) refuses it; its values are checked when slack-gated runs.
    if problem in ("must be one of", "unknown key"):
        with pytest.raises(UserError, match=problem):
            sc.replace(oscillation, {key: value}, policy="naive")
    else:
        scenario = sc.replace(oscillation, {key: value}, policy="naive")
        with pytest.raises(UserError, match="under slack-gated: " + key):
            run_one(scenario, "slack-gated", 0, trace="none")


def test_bad_gate_value_on_the_command_line_is_one_line_and_exit_2(capsys):
    assert main(["run", "oscillation-40", "--policy", "slack-gated", "--set", "gate.fallback=magic"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gate.fallback" in err
