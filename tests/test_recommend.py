"""prunesim recommend: paired statistics checked against a null, the ranking's draws, and the command itself."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from cli_capture import cli
from prunesim.io.prices import pricing
from prunesim.studies import aggregate, reprice
from prunesim.studies import recommend as rc
from prunesim.studies.assumptions import CENTRE, REACTION, SUMMARY, Billing
from prunesim.studies.recommend_units import Measured, UnitRuns, level_pairs, level_runs
from prunesim.studies.reprice import Stream

FIXTURES = Path(__file__).parent / "fixtures"
# A dollar a million prompt tokens, no cache: a one-call stream of N prompt tokens bills N millionths of a dollar.
FLAT = dataclasses.replace(pricing("claude-opus-4-5"), cache="none", input=1.0)


def unit(name: str, costs: dict, acted: dict | None = None, turns: int = 10) -> UnitRuns:
    """A unit whose policies' runs bill ``costs`` (dollars) at the values of every assumption."""
    runs = {}
    for policy, usd in costs.items():
        stream = Stream(*(np.array([x], dtype=np.int64) for x in (round(usd * 1e6), 0, 0, 0)))
        m = Measured(stream, (acted or {}).get(policy, policy != "noop"), 0, 0, turns, None)
        runs[policy] = {pair: m for pair in level_pairs(set())}
    return UnitRuns(name, Billing(FLAT.model, True, FLAT), runs)


def with_optimum(u: UnitRuns, usd: float) -> UnitRuns:
    """``u`` with a clairvoyant optimum billing ``usd``."""
    stream = Stream(*(np.array([x], dtype=np.int64) for x in (round(usd * 1e6), 0, 0, 0)))
    return dataclasses.replace(u, clairvoyant=Measured(stream, True, 0, 0, 10, None), predicted=usd)


def test_the_oracle_gap_is_drawn_with_the_units_and_its_interval_holds_it():
    rng = np.random.default_rng(3)
    units = []
    for i, b in enumerate(rng.lognormal(0, 0.5, 14)):
        share = rng.uniform(0.1, 0.9)  # how much of the optimum's saving "varied" captures on this unit
        units.append(with_optimum(unit(f"u{i}", {"noop": b, "half": 0.75 * b, "optimal": 0.5 * b,
                                                 "varied": b - share * 0.5 * b}), 0.5 * b))
    rec = rc.recommend(units, ["noop", "half", "optimal", "varied"], [], draws=400)
    by = {p["policy"]: p for p in rec.policies}
    # the same share on every unit: every resample gives it, whatever the units drawn
    # (to a millionth: the streams bill whole micro-dollars)
    assert by["half"]["oracle_gap_interval"] == pytest.approx([0.5, 0.5], abs=2e-6)
    assert by["optimal"]["oracle_gap_interval"] == pytest.approx([1.0, 1.0], abs=2e-6)
    assert by["noop"]["oracle_gap_interval"] == [0.0, 0.0]
    low, high = by["varied"]["oracle_gap_interval"]
    assert 0.1 < low < by["varied"]["oracle_gap"] < high < 0.9


def test_the_oracle_gap_interval_follows_a_drawn_reuse():
    """An implicit cache's reuse drawn over its range moves the optimum's bill as it moves the policies'."""
    from prunesim.studies.assumptions import assumptions

    gemini = pricing("gemini-3-pro-preview")
    units = []
    for i in range(12):
        runs = {}
        for name, prompt in (("noop", 100_000 + 5_000 * i), ("p", 80_000 + 4_000 * i)):
            stream = Stream(*(np.array(x, dtype=np.int64) for x in ([prompt, prompt], [0, prompt], [prompt, prompt],
                                                                      [200, 200])))
            runs[name] = {pair: Measured(stream, name != "noop", 0, 0, 10, None) for pair in level_pairs(set())}
        best = Stream(*(np.array(x, dtype=np.int64) for x in ([50_000, 50_000], [0, 50_000], [50_000, 50_000],
                                                              [200, 200])))
        units.append(UnitRuns(f"u{i}", Billing(gemini.model, True, gemini), runs,
                              Measured(best, True, 0, 0, 10, None), None))
    listed = assumptions(None, [u.billing for u in units], set(), False, False)
    d = rc.Draws(units, listed, 200, 0)
    drawn = d.optimum_costs(units, np.arange(200))
    for i, u in enumerate(units):
        assert np.array_equal(drawn[:, i], reprice.dollars(u.clairvoyant.stream, gemini, d.reuse[gemini.model],
                                                           np.ones(200, dtype=bool)))
    assert drawn[:, 0].std() > 0  # the reuse drawn moves the optimum's bill
    rec = rc.recommend(units, ["noop", "p"], listed, draws=200)
    p = next(r for r in rec.policies if r["policy"] == "p")
    assert p["oracle_gap_interval"][0] <= p["oracle_gap"] <= p["oracle_gap_interval"][1]


