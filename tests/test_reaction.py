"""The closed loop: a replayed agent re-fetches content the policy removed before a recorded call uses it."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts import resources
from prunesim.io.transcripts.workload import read as read_workload
from prunesim.io.transcripts.workload import write as write_workload
from prunesim.model.reaction import FITTED_PROBABILITY, draw, shipped_fit
from prunesim.studies import reaction
from prunesim.studies.transcript_replay import iter_workloads, replay

FILE = "pkg/module.py"


def _step(command: str, output: str) -> list[dict]:
    return [{"role": "assistant", "content": f"THOUGHT: next.\n\n```bash\n{command}\n```"},
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{output}\n</output>"}]


def _trajectory(tmp_path: Path, edit: str = f"sed -i 's/old/new/' {FILE}") -> Path:
    """Read a file (a large output), run three small commands, then edit the file."""
    messages = [{"role": "system", "content": "You are a careful engineer."},
                {"role": "user", "content": "Fix the bug in the module."}]
    messages += _step(f"cat {FILE}", "def f():\n    return 'old value'\n" * 400)
    for i in range(3):
        messages += _step(f"ls dir{i}", f"file{i}.txt")
    messages += _step(edit, "")
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    return path


def _scenario(**sets):
    # clear-tool-uses clears every tool result but the newest one once the history passes 1,000 tokens. The
    # resource reaction alone (agent profile none): a mini-swe-agent transcript's own profile reacts through
    # lookback needs instead (tests/test_agent_model.py).
    return sc.load("transcript", {"clear_tool_uses.trigger": 1000, "clear_tool_uses.keep": 1,
                                  "agent.profile": "none", **sets})


def _replay(path: Path, **sets):
    (data,) = iter_workloads(path)
    return data, replay(data, _scenario(**sets), "clear-tool-uses", 0)[0]


def test_the_need_table_keeps_what_each_call_reads_and_changes(tmp_path):
    (data,) = iter_workloads(_trajectory(tmp_path))
    calls = [p for p in data.parts if p["kind"] == "tool_call"]
    assert calls[0]["fetches"] == [f"cmd:cat {FILE}", f"file:{FILE}"]
    assert calls[-1]["uses"] == [f"file:{FILE}"]
    path = tmp_path / "w.jsonl"
    write_workload(path, data)
    assert read_workload(path).parts == data.parts  # kept through the workload file


def test_a_cleared_read_is_fetched_again_before_the_edit_and_billed(tmp_path):
    data, closed = _replay(_trajectory(tmp_path))
    _, open_loop = _replay(_trajectory(tmp_path), **{"reaction.mode": "none"})
    read_output = next(p for p in data.parts if p["kind"] == "tool_output")
    read_call = next(p for p in data.parts if p["kind"] == "tool_call")
    s, o = closed.summary, open_loop.summary
    assert o["refetches"] == 0 and o["refetch_cost_usd"] == 0
    assert s["refetches"] == 1
    assert s["refetch_tokens"] == read_call["tokens"] + read_output["tokens"]
    (row,) = [e for e in closed.events if e.event == "refetch"]
    edit_turn = data.turns
    assert row.turn == edit_turn and row.detail["resource"] == f"file:{FILE}"
    assert row.detail["tokens"] == read_output["tokens"]
    # It took a model call and a tool run of simulated time; the run took that much longer, and more (every
    # later call reads the content it brought back).
    assert row.detail["latency_s"] == pytest.approx(s["refetch_time_s"]) and s["refetch_time_s"] > 0
    assert s["sim_time_s"] > o["sim_time_s"] + s["refetch_time_s"]
    # One more model call: the re-fetch's own, first in the edit's turn, and its cost is refetch_cost_usd.
    assert len(closed.calls) == len(open_loop.calls) + 1
    turn_calls = [c for c in closed.calls if c[2] == edit_turn]
    assert len(turn_calls) == 2 and turn_calls[0][-1] == pytest.approx(s["refetch_cost_usd"])
    assert s["refetch_cost_usd"] > 0
    # The content rides in the edit's own call: that call's prompt grows by what came back.
    open_edit = [c for c in open_loop.calls if c[2] == edit_turn][0]
    assert turn_calls[1][5] - open_edit[5] == s["refetch_tokens"]
    assert s["cost_usd"] > o["cost_usd"] + s["refetch_cost_usd"]


def test_no_refetch_when_the_content_is_held_or_never_needed(tmp_path):
    _, noop = _replay(_trajectory(tmp_path), **{"clear_tool_uses.trigger": 100_000})  # never clears
    assert noop.summary["refetches"] == 0
    _, other = _replay(_trajectory(tmp_path, edit="sed -i 's/old/new/' other.py"))  # edits a file never read
    assert other.summary["refetches"] == 0
    _, never = _replay(_trajectory(tmp_path), **{"reaction.probability": 0.0})
    assert never.summary["refetches"] == 0


def test_the_draws_are_fixed_by_seed_resource_and_turn():
    assert draw(0, "file:a", 5) == draw(0, "file:a", 5)
    assert draw(0, "file:a", 5) != draw(1, "file:a", 5)
    values = [draw(0, f"file:{i}", 3) for i in range(2000)]
    assert 0.45 < sum(values) / len(values) < 0.55 and min(values) >= 0 and max(values) < 1


def test_shell_commands_name_the_files_they_plainly_read_and_change():
    t = resources.shell_touches("nl -ba src/a.py | sed -n '10,20p' && sed -i.bak 's/x/y/' ./src/b.py > log.txt")
    assert "file:src/a.py" in t.fetches and "file:src/b.py" in t.uses and "file:log.txt" in t.uses
    assert resources.shell_touches("python - <<'EOF'\nopen('x').write('y')\nEOF").uses == ()


def test_an_unknown_tool_is_one_warning_line():
    state = resources.NeedState()
    assert resources.touches("claude-code", "mcp__db__query", "{}", "k", state) == resources.NOTHING
    resources.touches("claude-code", "mcp__db__query", "{}", "k", state)
    note = resources.unknown_note("s.jsonl", "claude-code", state)
    assert "\n" not in note and note.startswith("s.jsonl: ") and "mcp__db__query (2)" in note


def test_a_bad_reaction_setting_is_one_clear_line():
    from prunesim.errors import UserError
    with pytest.raises(UserError, match="reaction.mode"):
        sc.load("transcript", {"reaction.mode": "sometimes"})
    with pytest.raises(UserError, match="reaction.probability"):
        sc.load("transcript", {"reaction.probability": 1.5})


def test_the_fit_sees_a_removal_and_the_reread_after_it(tmp_path):
    """On a hand-made workload: a read dropped by the runtime, then read again, then edited."""
    (data,) = iter_workloads(_trajectory(tmp_path))
    parts = data.parts
    read_output = next(p for p in parts if p["kind"] == "tool_output")
    read_output["dropped_at"] = 3
    data.header["events"] = [{"event": "compaction", "turn": 3}]
    (e,) = reaction.episodes(data)
    assert (e.call, e.cause, e.resource, e.touch, e.reread) == (3, "compaction", f"file:{FILE}", 5, False)
    assert reaction.check([e], 0.5, 0.2) == [{"transcript": data.name, "call": 3, "removed_files": 1, "needs": 1,
                                              "predicted": 0.6, "predicted_open_loop": 0.2, "observed": 0}]


def test_the_shipped_fit_is_the_one_the_scenario_uses():
    fit = shipped_fit()
    assert FITTED_PROBABILITY == fit["probability"]
    assert fit["probability"] == pytest.approx(
        (fit["observed_share"] - fit["baseline"]) / (1 - fit["baseline"]), abs=1e-3)


def _dev_sessions() -> Path | None:
    root = Path(os.environ.get("PRUNESIM_TRACES") or Path(__file__).resolve().parents[2] / "shared" / "traces")
    folder = root / "claude-code-dev"
    return folder if folder.is_dir() else None


@functools.cache
def _dev_collected() -> tuple:
    """Each dev session's name, episodes and held touches (read once for the tests that ask)."""
    return tuple(reaction.collect(data) for path in sorted(_dev_sessions().glob("*.jsonl"))
                 for data in iter_workloads(path))


