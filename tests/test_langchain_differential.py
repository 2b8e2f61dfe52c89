"""clear-tool-uses:langchain against LangChain's own ClearToolUsesEdit, call by call (tests/langchain_reference.py).

Hand-made workloads hold the cases the two once disagreed on: an empty tool result, parallel calls
answered out of order, a runtime that drops content on its own. The development transcripts in
``../shared/traces`` (or ``PRUNESIM_TRACES``) are replayed at seven settings; the default run takes
the first file of each folder; ``PRUNESIM_DIFFERENTIAL=all`` runs every one.

Two differences are known, and checked for what they are. LangChain re-derives its edits from the
full history before every call, so content it cleared comes back whole when the history no longer
calls for clearing it; prunesim's placeholders stay (a cleared span's content is gone). This shows
(1) when the runtime drops a tool result whose call's input was cleared: LangChain only clears the
input of a result it clears, and (2) when a runtime drop takes the full history back below the
trigger. Every other call must agree exactly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("langchain", reason="langchain is a test dependency (pip install -e '.[test]')")

from langchain_reference import Setting, compare, langchain_calls, peak, prunesim_calls  # noqa: E402
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
    bad, theirs, ours = compare(data, setting)
    assert not bad, f"{setting.name}: the cleared sets differ before calls {bad[:10]}"
    assert theirs == ours


HAND = [Setting("small", trigger=2000), Setting("keep-0", trigger=2000, keep=0),
        Setting("at-least", trigger=2000, keep=1, clear_at_least=700),
        Setting("inputs", trigger=2000, clear_tool_inputs=True), Setting("exclude", trigger=2000, exclude_tools=("Read",))]


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


def test_a_history_the_drop_takes_below_the_trigger_is_where_langchain_brings_cleared_results_back():
    """The known difference: LangChain clears a copy, so below the trigger it sends every result whole again."""
    turns = loop([900, 800, 700, 600, 500, 400, 300, 200, 600, 700, 800])
    for turn in turns[:4]:
        for p in turn:
            p["dropped_at"] = 8
    data = hand_made(turns)
    setting = Setting("keep-0", trigger=2000, keep=0)
    theirs, ours = langchain_calls(data, setting, 2000), prunesim_calls(data, setting, 2000)
    bad, _, _ = compare(data, setting)
    assert bad == [8, 9]  # the calls whose full history (1,450 and 1,850 tokens) is at or below 2,000
    for k in bad:
        assert theirs[k - 1].outputs == set() and ours[k - 1].outputs == {5, 6, 7}


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_the_development_transcripts_agree_with_langchain(setting):
    for name, data in dev_runs(all_runs=False):
        check_run(name, data, setting)


def check_run(name: str, data: WorkloadData, setting: Setting) -> None:
    bad, _, _ = compare(data, setting)
    if not bad:
        return
    # Only the two known differences (the module docstring) may remain.
    trigger = max(1, peak(data) // 2) if setting.trigger == HALF else setting.trigger or 100_000
    ours, theirs = prunesim_calls(data, setting, trigger), langchain_calls(data, setting, trigger)
    dropped = {p["call"]: p["dropped_at"] for p in data.parts if p["kind"] == "tool_output" and p.get("dropped_at")}
    for k in bad:
        a, b = theirs[k - 1], ours[k - 1]
        where = f"{name}, {setting.name}, call {k}"
        if not a.outputs and not a.inputs and a.full <= trigger:
            continue  # (2): the drop took the history below the trigger; LangChain sends it whole
        assert a.outputs == b.outputs and a.inputs < b.inputs, f"{where}: the cleared sets differ"
        assert all(dropped.get(c, 1 << 30) <= k for c in b.inputs - a.inputs), f"{where}: (1) does not explain it"


def dev_runs(all_runs: bool) -> list[tuple[str, WorkloadData]]:
    from prunesim.studies.transcript_replay import expand, iter_workloads

    if not TRACES.is_dir():
        pytest.skip(f"the development transcripts are not here ({TRACES}; set PRUNESIM_TRACES)")
    out = []
    for folder in DEV:
        files = expand([TRACES / folder]) if (TRACES / folder).is_dir() else []
        for path in files if all_runs else files[:1]:
            out.extend((f"{folder}/{data.name}", data) for data in iter_workloads(path))
    return out


@pytest.mark.skipif(os.environ.get("PRUNESIM_DIFFERENTIAL") != "all", reason="set PRUNESIM_DIFFERENTIAL=all")
def test_every_development_run_at_every_setting():
    for name, data in dev_runs(all_runs=True):
        for setting in SETTINGS:
            check_run(name, data, setting)
