"""llm-summary: auto-compaction (Codex, Claude Code) and OpenHands' LLMSummarizingCondenser."""


import pytest
from prunesim.cli import main
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts.workload import TranscriptWorkload
from prunesim.model.engine import Engine
from prunesim.model.spans import PLACEHOLDER_OF, SUMMARY_TAG, THINKING, Span
from prunesim.policies import get_policy
from prunesim.policies.base import Compact
from prunesim.policies.sdk_condenser import Replies, cut_points, sdk_condensation, sdk_events
from prunesim.runner import run_one, streams
from prunesim.studies.transcript_replay import replay
from runtime_fixtures import policy, tool_turns, view_of, workload

TURNS = {"llm_summary.threshold": 12, "llm_summary.unit": "turns"}


def compactions(result):
    return [e.detail for e in result.events if e.event == "compact"]


def test_presets_hold_their_sources_thresholds():
    codex = policy("llm-summary:codex").params
    claude = policy("llm-summary:claude-code").params
    openhands = policy("llm-summary:openhands").params
    assert (codex.threshold, codex.unit, codex.keep_turns) == (0.9, "window", 0)
    assert (claude.threshold, claude.unit, claude.keep_turns) == (0.835, "window", 0)  # 167k of 200k (2.1)
    assert policy("llm-summary:claude-code-2.0").params.threshold == 0.775  # 155k of 200k, as 2.0 ran
    assert policy("llm-summary:claude-code-1m").params.threshold == 0.967  # 967k of 1M
    assert (openhands.threshold, openhands.unit, openhands.keep_turns) == (50, "turns", 24)


def test_explicit_values_win_over_the_preset():
    p = policy("llm-summary:openhands", {"llm_summary.keep_turns": 3}).params
    assert (p.threshold, p.unit, p.keep_turns) == (50, "turns", 3)


def test_at_the_threshold_everything_but_pinned_spans_and_the_last_k_turns_is_named():
    system = Span(100, "system", 500, 0, pinned=True)
    spans = [system, *tool_turns([1000] * 10)]
    used = sum(s.tokens for s in spans)
    pol = policy("llm-summary", {"llm_summary.threshold": used, "llm_summary.unit": "tokens",
                                 "llm_summary.keep_turns": 3})
    assert pol.decide(view_of(spans[:-1], turn=10)) == []  # one token short
    (action,) = pol.decide(view_of(spans, turn=10))
    assert isinstance(action, Compact) and action.reason == "auto_compact"
    assert list(action.span_ids) == [s.id for s in spans if not s.pinned and s.turn <= 7]
    assert set(action.carried) <= set(action.span_ids)
    assert action.instruction_tokens == 95
    assert 1 <= action.summary_tokens <= 20_000


def run_engine(turns, overrides, output=lambda t: 1000, name="llm-summary", seed=0):
    overrides = {"turns": turns, **overrides}
    scenario = sc.load("transcript", overrides)
    engine = Engine(scenario, policy(name, overrides, seed=seed), TranscriptWorkload(workload(turns, output=output)))
    engine.run()
    return engine


def test_a_compaction_replaces_all_but_the_last_k_turns_with_one_summary_where_they_stood():
    engine = run_engine(12, {**TURNS, "llm_summary.keep_turns": 4})  # it compacts at turn 12, the last
    spans = engine.window.spans()
    assert spans[0].kind == "system" and spans[0].pinned
    assert spans[1].kind == "summary" and SUMMARY_TAG in spans[1].tags
    assert {s.turn for s in spans[2:]} == {9, 10, 11, 12} and len(spans[2:]) == 4 * 3


