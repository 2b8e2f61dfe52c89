"""prunesim tune: the declared search space, a seeded search judged on held-out units, and its refusals."""

import builtins
import json

import numpy as np
import pytest
from cli_capture import cli
from prunesim.errors import UserError
from prunesim.io.scenario_files import load
from prunesim.studies import tune as tn

pytest.importorskip("optuna", reason="the tune extra (optuna) is not installed")

SYNTHETIC = ["--scenario", "oscillation-40", "--set", "pricing.cache=none"]


def test_the_search_space_is_what_the_tables_declare_around_the_documented_setting():
    scenario = load("transcript", {}, ["llm-summary:claude-code", "clear-tool-uses:anthropic", "recency"])
    summary = {d.key: d for d in tn.search_space("llm-summary:claude-code", scenario, 200_000)}
    assert set(summary) == {"llm_summary.threshold", "llm_summary.keep_turns"}
    threshold = summary["llm_summary.threshold"]
    assert (threshold.low, threshold.high, threshold.documented) == (0.2, 0.95, 0.835)  # 167k of a 200k window
    assert threshold.fixed == {"llm_summary.unit": "window"}  # the threshold is set with its unit
    clearing = {d.key: d for d in tn.search_space("clear-tool-uses:anthropic", scenario, 200_000)}
    assert clearing["clear_tool_uses.trigger"].high == 190_000 and clearing["clear_tool_uses.trigger"].integer
    assert clearing["clear_tool_uses.trigger"].documented == 100_000
    events = {d.key: d for d in tn.search_space("llm-summary:openhands-sdk", scenario, 200_000)}
    assert (events["llm_summary.threshold"].low, events["llm_summary.threshold"].high) == (20, 400)
    assert [d.key for d in tn.search_space("recency", scenario, 200_000)] == ["trigger"]
    assert tn.search_space("noop", scenario, 200_000) == []


def fake(best: float):
    """Bills that fall as the threshold nears ``best``: unit i costs (1 + i) x (1 + (x - best)^2)."""
    def bills(overrides, units):
        x = overrides.get("llm_summary.threshold", 0.775)
        return np.array([(1 + i) * (1 + (x - best) ** 2) for i in units])
    return bills


SPACE = [tn.Dimension("llm_summary.threshold", 0.2, 0.95, False, 0.775, {"llm_summary.unit": "window"})]
NAMES = [f"u{i}" for i in range(12)]


def test_a_better_setting_is_found_on_the_training_half_and_judged_on_the_other():
    result = tn.tune("llm-summary:claude-code", NAMES, fake(0.4), SPACE, trials=30, seed=3)
    assert result.trials[0]["params"] == {"llm_summary.threshold": 0.775}  # trial 0: the documented setting
    assert abs(result.chosen["params"]["llm_summary.threshold"] - 0.4) < 0.1
    assert set(result.train).isdisjoint(result.held_out) and len(result.train) + len(result.held_out) == 12
    assert result.comparison["interval"][1] < 0 and result.verdict.startswith("the chosen setting pays")


def test_when_the_documented_setting_is_best_the_tuner_says_so():
    result = tn.tune("llm-summary:claude-code", NAMES, fake(0.775), SPACE, trials=20, seed=1)
    assert result.chosen["trial"] == 0 and result.verdict.startswith("the documented setting is as good")


def test_a_setting_a_run_refuses_is_a_failed_trial_not_a_crash():
    def bills(overrides, units):
        if overrides.get("llm_summary.threshold", 0.775) > 0.8:
            raise UserError("x", "llm_summary.threshold", "too high")
        return np.ones(len(units))
    result = tn.tune("llm-summary:claude-code", NAMES, bills, SPACE, trials=15, seed=2)
    failed = [t for t in result.trials if t["state"] == "failed"]
    assert failed and all(t["params"]["llm_summary.threshold"] > 0.8 and t["why"] == "too high" for t in failed)
    assert result.to_json()["failed_trials"] == len(failed)


