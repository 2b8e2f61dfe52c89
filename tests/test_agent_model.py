"""The agent model in the engine: what it asks is run, billed and published; it stops the run; none, no change."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from prunesim.errors import UserError
from prunesim.io import scenario_files as sf
from prunesim.kernel.choice import kernel_gap
from prunesim.model import agent_profiles
from prunesim.model.agent import AgentModel
from prunesim.model.agent_draws import NEED, draw, draws
from prunesim.model.agent_needs import LookbackNeeds
from prunesim.model.agent_profiles import AgentParams, resolve
from prunesim.model.agent_reaction import CARRIED, HELD, LOST, RECORDED, REDO, REFETCH, Reach, react
from prunesim.model.agent_success import probability
from prunesim.model.events import Observer
from prunesim.model.workload import Arrival
from prunesim.runner import run_one
from prunesim.studies.transcript_replay import iter_workloads, replay

FIXTURES = Path(__file__).parent / "fixtures"


def scenario(turns: int = 30, **sets):
    """A roomy window: nothing is cut on arrival, so every removal is the policy's."""
    return sf.load("oscillation-40", {"turns": turns, "window": 400_000, "budget": 400_000, "trigger": 300_000,
                                      **sets})


class Scripted(AgentModel):
    """An agent model with fixed answers: before the call of ``at`` it redoes ``turns`` turns of a 500-token output;
    it says stop once the agent's calls reach ``stop_at`` (0: never)."""

    counts_turns = True

    def __init__(self, at: int, turns: int, stop_at: int = 0):
        self.at, self.turns, self.stop_at = at, turns, stop_at
        self.heard: list[tuple] = []  # (work, agent calls, decision calls) at each after_turn

    def before_call(self, plan, turn, window):
        if turn != self.at:
            return ()
        item = SimpleNamespace(key="redo me", tool="", call_tokens=30, tokens=500, stale_after=10, tags=frozenset(),
                               index=0)  # what the engine reads of a content it fetches again
        return (Reach(item, REDO, self.turns),)

    def after_turn(self, work, calls):
        self.heard.append((work, calls.agent, calls.decisions))
        return "turn_cap" if self.stop_at and calls.agent >= self.stop_at else None


class Events(Observer):
    def __init__(self):
        self.calls, self.redos = [], []

    def on_model_call(self, time, turn, prompt, output, decision, pass_id=0):
        self.calls.append((turn, output, decision))

    def on_redo(self, time, turn, key, call_tokens, tokens, latency_s):
        self.redos.append((turn, key, call_tokens, tokens))


def test_a_redo_the_agent_asks_for_is_run_as_turns_billed_and_published():
    events = Events()
    agent = Scripted(at=5, turns=3)
    result = run_one(scenario(10), "noop", 0, trace="none", agent=agent, observers=[events])
    # each redo turn is a turn of its own (5, 6, 7), before the work turn's call (now turn 8)
    assert events.redos == [(turn, "redo me", 30, 500) for turn in (5, 6, 7)]
    assert len(events.calls) == 10 + 3  # ten work turns and three redo turns, each one model call
    assert [c[0] for c in events.calls] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
    assert [c for c in events.calls if c[0] in (5, 6, 7)] == [(turn, 30, False) for turn in (5, 6, 7)]
    # the agent hears every turn: three redo turns, then the work turns, with the calls counted so far
    assert [h for h in agent.heard if not h[0]] == [(False, 5, 0), (False, 6, 0), (False, 7, 0)]
    assert agent.heard[-1] == (True, 13, 0)
    assert result.summary["turns"] == 10


def test_the_agent_model_stops_the_run_and_the_work_left_is_not_done():
    agent = Scripted(at=4, turns=10, stop_at=8)
    result = run_one(scenario(20), "noop", 0, trace="none", agent=agent)
    assert agent.heard[-1] == (False, 8, 0)  # stopped in the middle of the redo, before turn 4's call
    assert result.summary["turns"] == 3  # work turns 1..3 done, turn 4 never reached its call


