"""clear-tool-uses: Anthropic's and LangChain's tool-result clearing on hand-made windows and replays."""

import pytest
from prunesim.cli import main
from prunesim.io import scenario_files as sc
from prunesim.model.spans import PLACEHOLDER_OF, Span
from prunesim.policies.base import Clear
from prunesim.studies.transcript_replay import replay
from runtime_fixtures import policy, tool_turns, view_of, workload


def cleared(actions):
    (action,) = actions
    assert isinstance(action, Clear) and action.reason == "clear_tool_uses"
    return list(action.span_ids), list(action.placeholder_tokens)


def with_placeholders(spans, action):
    """The window after the engine applied ``action``: each cleared span replaced by its placeholder."""
    sizes = dict(zip(action.span_ids, action.placeholder_tokens, strict=True))
    return [Span(1000 + s.id, "placeholder", sizes[s.id], s.turn, key=s.key, names=(s.id,), tool=s.tool,
                 call=s.call, tags=frozenset({PLACEHOLDER_OF + s.kind})) if s.id in sizes else s for s in spans]


def test_presets_hold_the_documented_defaults():
    for name, semantics in (("clear-tool-uses:anthropic", "anthropic"), ("clear-tool-uses:langchain", "langchain")):
        p = policy(name).params
        assert (p.trigger, p.keep, p.clear_at_least, p.semantics) == (100_000, 3, 0, semantics)
        assert (p.clear_tool_inputs, p.exclude_tools, p.placeholder_tokens) == (False, [], 4)


def test_nothing_happens_until_the_history_exceeds_the_trigger():
    spans = tool_turns([1000] * 5)
    used = sum(s.tokens for s in spans)
    pol = policy("clear-tool-uses", {"clear_tool_uses.trigger": used})
    assert pol.decide(view_of(spans, turn=5)) == []  # equal is not above
    pol = policy("clear-tool-uses", {"clear_tool_uses.trigger": used - 1})
    assert pol.decide(view_of(spans, turn=5))


@pytest.mark.parametrize("name", ["clear-tool-uses:anthropic", "clear-tool-uses:langchain"])
def test_keep_3_keeps_exactly_the_three_most_recent_tool_results(name):
    spans = tool_turns([800, 900, 1000, 1100, 1200, 1300, 1400, 1500])
    pol = policy(name, {"clear_tool_uses.trigger": 1000, "clear_tool_uses.keep": 3})
    ids, sizes = cleared(pol.decide(view_of(spans, turn=8)))
    outputs = [s.id for s in spans if s.kind == "tool_output"]
    assert ids == outputs[:5]  # the five oldest, oldest first; the last three stay
    assert sizes == [4] * 5


def test_keep_0_clears_every_result_and_keep_above_the_count_clears_none():
    spans = tool_turns([500, 600, 700])
    ids, _ = cleared(policy("clear-tool-uses", {"clear_tool_uses.trigger": 10, "clear_tool_uses.keep": 0})
                     .decide(view_of(spans, turn=3)))
    assert ids == [s.id for s in spans if s.kind == "tool_output"]
    assert policy("clear-tool-uses", {"clear_tool_uses.trigger": 10, "clear_tool_uses.keep": 5}).decide(
        view_of(spans, turn=3)) == []


def test_anthropic_semantics_skip_a_clearing_below_clear_at_least_and_clear_everything_above():
    spans = tool_turns([1000, 2000, 3000, 100, 100, 100])  # keep 3: the candidates are 1000, 2000, 3000
    frees = (1000 - 4) + (2000 - 4) + (3000 - 4)
    too_much = policy("clear-tool-uses:anthropic", {"clear_tool_uses.trigger": 10,
                                                    "clear_tool_uses.clear_at_least": frees + 1})
    assert too_much.decide(view_of(spans, turn=6)) == []
    enough = policy("clear-tool-uses:anthropic", {"clear_tool_uses.trigger": 10,
                                                  "clear_tool_uses.clear_at_least": frees})
    ids, _ = cleared(enough.decide(view_of(spans, turn=6)))
    assert ids == [s.id for s in spans if s.kind == "tool_output"][:3]  # all of them, not just enough