def null_dataset(rng, n: int) -> list[UnitRuns]:
    """Two exchangeable policies (the same cost distribution on each unit), both cheaper than noop."""
    base = rng.lognormal(0.0, 0.8, n)
    return [unit(f"u{i}", {"noop": 1.3 * b, "a": b * (1 + 0.05 * rng.standard_normal()),
                           "b": b * (1 + 0.05 * rng.standard_normal())}) for i, b in enumerate(base)]


def test_two_copies_of_one_policy_tie_exactly():
    units = [unit(f"u{i}", {"noop": 2.0 + i, "a": 1.0 + i, "copy": 1.0 + i}) for i in range(12)]
    rec = rc.recommend(units, ["noop", "a", "copy"], [], draws=300)
    assert rec.recommendation == rc.NO_CLEAR_WINNER and rec.tied == ["a", "copy"]
    by = {p["policy"]: p for p in rec.policies}
    assert by["a"]["p_best"] == by["copy"]["p_best"] == 0.5
    pair = next(p for p in rec.pairs if {p["policy"], p["against"]} == {"a", "copy"})
    assert pair["interval"] == [0.0, 0.0] and pair["diff_usd"] == 0.0


def test_under_a_null_the_paired_interval_covers_zero_and_a_policy_is_named_as_often_as_the_rule_says():
    """Exchangeable policies over many datasets: the 95% interval of their difference covers 0 in about 95% of
    them, and p_best, which under the null spreads evenly over [0, 1], reaches the naming threshold for one of the
    two in about 2 x (1 - CLEAR) of them: a named policy is not a 5% test (docs/recommend.md)."""
    rng = np.random.default_rng(11)
    datasets, covered, named, chances = 120, 0, 0, []
    for _ in range(datasets):
        rec = rc.recommend(null_dataset(rng, 16), ["noop", "a", "b"], [], draws=200, seed=int(rng.integers(1 << 30)))
        pair = next(p for p in rec.pairs if (p["policy"], p["against"]) == ("a", "b"))
        covered += pair["interval"][0] <= 0 <= pair["interval"][1]
        named += rec.winner is not None
        chances.append(next(p["p_best"] for p in rec.policies if p["policy"] == "a"))
    expected = 2 * (1 - rc.CLEAR)
    spread = 3 * (expected * (1 - expected) / datasets) ** 0.5
    assert covered / datasets >= 0.9
    assert abs(named / datasets - expected) <= spread
    assert abs(float(np.mean(chances)) - 0.5) <= 3 * (1 / 12 / datasets) ** 0.5


def test_a_clear_difference_is_named_and_its_interval_excludes_zero():
    rng = np.random.default_rng(5)
    units = [unit(f"u{i}", {"noop": b, "better": 0.8 * b}) for i, b in enumerate(rng.lognormal(0, 0.5, 15))]
    rec = rc.recommend(units, ["noop", "better"], [], draws=300)
    better = next(p for p in rec.policies if p["policy"] == "better")
    assert rec.winner == "better" and better["p_best"] == 1.0
    assert better["diff_vs_noop"]["interval"][1] < 0 and better["wins"] == 15 and better["losses"] == 0


def test_wins_losses_and_ties_count_only_the_units_where_the_policy_acted():
    units = [unit("won", {"noop": 1.0, "p": 0.5}), unit("lost", {"noop": 1.0, "p": 1.5}),
             unit("tied", {"noop": 1.0, "p": 1.0005}), unit("idle", {"noop": 1.0, "p": 1.0}, {"p": False})]
    p = next(r for r in rc.recommend(units, ["noop", "p"], [], draws=50).policies if r["policy"] == "p")
    assert (p["wins"], p["losses"], p["ties"], p["acted_share"]) == (1, 1, 1, 0.75)