@pytest.mark.skipif(_dev_sessions() is None, reason="../shared/traces/claude-code-dev is not here")
def test_the_fit_on_the_dev_sessions_is_the_shipped_one():
    per_session: dict = {}
    for name, session_eps, session_held in _dev_collected():
        eps, held = per_session.setdefault(name, ([], []))
        eps.extend(session_eps)
        held.extend(session_held)
    assert reaction.fit(per_session).as_dict()["probability"] == shipped_fit()["probability"]


def test_fidelity_json_holds_the_check_per_compaction(capsys):
    """The project's own Claude Code fixture holds one compaction: fidelity --json reports it under reaction."""
    from prunesim.cli import main
    fixture = Path(__file__).parent / "fixtures" / "claude-code" / "session.jsonl"
    assert main(["fidelity", str(fixture), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["reaction"]
    (row,) = rep["compactions"]
    assert row["call"] == 4 and row["in_fit"] is False and row["removed_files"] == 2  # the files read before it
    assert set(row) >= {"needs", "predicted", "predicted_open_loop", "observed"}
    share = rep["probability"] + (1 - rep["probability"]) * rep["baseline"]
    assert row["predicted"] == pytest.approx(share * row["needs"], abs=1e-3)
    assert rep["totals"]["compactions"] == 1


def test_the_lookback_check_asks_what_the_engines_needs_draw():
    """The check's chance that a removed item is needed again is the frequency of the engine's own draws."""
    from prunesim.model.agent_needs import LookbackNeeds
    from prunesim.model.agent_profiles import AgentParams, resolve

    profile = resolve(AgentParams(profile="openhands", need_rate=0.2, need_cv=1.0, need_decay=4.0))
    fetched, first, last, runs = 3, 6, 20, 4000
    chance = reaction.need_chance(profile, fetched, first, last)
    out = type("Span", (), {"id": 1, "tokens": 100})()
    hits = 0
    for seed in range(runs):
        needs = LookbackNeeds(profile, seed)
        needs.saw(type("A", (), {"kind": "tool_output", "key": "k", "tokens": 100, "tool": "", "stale_after": 9,
                                 "tags": frozenset()})(), out, fetched)
        hits += any(needs.needed(w) for w in range(first, last + 1))
    sd = (chance * (1 - chance) / runs) ** 0.5
    assert 0.05 < chance < 0.95 and abs(hits / runs - chance) < 4 * sd


@pytest.mark.skipif(_dev_sessions() is None, reason="../shared/traces/claude-code-dev is not here")
def test_the_lookback_needs_are_checked_on_the_recorded_compactions():
    """Each profile with lookback needs of its own predicts the re-reads after Claude Code's compactions; the
    observed re-reads are the episodes' (the same as the fitted reaction's check counts)."""
    eps = [e for _, session_eps, _ in _dev_collected() for e in session_eps]
    fitted = [row for _, session_eps, _ in _dev_collected()
              for row in reaction.check(session_eps, shipped_fit()["probability"], shipped_fit()["baseline"])]
    lookback = reaction.lookback_report(eps)
    observed = sum(e.reread for e in eps if e.cause == "compaction")
    assert set(lookback) == {"swe-agent", "openhands"} and observed > 0
    for look in lookback.values():
        assert look["observed"] == observed and len(look["compactions"]) == len(fitted)
        assert look["predicted"] == pytest.approx(sum(r["predicted"] for r in look["compactions"]), abs=0.01)