def test_langchain_semantics_stop_at_the_first_result_that_brings_the_total_to_clear_at_least():
    spans = tool_turns([1000, 2000, 3000, 100, 100, 100])
    outputs = [s.id for s in spans if s.kind == "tool_output"]
    pol = policy("clear-tool-uses:langchain", {"clear_tool_uses.trigger": 10, "clear_tool_uses.clear_at_least": 2500})
    action = pol.decide(view_of(spans, turn=6))
    ids, _ = cleared(action)
    assert ids == outputs[:2]  # 996 + 1996 >= 2500: the 3000-token result stays
    # LangChain edits a copy of the full history each time: once that much is freed, it clears no more.
    assert pol.decide(view_of(with_placeholders(spans, action[0]), turn=7)) == []
    exact = policy("clear-tool-uses:langchain", {"clear_tool_uses.trigger": 10, "clear_tool_uses.clear_at_least": 996})
    assert cleared(exact.decide(view_of(spans, turn=6)))[0] == outputs[:1]


def test_an_excluded_tools_output_is_never_cleared():
    spans = tool_turns([1000] * 8, tools=["bash", "view", "bash", "view", "bash", "bash", "view", "bash"])
    pol = policy("clear-tool-uses", {"clear_tool_uses.trigger": 10, "clear_tool_uses.keep": 3,
                                     "clear_tool_uses.exclude_tools": ["view"]})
    ids, _ = cleared(pol.decide(view_of(spans, turn=8)))
    by_id = {s.id: s for s in spans}
    assert ids and all(by_id[i].tool == "bash" for i in ids)
    # The keep count takes every tool result, excluded ones too (as LangChain counts them).
    outputs = [s for s in spans if s.kind == "tool_output"]
    assert ids == [s.id for s in outputs[:5] if s.tool == "bash"]


def test_in_a_replay_an_excluded_tool_is_never_cleared_and_placeholders_stand_in_the_window():
    data = workload(30, output=lambda t: 900 + 10 * t, tools=lambda t: "view" if t % 3 == 0 else "bash")
    base = sc.load("transcript", {"clear_tool_uses.trigger": 5000, "clear_tool_uses.exclude_tools": ["view"]})
    result, _ = replay(data, base, "clear-tool-uses", 0)
    t = result.trace()
    appended = {int(i): (k, e) for i, k, e in zip(t["span_id"], t["kind"], t["event"], strict=True)
                if e == "append"}
    removed = {int(i) for i, e in zip(t["span_id"], t["event"], strict=True) if e == "cleared"}
    assert removed, "nothing was cleared"
    every_third = {int(i) for i, k in zip(t["span_id"], t["key"], strict=True)
                   if k.startswith("cmd") and int(k.split()[1]) % 3 == 0}
    outputs_of_view = {i for i, (k, _) in appended.items() if k == "tool_output"} & every_third
    assert outputs_of_view and not outputs_of_view & removed
    s = result.summary
    placeholders = [i for i, (k, _) in appended.items() if k == "placeholder"]
    assert len(placeholders) == s["cleared_spans"] == len(removed)
    assert s["placeholder_tokens"] == 4 * len(placeholders)  # each placeholder holds its 4 tokens in the window
    freed = -sum(int(d) for d, e in zip(t["delta"], t["event"], strict=True) if e == "cleared")
    assert s["cleared_tokens"] == freed - 4 * len(placeholders)
    assert (t["appended_total"] - t["removed_total"] == t["utilization"]).all()
    assert s["unrecorded_evictions"] == 0  # each placeholder records what it replaced


