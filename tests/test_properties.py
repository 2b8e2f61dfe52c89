"""Property-based invariants over random scenarios and every registered policy.

By default each property draws 60 examples (five properties: a few hundred
runs); ``python -m pytest --slow`` draws 1,500 each.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from prunesim import policies
from prunesim.io import scenario_files as sc
from prunesim.runner import run_one

POLICIES = sorted(policies.REGISTRY)
BASE = sc.load("oscillation-40").to_dict()


@st.composite
def scenarios(draw):
    window = draw(st.integers(4_000, 64_000))
    budget = draw(st.integers(2_000, window))
    trigger = draw(st.integers(0, budget))
    overrides = {
        "turns": draw(st.integers(1, 70)),
        "window": window,
        "budget": budget,
        "trigger": trigger,
        "budget_kind": draw(st.sampled_from(["hard", "soft"])),
        "workload.reasoning.mean": draw(st.floats(10, 800)),
        "workload.tool_output.mean": draw(st.floats(10, 3000)),
        "workload.tool_output.sigma": draw(st.floats(0, 1.8)),
        "workload.output_stale_after": draw(st.floats(1, 20)),
        "decision.index_per_candidate": draw(st.floats(0, 20)),
        "decision.rationale_per_span": draw(st.floats(0, 400)),
        "decision.reclaim_target": draw(st.sampled_from([0.0, 500.0, 2200.0, 6000.0])),
        "decision.selection_quality": draw(st.floats(0, 1)),
        "decision.protect_recent_turns": draw(st.integers(0, 6)),
        "decision.concurrent": draw(st.booleans()),
        "workload.initial": [{"kind": "system", "tokens": draw(st.integers(0, budget - 200)), "pinned": True},
                             {"kind": "constraint", "tokens": 200, "pinned": True}],
    }
    if "gate" in BASE:
        overrides["gate.lead"] = draw(st.integers(0, trigger))
        overrides["gate.fallback"] = draw(st.sampled_from(["recency", "truncate", "template"]))
    # The runtime policies' own thresholds, drawn so that they act in these small windows.
    overrides["clear_tool_uses.trigger"] = draw(st.integers(0, window))
    overrides["clear_tool_uses.keep"] = draw(st.integers(0, 6))
    overrides["clear_tool_uses.clear_at_least"] = draw(st.sampled_from([0, 500, 5000]))
    overrides["clear_tool_uses.clear_tool_inputs"] = draw(st.booleans())
    overrides["observation_masking.n"] = draw(st.integers(1, 12))
    overrides["observation_masking.polling"] = draw(st.integers(1, 4))
    unit = draw(st.sampled_from(["window", "tokens", "turns"]))
    overrides["llm_summary.unit"] = unit
    overrides["llm_summary.threshold"] = {"window": draw(st.floats(0.05, 1.0)), "tokens": draw(st.integers(1, window)),
                                          "turns": draw(st.integers(1, 30))}[unit]
    overrides["llm_summary.keep_turns"] = draw(st.integers(0, 8))
    overrides["memory_pressure.send_warning"] = draw(st.booleans())
    overrides["memory_pressure.warn_at"] = draw(st.floats(0.05, 1.0))
    overrides["memory_pressure.evict_at"] = draw(st.floats(0.05, 1.0))
    overrides["memory_pressure.evict_unit"] = draw(st.sampled_from(["messages", "tokens"]))
    overrides["memory_pressure.self_edit"] = draw(st.floats(0, 1))
    overrides["summary.mean_tokens"] = draw(st.floats(10, 4000))
    overrides["summary.keep_tool_output"] = draw(st.floats(0, 1))
    return sc.from_dict(sc.apply_overrides(BASE, overrides), "<hypothesis>")


@given(scenarios(), st.sampled_from(POLICIES), st.integers(0, 2**32 - 1))
def test_trace_invariants(scenario, policy, seed):
    result = run_one(scenario, policy, seed)
    t = result.trace()
    util = t["utilization"]
    # tokens appended minus tokens removed is utilization at every recorded point
    assert np.array_equal(t["appended_total"] - t["removed_total"], util)
    assert np.all(util >= 0) and np.all(util <= scenario.window)
    # a hard budget is never crossed
    if scenario.hard:
        assert np.all(util <= scenario.budget)
    # simulated time never goes back
    assert np.all(np.diff(t["time_s"].astype(float)) >= 0)
    # constraints are pinned in these scenarios: never lost
    assert result.summary["lost_constraints"] == 0


@given(scenarios(), st.sampled_from(POLICIES), st.integers(0, 2**32 - 1))
def test_ledger_rows_add_up(scenario, policy, seed):
    result = run_one(scenario, policy, seed)
    s = result.summary
    assert s["passes"] == len(result.ledger)
    total_net = 0
    for row in result.ledger:
        index, rationale, evicted, net = row[10], row[11], row[12], row[13]
        assert net == evicted - index - rationale
        assert min(index, rationale, evicted) >= 0
        total_net += net
    assert s["sum_net_tokens"] == total_net


@given(scenarios(), st.sampled_from(POLICIES), st.integers(0, 2**32 - 1))
def test_same_seed_same_result(scenario, policy, seed):
    a = run_one(scenario, policy, seed)
    b = run_one(scenario, policy, seed)
    assert a.summary == b.summary
    assert a.recorder.trace == b.recorder.trace
    assert a.ledger == b.ledger and a.events == b.events


@given(scenarios(), st.sampled_from(POLICIES), st.integers(0, 2**32 - 1))
def test_policies_only_evict_spans_in_the_window(scenario, policy, seed):
    # The engine raises PolicyContractError when a policy names a span that is not in the window;
    # every removal in the trace is of a span appended earlier and not yet removed.
    t = run_one(scenario, policy, seed).trace()
    present: set[int] = set()
    for event, span_id, delta in zip(t["event"], t["span_id"], t["delta"], strict=True):
        if event == "append":
            present.add(span_id)
        elif delta < 0:
            assert span_id in present, (event, span_id)
            if event != "fallback_truncate":
                present.discard(span_id)


@given(scenarios(), st.integers(0, 2**32 - 1))
def test_summary_trace_agree(scenario, seed):
    result = run_one(scenario, "naive", seed)
    t = result.trace()
    assert result.summary["peak_utilization"] == int(t["utilization"].max())
    assert result.summary["final_utilization"] == int(t["utilization"][-1])


TOMBSTONED = [p for p in POLICIES if getattr(policies.REGISTRY[p], "keeps_edit_log", False)]


@given(scenarios(), st.sampled_from(TOMBSTONED), st.integers(0, 2**32 - 1))
def test_tombstoned_policies_keep_provenance(scenario, policy, seed):
    from prunesim.model.editlog import verify_records

    result = run_one(scenario, policy, seed)
    s = result.summary
    # the edit log is append-only (a verified hash chain, numbered 1..n) and verifies
    assert s["edit_log_verified"] is True
    assert verify_records(result.edit_log).ok
    assert [r.seq for r in result.edit_log] == list(range(1, len(result.edit_log) + 1))
    # tombstones, log records and constraints are never evicted by the policy
    t = result.trace()
    removed = (t["delta"] < 0) & (t["event"] != "append")
    assert not np.any(removed & np.isin(t["kind"], ["tombstone", "constraint"]))
    assert s["lost_constraints"] == 0 and s["unrecorded_evictions"] == 0
    # every span that left the window is recorded by an "evict" record of the log
    logged = {r.body["span_id"] for r in result.edit_log if r.body["kind"] == "evict"}
    left = {int(i) for i in t["span_id"][removed]}
    truncated_only = {int(i) for i, e in zip(t["span_id"], t["event"], strict=True) if e == "fallback_truncate"}
    assert left - truncated_only <= logged
