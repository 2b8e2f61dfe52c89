"""clear-tool-uses:langchain against LangChain's own ClearToolUsesEdit, call by call (tests/langchain_reference.py).

Hand-made workloads hold the cases the two once disagreed on: an empty tool result, parallel calls
answered out of order, a runtime that drops content on its own. The development transcripts in
``../shared/traces`` (or ``PRUNESIM_TRACES``) are replayed at seven settings; the default run takes
the first file of each folder, up to its 150th call; ``PRUNESIM_DIFFERENTIAL=all`` runs every one whole.

Where LangChain's rules no longer clear what it cleared before (a runtime drop took the history
back to the trigger, or dropped a result whose call's input was cleared), it sends the content whole
again, and prunesim restores it (``Restore``): every call must agree exactly.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

pytest.importorskip("langchain", reason="langchain is a test dependency (pip install -e '.[test]')")

from langchain_reference import Setting, compare, langchain_calls, prunesim_calls  # noqa: E402
from prunesim.io.transcripts.workload import WorkloadData  # noqa: E402

TRACES = Path(os.environ.get("PRUNESIM_TRACES", Path(__file__).resolve().parents[2] / "shared" / "traces"))
DEV = ("claude-code-dev", "mini-swe-agent-dev", "openhands", "codex")
HALF = -1  # the trigger at half of each run's peak

SETTINGS = [
    Setting("preset"),
    Setting("half-peak", trigger=HALF),
    Setting("keep-0", trigger=HALF, keep=0),
    Setting("keep-10", trigger=HALF, keep=10),
    Setting("clear-at-least-5000", trigger=HALF, clear_at_least=5000),
    Setting("clear-tool-inputs", trigger=HALF, clear_tool_inputs=True),
    Setting("exclude-tools", trigger=HALF, exclude_tools=("Read", "bash", "execute_bash", "shell")),
]


def hand_made(turns: list[list[dict]], system: int = 200) -> WorkloadData:
    """A workload from per-turn parts (turn numbers filled in), after a system prompt and a task."""
    parts = [{"type": "part", "turn": 0, "kind": "system", "tokens": system},
             {"type": "part", "turn": 0, "kind": "user", "tokens": 50}]
    for t, turn in enumerate(turns, 1):
        parts.extend({"type": "part", "turn": t, **p} for p in turn)
    header = {"type": "header", "prunesim_workload": 2, "name": "hand-made", "format": "test", "tokenizer": "pieces",
              "turns": len(turns)}
    return WorkloadData(header, parts)


def call(n: int, tokens: int = 30, tool: str = "Bash", **more) -> dict:
    return {"kind": "tool_call", "tokens": tokens, "tool": tool, "key": f"k{n}", "call": n, **more}


def result(n: int, tokens: int, tool: str = "Bash", **more) -> dict:
    return {"kind": "tool_output", "tokens": tokens, "tool": tool, "key": f"k{n}", "call": n, **more}


def loop(sizes: list[int]) -> list[list[dict]]:
    return [[{"kind": "reasoning", "tokens": 20}, call(i), result(i, size)] for i, size in enumerate(sizes, 1)]


def agree(data: WorkloadData, setting: Setting) -> None:
    bad, theirs, _ = compare(data, setting)
    assert not bad, f"{setting.name}: the cleared sets differ before calls {bad[:10]}"
    assert any(c.outputs for c in theirs), "nothing was cleared: the comparison would say nothing"


HAND = [Setting("small", trigger=2000), Setting("keep-0", trigger=2000, keep=0),
        Setting("at-least", trigger=2000, keep=1, clear_at_least=700),
        Setting("inputs", trigger=2000, clear_tool_inputs=True),
        Setting("exclude", trigger=2000, exclude_tools=("Read",))]


@pytest.mark.parametrize("setting", HAND, ids=lambda s: s.name)
def test_an_empty_result_counts_toward_keep_and_is_cleared_as_langchain_does(setting):
    turns = loop([400, 500, 0, 600, 0, 700, 300, 0, 800, 450])
    data = hand_made(turns)
    agree(data, setting)
    if setting.name == "small":  # the empty results are among the cleared and among the three kept
        last = langchain_calls(data, setting, 2000)[-1]
        assert {3, 5, 8} & last.outputs and len(last.outputs) == 10 - 1 - 3


@pytest.mark.parametrize("setting", HAND, ids=lambda s: s.name)
def test_parallel_calls_answered_out_of_order_pair_by_their_call_number(setting):
    turns = loop([600, 700])
    turns.append([{"kind": "reasoning", "tokens": 20}, call(3, 40, "Read"), call(4, 35, "Read"), call(5, 25),
                  result(4, 900, "Read"), result(3, 800, "Read"), result(5, 0)])
    turns.extend([{"kind": "reasoning", "tokens": 20}, call(n), result(n, size)]
                 for n, size in ((6, 500), (7, 400), (8, 300), (9, 650)))
    data = hand_made(turns)
    agree(data, setting)
    if setting.name == "inputs":
        last = prunesim_calls(data, setting, 2000)[-1]
        assert {3, 4, 5} <= last.inputs  # each call's input cleared with its own result


@pytest.mark.parametrize("setting", HAND, ids=lambda s: s.name)
def test_after_a_runtime_drop_what_was_freed_and_the_placeholders_follow_the_history(setting):
    turns = loop([900, 800, 700, 600, 500, 400, 300, 200, 600, 700, 800])
    for turn in turns[:4]:  # the runtime removes the first four turns before call 8 (a compaction)
        for p in turn:
            p["dropped_at"] = 8
    turns[7].append({"kind": "summary", "tokens": 150})
    data = hand_made(turns)
    setting = Setting(setting.name, 1200, setting.keep, setting.clear_at_least, setting.clear_tool_inputs,
                      setting.exclude_tools)  # the history stays above the trigger after the drop
    agree(data, setting)
    ours = prunesim_calls(data, setting, 1200)
    assert not any(c in ours[8].outputs for c in (1, 2, 3, 4))  # their placeholders left with them


def test_a_drop_that_takes_the_history_below_the_trigger_brings_cleared_results_back_as_langchain_does():
    """LangChain clears a copy of the full history: below the trigger it sends every result whole again."""
    turns = loop([900, 800, 700, 600, 500, 400, 300, 200, 600, 700, 800])
    for turn in turns[:4]:
        for p in turn:
            p["dropped_at"] = 8
    data = hand_made(turns)
    setting = Setting("keep-0", trigger=2000, keep=0)
    agree(data, setting)
    ours = prunesim_calls(data, setting, 2000)
    assert ours[6].outputs == {1, 2, 3, 4, 5, 6}
    assert ours[7].outputs == set() and ours[8].outputs == set()  # 1,450 and 1,850 tokens: at most 2,000
    assert ours[9].outputs == {5, 6, 7, 8, 9}  # above it again: cleared again


def test_an_input_comes_back_when_the_runtime_drops_its_result():
    """LangChain clears the input of a result it clears; a result the runtime dropped is not cleared, so its
    call's input is sent whole again."""
    turns = loop([900, 800, 700, 600, 500, 400, 300, 200])
    for turn in turns[:3]:
        turn[2]["dropped_at"] = 6  # the runtime drops the first three results, not their calls
    data = hand_made(turns)
    setting = Setting("inputs", trigger=1000, keep=1, clear_tool_inputs=True)
    agree(data, setting)
    ours = prunesim_calls(data, setting, 1000)
    assert {1, 2, 3} <= ours[4].inputs and not {1, 2, 3} & ours[5].inputs


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_the_development_transcripts_agree_with_langchain(setting):
    for name, data in dev_runs(all_runs=False):
        check_run(name, data, setting)


