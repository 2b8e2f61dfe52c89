"""The tombstoned policy: log placement, a tombstone per eviction, protected spans, a guard that refuses."""


import pytest
from prunesim import policies
from prunesim.errors import UserError
from prunesim.io.scenario_files import load, replace
from prunesim.model.editlog import SelfEditRefused
from prunesim.model.spans import Span
from prunesim.policies.base import BoundaryEvent, Evict, ModelPass, Policy, Summarize, Truncate, WindowView
from prunesim.policies.decision import plan_pass
from prunesim.policies.tombstoned import GatedTombstonedPolicy, TombstonedPolicy
from prunesim.runner import run_one, streams

ARTIFACTS = ("prune_index", "prune_rationale", "tombstone")


@pytest.fixture(scope="module")
def reentrancy():
    return load("reentrancy-60")


def removals(result):
    t = result.recorder.trace
    return [(int(s), k) for ev, k, s in zip(t["event"], t["kind"], t["span_id"], strict=True)
            if ev != "append" and k not in ARTIFACTS]


@pytest.mark.parametrize("seed", [0, 1, 2, 19])
def test_every_eviction_is_logged_and_tombstoned(reentrancy, seed):
    result = run_one(reentrancy, "tombstoned", seed)
    s = result.summary
    gone = removals(result)
    assert gone, "the editor evicts something every run"
    logged = {r.body["span_id"]: r for r in result.edit_log if r.kind == "evict"}
    assert {sid for sid, _ in gone} == set(logged)
    by_evicted = {t.evicted_id: t for t in result.tombstones.values()}
    for sid, _ in gone:
        tomb, record = by_evicted[sid], logged[sid]
        assert tomb.content_hash == record.body["content_hash"] and tomb.record_seq == record.seq
        assert tomb.reason and tomb.turn == record.body["turn"]
    assert s["re_retrievals"] == 0 and s["unrecorded_evictions"] == 0 and s["lost_constraints"] == 0
    assert s["edit_log_verified"] is True
    assert s["tombstone_tokens"] == reentrancy.tombstone.tokens * len(gone)
    t = result.recorder.trace
    # plans and rationales never enter the window; tombstones never leave it
    assert not {"prune_index", "prune_rationale"} & set(t["kind"])
    assert all(ev == "append" for ev, k in zip(t["event"], t["kind"], strict=True) if k == "tombstone")


def test_naive_leaves_no_log_and_loses_the_records(reentrancy):
    s = run_one(reentrancy, "naive", 0, trace="none").summary
    assert s["edit_log_verified"] is False and s["edit_log_records"] == 0
    assert s["unrecorded_evictions"] > 0 and s["re_retrievals"] > 0 and s["tombstone_tokens"] == 0


def view_of(spans, turn=10):
    return WindowView(turn, sum(s.tokens for s in spans), 24000, 32000, False, spans)


def test_guard_refuses_each_protected_kind(reentrancy):
    policy = TombstonedPolicy(reentrancy, streams(0)["policy"])
    spans = [
        Span(1, "tool_output", 500, 1, key="a"),
        Span(2, "tombstone", 24, 2, key="b", pinned=True),
        Span(3, "user", 100, 1, tags=frozenset({"constraint"})),
        Span(4, "prune_rationale", 140, 3, pass_id=1),
        Span(5, "tool_output", 50, 1, key="c", tags=frozenset({"edit_log"})),
    ]
    view = view_of(spans)
    policy.authorize(ModelPass((1,), 100, 20, (120,), 5), view)  # allowed
    cases = [
        (ModelPass((1,), 100, 20, (120,), 5, prune_own_rationale=True), "overlaps_rationale"),
        (ModelPass((1, 2), 100, 20, (120, 120), 5), "tombstone"),
        (Evict((3,)), "constraint"),
        (Summarize((1, 4), 50), "log_record"),
        (Truncate(5, 10), "log_record"),
    ]
    for action, reason in cases:
        with pytest.raises(SelfEditRefused) as err:
            policy.authorize(action, view)
        assert err.value.reason == reason


class RoguePlanner(Policy):
    """Plans reentrant passes and tries to evict tombstones and constraints."""

    name = "rogue"
    model_driven = True

    def decide(self, view):
        plan = plan_pass(view, self.scenario.decision, self.rng)
        protected = tuple(s.id for s in view.spans if s.kind == "tombstone" or s.is_constraint)[:1]
        out = [plan.as_pass(prune_own_rationale=view.turn % 3 == 0)]
        if protected and view.turn % 3 == 1:
            out.append(Evict(protected, reason="recency"))
        return out


