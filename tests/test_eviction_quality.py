"""Repeats after a prune on transcripts, and eviction quality for every policy, on hand-made windows."""

from __future__ import annotations

import pytest
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts.workload import WorkloadData
from prunesim.model.workload import Arrival, TurnPlan
from prunesim.policies import Policy
from prunesim.policies.base import Evict, ModelPass
from prunesim.runner import run_one
from prunesim.studies.transcript_replay import expand, iter_workloads, replay, replay_metrics
from shared_traces import needs, traces_dir


# -- hand-made transcripts ---------------------------------------------------------
def transcript(turns: list[list[tuple[str, int, str]]]) -> WorkloadData:
    """A workload from turns of (kind, tokens, key) parts; turn 0 is a 50-token system prompt."""
    parts = [{"type": "part", "turn": 0, "kind": "system", "tokens": 50}]
    for turn, items in enumerate(turns, 1):
        for kind, tokens, key in items:
            part = {"type": "part", "turn": turn, "kind": kind, "tokens": tokens}
            if key:
                part["key"] = key
            parts.append(part)
    header = {"type": "header", "prunesim_workload": 1, "name": "hand-made", "source": "test", "format": "test",
              "tokenizer": "pieces", "model": "", "turns": len(turns), "parts": len(parts), "repeats": 0,
              "prompt_tokens": None}
    return WorkloadData(header, parts)


def call(key: str, output: int = 500) -> list[tuple[str, int, str]]:
    return [("reasoning", 10, ""), ("tool_call", 5, key), ("tool_output", output, key)]


class EvictOutputs(Policy):
    """At the end of the turns in ``plan``, evicts the tool outputs of the keys named (not their calls)."""

    name = "evict-outputs"
    plan: dict[int, tuple[str, ...]] = {}
    which = "all"  # or "latest": only the most recent output of each key

    def decide(self, view):
        keys = self.plan.get(view.turn, ())
        outputs = [s for s in view.spans if s.kind == "tool_output" and s.key in keys]
        if self.which == "latest":
            outputs = [s for s in outputs if s is [o for o in outputs if o.key == s.key][-1]]
        return [Evict(tuple(s.id for s in outputs), reason="test")] if outputs else []


def base():
    # Absolute sizes that never trigger: only the scripted evictions remove anything.
    return sc.load("transcript", {"budget": 100000, "trigger": 90000})


def evicting(plan, which="all"):
    return type("Scripted", (EvictOutputs,), {"plan": plan, "which": which})


def test_a_surviving_call_does_not_hold_its_evicted_output():
    data = transcript([call("cat a"), call("ls", 50), call("cat a")])
    _, kept = replay(data, base(), "noop")
    assert (kept["repeats"], kept["repeats_after_prune"], kept["repeats_in_window"]) == (1, 0, 1)
    result, pruned = replay(data, base(), evicting({2: ("cat a",)}))
    # the call of turn 1 is still in the window; its output is not: the repeat at turn 3 is after a prune
    t = result.recorder.trace
    alive_calls = {sid for ev, k, sid in zip(t["event"], t["kind"], t["span_id"], strict=True)
                   if ev == "append" and k == "tool_call"} - {sid for ev, sid in zip(t["event"], t["span_id"],
                                                                                   strict=True) if ev != "append"}
    assert alive_calls  # nothing evicted the calls
    assert (pruned["repeats_after_prune"], pruned["repeats_in_window"]) == (1, 0)
    assert (pruned["repeat_gap_mean"], pruned["repeat_gap_max"]) == (1.0, 1)


def test_the_latest_output_is_what_counts_not_an_older_one():
    # 'cat a' runs at turns 1 and 2; the policy evicts only the latest output (turn 2's) at turn 3.
    data = transcript([call("cat a", 300), call("cat a", 900), call("ls", 50), call("cat a")])
    _, m = replay(data, base(), evicting({3: ("cat a",)}, which="latest"))
    assert m["repeats"] == 2
    # turn 2's repeat found turn 1's output in the window; turn 4's repeat found its latest output gone
    assert (m["repeats_in_window"], m["repeats_after_prune"]) == (1, 1)


def test_needed_evictions_on_a_transcript_are_outputs_called_again_later():
    data = transcript([call("cat a", 400), call("ls", 100), call("pytest", 200), call("cat a")])
    result, m = replay(data, base(), evicting({3: ("cat a", "ls")}))
    s = result.summary
    # 'cat a' is called again at turn 4 (needed); 'ls' never again (not needed)
    assert (s["policy_evicted_spans"], s["policy_evicted_tokens"]) == (2, 500)
    assert (m["needed_evicted_spans"], m["needed_evicted_tokens"]) == (1, 400)
    assert m["eviction_precision"] == pytest.approx(1 - 400 / 500)
    assert s["needed_evicted_tokens"] == 400  # the replay's figures replace the synthetic ones in the summary
    assert s["non_model_evictions"] == 1 and s["fallback_evictions"] == 0


@pytest.mark.parametrize("trace", ["none", "turns"])
def test_replay_metrics_need_no_trace(trace):
    # Heard as the run goes: the same figures as the full trace gives, whatever the run keeps.
    data = transcript([call("cat a", 400), call("ls", 100), call("cat a", 300), call("pytest", 200), call("cat a"),
                       call("ls")])
    policy = evicting({2: ("cat a",), 3: ("ls", "cat a"), 5: ("cat a",)})
    full, heard = replay(data, base(), policy, trace="all")
    quiet, quiet_heard = replay(data, base(), policy, trace=trace)
    assert heard == quiet_heard == replay_metrics(full)
    assert quiet.summary == full.summary
    assert len(quiet.recorder.trace["event"]) < len(full.recorder.trace["event"])
    assert heard["repeats_after_prune"] >= 2 and heard["needed_evicted_spans"] >= 2  # the figures are exercised
    with pytest.raises(ValueError, match="trace is"):
        replay_metrics(quiet)