def check_run(name: str, data: WorkloadData, setting: Setting) -> None:
    bad, theirs, _ = compare(data, setting)
    assert not bad, f"{name}, {setting.name}: the cleared sets differ before calls {bad[:10]}"
    if setting.trigger == HALF and not setting.exclude_tools:  # every run passes half its peak: something is cleared
        assert any(c.outputs for c in theirs), f"{name}, {setting.name}: nothing cleared"


FAST_CALLS = 150  # the default run replays each run's first calls (LangChain's own edit is slow on long ones)


@functools.cache
def dev_runs(all_runs: bool) -> list[tuple[str, WorkloadData]]:
    from prunesim.studies.transcript_replay import expand, iter_workloads

    if not TRACES.is_dir():
        pytest.skip(f"the development transcripts are not here ({TRACES}; set PRUNESIM_TRACES)")
    out = []
    for folder in DEV:
        files = expand([TRACES / folder]) if (TRACES / folder).is_dir() else []
        for path in files if all_runs else files[:1]:
            out.extend((f"{folder}/{data.name}", data if all_runs else first_calls(data, FAST_CALLS))
                       for data in iter_workloads(path))
    return out


def first_calls(data: WorkloadData, calls: int) -> WorkloadData:
    """The run up to its model call ``calls``: the parts of those turns, a drop after them left out."""
    if data.turns <= calls:
        return data
    parts = [{k: v for k, v in p.items() if k != "dropped_at" or v <= calls} for p in data.parts if p["turn"] <= calls]
    return WorkloadData({**data.header, "turns": calls, "parts": len(parts)}, parts)


@pytest.mark.skipif(os.environ.get("PRUNESIM_DIFFERENTIAL") != "all", reason="set PRUNESIM_DIFFERENTIAL=all")
def test_every_development_run_at_every_setting():
    for name, data in dev_runs(all_runs=True):
        for setting in SETTINGS:
            check_run(name, data, setting)