def test_a_compaction_bills_the_whole_window_read_and_takes_its_time():
    data = workload(40, output=lambda t: 900)
    base = sc.load("transcript", {"llm_summary.threshold": 9000, "llm_summary.unit": "tokens",
                                  "llm_summary.keep_turns": 2})
    noop, _ = replay(data, base, "noop", 0)
    result, _ = replay(data, base, "llm-summary", 0)
    edits = compactions(result)
    assert len(edits) >= 3
    for e in edits:
        assert e["prompt"] == e["utilization_before"] + 95  # the whole window, and the request
        assert e["utilization_before"] >= 9000
    s = result.summary
    assert s["compactions"] == len(edits)
    assert s["decision_tokens_billed"] == sum(e["prompt"] + e["written"] for e in edits)
    assert s["summary_tokens"] == sum(e["written"] for e in edits)
    lat = base.latency
    extra = sum(lat.model_base_s + lat.model_per_input_token_s * e["prompt"] + lat.model_per_output_token_s
                * e["written"] for e in edits)
    turn_calls = s["input_tokens_billed"] - sum(e["prompt"] for e in edits)
    assert s["sim_time_s"] == pytest.approx(
        noop.summary["sim_time_s"] + extra - lat.model_per_input_token_s
        * (noop.summary["input_tokens_billed"] - turn_calls), rel=1e-9)


def test_summary_of_summary_accounting_is_exact():
    data = workload(80, output=lambda t: 700 + (t * 37) % 600)
    base = sc.load("transcript", {"llm_summary.threshold": 8000, "llm_summary.unit": "tokens",
                                  "llm_summary.keep_turns": 2, "summary.mean_tokens": 1500})
    result, _ = replay(data, base, "llm-summary", 3)
    t = result.trace()
    s = result.summary
    edits = compactions(result)
    assert len(edits) >= 5  # summaries of summaries of summaries...
    # every window change adds up, every row
    assert (t["appended_total"] - t["removed_total"] == t["utilization"]).all()
    assert s["summary_kept_spans"] == sum(e["kept"] for e in edits)
    assert s["summary_dropped_spans"] == sum(e["dropped"] for e in edits)
    assert s["compacted_tokens"] == sum(e["freed"] - e["written"] for e in edits)
    # each piece of content is dropped once at most, and what was never dropped is carried by the last summary
    rows = list(zip(t["event"], t["kind"], t["span_id"], t["delta"], strict=True))
    dropped = [int(i) for e, k, i, _ in rows if e == "summary_dropped"]
    assert len(dropped) == len(set(dropped)) == s["summary_dropped_spans"]
    summaries = {int(i) for e, k, i, _ in rows if e == "append" and k == "summary"}
    content = {int(i) for e, k, i, _ in rows if e in ("summarized", "summary_dropped") and int(i) not in summaries}
    # the same run again, its engine kept: the policy's stream is the one run_one gives seed 3
    pol = get_policy("llm-summary")(result.scenario, streams(3)["policy"])
    engine = Engine(result.scenario, pol, TranscriptWorkload(data))
    engine.run()
    (last,) = [sp for sp in engine.window.spans() if sp.kind == "summary"]
    assert set(last.names) | set(dropped) == content and not set(last.names) & set(dropped)
    # content dropped later than it was summarized frees nothing the second time
    late = [d for e, _, i, d in rows if e == "summary_dropped" and d == 0]
    assert late, "no summary dropped content an earlier one carried"
    assert engine.window.utilization == sum(sp.tokens for sp in engine.window.spans()) == s["final_utilization"]


def constraint_scenario(keep):
    events = [{"turn": t, "kind": "constraint", "tokens": 120, "replaces_output": False, "pinned": False}
              for t in (3, 6, 9)]
    # 12,200 pinned tokens; compactions at 20,000 leave room for a few turns between them
    return sc.load("oscillation-40", {"turns": 60, "workload.events": events, "llm_summary.threshold": 20000,
                                      "llm_summary.unit": "tokens", "llm_summary.keep_turns": 1,
                                      "summary.keep_constraint": keep, "summary.size_half": 0,
                                      "summary.mean_tokens": 1000})


def test_a_constraint_the_summary_drops_is_lost_and_one_it_carries_is_not():
    lost = run_one(constraint_scenario(0.0), "llm-summary", 0)
    assert lost.summary["compactions"] >= 1 and lost.summary["lost_constraints"] == 3
    kept = run_one(constraint_scenario(1.0), "llm-summary", 0)
    assert kept.summary["compactions"] >= 2 and kept.summary["lost_constraints"] == 0
    assert kept.summary["summary_dropped_spans"] > 0  # other content was dropped; the constraints were not