def test_the_same_call_gives_the_same_trials_and_files(tmp_path):
    for name in ("a", "b"):
        code, _, err = cli("tune", *SYNTHETIC, "--seeds", "0:4", "--policy", "recency", "--trials", "6",
                           "--out", tmp_path / name)
        assert code == 0, err
    for name in (tn.JSON_FILE, tn.TRIALS_FILE):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    data = json.loads((tmp_path / "a" / tn.JSON_FILE).read_text())
    assert data["trials"] == 6 and len(data["train_units"]) == 2 and len(data["held_out_units"]) == 2
    assert data["documented"]["params"] == {"trigger": 22000}


@pytest.mark.parametrize("argv, flag", [
    (["--policy", "noop"], "--policy"),
    (["--policy", "recency", "--trials", "0"], "--trials"),
    (["--policy", "recency", "--objective", "dollars-per-solved"], "--objective"),
    (["--policy", "recency,naive"], "--policy"),
])
def test_bad_flags_are_one_line_and_exit_2(argv, flag):
    code, out, err = cli("tune", *SYNTHETIC, "--seeds", "0:4", *argv)
    assert code == 2 and out == "" and flag in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_one_unit_is_refused_in_one_line():
    code, _, err = cli("tune", *SYNTHETIC, "--seeds", "3", "--policy", "recency", "--trials", "2")
    assert code == 2 and "at least 2 units" in err


def test_without_optuna_the_command_says_how_to_get_it(monkeypatch):
    real = builtins.__import__

    def no_optuna(name, *args, **kwargs):
        if name == "optuna" or name.startswith("optuna."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_optuna)
    code, _, err = cli("tune", *SYNTHETIC, "--seeds", "0:4", "--policy", "recency")
    assert code == 2 and "prunesim[tune]" in err and len(err.strip().splitlines()) == 1


def per_solved(units_cost: float = 1.0):
    """Dollars that rise with the threshold x, a solved share that rises faster: (1 + i)(1 + x) dollars, x solved.
    The cheapest setting is the lowest x; the cheapest per solved task, (1 + x) / x, the highest."""
    def bills(overrides, units):
        x = overrides.get("llm_summary.threshold", 0.775)
        return np.array([(1 + i) * (1 + x) for i in units]), np.array([x for _ in units])
    return bills


def test_dollars_per_solved_chooses_the_setting_that_is_cheapest_per_solved_task():
    result = tn.tune("llm-summary:claude-code", NAMES, per_solved(), SPACE, trials=30, seed=3,
                     objective="dollars-per-solved")
    assert result.chosen["params"]["llm_summary.threshold"] > 0.9  # the cheapest per solved task, not in dollars
    c = result.comparison
    assert c["chosen_usd"] > c["documented_usd"]  # it costs more dollars on the held-out half ...
    assert c["interval_per_solved"][1] < 0 < c["interval"][0]  # ... and less per solved task, both intervals say
    assert result.verdict.startswith("the chosen setting pays") and "dollars per solved task" in result.verdict
    dollars = tn.tune("llm-summary:claude-code", NAMES, lambda o, u: per_solved()(o, u)[0], SPACE, trials=30,
                      seed=3)
    assert dollars.chosen["params"]["llm_summary.threshold"] < 0.3


def test_dollars_per_solved_end_to_end_under_a_profile_with_a_success_model():
    code, out, err = cli("tune", *SYNTHETIC, "--seeds", "0:4", "--policy", "recency", "--trials", "3",
                         "--agent", "swe-agent", "--objective", "dollars-per-solved", "--json")
    assert code == 0, err
    data = json.loads(out)
    held = data["held_out"]
    assert data["objective"] == "dollars-per-solved" and 0 < held["documented_solved"] <= held["units"]
    assert held["documented_per_solved"] == pytest.approx(held["documented_usd"] / held["documented_solved"],
                                                          rel=1e-6)


def test_dollars_per_solved_is_refused_naming_the_profile_without_a_success_model():
    from pathlib import Path

    codex = Path(__file__).parent / "fixtures" / "codex"
    code, out, err = cli("tune", codex, "--policy", "llm-summary:codex", "--trials", "2", "--objective",
                         "dollars-per-solved")
    assert code == 2 and out == "" and "Traceback" not in err
    assert "the agent profile codex has no success model" in err.strip().splitlines()[-1]