def test_a_policy_that_never_acted_has_no_wins_losses_or_break_even_and_says_why():
    units = [unit(f"u{i}", {"noop": 1.0 + i, "idle": 1.0 + i}, {"idle": False}) for i in range(3)]
    idle = next(r for r in rc.recommend(units, ["noop", "idle"], [], draws=50).policies if r["policy"] == "idle")
    assert "wins" not in idle and "break_even" not in idle
    assert idle["unobservable"]["wins"] == "the policy acted on no unit"
    assert idle["unobservable"]["oracle_gap"].startswith("the clairvoyant optimum plans from a transcript")


def test_break_even_is_the_shortest_length_from_which_the_sum_stays_below_zero():
    diff = np.array([0.8, 0.2, -0.1, -0.4, -0.2])  # the longer the session, the more it saves
    turns = np.array([10, 20, 30, 40, 50])
    acted = np.ones(5, dtype=bool)
    assert rc.break_even(diff, turns, acted) == {"turns": 20, "units": 4, "diff_usd": -0.5}
    assert rc.break_even(np.ones(5), turns, acted) is None  # it never pays
    assert rc.break_even(diff - 1.0, turns, acted)["turns"] == 10  # it pays at every length


def test_the_paired_interval_resamples_units_whole():
    diffs = np.array([1.0, -1.0, 2.0, 0.5])
    low, high = aggregate.paired_total_interval(diffs, ("x",))
    assert low <= diffs.sum() <= high
    assert aggregate.paired_total_interval(diffs, ("x",)) == (low, high)  # seeded by the key
    assert aggregate.paired_total_interval(np.zeros(5), ("y",)) == (0.0, 0.0)


def test_one_replay_serves_every_level_pair_it_cannot_change():
    values = {SUMMARY: {CENTRE: 2800, "q1": 2500, "q2": 2800, "q3": 3100, "lo": 1500, "hi": 4000},
              REACTION: {CENTRE: 0.9, "q1": 0.8, "q2": 0.9, "q3": 0.95, "lo": 0.7, "hi": 0.98}}
    pairs = level_pairs({SUMMARY, REACTION})

    def runs_of(compacts_above: float, refetches: bool):
        calls = []

        def run(size, prob):
            calls.append((size, prob))
            return Measured(None, True, int(refetches), int(size > compacts_above), 10, None)

        runs = level_runs(run, values, pairs)
        assert set(runs) == set(pairs) and len(set(calls)) == len(calls)  # no replay twice
        return runs, calls

    # Every run compacts and re-fetches: each size at the highest probability, then at each one its pairs ask for
    # (the value's and q2's are one): 2,800 five, 2,500 and 3,100 four each, 1,500 and 4,000 two each.
    _, calls = runs_of(0, True)
    assert len(calls) == 17
    # No run compacts: one size serves all (the value's), at each probability.
    runs, calls = runs_of(1e9, True)
    assert {size for size, _ in calls} == {2800} and runs[("hi", CENTRE)] is runs[(CENTRE, CENTRE)]
    # Nothing is re-fetched at the highest probability: nothing is at a lower one either.
    runs, calls = runs_of(1e9, False)
    assert calls == [(2800, 0.98)] and len({id(m) for m in runs.values()}) == 1
    # A policy that reads neither: one replay at the scenario's own values.
    calls = []
    level_runs(lambda s, p: calls.append((s, p)) or Measured(None, False, 0, 0, 1, None), {}, pairs)
    assert calls == [(None, None)]


def test_dollars_per_solved_divides_by_the_runs_solved_share():
    u = unit("u", {"noop": 2.0, "p": 1.0})
    solved = {"noop": 0.5, "p": 0.25}
    u.runs = {k: {pair: dataclasses.replace(m, solved=solved[k]) for pair, m in v.items()} for k, v in u.runs.items()}
    rec = rc.recommend([u], ["noop", "p"], [], objective="dollars-per-solved", draws=20)
    assert {p["policy"]: p["objective_value"] for p in rec.policies} == {"noop": 4.0, "p": 4.0}
    with pytest.raises(Exception, match="task_success"):
        rc.recommend([unit("u", {"noop": 1.0, "p": 1.0})], ["noop", "p"], [], objective="dollars-per-solved")