def repeating(keep):
    # the same command at turns 2 and 14; summaries keep everything or nothing
    data = workload(16, output=lambda t: 800, keys=lambda t: "cat setup.py" if t in (2, 14) else f"cmd {t}")
    base = sc.load("transcript", {**TURNS, "llm_summary.keep_turns": 3, "summary.keep_tool_call": keep,
                                  "summary.keep_tool_output": keep, "summary.size_half": 0})
    result, metrics = replay(data, base, "llm-summary", 0)
    assert result.summary["compactions"] == 1  # at turn 12
    return metrics


def test_dropped_content_cannot_be_recalled_and_carried_content_can():
    assert repeating(1.0)["repeats_after_prune"] == 0 and repeating(1.0)["repeats_in_window"] == 1
    assert repeating(0.0)["repeats_after_prune"] == 1


def test_the_openhands_preset_compacts_past_50_turns_and_keeps_24():
    engine = run_engine(50, {}, output=lambda t: 100, name="llm-summary:openhands")
    spans = engine.window.spans()
    assert [s.kind for s in spans[:2]] == ["system", "summary"]
    assert {s.turn for s in spans[2:]} == set(range(27, 51))


@pytest.mark.parametrize("setting, words", [
    ("llm_summary.threshold=1.5 --set llm_summary.unit=window", "llm_summary.threshold: 1.5 is above the window"),
    ("llm_summary.threshold=300000 --set llm_summary.unit=tokens",
     "llm_summary.threshold: 300000 is above the window 200000"),
    ("llm_summary.unit=turns", "llm_summary.unit: set a threshold with its unit"),
    ("llm_summary.threshold=2", "llm_summary.threshold: 2.0 is above the window (a fraction of it: at most 1)"),
    ("llm_summary.keep_turns=-1", "llm_summary.keep_turns: must not be negative"),
    ("summary.keep_tool_output=2", "summary.keep_tool_output: must be between 0 and 1"),
])
def test_bad_parameters_are_one_line_and_exit_2(setting, words, tmp_path, capsys):
    folder = tmp_path / "runs"
    folder.mkdir()
    from prunesim.io.transcripts.workload import write

    write(folder / "a.jsonl", workload(3))
    argv = ["leaderboard", str(folder), "--policies", "llm-summary", "--out", str(tmp_path / "out")]
    for part in setting.split(" --set "):
        argv += ["--set", part]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, overrides", [
    ("llm-summary", {"llm_summary.threshold": 6000, "llm_summary.unit": "tokens", "llm_summary.keep_turns": 2}),
    ("observation-masking", {}),
    ("clear-tool-uses", {"clear_tool_uses.trigger": 5000}),
])
def test_the_cost_model_sees_placeholders_and_summaries_where_they_stand(name, overrides):
    from prunesim.observe import RunContext, build_observers
    from prunesim.observe.metrics.cost import CostMetrics

    overrides = {"turns": 30, "pricing.model": "claude-opus-4-5", **overrides}
    scenario = sc.load("transcript", overrides)
    pol = policy(name, overrides)
    observers = build_observers(RunContext(scenario, name, 0, pol.acting_trigger(), "all"))
    engine = Engine(scenario, pol, TranscriptWorkload(workload(30, output=lambda t: 700)), observers)
    engine.run()
    (cost,) = [o for o in observers if isinstance(o, CostMetrics)]
    spans = engine.window.spans()
    assert cost._ids == [s.id for s in spans] and cost._tokens == [s.tokens for s in spans]
    if name == "observation-masking":  # it masks mid-window at every turn: the cached prefix is cut there
        assert cost.summary({})["cache_invalidations"] > 0


