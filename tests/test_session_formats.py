"""Claude Code sessions and Codex CLI rollouts: the project's own fixtures, malformed input, real sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prunesim.cli import main
from prunesim.io.scenario_files import load
from prunesim.io.transcripts import formats, images
from prunesim.io.transcripts import workload as wl
from prunesim.io.transcripts.tokens import count_pieces
from prunesim.observe.metrics.cost import CALL_COLUMNS
from prunesim.studies import transcript_replay as replay
from shared_traces import needs, traces_dir

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CLAUDE = FIXTURES / "claude-code"
CODEX = FIXTURES / "codex"




def raw(path: Path, **kw) -> list[wl.WorkloadData]:
    return list(replay.iter_workloads(path, calibration="none", **kw))


def prompt_before_calls(data: wl.WorkloadData) -> list[int]:
    """The prompt of each of the engine's no-op replay's model calls (runtime drops and what replaced them included)."""
    base = load("transcript", {"window": 10**9, "budget": 10**9, "trigger": 10**9})
    result, _ = replay.replay(data, base, "noop")
    prompt = CALL_COLUMNS.index("prompt_tokens")
    return [int(row[prompt]) for row in result.calls]


# -- Claude Code --------------------------------------------------------------------------
def test_claude_session_keeps_the_path_to_the_last_leaf_and_counts_each_call_once():
    (t,) = formats.iter_transcripts(CLAUDE / "session.jsonl")
    assert t.format == "claude-code" and t.model == "claude-opus-4-5-20251101"
    assert t.turns == 4  # msg_A, msg_B, msg_D, msg_E: the abandoned msg_C and the synthetic error are not calls
    texts = " ".join(p.text for p in t.parts)
    assert "count words" not in texts and "Counting words" not in texts and "API Error" not in texts
    kinds = [(p.turn, p.kind) for p in t.parts]
    assert kinds == [(0, "system"), (0, "user"),
                     (1, "reasoning"), (1, "reasoning"), (1, "tool_call"), (1, "tool_call"),
                     (1, "tool_output"), (1, "tool_output"),
                     (2, "reasoning"), (2, "tool_call"), (2, "tool_output"), (2, "user"),
                     (3, "reasoning"), (3, "summary"), (3, "user"), (4, "reasoning")]
    assert t.parts[0].hidden
    # prompt tokens = input + cache reads + cache writes; output_tokens the largest of a call's records
    assert t.prompt_tokens == {1: 10 + 1000 + 200, 2: 8 + 1210 + 90, 3: 6 + 1300 + 45, 4: 5 + 900 + 60}
    assert t.usage[1]["output_tokens"] == 57
    assert t.usage[2] == {"prompt_tokens": 1308, "input_tokens": 8, "cache_read_tokens": 1210,
                          "cache_write_tokens": 90, "cache_write_5m_tokens": 60, "cache_write_1h_tokens": 30,
                          "output_tokens": 40}


def test_claude_tool_results_are_paired_through_tool_use_id():
    (t,) = formats.iter_transcripts(CLAUDE / "session.jsonl")
    calls = [p for p in t.parts if p.kind == "tool_call"]
    outputs = [p for p in t.parts if p.kind == "tool_output"]
    assert [c.key for c in calls] == ["wc -l count.py", calls[1].key, "wc -l count.py"]
    assert calls[1].key.startswith("Read ") and "test_count.py" in calls[1].key
    assert [(o.key, o.tool) for o in outputs] == [(c.key, c.tool) for c in calls]
    # a result given as a list of blocks: its text, plus the image at its documented size
    listed = outputs[1]
    assert listed.text.startswith("def test_count():")
    assert listed.extra_tokens == images.anthropic_tokens(2000, 1000) == 1533


def test_claude_compaction_is_a_recorded_event_and_drops_what_came_before():
    (t,) = formats.iter_transcripts(CLAUDE / "session.jsonl")
    assert t.events == [{"event": "compaction", "turn": 4, "trigger": "auto", "pre_tokens": 1375}]
    before = [p for p in t.parts if p.turn < 3 or p.kind == "reasoning" and p.turn == 3]
    assert all(p.dropped_at == 4 for p in before if not p.hidden)
    assert all(p.dropped_at == 0 for p in t.parts if p.kind == "summary" or p.turn == 4 or p.hidden)


def test_claude_truncated_last_line_is_a_warning(capsys, tmp_path):
    (t,) = formats.iter_transcripts(CLAUDE / "session.jsonl")
    assert len(t.warnings) == 1 and "truncated last line ignored" in t.warnings[0] and ":23:" in t.warnings[0]
    assert main(["import", str(CLAUDE / "session.jsonl"), "--out", str(tmp_path / "s.jsonl")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("prunesim: warning:") and err.count("\n") == 1


def test_claude_workload_sizes_the_hidden_system_part_from_the_first_call():
    (data,) = raw(CLAUDE / "session.jsonl")
    h = data.header
    assert h["format"] == "claude-code" and h["turns"] == 4 and h["repeats"] == 1
    assert h["prompt_tokens"] == [1210, 1308, 1351, 965]
    assert h["usage"][0]["cache_read_tokens"] == 1000 and h["usage"][1]["cache_write_1h_tokens"] == 30
    assert h["anchored_calls"] == [1]
    assert h["events"][0] == {"event": "compaction", "turn": 4, "trigger": "auto", "pre_tokens": 1375}
    task = "Count the lines of count.py and show the tests."
    calibrated = wl.sized_as(data, "calibrated")
    hidden = calibrated.parts[0]
    assert hidden == {"type": "part", "turn": 0, "kind": "system", "tokens": 1210 - count_pieces(task),
                      "calibrated": 1210 - count_pieces(task), "hidden": True, "sized_by": "usage"}
    assert calibrated.parts[2]["tokens"] == count_pieces(task) and calibrated.parts[2]["dropped_at"] == 4
    assert wl.context_before_calls(calibrated)[0] == 1210  # the anchored call is exact by construction
    # After the compaction call 4 counts 965 tokens, less than the hidden part, and reads 900 from the cache:
    # the runtime changed its hidden part, which the anchored sizes cut there (anchor.py).
    cut = data.parts[1]
    assert cut["hidden"] and cut["dropped_at"] == 4 and data.parts[0]["tokens"] + cut["tokens"] == hidden["tokens"]
    assert h["events"][1] == {"event": "removed", "turn": 4, "tokens": cut["tokens"], "parts": 0, "hidden": True}
    context = wl.context_before_calls(data)
    assert context[0] == 1210 and context[3] == 965  # raw counts: call 2 cannot be anchored within 4x, 3 carries it
    assert h["anchor_fallbacks"] == [2]


def test_usage_and_events_survive_the_workload_file(tmp_path):
    (data,) = raw(CLAUDE / "session.jsonl")
    wl.write(tmp_path / "w.jsonl", data)
    back = wl.read(tmp_path / "w.jsonl")
    assert back.header == data.header and back.parts == data.parts
    assert [u["cache_write_1h_tokens"] for u in back.header["usage"]] == [0, 30, 0, 0]


def test_a_recorded_cost_in_dollars_survives_the_workload_file(tmp_path, capsys):
    (data,) = raw(CLAUDE / "session.jsonl")
    data.header["usage"][0]["cost_usd"] = 0.004568  # what mini-swe-agent records: dollars, not a count
    wl.write(tmp_path / "w.jsonl", data)
    assert wl.read(tmp_path / "w.jsonl").header["usage"][0]["cost_usd"] == 0.004568
    assert main(["run", "--workload", str(tmp_path / "w.jsonl"), "--policy", "noop"]) == 0
    for bad in (-0.5, "0.1", [1]):
        data.header["usage"][0]["cost_usd"] = bad
        wl.write(tmp_path / "bad.jsonl", data)
        capsys.readouterr()
        assert main(["run", "--workload", str(tmp_path / "bad.jsonl"), "--policy", "noop"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "bad.jsonl:1: usage:" in err


def test_claude_replay_applies_the_recorded_compaction_like_fidelity_does():
    (data,) = raw(CLAUDE / "session.jsonl")
    context = wl.context_before_calls(data)
    assert prompt_before_calls(data) == context
    assert context[3] < context[2]  # the compaction emptied the window before call 4


def test_claude_sidechains_are_separate_workloads_or_skipped():
    runs = raw(CLAUDE / "subagent.jsonl")
    assert [r.name for r in runs] == ["subagent", "subagent.agent-a1b2c3"]
    main_run, agent = runs
    assert main_run.header["prompt_tokens"] == [603, 643] and agent.header["prompt_tokens"] == [354, 394]
    assert [p["kind"] for p in agent.parts] == ["system", "user", "tool_call", "tool_output", "reasoning"]
    assert [r.name for r in raw(CLAUDE / "subagent.jsonl", sidechains="skip")] == ["subagent"]


def test_a_subagent_file_alone_is_skipped_with_one_line(tmp_path, capsys):
    lines = [json.loads(x) for x in (CLAUDE / "subagent.jsonl").read_text().splitlines()]
    side = tmp_path / "agent-a1b2c3.jsonl"
    side.write_text("\n".join(json.dumps(r) for r in lines if r["isSidechain"]) + "\n")
    assert [r.name for r in raw(side)] == ["agent-a1b2c3.agent-a1b2c3"]
    code = main(["import", str(side), "--sidechains", "skip", "--out", str(tmp_path / "out")])
    assert code == 2
    assert "only subagent (sidechain) records" in capsys.readouterr().err


# -- Codex CLI --------------------------------------------------------------------------------
def test_codex_rollout_calls_usage_and_reasoning():
    (t,) = formats.iter_transcripts(CODEX / "rollout-0.34.jsonl")
    assert (t.format, t.model, t.turns, t.context_window) == ("codex", "gpt-5-codex", 4, 272000)
    assert t.prompt_tokens == {1: 3000, 2: 3150, 3: 3230, 4: 3250}  # the token_count without info is no call
    assert t.usage[1] == {"prompt_tokens": 3000, "cache_read_tokens": 0, "input_tokens": 3000, "output_tokens": 60,
                          "reasoning_tokens": 40}
    assert t.usage[2]["input_tokens"] == 250
    reasoning = [p for p in t.parts if p.kind == "reasoning" and p.tokens is not None]
    assert [(p.turn, p.tokens, p.dropped_at) for p in reasoning] == [(1, 40, 4), (3, 64, 4)]  # dropped at the user turn
    calls = [p for p in t.parts if p.kind == "tool_call"]
    assert [c.key for c in calls] == ["ls -la", "cat count.py", "ls -la"]
    outputs = [p for p in t.parts if p.kind == "tool_output"]
    assert [o.key for o in outputs] == [c.key for c in calls]
    assert t.kept_output == {1: 20, 2: 30, 3: 26, 4: 25}


def test_codex_workload_and_replay():
    (data,) = raw(CODEX / "rollout-0.34.jsonl")
    h = data.header
    assert h["repeats"] == 1 and h["anchored_calls"] == [1] and h["context_window"] == 272000
    encrypted = [p for p in data.parts if p.get("sized_by") == "recorded" and p["kind"] == "reasoning"
                 and p["tokens"] in (40, 64)]
    assert len(encrypted) == 2 and all(p["dropped_at"] == 4 for p in encrypted)
    assert prompt_before_calls(data) == wl.context_before_calls(data)
    assert wl.context_before_calls(data)[0] == 3000


def test_codex_order_with_usage_after_the_items_is_read_from_the_file():
    (t,) = formats.iter_transcripts(CODEX / "rollout-later.jsonl")
    assert t.turns == 2 and t.model == "gpt-5"
    assert [(p.turn, p.kind) for p in t.parts] == [(0, "system"), (0, "user"), (1, "reasoning"), (1, "tool_call"),
                                                   (1, "tool_output"), (2, "reasoning")]
    assert t.parts[2].tokens == 8 and t.prompt_tokens == {1: 2000, 2: 2100}


# -- malformed input, every importer ------------------------------------------------------------
def _claude_lines() -> list[str]:
    return (CLAUDE / "session.jsonl").read_text().splitlines()[:-1]  # without the truncated last line


def _codex_lines() -> list[str]:
    return (CODEX / "rollout-0.34.jsonl").read_text().splitlines()


def _edit(lines: list[str], index: int, change) -> list[str]:
    rec = json.loads(lines[index])
    change(rec)
    return [*lines[:index], json.dumps(rec), *lines[index + 1:]]


MALFORMED = {
    "claude truncated line": ("s.jsonl", lambda: "\n".join(_claude_lines()[:5] + ['{"type": "user", "mess']
                                                         + _claude_lines()[5:]), ":6: malformed JSON"),
    "claude wrong type": ("s.jsonl", lambda: "\n".join(_edit(_claude_lines(), 1, lambda r: r.update(message=5))),
                          "message: missing or not an object"),
    "claude missing field": ("s.jsonl", lambda: "\n".join(_edit(_claude_lines(), 3, lambda r: r.pop("uuid"))),
                             "uuid: missing"),
    "codex truncated line": ("r.jsonl", lambda: "\n".join(_codex_lines()[:4] + ['{"type": "respo']
                                                         + _codex_lines()[4:]), ":5: malformed JSON"),
    "codex wrong type": ("r.jsonl", lambda: "\n".join(_edit(_codex_lines(), 6, lambda r: r.update(payload="x"))),
                         "payload: missing or not an object"),
    "codex missing field": ("r.jsonl", lambda: "\n".join(
        _edit(_codex_lines(), 6, lambda r: r["payload"].pop("type"))), "payload.type: missing"),
    "mini wrong type": ("m.traj.json", lambda: json.dumps({"messages": "x", "trajectory_format": "mini-swe-agent-1"}),
                        "unknown transcript format"),
    "mini missing field": ("m.traj.json", lambda: json.dumps({"messages": [{"content": "hi"}],
                                                              "trajectory_format": "mini-swe-agent-1"}),
                           "missing field 'role'"),
    "swe-agent truncated": ("t.traj", lambda: (FIXTURES / "tiny.traj").read_text()[:200], "malformed JSON"),
    "openhands missing field": ("o.jsonl", lambda: json.dumps({"instance_id": "x", "history": [{"id": 1}]}),
                                "neither 'action' nor 'observation'"),
    "openai wrong type": ("a.json", lambda: json.dumps([{"role": "assistant", "content": "x",
                                                         "tool_calls": [{"function": {"arguments": "{}"}}]}]),
                          "missing field 'name'"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_is_one_line_and_the_rest_of_the_folder_is_imported_with_skip_bad(case, tmp_path, capsys):
    name, content, problem = MALFORMED[case]
    folder = tmp_path / "in"
    folder.mkdir()
    bad = folder / name
    bad.write_text(content())
    (folder / "z.jsonl").write_bytes((CODEX / "rollout-later.jsonl").read_bytes())
    code = main(["import", str(folder), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not (tmp_path / "out").exists(), err  # all or nothing by default
    assert len(err) == 1 and err[0].startswith(f"prunesim: error: {bad}") and problem in err[0], err
    code = main(["import", str(folder), "--out", str(tmp_path / "out"), "--skip-bad"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 0, err
    assert len(err) == 1 and err[0].startswith(f"prunesim: error: {bad}") and problem in err[0], err
    assert (tmp_path / "out" / "z.workload.jsonl").exists()


@pytest.mark.parametrize("name", ["s.jsonl", "r.jsonl", "x.traj.json", "o.jsonl"])
def test_binary_junk_is_one_line_and_exit_2_when_nothing_imports(name, tmp_path, capsys):
    bad = tmp_path / name
    bad.write_bytes(b"\x00\x01\xff" * 400)
    assert main(["import", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "binary file" in err[0] and str(bad) in err[0]
    assert not (tmp_path / "out").exists()


def test_bad_sidechains_flag_is_one_line(capsys):
    assert main(["import", str(CLAUDE), "--out", "x", "--sidechains", "maybe"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# -- the real sessions -------------------------------------------------------------------------
SESSIONS = traces_dir() / "claude-code-dev"


@needs("claude-code-dev")
def test_real_claude_sessions_count_every_api_call_once():
    runs = [t for path in sorted(SESSIONS.glob("*.jsonl")) for t in formats.iter_transcripts(path)]
    assert len(runs) == 23
    # The main conversations hold 1,816 distinct message ids besides Claude Code's own synthetic error
    # messages (no API call); two of them (in c81f7dde) share one request id, one API call.
    assert sum(t.turns for t in runs) == 1815
    compactions = [e for t in runs for e in t.events]
    assert len(compactions) == 9 and {e["trigger"] for e in compactions} == {"manual"}
    assert all(len(t.prompt_tokens) == t.turns for t in runs)


def test_a_run_per_line_file_cut_in_its_last_line_keeps_the_runs_before_it(capsys, tmp_path):
    # An evaluation still writing its output (OpenHands, one run a line) ends in a partial line: that line
    # is left out with a warning, as a session's is; the same bad line before another is the file's error.
    lines = (FIXTURES / "openhands.jsonl").read_text().splitlines()
    whole = list(formats.iter_transcripts(FIXTURES / "openhands.jsonl"))
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines) + "\n" + lines[-1][: len(lines[-1]) // 2])
    runs = list(formats.iter_transcripts(cut))
    assert [r.name for r in runs] == [r.name for r in whole]
    assert [len(r.parts) for r in runs] == [len(r.parts) for r in whole]
    assert runs[-1].warnings == [*whole[-1].warnings, runs[-1].warnings[-1]]
    assert f"cut.jsonl:{len(lines) + 1}: truncated last line ignored" in runs[-1].warnings[-1]
    assert main(["import", str(cut), "--out", str(tmp_path / "wl")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("prunesim: warning:")

    inside = tmp_path / "inside.jsonl"
    inside.write_text(lines[0] + "\n" + lines[-1][: len(lines[-1]) // 2] + "\n" + lines[-1] + "\n")
    with pytest.raises(formats.UserError, match=r"inside\.jsonl:2: malformed JSON"):
        list(formats.iter_transcripts(inside))
    alone = tmp_path / "alone.jsonl"
    alone.write_text(lines[0][: len(lines[0]) // 2])
    with pytest.raises(formats.UserError, match=r"alone\.jsonl:1: malformed JSON"):
        list(formats.iter_transcripts(alone))
