"""observation-masking: SWE-agent's LastNObservations on hand-made windows and replays."""

import pytest
from prunesim.cli import main
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts.workload import TranscriptWorkload
from prunesim.model.engine import Engine
from prunesim.policies.base import Clear
from prunesim.studies.transcript_replay import replay
from runtime_fixtures import policy, tool_turns, view_of, workload


def test_presets_hold_the_n_of_swe_agent_and_of_the_complexity_trap():
    assert policy("observation-masking:swe-agent").params.n == 5
    assert policy("observation-masking:complexity-trap").params.n == 10
    assert policy("observation-masking").params.n == 5  # its table's default preset is SWE-agent's
    assert policy("observation-masking:swe-agent").params.placeholder_tokens == 9
    openhands = policy("observation-masking:openhands").params
    assert (openhands.n, openhands.unit, openhands.placeholder_tokens) == (10, "events", 5)


@pytest.mark.parametrize("n", [1, 3, 5])
def test_the_last_n_outputs_stay_whole_and_every_older_one_is_masked(n):
    spans = tool_turns([400 + i for i in range(9)])
    (action,) = policy("observation-masking", {"observation_masking.n": n}).decide(view_of(spans, turn=9))
    assert isinstance(action, Clear) and action.reason == "observation_masking"
    outputs = [s.id for s in spans if s.kind == "tool_output"]
    assert list(action.span_ids) == outputs[: len(outputs) - n]
    assert set(action.placeholder_tokens) == {9}


def test_nothing_is_masked_while_there_are_n_outputs_or_fewer():
    spans = tool_turns([400] * 5)
    assert policy("observation-masking", {"observation_masking.n": 5}).decide(view_of(spans, turn=5)) == []


def run_masking(turns, overrides):
    overrides = {"turns": turns, **overrides}
    scenario = sc.load("transcript", overrides)
    engine = Engine(scenario, policy("observation-masking", overrides), TranscriptWorkload(workload(turns)))
    engine.run()
    return engine.window.spans()


@pytest.mark.parametrize("n", [5, 10])
def test_in_a_run_exactly_the_last_n_outputs_are_whole_and_the_rest_are_placeholders(n):
    spans = run_masking(25, {"observation_masking.n": n})
    outputs = [s for s in spans if s.kind == "tool_output"]
    masks = [s for s in spans if s.kind == "placeholder"]
    assert [s.turn for s in outputs] == list(range(25 - n + 1, 26))
    assert len(masks) == 25 - n and all(s.tokens == 9 for s in masks)
    # each mask stands where its output stood, after the call that made it
    for i, s in enumerate(spans):
        if s.kind == "placeholder":
            assert spans[i - 1].kind == "tool_call" and spans[i - 1].key == s.key


@pytest.mark.parametrize("polling", [2, 3, 4])
def test_with_polling_between_n_and_n_plus_polling_outputs_stay_whole(polling):
    for turns in range(8, 20):
        spans = run_masking(turns, {"observation_masking.n": 5, "observation_masking.polling": polling})
        whole = sum(s.kind == "tool_output" for s in spans)
        assert 5 <= whole < 5 + polling, (turns, whole)


def test_masking_cuts_the_prompt_tokens_and_its_placeholders_are_billed():
    data = workload(30, output=lambda t: 1200)
    base = sc.load("transcript")
    noop, _ = replay(data, base, "noop", 0)
    masked, _ = replay(data, base, "observation-masking:swe-agent", 0)
    s = masked.summary
    assert s["cleared_spans"] == 25 and s["placeholder_tokens"] == 25 * 9
    assert s["decision_tokens_billed"] == 0  # no model call
    assert s["input_tokens_billed"] < noop.summary["input_tokens_billed"]
    assert s["final_utilization"] == noop.summary["final_utilization"] - 25 * (1200 - 9)