# -- openhands-sdk's condenser (openhands-sdk 1.58.2) ---------------------------------------------
def sdk_window(turns, calls=1, output=100):
    """A system prompt and a task (pinned), then per turn a thought, ``calls`` tool calls and their results."""
    spans = [Span(1, "system", 500, 0, pinned=True), Span(2, "user", 50, 0, pinned=True)]
    for t in range(1, turns + 1):
        spans.append(Span(len(spans) + 1, "reasoning", 20, t))
        for c in range(calls):
            spans.append(Span(len(spans) + 1, "tool_call", 10, t, key=f"k{t}.{c}", call=t * 10 + c))
        for c in range(calls):
            spans.append(Span(len(spans) + 1, "tool_output", output, t, key=f"k{t}.{c}", call=t * 10 + c))
    return spans


def test_the_sdk_presets_hold_the_class_defaults_and_the_default_agents():
    agent = policy("llm-summary:openhands-sdk").params
    cls = policy("llm-summary:openhands-sdk-class").params
    assert (agent.threshold, agent.unit, agent.keep_first, agent.minimum_progress) == (80, "events", 4, 0.1)
    assert (cls.threshold, cls.unit, cls.keep_first, cls.minimum_progress) == (240, "events", 2, 0.1)
    assert agent.max_tokens_of_window == cls.max_tokens_of_window == 1.0


def test_the_sdk_condenses_past_max_size_events_keeping_the_first_keep_first_and_the_last_half():
    pol = policy("llm-summary:openhands-sdk")
    assert pol.decide(view_of(sdk_window(39), turn=39)) == []  # 2 + 2 x 39 = 80 events: not above 80
    spans = sdk_window(40)  # 82 events
    (action,) = pol.decide(view_of(spans, turn=40))
    assert isinstance(action, Compact) and action.reason == "condensation"
    turns = sorted({s.turn for s in spans if s.id in set(action.span_ids)})
    # keep_first 4: the system prompt, the task, turn 1's action and observation. The last 80 // 2 - 4 - 1 = 35
    # events start inside turn 23, so the range ends at the next batch: turns 24 to 40 stay.
    assert turns == list(range(2, 24))


def test_a_turn_of_parallel_calls_is_one_event_per_call_and_per_result():
    pol = policy("llm-summary:openhands-sdk")
    assert pol.decide(view_of(sdk_window(13, calls=3), turn=13)) == []  # 2 + 6 x 13 = 80 events
    (action,) = pol.decide(view_of(sdk_window(14, calls=3), turn=14))  # 86 events
    assert action.span_ids


def test_the_sdk_refuses_a_condensation_under_minimum_progress():
    spans = sdk_window(40)
    assert policy("llm-summary:openhands-sdk", {"llm_summary.minimum_progress": 0.6}).decide(
        view_of(spans, turn=40)) == []  # 44 of 82 events forgotten: under 60%


def test_the_sdk_condenses_on_tokens_past_the_window_down_to_half_of_it():
    spans = sdk_window(20, output=2000)  # 42 events, far under 80, but about 41,000 tokens
    used = sum(s.tokens for s in spans)
    pol = policy("llm-summary:openhands-sdk", {"window": 40_000, "budget": 40_000, "trigger": 30_000})
    (action,) = pol.decide(view_of(spans, turn=20, size=40_000, utilization=used))
    freed = sum(s.tokens for s in spans if s.id in set(action.span_ids))
    assert used - freed <= 20_000 < used - freed + 2030  # just enough events go for half the window