def test_a_placeholder_stands_where_its_result_stood():
    from prunesim.io.transcripts.workload import TranscriptWorkload
    from prunesim.model.engine import Engine

    scenario = sc.load("transcript", {"turns": 20, "clear_tool_uses.trigger": 4000})
    pol = policy("clear-tool-uses", {"turns": 20, "clear_tool_uses.trigger": 4000})
    engine = Engine(scenario, pol, TranscriptWorkload(workload(20)))
    engine.run()
    spans = engine.window.spans()
    placeholders = [i for i, s in enumerate(spans) if s.kind == "placeholder"]
    assert len(placeholders) == 20 - 3
    for i in placeholders:  # right after the call that made the result, and holding its key and turn
        assert spans[i - 1].kind == "tool_call" and spans[i - 1].key == spans[i].key
        assert spans[i].turn == spans[i - 1].turn and spans[i].tokens == 4
    assert engine.window.utilization == sum(s.tokens for s in spans)


def test_the_trigger_is_on_the_full_history_so_clearing_goes_on_below_it():
    data = workload(40, output=lambda t: 1000)
    base = sc.load("transcript", {"clear_tool_uses.trigger": 8000})
    result, _ = replay(data, base, "clear-tool-uses", 0)
    edits = [e for e in result.events if e[3] == "clear"]
    assert len(edits) > 10  # once past 8,000 (full history), every new old result is cleared at once
    assert result.summary["peak_utilization"] < 8000 + 1100 * 4  # the window stays near the trigger


def test_clear_tool_inputs_also_clears_the_call_that_made_the_result():
    spans = tool_turns([1000, 1000, 1000, 1000], call_tokens=300)
    pol = policy("clear-tool-uses", {"clear_tool_uses.trigger": 10, "clear_tool_uses.keep": 1,
                                     "clear_tool_uses.clear_tool_inputs": True})
    ids, sizes = cleared(pol.decide(view_of(spans, turn=4)))
    kinds = [next(s.kind for s in spans if s.id == i) for i in ids]
    assert kinds == ["tool_output", "tool_call"] * 3 and sizes == [4, 4] * 3