def test_the_policy_is_consulted_after_each_refetch_turn():
    """Masking keeping one output, an agent needing the last two: the output two turns back is masked, fetched
    again, and masking (consulted after the re-fetch) masks the last one for it: every turn from the third on."""
    params = AgentParams(profile="openhands", need_rate=100.0, need_cv=0.0, need_decay=1e6, need_horizon=2)
    r = run_one(scenario(12, **{"observation_masking.n": 1}), "observation-masking", 0, trace="none", agent=params)
    s = r.summary
    assert s["refetches"] == 10 and s["agent_calls"] == 12 + 10 and s["redos"] == 0
    assert s["clearings"] >= s["refetches"]  # what was fetched again was masked again: the loop


def test_without_an_agent_model_nothing_changes():
    """profile none (and auto on a synthetic run) is the run as it was: the same summary, no outcome figures."""
    sc = sf.load("reentrancy-60")
    plain = run_one(sc, "naive", 3, trace="none")
    none = run_one(sc, "naive", 3, trace="none", agent="none")
    assert plain.summary == none.summary and plain.outcome is None
    assert "agent_calls" not in plain.summary and "task_success" not in plain.summary
    assert "agent" not in sc.to_dict()  # scenario.json and a sweep's run ids as they were
    with_agent = run_one(sc, "naive", 3, trace="none", agent="swe-agent")
    assert with_agent.scenario.to_dict()["agent"] == {"profile": "swe-agent", "base": "solved"}
    assert with_agent.summary["agent_profile"] == "swe-agent"


def test_every_policy_meets_the_same_needs():
    """The needs are counter-based: which items are needed before a turn does not depend on the window."""
    profile = resolve(AgentParams(profile="openhands"))
    picks = []
    for _ in range(2):
        needs = LookbackNeeds(profile, seed=7)
        seen = []
        for turn in range(1, 60):
            seen.append([it.index for it in needs.needed(turn)])
            call = Arrival("tool_call", 20, f"k{turn}")
            needs.saw(call, type("S", (), {"id": 2 * turn, "tokens": 20})(), turn)
            out = Arrival("tool_output", 300, f"k{turn}")
            needs.saw(out, type("S", (), {"id": 2 * turn + 1, "tokens": 300})(), turn)
        picks.append(seen)
    assert picks[0] == picks[1] and sum(map(len, picks[0])) > 0


def test_the_vector_draws_are_the_scalar_draws_to_the_bit():
    seeds, turns, items = np.meshgrid([0, 1, 2**40], [1, 7, 1000], np.arange(50, dtype=np.uint64), indexing="ij")
    vector = draws(seeds, NEED, turns, items)
    scalar = [draw(int(s), NEED, int(t), int(i)) for s, t, i in zip(seeds.ravel(), turns.ravel(), items.ravel(),
                                                                      strict=True)]
    assert vector.ravel().tolist() == scalar


def test_the_draws_are_uniform_against_the_null():
    """Kolmogorov-Smirnov against U(0, 1) on 20,000 draws: D below its 1% critical value, 1.628 / sqrt(n) (a fixed
    sample, so a fixed verdict)."""
    u = np.sort(draws(5, NEED, np.arange(1, 201)[:, None], np.arange(100, dtype=np.uint64)[None, :]).ravel())
    n = len(u)
    d = max(np.max(np.arange(1, n + 1) / n - u), np.max(u - np.arange(n) / n))
    assert d < 1.628 / math.sqrt(n) and 0 <= u[0] and u[-1] < 1