class RogueTombstoned(TombstonedPolicy):
    name = "rogue+tombstoned"
    planner = "rogue"


def test_engine_records_every_refusal(reentrancy, monkeypatch):
    monkeypatch.setitem(policies.REGISTRY, "rogue", RoguePlanner)
    monkeypatch.setitem(policies.REGISTRY, "rogue+tombstoned", RogueTombstoned)
    result = run_one(reentrancy, "rogue+tombstoned", 5)
    s = result.summary
    refused = [e.detail for e in result.events if e[3] == "self_edit_refused"]
    assert s["self_edit_refusals"] == len(refused) > 0
    reasons = {r["reason"] for r in refused}
    assert "overlaps_rationale" in reasons and reasons & {"tombstone", "constraint"}
    assert reasons <= {"overlaps_rationale", "tombstone", "constraint"}
    assert sum(r.kind == "refusal" for r in result.edit_log) == len(refused)
    assert s["lost_constraints"] == 0 and s["unrecorded_evictions"] == 0 and s["edit_log_verified"]
    t = result.recorder.trace
    assert all(ev == "append" for ev, k in zip(t["event"], t["kind"], strict=True) if k == "tombstone")


class FakeGate(Policy):
    """A stand-in slack-gated policy: a gate event, then a model pass or a recency fallback."""

    name = "slack-gated"
    model_driven = True

    def decide(self, view):
        plan = plan_pass(view, self.scenario.decision, self.rng)
        if view.turn % 2:
            return [BoundaryEvent("run"), plan.as_pass()]
        oldest = [s.id for s in view.spans if not s.pinned and not s.is_constraint and s.kind == "tool_output"]
        return ([BoundaryEvent("decision_in_band"), Evict(tuple(oldest[:1]), reason="recency", fallback=True)]
                if oldest else [])


def test_composition_wraps_whatever_is_registered_as_slack_gated(reentrancy, monkeypatch):
    monkeypatch.setitem(policies.REGISTRY, "slack-gated", FakeGate)
    monkeypatch.setitem(policies.REGISTRY, GatedTombstonedPolicy.name, GatedTombstonedPolicy)
    policy = GatedTombstonedPolicy(reentrancy, streams(0)["policy"])
    assert isinstance(policy.inner, FakeGate)
    result = run_one(reentrancy, GatedTombstonedPolicy.name, 4)
    s = result.summary
    assert s["fallback_evictions"] > 0 and s["passes"] > 0 and s["gate_runs"] > 0
    reasons = {r.body["reason"] for r in result.edit_log if r.kind == "evict"}
    assert "fallback_recency" in reasons and any(x.startswith("pass ") for x in reasons)
    assert s["re_retrievals"] == 0 and s["unrecorded_evictions"] == 0 and s["edit_log_verified"] is True


def test_composition_without_its_planner_is_a_user_error(reentrancy, monkeypatch):
    monkeypatch.delitem(policies.REGISTRY, "slack-gated", raising=False)
    with pytest.raises(UserError, match="slack-gated"):
        GatedTombstonedPolicy(reentrancy, streams(0)["policy"])


needs_gated = pytest.mark.skipif("slack-gated" not in policies.REGISTRY,
                                 reason="needs slack-gated in REGISTRY (policies/__init__.py)")


@needs_gated
def test_registered_composition_keeps_every_guarantee(reentrancy):
    assert policies.REGISTRY["slack-gated+tombstoned"] is GatedTombstonedPolicy
    for seed in range(5):
        result = run_one(reentrancy, "slack-gated+tombstoned", seed)
        s = result.summary
        assert s["re_retrievals"] == 0 and s["unrecorded_evictions"] == 0 and s["lost_constraints"] == 0
        assert s["edit_log_verified"] is True
        logged = {r.body["span_id"] for r in result.edit_log if r.kind == "evict"}
        assert {sid for sid, _ in removals(result)} <= logged


@pytest.mark.parametrize(("key", "value"), [("need.misjudge", 1.5), ("need.relevant", -0.1), ("tombstone.tokens", 0),
                                            ("need.horizon", 0), ("need.stale", 0.9)])
def test_bad_values_name_the_key(reentrancy, key, value):
    with pytest.raises(UserError, match=key.replace(".", r"\.")):
        replace(reentrancy, {key: value})


def test_unknown_key_in_need_table(reentrancy):
    with pytest.raises(UserError, match=r"need\.often"):
        replace(reentrancy, {"need.often": 0.3})