@needs("mini-swe-agent-dev", "claude-code-dev")
@pytest.mark.parametrize(("folder", "trigger"), [("mini-swe-agent-dev", 12000), ("claude-code-dev", 40000)])
def test_real_replays_give_the_same_figures_with_no_trace(folder, trigger):
    base_scenario = sc.load("transcript", {"trigger": trigger})  # low enough that every policy acts
    exercised = 0
    for path in expand([traces_dir() / folder]):
        for data in iter_workloads(path):
            for policy in ("naive", "recency", "clear-tool-uses"):
                full, heard = replay(data, base_scenario, policy, trace="all")
                quiet, _ = replay(data, base_scenario, policy, trace="none")
                assert quiet.summary == full.summary, (path.name, policy)
                assert replay_metrics(full) == heard and not quiet.recorder.trace["seq"]
                exercised += bool(heard["repeats_after_prune"] or heard["needed_evicted_spans"])
    assert exercised  # some replays removed content a later call asked for


# -- hand-made windows: synthetic runs ------------------------------------------
class Scripted:
    """A workload of fixed turns: each turn one tool output of the given size and staleness."""

    def __init__(self, outputs: list[tuple[int, int]]):
        self.outputs = outputs  # (tokens, stale_after) per turn

    def initial(self):
        return []

    def __iter__(self):
        for turn, (tokens, stale_after) in enumerate(self.outputs, 1):
            yield TurnPlan(turn, Arrival("reasoning", 0), Arrival("tool_call", 0),
                           Arrival("tool_output", tokens, f"cmd-{turn}", stale_after), 0.0)


def window_scenario(turns: int):
    return sc.load("oscillation-40", {"turns": turns, "budget": 24000, "trigger": 20000})


class EvictAtTurn(Policy):
    """At turn 4, evicts the outputs of turns 1 and 2, by a model-driven pass or a non-model eviction."""

    name = "evict-at-turn"
    model_driven = False

    def decide(self, view):
        if view.turn != 4:
            return []
        chosen = tuple(s.id for s in view.spans if s.key in ("cmd-1", "cmd-2"))
        if self.model_driven:
            return [ModelPass(chosen, index_tokens=0, rationale_base=0, rationale_per_span=(0,) * len(chosen),
                              candidates=len(chosen))]
        return [Evict(chosen, reason="test")]


class ModelEvictAtTurn(EvictAtTurn):
    name = "model-evict-at-turn"
    model_driven = True


@pytest.mark.parametrize("policy", [EvictAtTurn, ModelEvictAtTurn])
def test_needed_evictions_in_a_synthetic_run_are_spans_evicted_before_they_went_stale(policy):
    # turn 1's output (300 tokens) is stale from turn 3, turn 2's (500 tokens) from turn 12: at turn 4 only the
    # second is still needed. The same figures for a model-driven pass and a non-model eviction.
    workload = Scripted([(300, 2), (500, 10), (100, 10), (100, 10), (100, 10)])
    s = run_one(window_scenario(5), policy, 0, workload=workload).summary
    assert (s["policy_evicted_spans"], s["policy_evicted_tokens"]) == (2, 800)
    assert (s["needed_evicted_spans"], s["needed_evicted_tokens"]) == (1, 500)
    assert s["eviction_precision"] == pytest.approx(300 / 800)
    if policy.model_driven:
        assert (s["passes"], s["non_model_evictions"]) == (1, 0)
    else:
        assert (s["passes"], s["non_model_evictions"], s["fallback_evictions"]) == (0, 1, 0)


def test_a_span_cut_down_and_then_evicted_counts_once():
    from prunesim.policies.base import Truncate

    class CutThenEvict(Policy):
        name = "cut-then-evict"

        def decide(self, view):
            first = [s for s in view.spans if s.key == "cmd-1"]
            if view.turn == 2 and first:
                return [Truncate(first[0].id, 100)]
            if view.turn == 3 and first:
                return [Evict((first[0].id,))]
            return []

    s = run_one(window_scenario(3), CutThenEvict, 0, workload=Scripted([(400, 10)] * 3)).summary
    assert (s["policy_evicted_spans"], s["policy_evicted_tokens"]) == (1, 400)
    assert (s["needed_evicted_spans"], s["needed_evicted_tokens"]) == (1, 400)
    assert s["non_model_evictions"] == 2


@pytest.mark.parametrize("policy", ["noop", "recency", "naive", "slack-gated", "tombstoned"])
def test_eviction_quality_is_consistent_on_the_shipped_scenario(oscillation, policy):
    for seed in range(3):
        s = run_one(oscillation, policy, seed, trace="none").summary
        assert 0 <= s["needed_evicted_tokens"] <= s["policy_evicted_tokens"]
        assert 0 <= s["needed_evicted_spans"] <= s["policy_evicted_spans"]
        assert 0 <= s["eviction_precision"] <= 1
        assert s["fallback_evictions"] <= s["non_model_evictions"]
        if policy == "noop":
            assert s["policy_evicted_tokens"] == 0 and s["eviction_precision"] == 1.0
        if policy == "recency":  # its evictions are its own choice, never a gate's fallback
            assert s["non_model_evictions"] > 0 and s["fallback_evictions"] == 0