@pytest.mark.parametrize("setting, words", [
    ("clear_tool_uses.keep=-1", "clear_tool_uses.keep: must not be negative"),
    ("clear_tool_uses.trigger=300000", "clear_tool_uses.trigger: 300000 is above the window 200000"),
    ("clear_tool_uses.semantics=openai", "clear_tool_uses.semantics: must be one of"),
])
def test_bad_parameters_are_one_line_and_exit_2(setting, words, tmp_path, capsys):
    data = tmp_path / "w.jsonl"
    from prunesim.io.transcripts.workload import write

    write(data, workload(3))
    assert main(["run", "--workload", str(data), "--policy", "clear-tool-uses", "--set", setting,
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_exclude_tools_naming_no_tool_of_the_transcripts_is_a_warning_not_an_error(tmp_path, capsys):
    from prunesim.io.transcripts.workload import write

    folder = tmp_path / "runs"
    folder.mkdir()
    write(folder / "a.jsonl", workload(5))
    code = main(["replay-dir", str(folder), "--policies", "clear-tool-uses", "--set",
                 "clear_tool_uses.exclude_tools=['web_search']", "--out", str(tmp_path / "r.csv")])
    err = capsys.readouterr().err
    assert code == 0 and (tmp_path / "r.csv").exists()
    assert "prunesim: warning: clear-tool-uses: clear_tool_uses.exclude_tools names 'web_search'" in err
    assert "tools seen: bash" in err


def test_a_trigger_the_window_never_reaches_is_a_warning(capsys):
    assert main(["compare", "oscillation-40", "--policies", "clear-tool-uses:langchain", "--seeds", "0:2"]) == 0
    assert "clear_tool_uses.trigger 100,000 is not below the window 32,000: it never clears" in capsys.readouterr().err


def test_clear_tool_inputs_as_a_list_clears_only_those_tools_calls():
    spans = tool_turns([1000] * 4, tools=["Bash", "Read", "Bash", "Read"], call_tokens=300)
    pol = policy("clear-tool-uses:anthropic", {"clear_tool_uses.trigger": 10, "clear_tool_uses.keep": 1,
                                               "clear_tool_uses.clear_tool_inputs": ["Read"]})
    ids, _ = cleared(pol.decide(view_of(spans, turn=4)))
    by_id = {s.id: s for s in spans}
    assert [(by_id[i].kind, by_id[i].tool) for i in ids] == [
        ("tool_output", "Bash"), ("tool_output", "Read"), ("tool_call", "Read"), ("tool_output", "Bash")]


def test_a_list_or_a_flag_for_clear_tool_inputs_and_nothing_else(tmp_path, capsys):
    assert policy("clear-tool-uses", {"clear_tool_uses.clear_tool_inputs": True}).params.clear_tool_inputs is True
    assert main(["run", "transcript", "--policy", "clear-tool-uses", "--set", "clear_tool_uses.clear_tool_inputs=3",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "clear_tool_uses.clear_tool_inputs: must be true or false or a list" in err[0]


def test_the_approximate_count_leaves_the_system_prompt_out_and_adds_three_a_message():
    from prunesim.model.spans import Span

    system = Span(100, "system", 20_000, 0, pinned=True)
    spans = [system, *tool_turns([1000] * 10)]  # 10 x (20 + 1000) = 10,200 tokens of messages, 20 messages
    for trigger, fires in ((10_200 + 20 * 3 - 1, True), (10_200 + 20 * 3, False)):
        pol = policy("clear-tool-uses:langchain", {"clear_tool_uses.trigger": trigger,
                                                   "clear_tool_uses.token_count_method": "approximate"})
        assert bool(pol.decide(view_of(spans, turn=10))) is fires
    # With the model's count (the system prompt in), the same history is far above either trigger.
    assert policy("clear-tool-uses:langchain", {"clear_tool_uses.trigger": 10_260}).decide(view_of(spans, turn=10))


def test_clear_thinking_keeps_the_thinking_of_the_last_turns_only():
    from prunesim.model.spans import THINKING, Span

    spans = []
    for t in range(1, 6):
        spans.append(Span(len(spans) + 1, "reasoning", 300, t, tags=frozenset({THINKING})))
        spans.append(Span(len(spans) + 1, "reasoning", 50, t))  # a text block: never cleared by this strategy
    pol = policy("clear-tool-uses:anthropic", {"clear_tool_uses.clear_thinking": 2})
    (action,) = pol.decide(view_of(spans, turn=5))
    assert action.reason == "clear_thinking" and set(action.placeholder_tokens) == {0}
    assert [next(s.turn for s in spans if s.id == i) for i in action.span_ids] == [1, 2, 3]
    assert policy("clear-tool-uses:anthropic").decide(view_of(spans, turn=5)) == []  # off by default


def test_restore_puts_the_span_back_where_its_placeholder_stood_and_refuses_anything_else():
    import numpy as np
    from prunesim.io.transcripts.workload import TranscriptWorkload
    from prunesim.model.engine import Engine, PolicyContractError
    from prunesim.policies.base import Policy, Restore

    class ClearThenRestore(Policy):
        name = "clear-then-restore"

        def decide(self, view):
            outputs = [s for s in view.spans if s.kind == "tool_output"]
            markers = [s for s in view.spans if s.kind == "placeholder"]
            if view.turn == 2:
                return [Clear((outputs[0].id,), (4,))]
            if view.turn == 3:
                return [Restore(tuple(m.id for m in markers))]
            if view.turn == 4:
                return [Restore((outputs[0].id,))]  # not a placeholder: a broken policy
            return []

    scenario = sc.load("transcript", {"turns": 4})
    engine = Engine(scenario, ClearThenRestore(scenario, np.random.default_rng(0)), TranscriptWorkload(workload(4)))
    order = []
    with pytest.raises(PolicyContractError, match="not placeholders"):
        original = engine.clear

        def clear(action):
            original(action)
            order.append([s.kind for s in engine.window.spans()])

        engine.clear = clear
        engine.run()
    spans = engine.window.spans()
    assert [s.kind for s in spans].count("placeholder") == 0
    assert order[0][:4] == ["system", "reasoning", "tool_call", "placeholder"]
    assert [s.kind for s in spans][:4] == ["system", "reasoning", "tool_call", "tool_output"]  # back where it stood
    assert engine.window.utilization == sum(s.tokens for s in spans)