def test_the_reaction_follows_what_the_window_still_says():
    item = type("Item", (), {"index": 3})()
    assert react(item, HELD, 10, 0, 0.5, 2) is None
    assert react(item, RECORDED, 10, 0, 0.5, 2) == Reach(item, REFETCH, 1)
    assert react(item, LOST, 10, 0, 0.5, 4) == Reach(item, REDO, 4)
    assert react(item, CARRIED, 10, 0, 1.0, 2) is None  # a faithful summary meets the need
    assert react(item, CARRIED, 10, 0, 0.0, 2) == Reach(item, REFETCH, 1)  # a summary is still a record


def test_where_an_item_stands_after_each_kind_of_removal():
    """recency drops call and output (lost), masking leaves a placeholder, tombstoned a tombstone (recorded)."""
    params = AgentParams(profile="openhands", need_rate=0.3, need_cv=0.0, need_decay=20.0, need_horizon=40, cap=0)
    runs = {policy: run_one(sf.load("oscillation-40", sets), policy, 0, trace="none", agent=params).summary
            for policy, sets in (("recency", {}), ("observation-masking", {"observation_masking.n": 3}),
                                 ("tombstoned", {}))}
    lost, masked, tombstoned = runs["recency"], runs["observation-masking"], runs["tombstoned"]
    assert lost["non_model_evictions"] > 0 and lost["redos"] > 0 and lost["refetches"] == 0
    assert masked["clearings"] > 0 and masked["refetches"] > 0 and masked["redos"] == 0
    assert tombstoned["passes"] > 0 and tombstoned["refetches"] > 0 and tombstoned["redos"] == 0


def test_a_summary_carrying_a_needed_item_meets_the_need_as_often_as_its_fidelity(monkeypatch):
    """llm-summary replaces old turns by a summary that carries them: fidelity 1 meets every need, 0 none."""
    runs = {}
    for fidelity in (0.0, 1.0):
        params = AgentParams(profile="openhands", need_rate=0.5, need_cv=0.0, need_decay=5.0, need_horizon=40,
                             summary_fidelity=fidelity)
        runs[fidelity] = run_one(scenario(40, **SUMMARY_AT), "llm-summary", 0, trace="none", agent=params).summary
    assert runs[0.0]["compactions"] > 0
    assert runs[1.0]["refetches"] < runs[0.0]["refetches"]


SUMMARY_AT = {"llm_summary.threshold": 6000, "llm_summary.unit": "tokens"}  # a summary every few turns


def test_the_cap_counts_what_the_scaffold_counts():
    """SWE-agent counts its summarizer's calls toward the cap, mini-swe-agent only the agent's own."""
    sets = SUMMARY_AT
    swe = run_one(scenario(40, **sets), "llm-summary", 0, trace="none", agent="swe-agent").summary
    mini = run_one(scenario(40, **sets), "llm-summary", 0, trace="none",
                   agent=AgentParams(profile="mini-swe-agent", need_rate=0.0)).summary
    assert swe["compactions"] > 0 and swe["cap_calls"] == swe["agent_calls"] + swe["compactions"]
    assert mini["compactions"] > 0 and mini["cap_calls"] == mini["agent_calls"] == 40


def test_a_capped_run_stops_at_its_cap():
    params = AgentParams(profile="openhands", need_rate=100.0, need_cv=0.0, need_decay=1e6, need_horizon=10, cap=25)
    s = run_one(scenario(40, **{"observation_masking.n": 1}), "observation-masking", 0, trace="none",
                agent=params).summary
    assert s["capped"] is True and s["stop_reason"] == "turn_cap" and s["agent_calls"] == 25
    assert s["turns"] < 40 and s["task_success"] == round(resolve(params).cap_success_solved, 6)  # as summaries round
    done = run_one(scenario(40), "noop", 0, trace="none", agent=dataclasses.replace(params, cap=41)).summary
    assert done["capped"] is False and done["stop_reason"] == "done" and done["agent_calls"] == 40