def test_a_model_the_transcripts_record_but_a_set_key_overrode_is_not_called_recorded():
    from prunesim.studies.assumptions import assumptions

    billed = Billing("claude-opus-4-5", False, pricing("claude-opus-4-5"), named="gemini-3-pro-preview")
    model = next(a for a in assumptions(None, [billed], {"pricing.reuse"}, False, False) if a.name.startswith(
        "pricing.model"))
    assert model.source == "user" and "gemini-3-pro-preview" in model.basis
    unnamed = Billing("gpt-5-codex", False, pricing("gpt-5-codex"))
    listed = {a.name: a for a in assumptions(None, [unnamed], set(), False, False)}
    assert listed["pricing.model (gpt-5-codex)"].source == "default"
    assert listed["pricing.cache (gpt-5-codex)"].range == ("implicit", "none")  # drawn: the provider is unrecorded
    assert listed["pricing.reuse (gpt-5-codex)"].how == "re-priced"
    explicit = {a.name: a for a in assumptions(None, [unit("u", {"noop": 1.0}).billing], set(), False, False)}
    assert all(a.how == "fixed" for a in explicit.values())  # no cache here: nothing re-priced


# -- the command ----------------------------------------------------------------------------------------------
COPY = """from prunesim.policies.recency import RecencyPolicy


class Copy(RecencyPolicy):
    name = "recency-copy"
"""
CHEAP = ["--scenario", "oscillation-40", "--set", "pricing.cache=none"]  # recency pays when nothing is cached


def test_two_copies_of_a_policy_come_out_no_clear_winner_end_to_end(tmp_path):
    (tmp_path / "copy.py").write_text(COPY)
    code, out, err = cli("recommend", *CHEAP, "--seeds", "0:8", "--policies", f"recency,{tmp_path}/copy.py:Copy",
                         "--draws", "300", "--json")
    assert code == 0, err
    data = json.loads(out)
    by = {p["policy"]: p for p in data["policies"]}
    assert data["recommendation"] == rc.NO_CLEAR_WINNER and len(data["tied"]) == 2
    assert by["recency"]["p_best"] == by[f"{tmp_path}/copy.py:Copy"]["p_best"] == 0.5
    assert by["recency"]["diff_vs_noop"]["interval"][1] < 0


def test_the_same_call_writes_the_same_bytes(tmp_path):
    for name in ("a", "b"):
        code, _, err = cli("recommend", *CHEAP, "--seeds", "0:4", "--policies", "recency,llm-summary:codex",
                           "--draws", "200", "--out", tmp_path / name)
        assert code == 0, err
    for name in (rc.JSON_FILE, rc.CSV_FILE):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.parametrize("agent", [(), ("--agent", "none"), ("--agent", "openhands")])
def test_the_json_holds_what_the_issue_asks_for(tmp_path, agent):
    # The default is mini-swe-agent's profile, with its lookback needs: the optimum plans against them too, and its
    # planner's prediction is the engine's bill whatever the profile on this run
    code, out, err = cli("recommend", FIXTURES / "mini.traj.json", "--policies", "observation-masking:swe-agent",
                         "--draws", "100", "--json", *agent)
    assert code == 0, err
    data = json.loads(out)
    for key in ("recommendation", "assumptions", "draws", "policies", "sensitivity", "clairvoyant"):
        assert key in data
    assert data["draws"] == 100 and data["experimental"] is True
    assert data["clairvoyant"]["predicted_usd"] == pytest.approx(data["clairvoyant"]["total_usd"], rel=1e-9)
    assert data["clairvoyant"]["saving_usd"] > 0
    masking = next(p for p in data["policies"] if p["policy"] == "observation-masking:swe-agent")
    for key in ("total_usd", "diff_vs_noop", "acted_share", "p_best", "rank_interval", "oracle_gap",
                "oracle_gap_interval"):
        assert key in masking
    low, high = masking["oracle_gap_interval"]
    assert low <= masking["oracle_gap"] <= high
    assert {a["name"].split(" ")[0] for a in data["assumptions"]} >= {"pricing.model", "pricing.reuse"}
    assert all({"name", "value", "source", "range"} <= set(a) for a in data["assumptions"])


@pytest.mark.parametrize("argv, flag", [
    (["--objective", "dollars-per-solved"], "--objective"),
    (["--draws", "0"], "--draws"),
    (["--draws", "1000001"], "--draws"),
    (["--policies", "nosuch"], "--policies"),
])
def test_bad_flags_are_one_line_and_exit_2(argv, flag):
    code, out, err = cli("recommend", *CHEAP, "--seeds", "0:2", *argv)
    assert code == 2 and out == ""
    assert flag in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_out_that_is_a_file_is_refused_before_any_run_and_left_as_it_was(tmp_path):
    target = tmp_path / "taken"
    target.write_text("mine")
    code, _, err = cli("recommend", *CHEAP, "--seeds", "0:2", "--out", target)
    assert code == 2 and "--out" in err and target.read_text() == "mine"


