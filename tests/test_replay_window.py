"""A replay checks the window where its runtime did, at the model call, and says when a noop replay cut content.

Between two calls a runtime's conversation may hold more than the window: the
runtime removes content before the next call (a recorded compaction), or no
call follows. A noop replay with the recorded removals then cuts nothing; a
window below the recorded prompts cuts at the call, and every command that
replays transcripts prints one warning per transcript, computed from the run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from prunesim.cli import main
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts import workload as wl
from prunesim.observe.metrics.cost import CALL_COLUMNS
from prunesim.studies.transcript_replay import replay

SESSION = Path(__file__).resolve().parent / "fixtures" / "claude-code" / "session.jsonl"
NOTE = "the noop replay cut content the recorded run sent"
PROMPT = CALL_COLUMNS.index("prompt_tokens")


def workload(parts: list[tuple[int, str, int, int]], events=(), window: int | None = None,
             model: str = "claude-opus-4-5") -> wl.WorkloadData:
    """(turn, kind, tokens, dropped_at) parts; turn 0 is the hidden system part."""
    recs = []
    for turn, kind, tokens, dropped in parts:
        rec = {"type": "part", "turn": turn, "kind": kind, "tokens": tokens}
        if kind == "tool_output":
            rec["key"] = f"cat f{turn}"
        if dropped:
            rec["dropped_at"] = dropped
        recs.append(rec)
    turns = max(p[0] for p in parts)
    header = {"type": "header", "prunesim_workload": 2, "name": "w", "source": "w.jsonl", "format": "claude-code",
              "tokenizer": "pieces", "model": model, "turns": turns, "parts": len(recs), "repeats": 0,
              "prompt_tokens": None, "context_window": window, "events": list(events)}
    data = wl.WorkloadData(header, recs)
    data.header["prompt_tokens"] = wl.context_before_calls(data)
    return data


def prompts(result) -> list[int]:
    return [int(x) for x in np.asarray(result.calls)[:, PROMPT]]


def test_what_arrives_before_a_recorded_compaction_is_held_whole_and_never_cut():
    # Call 2 sends 120,000 tokens; its 85,000-token output takes the conversation to 205,000 on a 200,000-token
    # window, and the runtime compacts before call 3 (as a Claude Code session did at 202,309 tokens).
    data = workload([(0, "system", 20000, 0), (1, "tool_output", 100000, 3), (2, "tool_output", 85000, 3),
                     (2, "summary", 3000, 0), (3, "tool_output", 1000, 0)],
                    events=[{"event": "compaction", "turn": 3, "trigger": "auto", "pre_tokens": 205000}])
    result, _ = replay(data, sc.load("transcript"), "noop")
    s = result.summary
    assert result.scenario.window == 200000
    assert s["forced_truncations"] == 0 and s["truncated_tokens"] == 0
    assert s["peak_utilization"] == 205000  # what the conversation held before the compaction
    assert prompts(result) == data.header["prompt_tokens"] == [20000, 120000, 23000]
    assert not any(NOTE in w for w in result.warnings)


def test_what_arrives_after_the_last_call_is_sent_to_no_call_and_never_cut():
    data = workload([(0, "system", 20000, 0), (1, "tool_output", 150000, 0), (2, "tool_output", 40000, 0)])
    result, _ = replay(data, sc.load("transcript"), "noop")
    assert result.summary["forced_truncations"] == 0 and result.summary["final_utilization"] == 210000
    assert prompts(result) == [20000, 170000]


def test_a_window_below_the_recorded_prompts_cuts_at_the_call_and_the_warning_counts_what_was_cut():
    data = workload([(0, "system", 1000, 0), *((t, "tool_output", 30000, 0) for t in range(1, 6))])
    result, _ = replay(data, sc.load("transcript", {"window": 64000}), "noop")
    s = result.summary
    assert s["forced_truncations"] > 0 and s["truncated_tokens"] > 0
    assert max(prompts(result)) <= 64000  # the call never reads more than the window
    notes = [w for w in result.warnings if NOTE in w]
    assert notes == [f"w.jsonl (w): {NOTE}, on a 64,000-token window: {s['forced_truncations']:,} forced cut(s), "
                     f"{s['truncated_tokens']:,} tokens (its largest recorded prompt: 121,000 tokens)"]
    other, _ = replay(workload([(0, "system", 1000, 0), (1, "tool_output", 30000, 0)]),
                      sc.load("transcript", {"window": 64000}), "noop")
    assert not any(NOTE in w for w in other.warnings)


def test_only_the_noop_replay_warns_a_policy_s_own_cuts_are_its_results():
    data = workload([(0, "system", 1000, 0), *((t, "tool_output", 30000, 0) for t in range(1, 6))])
    result, _ = replay(data, sc.load("transcript", {"window": 64000, "trigger": 60000}), "recency")
    assert not any(NOTE in w for w in result.warnings)


def one_note(err: str, window: str) -> list[str]:
    lines = [line for line in err.splitlines() if NOTE in line]
    assert all(line.startswith("prunesim: warning: ") and f"on a {window}-token window" in line for line in lines)
    return lines


@pytest.fixture
def folder(tmp_path) -> Path:
    """The project's Claude Code session fixture, and a workload whose parts exceed the window it claims."""
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(SESSION, src / "session.jsonl")
    data = workload([(0, "system", 500, 0), (1, "tool_output", 900, 0), (2, "tool_output", 900, 0),
                     (3, "tool_output", 10, 0)], window=1300, model="gpt-5-codex")
    data.header["prompt_tokens"] = None  # nothing recorded says the window is impossible: it is the file's claim
    wl.write(src / "claims.workload.jsonl", data)
    return src


