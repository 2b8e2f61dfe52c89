"""A replay starts from the recorded run: its clock, its cache's recorded state, and bad recordings refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prunesim.cli import main
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts import clock, formats
from prunesim.io.transcripts import workload as wl
from prunesim.observe.metrics.cost import CALL_COLUMNS
from prunesim.studies import leaderboard as lb
from prunesim.studies.transcript_replay import iter_workloads, replay

FIXTURES = Path(__file__).parent / "fixtures"
READ, WRITE, TIME = (CALL_COLUMNS.index(c) for c in ("cache_read", "cache_write", "time_s"))


def recording(times=None, warm=None, events=(), model="claude-opus-4-5") -> wl.WorkloadData:
    """Three calls over a 6,000-token system prompt, 3,000 tokens of output after each."""
    parts = [{"type": "part", "turn": 0, "kind": "system", "tokens": 6000}]
    parts += [{"type": "part", "turn": t, "kind": "tool_output", "tokens": 3000, "key": f"cat f{t}"} for t in (1, 2, 3)]
    header = {"type": "header", "prunesim_workload": 2, "name": "r", "format": "claude-code", "tokenizer": "pieces",
              "model": model, "turns": 3, "parts": 4, "call_times": times, "warm_cache": warm,
              "events": list(events)}
    return wl.WorkloadData(header, parts)


def billed(data, **overrides) -> list[tuple]:
    result, _ = replay(data, sc.load("transcript", overrides or None), "noop")
    return [(row[TIME], row[READ], row[WRITE]) for row in result.calls]


def test_a_pause_in_the_recording_expires_the_cache_as_it_did():
    quick = billed(recording([0.0, 30.0, 60.0]))
    paused = billed(recording([0.0, 30.0, 30.0 + 400.0]))  # 400 s > the 5-minute TTL of Claude's cache
    assert [t for t, _, _ in paused] == [0.0, 30.0, 430.0]  # the calls come at their recorded times
    assert quick[2][1] == 9000 and paused[2][1] == 0  # call 3 reads call 2's prompt, unless the pause expired it
    assert paused[2][2] == quick[2][2] + 9000  # ... which it then writes again
    # Without recorded times the clock is the latency model's: seconds, so nothing expires
    assert billed(recording(None))[2][1] == 9000
    assert billed(recording([0.0, 30.0, 430.0]), **{"replay.clock": "latency"})[2][1] == 9000


def test_the_cache_starts_as_warm_as_the_recording_and_breaks_where_it_broke():
    cold = billed(recording([0.0, 10.0, 20.0]))
    warm = billed(recording([0.0, 10.0, 20.0], warm=6000))
    assert cold[0][1:] == (0, 6000) and warm[0][1:] == (6000, 0)  # the system prompt was cached before the run
    broken = billed(recording([0.0, 10.0, 20.0], events=[{"event": "cache_break", "turn": 3, "at_tokens": 6000}]))
    assert broken[2][1:] == (6000, 6000)  # call 3 reads only the system prompt and writes the rest again
    both = recording([0.0, 10.0, 20.0], warm=6000, events=[{"event": "cache_break", "turn": 3, "at_tokens": 6000}])
    off = billed(both, **{"replay.cache_breaks": False})
    assert off == cold


def test_a_cache_break_reads_what_the_recording_read_however_many_spans_lie_past_it():
    # Turn 2 brings 30 small parts, more spans than an explicit mark searches back (lookback): the entry the
    # recorded call 3 read, 9,000 tokens in, is still read, since the runtime's mark stood there.
    data = recording([0.0, 10.0, 20.0], events=[{"event": "cache_break", "turn": 3, "at_tokens": 9000}])
    data.parts[2:3] = [{"type": "part", "turn": 2, "kind": "tool_output", "tokens": 100, "key": f"cat g{i}"}
                       for i in range(30)]
    data.header["parts"] = len(data.parts)
    assert 0 < sc.load("transcript").pricing.lookback < 30
    calls = billed(data)
    assert calls[1][1:] == (6000, 3000)  # call 2 reads call 1's prompt and writes turn 1's output
    assert calls[2][1:] == (9000, 3000)  # call 3 reads up to the break and writes the 30 parts again


def test_a_cache_break_is_a_read_short_of_the_previous_prompt_within_the_ttl():
    usage = [{"prompt_tokens": 10000, "cache_read_tokens": 0, "cache_write_tokens": 10000},
             {"prompt_tokens": 12000, "cache_read_tokens": 10000, "cache_write_tokens": 2000},
             {"prompt_tokens": 13000, "cache_read_tokens": 4000, "cache_write_tokens": 9000},  # broken at 4,000
             {"prompt_tokens": 14000, "cache_read_tokens": 0, "cache_write_tokens": 14000}]  # after a long pause
    times = [0.0, 10.0, 20.0, 20.0 + wl.BREAK_WITHIN_S + 1]
    assert wl.break_points(usage, times, set()) == {3: 4000}
    assert wl.break_points(usage, times, {3}) == {}  # after a compaction the prompt starts afresh
    implicit = [{k: v for k, v in u.items() if k != "cache_write_tokens"} for u in usage]
    assert wl.break_points(implicit, times, set()) == {}  # an implicit cache misses at random: not judged


def test_claude_code_and_codex_record_each_calls_time_mini_swe_agent_its_created():
    (claude,) = formats.iter_transcripts(FIXTURES / "claude-code" / "session.jsonl")
    (codex,) = formats.iter_transcripts(FIXTURES / "codex" / "rollout-0.34.jsonl")
    for t in (claude, codex):
        assert sorted(t.call_times) == list(range(1, t.turns + 1))
    data = next(iter_workloads(FIXTURES / "claude-code" / "session.jsonl"))
    assert data.header["call_times"] == clock.relative(claude.call_times, claude.turns)
    assert data.header["call_times"][0] == 0.0
    assert clock.seconds("2026-01-01T00:00:10Z") - clock.seconds("2026-01-01T00:00:00+00:00") == 10.0
    assert clock.seconds(1763400000) == 1763400000.0 and clock.seconds("yesterday") is None
    assert clock.relative({1: 100.0, 2: 90.0, 3: 130.0}, 3) == [0.0, 0.0, 30.0]  # never backwards


def test_a_claude_record_without_a_timestamp_is_one_line_and_exit_2(tmp_path, capsys):
    lines = (FIXTURES / "claude-code" / "session.jsonl").read_text().split("\n")
    first = next(i for i, x in enumerate(lines) if '"type": "assistant"' in x)
    record = json.loads(lines[first])
    del record["timestamp"]
    lines[first] = json.dumps(record)
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines))
    assert main(["run", "--workload", str(path), "--policy", "noop", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "timestamp" in err and "s.jsonl" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_workload_from_an_unknown_model_is_one_line_and_exit_2(tmp_path, capsys):
    data = recording([0.0, 1.0, 2.0], model="acme/llama-9")
    (tmp_path / "in").mkdir()
    wl.write(tmp_path / "in" / "w.jsonl", data)
    for args in (["run", "--workload", str(tmp_path / "in" / "w.jsonl"), "--policy", "noop", "--out",
                  str(tmp_path / "o")],
                 ["leaderboard", str(tmp_path / "in"), "--policies", "noop", "--out", str(tmp_path / "lb")]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "'acme/llama-9'" in err and "lacks 13 price key(s)" in err and "--set pricing.model=NAME" in err
        assert "Traceback" not in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "lb").exists()
    # the flag it names works
    assert main(["run", "--workload", str(tmp_path / "in" / "w.jsonl"), "--policy", "noop", "--set",
                 "pricing.model=gpt-5"]) == 0


def test_through_the_api_the_hints_name_overrides_not_the_command_lines_flag(tmp_path):
    from prunesim import api
    from prunesim.errors import UserError

    wl.write(tmp_path / "w.jsonl", recording([0.0, 1.0, 2.0], model="acme/llama-9"))
    with pytest.raises(UserError) as err:
        api.run(workload=tmp_path / "w.jsonl", policy="noop")
    assert "'acme/llama-9'" in str(err.value) and "lacks 13 price key(s)" in str(err.value)
    assert "overrides pricing.model=NAME" in str(err.value) and "--set" not in str(err.value)
    unnamed = api.run(workload=FIXTURES / "openai.json", policy="noop")
    note = next(n for n in unnamed.warnings if "records no model" in n)
    assert "overrides pricing.model=NAME" in note and "--set" not in note
    # the setting it names works through the API
    assert api.run(workload=tmp_path / "w.jsonl", policy="noop", overrides={"pricing.model": "gpt-5"}).summary
    # one name in every message of a replay: the overrides' own errors too
    for given_as in ("overrides", "--set"):
        with pytest.raises(UserError) as err:
            api.run(workload=tmp_path / "w.jsonl", policy="noop", overrides={"bogus": 1}, given_as=given_as)
        assert f"(with {given_as}): bogus: unknown key" in str(err.value)


def test_the_leaderboard_reports_each_policy_at_its_documented_setting_and_at_each_grid_point(tmp_path, capsys):
    (tmp_path / "in").mkdir()
    wl.write(tmp_path / "in" / "w.jsonl", recording([0.0, 10.0, 20.0]))
    out = tmp_path / "lb"
    assert main(["leaderboard", str(tmp_path / "in"), "--policies", "noop,recency", "--grid", "recency:trigger=8000,"
                 "12000", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    table = [r for r in _csv(out / "leaderboard.csv")]
    settings = {(r["policy"], r["setting"], r["acting_threshold"]) for r in table}
    assert settings == {("noop", "", ""), ("recency", "", "150000"), ("recency", "trigger=8000", "8000"),
                        ("recency", "trigger=12000", "12000")}
    runs = _csv(out / "runs.csv")
    acted = {r["setting"]: r["acted"] for r in runs if r["policy"] == "recency"}
    assert acted == {"": "0", "trigger=8000": "1", "trigger=12000": "1"}  # only the low thresholds are reached
    assert "recency @ trigger=8000 (acts at 8,000)" in printed and "noop's dollars beside the recorded bills" in printed
    shares = {r["figure"] for r in table if r["interval"] == "wilson"}
    # No span of a transcript is a constraint: lost_constraints is unobservable, left out rather than shown as 0;
    # redos is the agent model's: a Claude Code recording's profile redoes nothing, so the table leaves it out too.
    assert shares == {f + lb.SHARE_SUFFIX for f in lb.COUNT_FIGURES if f not in ("lost_constraints", "redos")}


def _csv(path: Path) -> list[dict]:
    import csv

    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("window", [5000])
def test_a_recorded_window_no_prompt_could_fit_is_refused(tmp_path, capsys, window):
    data = recording([0.0, 1.0, 2.0])
    data.header["context_window"] = window
    data.header["prompt_tokens"] = [6000, 9000, 12000]
    wl.write(tmp_path / "w.jsonl", data)
    assert main(["run", "--workload", str(tmp_path / "w.jsonl"), "--policy", "noop"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a window the runtime could have had" in err


def compacted(hidden: bool) -> wl.WorkloadData:
    """A 6,000-token system prompt (the runtime's hidden one, or one written in the file), a 1,000-token task,
    two 3,000-token outputs, then a compaction before call 3 that keeps only the system prompt and a summary."""
    system = {"type": "part", "turn": 0, "kind": "system", "tokens": 6000}
    if hidden:
        system |= {"hidden": True, "sized_by": "usage"}
    parts = [system, {"type": "part", "turn": 0, "kind": "user", "tokens": 1000, "dropped_at": 3}]
    parts += [{"type": "part", "turn": t, "kind": "tool_output", "tokens": 3000, "key": f"cat f{t}", "dropped_at": 3}
              for t in (1, 2)]
    parts.append({"type": "part", "turn": 2, "kind": "user", "tokens": 800})  # the summary, placed after the removal
    header = {"type": "header", "prunesim_workload": 2, "name": "c", "format": "claude-code", "tokenizer": "pieces",
              "model": "claude-opus-4-5", "turns": 3, "parts": len(parts), "call_times": [0.0, 10.0, 20.0],
              "events": [{"event": "compaction", "turn": 3, "trigger": "manual"}]}
    return wl.WorkloadData(header, parts)


def test_after_a_compaction_the_call_reads_the_hidden_system_prompt_from_the_cache():
    # The runtime's mark stands after its system prompt and tools, which a compaction keeps: the first call after
    # one reads them (the recorded Claude Code sessions read about 22k there), and writes only the summary.
    calls = billed(compacted(hidden=True))
    assert calls[0][1:] == (0, 7000) and calls[1][1:] == (7000, 3000)
    assert calls[2][1:] == (6000, 800)
    # A system prompt the workload does not mark as the runtime's: the mark is the end of the first prompt, which
    # the compaction cut, so nothing is read.
    assert billed(compacted(hidden=False))[2][1:] == (0, 6800)


def test_a_recorded_read_inside_the_system_prompt_moves_its_mark_there():
    # The recorded call 2 read only 5,000 tokens, inside the 6,000-token hidden part: the runtime's mark stands
    # there (7 of the 9 recorded Claude Code compactions are followed by a read of the same length as one after a
    # cache break of that session), so every call refreshes it, and the call after the compaction, 390 s after
    # call 2 (more than the 5-minute TTL), still reads 5,000 tokens, not the whole part.
    data = compacted(hidden=True)
    for p in data.parts:
        if p.get("dropped_at"):
            p["dropped_at"] = 4
    data.parts.insert(4, {"type": "part", "turn": 3, "kind": "tool_output", "tokens": 3000, "key": "cat f3",
                          "dropped_at": 4})
    data.parts[-1]["turn"] = 3  # the summary
    data.header |= {"turns": 4, "parts": len(data.parts), "call_times": [0.0, 10.0, 200.0, 400.0],
                    "events": [{"event": "compaction", "turn": 4, "trigger": "manual"},
                               {"event": "cache_break", "turn": 2, "at_tokens": 5000}]}
    calls = billed(data)
    assert calls[1][1:] == (5000, 5000)
    assert calls[3][1:] == (5000, 1800)