@pytest.mark.parametrize("setting, words", [
    ("observation_masking.n=0", "observation_masking.n: must be at least 1"),
    ("observation_masking.polling=-2", "observation_masking.polling: must be at least 1"),
    ("observation_masking.preset=sweagent", "observation_masking.preset: must be one of"),
    ("observation_masking.unit=turns", "observation_masking.unit: must be one of"),
])
def test_bad_parameters_are_one_line_and_exit_2(setting, words, capsys):
    assert main(["compare", "oscillation-40", "--policies", "observation-masking", "--seeds", "0:1",
                 "--set", setting]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err


def test_tagged_observations_are_always_removed_or_always_kept_as_swe_agent_tags_them():
    from prunesim.model.spans import Span

    spans = tool_turns([400 + i for i in range(8)])
    outputs = [s for s in spans if s.kind == "tool_output"]
    spans = [Span(s.id, s.kind, s.tokens, s.turn, key=s.key, tool=s.tool,
                  tags=frozenset({"keep_output"}) if s is outputs[0] else
                  frozenset({"remove_output"}) if s is outputs[-1] else frozenset()) for s in spans]
    (action,) = policy("observation-masking", {"observation_masking.n": 3}).decide(view_of(spans, turn=8))
    ids = [s.id for s in outputs]
    # The first would be masked but is kept; the last would stay but is removed.
    assert list(action.span_ids) == ids[1:5] + ids[-1:]


def test_an_empty_output_counts_toward_n_and_is_masked_like_any_other():
    data = workload(8, output=lambda t: 0 if t in (2, 7) else 500)
    for p in data.parts:
        if p["kind"] in ("tool_call", "tool_output"):
            p["call"] = p["turn"]  # an imported transcript pairs them
    scenario = sc.load("transcript", {"turns": 8, "observation_masking.n": 3})
    engine = Engine(scenario, policy("observation-masking", {"observation_masking.n": 3}), TranscriptWorkload(data))
    engine.run()
    spans = engine.window.spans()
    whole = [s.turn for s in spans if s.kind == "tool_output"]
    masked = [s.turn for s in spans if s.kind == "placeholder"]
    assert whole == [6, 7, 8]  # the empty output of turn 7 is one of the three kept
    assert masked == [1, 2, 3, 4, 5]  # the empty one of turn 2 is masked: 9 tokens where 0 stood
    assert sum(s.tokens for s in spans if s.kind == "placeholder") == 5 * 9


def test_a_placeholder_leaves_with_the_span_it_replaced_when_the_runtime_drops_it():
    data = workload(10, output=lambda t: 500)
    for p in data.parts:
        if p["turn"] <= 4 and p["turn"] > 0:
            p["dropped_at"] = 8  # the runtime compacts the first four turns away before call 8
    result, _ = replay(data, sc.load("transcript", {"observation_masking.n": 2}), "observation-masking", 0)
    scenario = sc.load("transcript", {"turns": 10, "observation_masking.n": 2})
    engine = Engine(scenario, policy("observation-masking", {"observation_masking.n": 2}), TranscriptWorkload(data))
    engine.run()
    placeholders = [s.turn for s in engine.window.spans() if s.kind == "placeholder"]
    assert placeholders == [5, 6, 7, 8]  # those of turns 1 to 4 left with their outputs
    assert result.summary["placeholder_tokens"] == 4 * 9


# -- OpenHands' ObservationMaskingCondenser (unit = "events") -----------------------------------------------
def openhands_window(turns, calls_per_turn=1):
    """A system prompt and a task, then per turn a reasoning, its calls and their outputs (OpenHands' order)."""
    from prunesim.model.spans import Span

    spans = [Span(1, "system", 300, 0, pinned=True), Span(2, "user", 100, 0, pinned=True)]
    sid = 3
    for t in range(1, turns + 1):
        spans.append(Span(sid, "reasoning", 30, t))
        calls = [Span(sid + 1 + i, "tool_call", 20, t, key=f"c{t}.{i}") for i in range(calls_per_turn)]
        outputs = [Span(sid + 1 + calls_per_turn + i, "tool_output", 400, t, key=f"c{t}.{i}")
                   for i in range(calls_per_turn)]
        spans += calls + outputs
        sid += 1 + 2 * calls_per_turn
    return spans


@pytest.mark.parametrize("window, kept", [(1, 1), (2, 1), (3, 2), (4, 2), (10, 5), (11, 6), (29, 15)])
def test_openhands_counts_events_so_an_attention_window_of_m_keeps_m_over_2_outputs_rounded_up(window, kept):
    spans = openhands_window(20)
    actions = policy("observation-masking:openhands", {"observation_masking.n": window}).decide(view_of(spans, 20))
    masked = {i for a in actions for i, size in zip(a.span_ids, a.placeholder_tokens, strict=True) if size}
    outputs = [s for s in spans if s.kind == "tool_output"]
    # An observation is masked when `window` events or more follow it: turn t's output has 2 * (20 - t) after it.
    assert [s.turn for s in outputs if s.id not in masked] == list(range(21 - kept, 21))


def test_openhands_takes_a_masked_step_out_whole_reasoning_and_call_with_no_placeholder():
    spans = openhands_window(8)
    (action,) = policy("observation-masking:openhands", {"observation_masking.n": 4}).decide(view_of(spans, 8))
    by_id = {s.id: s for s in spans}
    cleared = [(by_id[i].turn, by_id[i].kind, size) for i, size in zip(action.span_ids, action.placeholder_tokens,
                                                                         strict=True)]
    # Turns 1-6 are masked (turn 7's output is followed by 3 events): each loses its reasoning and call (0 tokens)
    # and its output becomes the 5-token "<MASKED>" line. The task and the system prompt are not observations.
    assert cleared == [(t, kind, 5 if kind == "tool_output" else 0) for t in range(1, 7)
                       for kind in ("reasoning", "tool_call", "tool_output")]


def test_openhands_drops_every_output_of_a_model_call_one_of_whose_outputs_is_masked():
    spans = openhands_window(4, calls_per_turn=2)
    (action,) = policy("observation-masking:openhands", {"observation_masking.n": 5}).decide(view_of(spans, 4))
    by_id = {s.id: s for s in spans}
    turn3 = [(by_id[i].kind, size) for i, size in zip(action.span_ids, action.placeholder_tokens, strict=True)
             if by_id[i].turn == 3]
    # Turn 3's events: A, A, O1, O2, then turn 4's four: O1 has 5 after it (masked), O2 has 4 (not masked), but the
    # assistant message waits for both answers and never comes, so O2 leaves the prompt too, with no placeholder.
    assert turn3 == [("reasoning", 0), ("tool_call", 0), ("tool_call", 0), ("tool_output", 5), ("tool_output", 0)]
    assert all(by_id[i].turn <= 3 for i in action.span_ids)


@pytest.mark.parametrize("window", [2, 10])
def test_openhands_masking_in_a_run_keeps_counting_the_steps_it_took_out(window):
    """Synthetic steps leave no trace of a cleared call (no call id): its action still counts as an event."""
    data = workload(30, output=lambda t: 800)
    scenario = sc.load("transcript", {"turns": 30, "observation_masking.n": window})
    engine = Engine(scenario, policy("observation-masking:openhands", {"observation_masking.n": window}),
                    TranscriptWorkload(data))
    engine.run()
    spans = engine.window.spans()
    assert [s.turn for s in spans if s.kind == "tool_output"] == list(range(31 - window // 2, 31))
    assert [s.turn for s in spans if s.kind == "tool_call"] == list(range(31 - window // 2, 31))
    assert [s.turn for s in spans if s.kind == "placeholder"] == list(range(1, 31 - window // 2))
    assert {s.tokens for s in spans if s.kind == "placeholder"} == {5}