def test_a_missing_folder_is_one_line():
    code, _, err = cli("recommend", "no/such/folder")
    assert code == 2 and "does not exist" in err and len(err.strip().splitlines()) == 1


# -- the agent model: dollars per solved task, the profile among the assumptions ------------------------------
def test_dollars_per_solved_ranks_by_the_predicted_solved_share_end_to_end():
    code, out, err = cli("recommend", FIXTURES / "mini.traj.json", "--policies", "observation-masking:swe-agent",
                         "--draws", "100", "--json", "--objective", "dollars-per-solved")
    assert code == 0, err
    data = json.loads(out)
    for p in data["policies"]:
        assert 0 < p["solved_share"] <= 1  # mini-swe-agent's profile borrows swe-agent's success model
        assert p["objective_value"] == pytest.approx(p["total_usd"] / p["solved_share"], abs=1e-6)  # one unit
    code, out, err = cli("recommend", FIXTURES / "mini.traj.json", "--policies", "observation-masking:swe-agent",
                         "--draws", "100", "--objective", "dollars-per-solved")
    assert code == 0, err
    head = next(line for line in out.splitlines() if line.startswith("policy "))
    assert "$/solved" in head and "objective dollars-per-solved" in out


@pytest.mark.parametrize("path, profile", [(FIXTURES / "claude-code" / "session.jsonl", "claude-code"),
                                           (FIXTURES / "codex" / "rollout-later.jsonl", "codex")])
def test_dollars_per_solved_is_refused_naming_a_profile_without_a_success_model(path, profile):
    code, out, err = cli("recommend", path, "--policies", "recency", "--draws", "20", "--objective",
                         "dollars-per-solved")
    assert code == 2 and out == "" and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert f"the agent profile {profile} has no success model" in line and "--agent swe-agent" in line


@pytest.mark.parametrize("argv, says", [
    (["--scenario", "oscillation-40", "--seeds", "0:2", "--agent", "claude-code"], "the agent profile claude-code"),
    (["--scenario", "oscillation-40", "--seeds", "0:2"], "no agent model"),
    ([str(FIXTURES / "mini.traj.json"), "--agent", "none"], "no agent model"),
])
def test_a_known_profile_without_success_is_refused_before_any_run(argv, says):
    code, out, err = cli("recommend", *argv, "--objective", "dollars-per-solved")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err


def by_name(data):
    return {a["name"]: a for a in data["assumptions"]}


def test_the_agent_profile_and_its_parameters_are_assumptions_with_their_source():
    code, out, err = cli("recommend", FIXTURES / "mini.traj.json", "--policies", "recency", "--draws", "20",
                         "--json")
    assert code == 0, err
    listed = by_name(json.loads(out))
    assert listed["agent.profile"]["value"] == "mini-swe-agent" and listed["agent.profile"]["source"] == "recorded"
    assert listed["agent.need_rate (mini-swe-agent)"]["source"] == "fitted"
    assert listed["agent.need_horizon (mini-swe-agent)"]["source"] == "default"  # provisional, set by hand
    assert listed["agent.cap (mini-swe-agent)"]["source"] == "documented"
    assert "reaction.probability" not in listed  # mini-swe-agent's profile runs no resource re-fetch to draw
    code, out, err = cli("recommend", FIXTURES / "mini.traj.json", "--policies", "recency", "--draws", "20",
                         "--json", "--agent", "openhands", "--set", "agent.need_decay=5")
    assert code == 0, err
    listed = by_name(json.loads(out))
    assert listed["agent.profile"]["value"] == "openhands" and listed["agent.profile"]["source"] == "user"
    assert listed["agent.need_decay (openhands)"] == {**listed["agent.need_decay (openhands)"], "value": 5.0,
                                                      "source": "user"}


def test_a_synthetic_run_lists_its_profile_too():
    code, out, err = cli("recommend", *CHEAP, "--seeds", "0:2", "--policies", "recency", "--draws", "20", "--json",
                         "--agent", "swe-agent")
    assert code == 0, err
    listed = by_name(json.loads(out))
    assert listed["agent.profile"]["value"] == "swe-agent" and listed["agent.base_rate (swe-agent)"]["value"] == 0.5