@pytest.mark.parametrize("command", [
    ["replay-dir", "{dir}", "--policies", "noop,recency,clear-tool-uses", "--out", "{out}/rows.csv"],
    ["leaderboard", "{dir}", "--policies", "noop,recency,clear-tool-uses", "--out", "{out}/lb"],
])
def test_every_folder_command_warns_once_per_transcript_not_per_policy(folder, tmp_path, capsys, command):
    args = [a.format(dir=folder, out=tmp_path) for a in command]
    assert main(args) == 0
    err = capsys.readouterr().err
    claimed = one_note(err, "1,300")
    assert len(claimed) == 1 and "claims.workload.jsonl (w)" in claimed[0]
    assert not any("session.jsonl" in line for line in claimed)  # the session replays on its 200,000 tokens
    assert main([*args, "--set", "window=1300"]) == 0  # the same exit code with the warning
    lines = one_note(capsys.readouterr().err, "1,300")
    assert len(lines) == 2 and sum("session.jsonl (session)" in line for line in lines) == 1


def test_run_workload_and_fidelity_warn_once(folder, tmp_path, capsys):
    assert main(["run", "--workload", str(folder / "claims.workload.jsonl"), "--policy", "noop"]) == 0
    assert len(one_note(capsys.readouterr().err, "1,300")) == 1
    assert main(["run", "--workload", str(folder / "claims.workload.jsonl"), "--policy", "recency",
                 "--set", "trigger=900"]) == 0
    assert one_note(capsys.readouterr().err, "1,300") == []
    (folder / "claims.workload.jsonl").unlink()  # fidelity refits sizes on transcripts only
    assert main(["fidelity", str(folder)]) == 0
    assert one_note(capsys.readouterr().err, "1,300") == []
    assert main(["fidelity", str(folder), "--set", "window=1300"]) == 0
    lines = one_note(capsys.readouterr().err, "1,300")
    assert len(lines) == 1 and "session.jsonl (session)" in lines[0] and "at the anchored sizes" in lines[0]


def test_a_note_on_one_sizings_replay_is_not_the_other_sizings():
    """The anchored sizes overrun a 64,000-token window, the calibrated ones do not: only the anchored noop
    replay warns, in whichever order the two sizings replay, and the workload's own warnings stay the import's."""
    data = workload([(0, "system", 1000, 0), *((t, "tool_output", 30000, 0) for t in range(1, 6))])
    for p in data.parts[1:]:
        p["calibrated"] = 9000
    data.warnings.append("w.jsonl (w): an import warning")
    runs = {sizes: sc.load("transcript", {"window": 64000, "replay.sizes": sizes}) for sizes in wl.SIZES}
    for order in (wl.SIZES, wl.SIZES[::-1]):
        notes = {sizes: replay(data, runs[sizes], "noop")[0].warnings for sizes in order}
        assert notes["anchored"][0] == "w.jsonl (w): an import warning" and NOTE in notes["anchored"][-1]
        assert notes["calibrated"] == notes["anchored"][:-1]  # the import's warning and the clock's note alone
        assert data.warnings == ["w.jsonl (w): an import warning"]
    calibrated = wl.sized_as(data, "calibrated")
    calibrated.warnings.append("a note on the copy")
    assert data.warnings == ["w.jsonl (w): an import warning"]


@pytest.mark.parametrize("command", [["replay-dir", "{dir}", "--policies", "noop,recency", "--out", "{out}/r.csv"],
                                     ["leaderboard", "{dir}", "--policies", "noop,recency", "--out", "{out}/lb"]])
def test_a_calibrated_replays_note_is_shown_once_by_the_folder_commands(folder, tmp_path, capsys, command):
    """The calibrated sizes replay a copy of the workload: its notes still reach the output, once."""
    args = [a.format(dir=folder, out=tmp_path) for a in command]
    assert main([*args, "--set", "window=1300", "--set", "replay.sizes=calibrated"]) == 0
    lines = one_note(capsys.readouterr().err, "1,300")
    assert len(lines) == 2 and sum("session.jsonl (session)" in line for line in lines) == 1
    assert all("tokens at the calibrated sizes (its largest" in line for line in lines)


def test_a_grid_over_the_sizes_warns_once_per_sizing_and_says_which(folder, tmp_path, capsys):
    (folder / "claims.workload.jsonl").unlink()
    assert main(["replay-dir", str(folder), "--policies", "noop", "--set", "window=1300", "--grid",
                 "replay.sizes=anchored,calibrated", "--out", str(tmp_path / "r.csv")]) == 0
    lines = one_note(capsys.readouterr().err, "1,300")
    assert len(lines) == 2 and sum("at the calibrated sizes" in line for line in lines) == 1


OPENAI = Path(__file__).resolve().parent / "fixtures" / "openai.json"  # a transcript that records no model


def test_a_transcript_without_a_model_replays_on_the_billed_models_window_whatever_trigger_is_set(capsys):
    """A trigger set alone makes the scenario's placeholder window room for it; on a transcript that records no
    model that placeholder was taken as the runtime's window (a trigger of 10**9 replayed on a 10**9-token window).
    The window is the documented one of the model the run is billed as, and a trigger above it is refused."""
    from prunesim.io import prices

    table = prices.load()
    assert main(["run", "--workload", str(OPENAI), "--policy", "naive", "--set", "trigger=1000000000"]) == 2
    err = capsys.readouterr().err
    assert "trigger: 1000000000 is above the budget 200000 on the recorded runtime" in err
    assert main(["run", "--workload", str(OPENAI), "--policy", "naive", "--set", "pricing.model=gpt-5"]) == 0
    window = table["gpt-5"]["window"]
    assert f"window {window}, soft budget {window}," in capsys.readouterr().out
    assert window != 200000  # the check could not pass on the scenario's own placeholder
