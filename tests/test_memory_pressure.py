"""memory-pressure: Letta's and MemGPT's warning, self-edit and eviction into a recursive summary."""

import json

import pytest
from prunesim.cli import main
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts.workload import TranscriptWorkload
from prunesim.model.engine import Engine
from prunesim.model.spans import SUMMARY_TAG, Span
from prunesim.policies.base import Compact, ModelPass, Warn
from prunesim.studies.transcript_replay import replay
from runtime_fixtures import policy, tool_turns, view_of, workload

SMALL = {"window": 20000, "budget": 20000, "trigger": 15000}


def test_presets_hold_their_sources_settings():
    letta = policy("memory-pressure:letta").params
    memgpt = policy("memory-pressure:memgpt").params
    assert (letta.send_warning, letta.warn_at, letta.evict_at, letta.evict_fraction, letta.evict_unit) == (
        False, 0.75, 0.9, 0.3, "messages")
    assert (memgpt.send_warning, memgpt.warn_at, memgpt.evict_at, memgpt.evict_fraction, memgpt.evict_unit,
            memgpt.keep_last) == (True, 0.75, 1.0, 0.75, "tokens", 3)


def test_at_75_percent_a_warning_enters_once_and_the_model_may_answer_with_a_self_edit_pass():
    spans = [Span(500, "system", 1000, 0, pinned=True), *tool_turns([1000] * 14)]  # 15,280 of 20,000: 76%
    pol = policy("memory-pressure", {**SMALL, "memory_pressure.send_warning": True,
                                     "memory_pressure.self_edit": 1.0})
    actions = pol.decide(view_of(spans, turn=14, size=20000))
    assert isinstance(actions[0], Warn) and actions[0].tokens == 91
    assert isinstance(actions[1], ModelPass) and actions[1].selected  # policies.decision.plan_pass
    assert pol.decide(view_of(spans, turn=15, size=20000)) == []  # one warning until the next eviction
    silent = policy("memory-pressure", {**SMALL, "memory_pressure.send_warning": True,
                                        "memory_pressure.self_edit": 0.0})
    assert [type(a) for a in silent.decide(view_of(spans, turn=14, size=20000))] == [Warn]


def test_at_90_percent_the_oldest_30_percent_of_messages_are_folded_into_a_summary_without_splitting_a_turn():
    spans = [Span(500, "system", 1000, 0, pinned=True), *tool_turns([1200] * 14)]  # 18,080: above 90% of 20,000
    pol = policy("memory-pressure:letta", {**SMALL, "memory_pressure.evict_step": 0.0})
    (action,) = pol.decide(view_of(spans, turn=14, size=20000))
    assert isinstance(action, Compact) and action.reason == "memory_pressure"
    messages = spans[1:]
    assert list(action.span_ids) == [s.id for s in messages[: round(0.3 * len(messages))]]  # 8 of 28: 4 whole turns
    named = {s.id: s for s in spans}
    turns = {named[i].turn for i in action.span_ids}
    assert all(sum(1 for i in action.span_ids if named[i].turn == t) == 2 for t in turns)


def test_letta_evicts_more_while_what_stays_is_above_70_percent_of_the_window():
    spans = [Span(500, "system", 1000, 0, pinned=True), *tool_turns([1300] * 14)]  # 19,480
    stepped = policy("memory-pressure:letta", SMALL).decide(view_of(spans, turn=14, size=20000))[0]
    plain = policy("memory-pressure:letta", {**SMALL, "memory_pressure.evict_step": 0.0}).decide(
        view_of(spans, turn=14, size=20000))[0]
    left = 19480 - sum(s.tokens for s in spans if s.id in plain.span_ids)
    assert left >= 0.7 * 20000  # 30% of the messages leave more than 70% of the window
    kept = 19480 - sum(s.tokens for s in spans if s.id in stepped.span_ids)
    assert len(stepped.span_ids) > len(plain.span_ids) and kept < 0.7 * 20000


def test_memgpt_evicts_by_tokens_and_spares_the_last_three_messages():
    spans = [Span(500, "system", 1000, 0, pinned=True), *tool_turns([1200] * 14)]
    pol = policy("memory-pressure:memgpt", {**SMALL, "memory_pressure.evict_at": 0.9,
                                            "memory_pressure.evict_fraction": 1.0})
    (action,) = pol.decide(view_of(spans, turn=14, size=20000))
    assert list(action.span_ids) == [s.id for s in spans[1:-3]]


def test_in_a_run_the_recursive_summary_folds_the_previous_one():
    overrides = {"turns": 60, **SMALL, "memory_pressure.send_warning": True, "memory_pressure.self_edit": 0.0}
    scenario = sc.load("transcript", overrides)
    engine = Engine(scenario, policy("memory-pressure:letta", overrides), TranscriptWorkload(workload(60)))
    engine.run()
    data = workload(60)
    result, _ = replay(data, sc.load("transcript", overrides), "memory-pressure:letta", 0)
    edits = [json.loads(e[4]) for e in result.events if e[3] == "compact"]
    warnings = [e for e in result.events if e[3] == "warning"]
    assert len(edits) >= 3 and len(warnings) >= 2  # a warning between evictions
    assert result.summary["memory_warnings"] == len(warnings)
    spans = engine.window.spans()
    summaries = [s for s in spans if SUMMARY_TAG in s.tags]
    assert len(summaries) == 1 and spans[1] is summaries[0]  # one recursive summary, right after the system prompt
    t = result.trace()
    folded = {int(i) for e, k, i in zip(t["event"], t["kind"], t["span_id"], strict=True)
              if e == "summarized" and k == "summary"}
    assert len(folded) == len(edits) - 1  # each eviction after the first folds the summary before it
    assert result.summary["peak_utilization"] <= 20000


@pytest.mark.parametrize("setting, words", [
    ("memory_pressure.evict_at=1.2", "memory_pressure.evict_at: 1.2 is above the window"),
    ("memory_pressure.warn_at=0", "memory_pressure.warn_at: must be positive"),
    ("memory_pressure.evict_fraction=0", "memory_pressure.evict_fraction: must be positive"),
    ("memory_pressure.self_edit=1.5", "memory_pressure.self_edit: must be between 0 and 1"),
])
def test_bad_parameters_are_one_line_and_exit_2(setting, words, capsys):
    assert main(["compare", "oscillation-40", "--policies", "memory-pressure", "--seeds", "0:1",
                 "--set", setting]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err