def test_a_keep_first_that_leaves_no_tail_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["run", "transcript", "--policy", "llm-summary:openhands-sdk", "--set", "llm_summary.keep_first=39",
                 "--out", str(tmp_path / "o")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "llm_summary.keep_first: 39 leaves no room" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("overrides, fires", [
    ({}, [31, 52, 73]),  # N = 21, M = 10: at 31 unsummarized turns, then every 21
    ({"llm_summary.threshold": 7}, [17, 24, 31, 38, 45, 52, 59, 66, 73, 80]),  # threshold is N
    ({"llm_summary.keep_turns": 3}, [24, 45, 66]),  # keep_turns is M
])
def test_the_complexity_trap_preset_summarizes_n_turns_every_n_turns_keeping_the_last_m(overrides, fires):
    data = workload(80, output=lambda t: 200)
    result, _ = replay(data, sc.load("transcript", overrides), "llm-summary:complexity-trap", 0)
    assert [e.turn for e in result.events if e.event == "compact"] == fires
    n = overrides.get("llm_summary.threshold", 21)
    engine = run_engine(80, overrides, output=lambda t: 200, name="llm-summary:complexity-trap")
    spans = engine.window.spans()
    assert [s.kind for s in spans[:2]] == ["system", "summary"]
    last = fires[-1]  # the last summary took the oldest n of the n + m unsummarized turns
    assert {s.turn for s in spans[2:]} == set(range(last - (overrides.get("llm_summary.keep_turns", 10)) + 1, 81))
    assert n == policy("llm-summary:complexity-trap", overrides).params.threshold


# -- how the SDK's events are read from the window (openhands-sdk 1.58.2's source; tests/openhands_sdk_reference.py
# runs the SDK itself on these shapes) --------------------------------------------------------------------------
def spans_of(*rows):
    """Spans from (kind, turn, tokens, call, tags) rows, ids in order; turn 0 pinned."""
    return [Span(i, kind, tokens, turn, call=call, pinned=turn == 0, tags=frozenset(tags))
            for i, (kind, turn, tokens, call, *tags) in enumerate(rows, 1)]


START = (("system", 0, 500, 0), ("user", 0, 50, 0))


def kinds(events):
    return [(e.kind, [s.id for s in e.spans], e.call) for e in events]


def test_a_turns_text_placed_after_its_result_is_the_thought_of_its_first_call():
    # The engine places a turn's first reasoning, call and result, then the rest: the text comes last.
    spans = spans_of(*START, ("reasoning", 1, 20, 0, THINKING), ("tool_call", 1, 30, 1), ("tool_output", 1, 400, 1),
                     ("reasoning", 1, 15, 0))
    assert kinds(sdk_events(spans))[2:] == [("action", [3, 6, 4], 1), ("observation", [5], 1)]


def test_a_response_without_a_call_is_one_message_and_the_users_reply_another():
    spans = spans_of(*START, ("reasoning", 1, 20, 0, THINKING), ("reasoning", 1, 15, 0), ("user", 1, 40, 0))
    events = sdk_events(spans)
    assert kinds(events)[2:] == [("message", [3, 4], 0), ("message", [5], 0)]
    assert cut_points(events)[3]  # the SDK may cut between the agent's message and the user's reply


def test_parallel_calls_are_one_batch_that_no_cut_splits_whatever_order_their_results_came_in():
    # engine order: reasoning, call 1, its result, then the extras: call 2, result 2
    spans = spans_of(*START, ("reasoning", 1, 20, 0), ("tool_call", 1, 30, 1), ("tool_output", 1, 400, 1),
                     ("tool_call", 1, 30, 2), ("tool_output", 1, 300, 2), ("tool_call", 2, 30, 3),
                     ("tool_output", 2, 300, 3))
    events = sdk_events(spans)
    assert [(k, c) for k, _, c in kinds(events)[2:]] == [("action", 1), ("action", 2), ("observation", 1),
                                                        ("observation", 2), ("action", 3), ("observation", 3)]
    assert cut_points(events) == [True, True, True, False, False, False, True, False, True]


def test_no_cut_inside_a_tool_loop_that_an_action_with_thinking_opens():
    spans = spans_of(*START, ("reasoning", 1, 20, 0, THINKING), ("tool_call", 1, 30, 1), ("tool_output", 1, 400, 1),
                     ("tool_call", 2, 30, 2), ("tool_output", 2, 400, 2), ("user", 2, 40, 0),
                     ("tool_call", 3, 30, 3), ("tool_output", 3, 400, 3))
    # events: system, task, A1 (thinking), O1, A2, O2, user, A3, O3
    assert cut_points(sdk_events(spans)) == [True, True, True, False, False, False, True, True, False, True]
    # Without thinking there is no loop: a turn's action may start a range.
    plain = [s if THINKING not in s.tags else Span(s.id, s.kind, s.tokens, s.turn) for s in spans]
    assert cut_points(sdk_events(plain))[4]


def test_a_format_error_answers_its_call_but_a_message_after_a_cleared_result_stays_a_message():
    turn_1 = (("reasoning", 1, 20, 0), ("tool_call", 1, 30, 1), ("user", 1, 60, 0))  # a call that never ran
    turn_2 = (("reasoning", 2, 20, 0), ("tool_call", 2, 30, 2), ("tool_output", 2, 400, 2), ("user", 2, 30, 0))
    replies = Replies()
    spans = spans_of(*START, *turn_1, *turn_2)
    assert [k for k, _, _ in kinds(sdk_events(spans, replies))[2:]] == ["action", "observation", "action",
                                                                        "observation", "message"]
    cleared = [s for s in spans if s.id != 8]  # later the runtime clears result 2 while its call stays
    assert kinds(sdk_events(cleared, replies))[4:] == [("action", [6, 7], 2), ("observation", [], 2),
                                                        ("message", [9], 0)]
    assert len(sdk_events(cleared)) == len(sdk_events(spans, replies)) - 1  # read afresh, it is misread


def test_the_sdk_forgets_the_task_beyond_keep_first_but_never_a_constraint():
    spans = [*spans_of(*START, *((kind, t, 100, t if kind != "reasoning" else 0) for t in range(1, 8)
                                 for kind in ("reasoning", "tool_call", "tool_output"))),
             Span(99, "constraint", 30, 0, pinned=True)]
    spans.insert(2, spans.pop())  # the constraint right after the task
    forgotten = {s.id for s in sdk_condensation(view_of(spans, turn=7), 10, 1, 0.1, 0)}
    assert 2 in forgotten and 99 not in forgotten and 1 not in forgotten  # the task goes, the constraint stays


def test_a_refused_range_under_token_pressure_resets_everything_after_the_system_prompt():
    rows = [("reasoning", 1, 20, 0), ("tool_call", 1, 30, 1), ("tool_output", 1, 9000, 1)]
    rows += [(kind, t, 100, t if kind != "reasoning" else 0) for t in range(2, 16)
             for kind in ("reasoning", "tool_call", "tool_output")]
    spans = spans_of(*START, *rows)  # 32 events: freeing enough takes 2 of them, under 10%
    used = sum(s.tokens for s in spans)
    forgotten = sdk_condensation(view_of(spans, turn=15, utilization=used), 240, 2, 0.1, used - 1)
    assert [s.id for s in forgotten] == [s.id for s in spans[1:]]
    assert sdk_condensation(view_of(spans, turn=15, utilization=used), 240, 2, 0.1, 0) == []  # events alone: none


def test_the_sdk_presets_are_asked_again_after_the_runtime_drops_content_the_others_not():
    for name in ("llm-summary:openhands-sdk", "llm-summary:openhands-sdk-class",
                 "observation-masking:swe-agent+llm-summary:openhands-sdk"):  # a composition reads the class
        assert get_policy(name).edits_every_call and policy(name).edits_every_call
    assert policy("llm-summary", {"llm_summary.preset": "openhands-sdk"}).edits_every_call
    assert not get_policy("llm-summary:codex").edits_every_call and not policy("llm-summary:codex").edits_every_call


def test_a_placeholder_stands_in_the_sdks_events_for_what_it_replaced():
    spans = spans_of(*START, ("reasoning", 1, 20, 0), ("placeholder", 1, 4, 1, PLACEHOLDER_OF + "tool_call"),
                     ("placeholder", 1, 4, 1, PLACEHOLDER_OF + "tool_output"),
                     ("placeholder", 1, 4, 0, PLACEHOLDER_OF + "reasoning"))
    assert kinds(sdk_events(spans))[2:] == [("action", [3, 6, 4], 1), ("observation", [5], 1)]
