"""A tool call and its result pair by the runtime's own id, through import and in clearing.

Small Claude Code sessions written here: parallel calls answered out of order, an empty result.
"""

from __future__ import annotations

import json

from prunesim.io.scenario_files import load
from prunesim.io.transcripts.workload import TranscriptWorkload
from prunesim.model.engine import Engine
from prunesim.studies.transcript_replay import iter_workloads
from runtime_fixtures import policy


def session(path, turns) -> None:
    """A Claude Code session file: each turn is (calls, results), a call ``(id, tool, input)``, a result
    ``(id, text)``, after a task; each assistant message has its own id and usage."""
    records, parent, n = [], None, 0

    def add(kind, message, **more):
        nonlocal parent, n
        n += 1
        uuid = f"r-{n}"
        records.append({"parentUuid": parent, "isSidechain": False, "type": kind, "uuid": uuid,
                        "sessionId": "pairing", "timestamp": "2026-01-01T00:00:00Z", "message": message, **more})
        parent = uuid

    add("user", {"role": "user", "content": "Look at the two files and list the folder."})
    for k, (calls, results) in enumerate(turns, 1):
        usage = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 "output_tokens": 20}
        add("assistant", {"model": "claude-demo-1", "id": f"msg-{k}", "role": "assistant", "usage": usage,
                          "content": [{"type": "text", "text": f"Step {k}."}]
                          + [{"type": "tool_use", "id": i, "name": tool, "input": args} for i, tool, args in calls]})
        add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": text}
                                                 for i, text in results]})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def imported(tmp_path, turns):
    path = tmp_path / "pairing.jsonl"
    session(path, turns)
    (data,) = iter_workloads(path, calibration="none")
    return data


LONG = "line of output\n" * 300

PARALLEL = [
    ([("tu-a", "Read", {"file_path": "/w/a.py"}), ("tu-b", "Read", {"file_path": "/w/b.py"}),
      ("tu-c", "Bash", {"command": "ls"})],
     [("tu-b", "B " + LONG), ("tu-a", "A " + LONG), ("tu-c", "a.py b.py")]),
    ([("tu-d", "Bash", {"command": "mkdir -p out"})], [("tu-d", "")]),
    *[([(f"tu-{k}", "Bash", {"command": f"cat f{k}"})], [(f"tu-{k}", LONG)]) for k in range(5)],
]


def test_the_import_numbers_each_call_and_gives_its_result_the_same_number(tmp_path):
    data = imported(tmp_path, PARALLEL)
    turn1 = [p for p in data.parts if p["turn"] == 1 and p["kind"] in ("tool_call", "tool_output")]
    calls = {p["call"]: p["tool"] for p in turn1 if p["kind"] == "tool_call"}
    results = [(p["call"], p["tool"]) for p in turn1 if p["kind"] == "tool_output"]
    assert calls == {1: "Read", 2: "Read", 3: "Bash"}
    assert [c for c, _ in results] == [2, 1, 3]  # answered B, A, ls: each keeps its own call's number
    empty = [p for p in data.parts if p["turn"] == 2 and p["kind"] == "tool_output"]
    assert [(p["call"], p["tokens"]) for p in empty] == [(4, 0)]


def replayed(data, overrides):
    overrides = {"turns": data.turns, "clear_tool_uses.trigger": 200, **overrides}
    engine = Engine(load("transcript", overrides), policy("clear-tool-uses:langchain", overrides),
                    TranscriptWorkload(data))
    engine.run()
    return engine.window.spans()


def test_clear_tool_inputs_clears_each_parallel_calls_input_with_its_own_result(tmp_path):
    spans = replayed(imported(tmp_path, PARALLEL), {"clear_tool_uses.keep": 3,
                                                    "clear_tool_uses.clear_tool_inputs": True})
    cleared = {(s.call, next(t for t in s.tags if t.startswith("replaced:"))) for s in spans
               if s.kind == "placeholder"}
    for call in (1, 2, 3, 4):  # the three parallel calls of turn 1 and the empty result's
        assert (call, "replaced:tool_output") in cleared and (call, "replaced:tool_call") in cleared
    assert not [s for s in spans if s.kind == "tool_call" and s.call in (1, 2, 3, 4)]


def test_an_empty_result_is_a_tool_result_that_counts_toward_keep(tmp_path):
    turns = PARALLEL[:1] + [([(f"tu-{k}", "Bash", {"command": f"cat f{k}"})], [(f"tu-{k}", LONG)]) for k in range(3)]
    turns.append(([("tu-e", "Bash", {"command": "mkdir -p out"})], [("tu-e", "")]))
    spans = replayed(imported(tmp_path, turns), {"clear_tool_uses.keep": 3})
    results = [(s.call, s.kind, s.tokens) for s in spans if s.kind == "tool_output" or s.kind == "placeholder"]
    # The last three results are whole, the empty one among them (0 tokens, still in the window)...
    assert results[-3:] == [(5, "tool_output", results[-3][2]), (6, "tool_output", results[-2][2]),
                            (7, "tool_output", 0)]
    # ... so the one before them, which a count without the empty result would have kept, is cleared.
    assert results[-4][:2] == (4, "placeholder")


def test_a_thinking_block_is_marked_through_the_workload_file_and_tagged_in_the_window(tmp_path):
    from pathlib import Path

    from prunesim.io.transcripts import workload as wl
    from prunesim.model.spans import THINKING

    (data,) = iter_workloads(Path(__file__).parent / "fixtures" / "claude-code" / "session.jsonl",
                             calibration="none")
    thinking = [p for p in data.parts if p.get("thinking")]
    assert [p["kind"] for p in thinking] == ["reasoning"]  # msg_A's thinking block; its text block is not
    wl.write(tmp_path / "w.jsonl", data)
    again = wl.read(tmp_path / "w.jsonl")
    plans = list(TranscriptWorkload(again))
    assert [THINKING in plans[0].reasoning.tags, *(THINKING in a.tags for a in plans[0].extra)].count(True) == 1