def test_success_keeps_the_null_and_falls_with_lengthening():
    """At L = 0, runs whose bases solve at the base rate solve at the base rate; lengthening lowers it."""
    s, kappa, slope = 0.4, 0.45, 1.5
    solved = probability(s, kappa, 0.1, slope, False, 0.0, "solved")
    unsolved = probability(s, kappa, 0.1, slope, False, 0.0, "unsolved")
    assert s * solved + (1 - s) * unsolved == pytest.approx(s)
    longer = [probability(s, kappa, 0.1, slope, False, L, "solved") for L in (0.0, 0.3, 1.0, 3.0)]
    assert longer == sorted(longer, reverse=True) and longer[-1] >= 0
    assert probability(s, kappa, 0.1, slope, True, 0.0, "solved") == 0.1


def test_a_replay_takes_its_transcripts_scaffold():
    base = sf.load_replay("transcript")
    (mini,) = iter_workloads(FIXTURES / "mini.traj.json")
    r, _ = replay(mini, base, "noop", 0, trace="none")
    assert r.summary["agent_profile"] == "mini-swe-agent" and r.summary["agent_calls"] == mini.turns
    assert r.summary["turns_over_recorded"] == 1.0  # under noop the recorded run held everything it needs
    session = FIXTURES / "claude-code" / "session.jsonl"
    (cc,) = iter_workloads(session)
    r, _ = replay(cc, base, "noop", 0, trace="none")
    assert r.summary["agent_profile"] == "claude-code"
    assert "capped" not in r.summary and "task_success" not in r.summary  # no cap, no success model: left out
    none, _ = replay(cc, sf.load_replay("transcript", {"agent.profile": "none"}), "noop", 0, trace="none")
    assert {k: v for k, v in r.summary.items() if k in none.summary} == none.summary


def test_bad_agent_settings_are_one_line_naming_the_key(tmp_path, capsys):
    with pytest.raises(UserError, match=r"agent\.profile: unknown agent profile 'sweagent'"):
        sf.load("oscillation-40", {"agent.profile": "sweagent"})
    with pytest.raises(UserError, match=r"agent\.need_rate: must be from 0 to 100"):
        sf.load("oscillation-40", {"agent.need_rate": -1})
    with pytest.raises(UserError, match=r"agent\.need_decay: must be above 0"):
        sf.load("oscillation-40", {"agent.need_decay": 0})
    with pytest.raises(UserError, match=r"agent\.cap_counts"):
        sf.load("oscillation-40", {"agent.cap_counts": "everything"})
    with pytest.raises(UserError, match="agent"):
        run_one(sf.load("oscillation-40"), "noop", 0, agent="nobody")
    from prunesim.cli import main

    assert main(["run", "oscillation-40", "--agent", "swe-agent", "--set", "agent.profile=openhands"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--agent" in err[0] and "contradicts" in err[0]


def test_the_kernel_leaves_agent_runs_to_the_engine():
    sc = sf.load("oscillation-40", {"agent.profile": "swe-agent"})
    assert "[agent]" in kernel_gap(sc, "naive")


@pytest.fixture
def fitted(monkeypatch):
    """A fit file that fits openhands' need rate (the resolved profiles are cached per process: cleared around)."""
    monkeypatch.setitem(agent_profiles._CACHE, "fit", {"profiles": {"openhands": {"need_rate": 0.25}},
                                                       "notes": {"openhands": "a test's fit"}})
    monkeypatch.setattr(agent_profiles, "fit_digest", lambda: "abc123")
    agent_profiles._shipped_values.cache_clear()
    yield
    agent_profiles._shipped_values.cache_clear()


def test_the_fit_file_wins_over_the_shipped_values_and_says_so(fitted):
    p = resolve(AgentParams(profile="openhands"))
    assert p.need_rate == 0.25 and p.sources["need_rate"] == "fitted (agent_fit.json abc123)"
    assert p.sources["cap"] == "documented"
    mini = resolve(AgentParams(profile="mini-swe-agent"))  # borrows swe-agent's: the fit does not name it
    assert mini.sources["need_rate"] == "borrowed from swe-agent (provisional)"
    user = resolve(AgentParams(profile="openhands", need_rate=0.4))
    assert user.need_rate == 0.4 and user.sources["need_rate"] == "user"
    assert agent_profiles.reasons(p)["need_rate"] == "a test's fit"
    assert agent_profiles.reasons(user)["need_rate"] == "set in [agent] or with --set"


def test_every_shipped_value_says_where_it_comes_from():
    for name in agent_profiles.shipped_profiles():
        p = resolve(AgentParams(profile=name))
        for param in agent_profiles.PARAMETERS:
            source = p.sources[param]
            assert source.split(" ")[0] in agent_profiles.SOURCES, (name, param, source)
            if p.values[param] is None:
                assert "off" in source, (name, param)


def test_the_reentrancy_prediction_is_computed_from_the_runs():
    from prunesim.studies.reentrancy import REENTRANCY

    report = REENTRANCY.run([1000, 1001, 1002], agent="swe-agent")
    p = report.prediction()
    assert p["agent_profile"] == "swe-agent" and p["against"] == "naive"
    for label, rows in report.predicted.items():
        assert p["variants"][label]["agent_calls"] == pytest.approx(np.mean([r["agent_calls"] for r in rows]))
    diff = p["differences"]["tombstoned"]["agent_calls"]
    paired = [b["agent_calls"] - a["agent_calls"] for a, b in zip(report.predicted["naive"],
                                                                  report.predicted["tombstoned"], strict=True)]
    assert diff["mean"] == pytest.approx(np.mean(paired)) and diff["ci_low"] <= diff["mean"] <= diff["ci_high"]
    assert "prediction" in json.loads(json.dumps(report.as_dict()))
    assert not math.isnan(p["variants"]["naive"]["task_success"])


def test_a_leaderboard_reports_what_the_policy_did_to_the_agent(tmp_path):
    from prunesim.cli import main

    folder = tmp_path / "t"
    folder.mkdir()
    shutil.copy(FIXTURES / "mini.traj.json", folder)
    assert main(["leaderboard", str(folder), "--policies", "noop,observation-masking", "--out",
                 str(tmp_path / "lb"), "--set", "observation_masking.n=1"]) == 0
    table = (tmp_path / "lb" / "leaderboard.csv").read_text()
    assert ",turns_over_recorded," in table and ",task_success," in table
    assert main(["leaderboard", str(folder), "--policies", "noop,observation-masking", "--out",
                 str(tmp_path / "none"), "--agent", "none"]) == 0
    assert ",task_success," not in (tmp_path / "none" / "leaderboard.csv").read_text()


def test_run_one_takes_a_table_as_it_takes_a_name():
    sc = scenario(20)
    by_name = run_one(sc, "recency", 1, trace="none", agent="openhands").summary
    by_table = run_one(sc, "recency", 1, trace="none", agent=AgentParams(profile="openhands")).summary
    in_scenario = run_one(dataclasses.replace(sc, agent=AgentParams(profile="openhands")), "recency", 1,
                          trace="none").summary
    assert by_name == by_table == in_scenario


def test_the_profiles_table_in_docs_is_the_generated_one(capsys):
    from prunesim.cli import main

    assert main(["agents", "--markdown"]) == 0
    generated = capsys.readouterr().out.strip()
    page = (Path(__file__).resolve().parents[1] / "docs" / "agent.md").read_text(encoding="utf-8")
    assert page.split("<!-- agents:begin -->")[1].split("<!-- agents:end -->")[0].strip() == generated


def test_the_draws_are_splitmix64_as_published():
    """The hash is splitmix64's: its first output from state 0 is the published 0xE220A8397B1DCDAF, and a draw is
    the chain over (seed, purpose, a, b) in that order (a re-implementation checks itself against these)."""
    from prunesim.model import agent_draws

    assert agent_draws._mix(0) == 0xE220A8397B1DCDAF
    x = agent_draws._mix(agent_draws._mix(agent_draws._mix(agent_draws._mix(7) ^ NEED) ^ 10) ^ 3)
    assert draw(7, NEED, 10, 3) == (x >> 11) / 2**53


def test_redone_work_is_an_events_row():
    """A redo is written to events.csv as a refetch is: its key, call and output tokens and the time it took."""
    params = AgentParams(profile="openhands", need_rate=0.3, need_cv=0.0, need_decay=20.0, need_horizon=40, cap=0)
    r = run_one(sf.load("oscillation-40"), "recency", 0, trace="all", agent=params)
    redos = [e for e in r.events if e.event == "redo"]
    assert len(redos) == r.summary["redos"] > 0
    assert set(redos[0].detail) == {"key", "call_tokens", "tokens", "latency_s"}
    assert sum(e.detail["call_tokens"] + e.detail["tokens"] for e in redos) == r.summary["redo_tokens"]


def test_what_the_agent_did_does_not_depend_on_what_the_run_records():
    """The trace mode changes what is kept, never what the agent does (its draws are counter-based)."""
    base = sf.load_replay("transcript", {"budget": 2000, "trigger": 1500, "observation_masking.n": 1,
                                         "agent.need_rate": 0.5, "agent.need_decay": 5.0})  # not the fitted values
    (mini,) = iter_workloads(FIXTURES / "mini.traj.json")
    summaries = [replay(mini, base, "observation-masking", 0, trace=t)[0].summary for t in ("none", "turns", "all")]
    assert summaries[0]["agent_profile"] == "mini-swe-agent" and summaries[0]["refetches"] > 0
    assert summaries[0] == summaries[1] == summaries[2]


def test_a_sweep_over_agent_profiles_keeps_each_profiles_figures(tmp_path):
    """agent.profile is a grid axis; each profile's runs report what it can move, blank where it cannot."""
    from prunesim.cli import main
    from prunesim.io.sweep_files import read_runs

    out = tmp_path / "sweep"
    assert main(["sweep", "oscillation-40", "--grid", "agent.profile=none,claude-code,swe-agent", "--policies",
                 "recency", "--seeds", "0:2", "--out", str(out), "--quiet", "--jobs", "1"]) == 0
    rows = read_runs(out)
    by = {(r["agent.profile"], r["seed"]): r for r in rows}
    assert by[("none", 0)]["agent_calls"] is None and by[("claude-code", 0)]["agent_calls"] == 40
    assert by[("claude-code", 0)]["task_success"] is None and by[("swe-agent", 0)]["stop_reason"] == "done"
    assert main(["aggregate", str(out)]) == 0


def test_a_recording_longer_than_its_profiles_cap_is_not_cut_at_it():
    """A replayed run that went past the profile's cap shows its scaffold let it: its cap is its own length."""
    base = sf.load_replay("transcript")
    (mini,) = iter_workloads(FIXTURES / "mini.traj.json")
    r, _ = replay(mini, sf.load_replay("transcript", {"agent.cap": 3}), "noop", 0, trace="none")
    assert r.summary["turns"] == mini.turns and r.summary["capped"] is False
    assert replay(mini, base, "noop", 0, trace="none")[0].summary["capped"] is False


def test_a_run_under_an_agent_model_is_read_back_as_any_run(tmp_path):
    """summary.json holds words among its metrics (the profile, the stop reason): the readers take them."""
    from prunesim.cli import main

    run = tmp_path / "run"
    assert main(["run", "oscillation-40", "--policy", "naive", "--agent", "swe-agent", "--out", str(run)]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["metrics"]["agent_profile"] == "swe-agent" and summary["metrics"]["stop_reason"] == "done"
    from prunesim.plots.io import read_run

    assert read_run(run).summary["metrics"]["capped"] is False  # as prunesim plot and report read a run folder
