"""prunesim.io.settings: a run's values resolved once, each with its source; no override changes more than it
names."""

from __future__ import annotations

import csv
import json

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.io import prices, settings
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts.workload import WorkloadData
from prunesim.studies.leaderboard import recorded_bill, uncached_bill
from prunesim.studies.transcript_replay import replay, replay_scenario
from shared_traces import TRACES, needs


def workload(model: str = "", fmt: str = "mini-swe-agent", window: int | None = None, turns: int = 4,
             cost: float | None = None) -> WorkloadData:
    """A small replayable workload whose header records what a transcript would (its usage: for a bill)."""
    parts = [{"type": "part", "turn": 0, "kind": "system", "tokens": 3000}]
    for t in range(1, turns + 1):
        parts += [{"type": "part", "turn": t, "kind": "tool_call", "tokens": 20, "key": f"c{t}", "tool": "bash",
                   "call": t},
                  {"type": "part", "turn": t, "kind": "tool_output", "tokens": 2000, "key": f"c{t}", "call": t}]
    usage = [{"prompt_tokens": 3000 + 2020 * (k - 1), "cache_read_tokens": 2048 * (k > 1), "output_tokens": 20,
              **({"cost_usd": cost} if cost is not None else {})} for k in range(1, turns + 1)]
    header = {"type": "header", "name": "w", "source": "w.json", "format": fmt, "model": model, "turns": turns,
              "usage": usage, "outputs": [20] * turns, **({"context_window": window} if window else {})}
    data = WorkloadData(header, parts)
    data.path = "w.json"
    return data


# -- the class of issue 40: an override changes what it names and nothing else ---------------------------
# One value per key of the runtime a replay resolves, each different from what the recording or a default gives.
SINGLE = {
    "pricing.input": 3.0, "pricing.output": 10.0, "pricing.cache_read": 0.05, "pricing.cache_write_5m": 2.5,
    "pricing.cache_write_1h": 2.5, "pricing.reuse": 1.0, "pricing.ttl": "1h", "pricing.min_tokens": 512,
    "pricing.granularity": 64, "pricing.lookback": 5, "pricing.breakpoints": 2, "pricing.provider": "elsewhere",
    "pricing.cache": "none", "reaction.probability": 0.25, "replay.trigger_of_budget": 0.5,
    "summary.mean_tokens": 900.0, "latency.model_base_s": 1.0, "gate.lead": 100, "window": 500000,
}
MODELS = [("google/gemini-3-pro-preview", "mini-swe-agent", None), ("", "codex", 272000),
          ("claude-opus-4-5-20251101", "claude-code", None)]
# What a key legitimately moves besides itself: a replay's budget follows its window, and its trigger the budget.
FOLLOWS = {"window": {"budget", "trigger", "replay.pinned"}, "replay.trigger_of_budget": {"trigger"}}


def resolved(overrides: dict, data: WorkloadData) -> dict:
    return settings.flatten(replay_scenario(sc.load_replay("transcript", overrides), data).to_dict())


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(sorted(SINGLE)), recorded=st.sampled_from(MODELS))
def test_a_single_key_override_changes_that_value_and_nothing_else(key, recorded):
    data = workload(*recorded)
    before, after = resolved({}, data), resolved({key: SINGLE[key]}, data)
    moved = {k for k in before if before[k] != after[k]} - {key, "replay.pinned"} - FOLLOWS.get(key, set())
    assert not moved, f"--set {key} also changed {sorted(moved)}"
    assert after[key] == SINGLE[key]
    assert settings.of(replay_scenario(sc.load_replay("transcript", {key: SINGLE[key]}), data))[key].source == "user"


def test_a_price_key_on_a_codex_rollout_keeps_its_model_and_bill():
    """Issue 40's example: --set pricing.output=10.0 (its own price) once billed the run as claude-opus-4-5."""
    data = workload("", "codex", 272000)
    plain = replay(data, sc.load_replay("transcript"), "noop")[0]
    same = replay(data, sc.load_replay("transcript", {"pricing.output": 10.0}), "noop")[0]
    assert same.scenario.pricing.model == plain.scenario.pricing.model == "gpt-5-codex"
    assert same.summary["cost_usd"] == plain.summary["cost_usd"]
    assert same.summary["cache_read_tokens"] == plain.summary["cache_read_tokens"] > 0


def test_a_scenario_setting_only_reuse_keeps_the_recorded_model_and_never_reprices_the_recorded_bill(tmp_path):
    path = tmp_path / "what-if.toml"
    path.write_text('extends = "transcript"\n[pricing]\nreuse = 1.0\n')
    data = workload("google/gemini-3-pro-preview")  # records tokens, not dollars: the bill is at list prices
    base = replay_scenario(sc.load_replay("transcript"), data)
    what_if = replay_scenario(sc.load_replay(str(path)), data)
    assert what_if.pricing.model == "gemini-3-pro-preview" and what_if.pricing.reuse == 1.0
    assert recorded_bill(data, what_if) == recorded_bill(data, base)
    priced = replay_scenario(sc.load_replay("transcript", {"pricing.input": 9.0}), data)
    assert recorded_bill(data, priced) == recorded_bill(data, base)  # a bill at the user's price is not recorded


def test_each_value_names_its_source_and_where():
    data = workload("google/gemini-3-pro-preview", window=None)
    s = settings.of(replay_scenario(sc.load_replay("transcript", {"pricing.reuse": 0.5}), data))
    assert s["pricing.model"] == settings.Setting("gemini-3-pro-preview", "recorded",
                                                  "the transcript: model 'google/gemini-3-pro-preview'")
    assert s["pricing.reuse"] == settings.Setting(0.5, "user", "--set pricing.reuse")
    assert s["pricing.reuse"] is s.chain("pricing.reuse")[0] and s.chain("pricing.reuse")[1].source == "fitted"
    assert s["window"].source == "default" and "records none" in s["window"].where  # documented, not recorded
    assert s["reaction.probability"].source == "fitted" and "sha256" in s["reaction.probability"].where
    assert "window" in s.not_recorded() and "pricing.model" not in s.not_recorded()
    codex = settings.of(replay_scenario(sc.load_replay("transcript"), workload("", "codex", 272000)))
    assert codex["window"].source == "recorded" and codex["pricing.model"].source == "default"


def test_a_recorded_value_equal_to_the_default_is_still_recorded():
    """A Claude Code session of the default model on the default window: the recording is the source, and a user's
    value still wins over it."""
    data = workload("claude-opus-4-5-20251101", "claude-code", 200000)
    base = sc.load_replay("transcript")
    assert (base.pricing.model, base.window) == ("claude-opus-4-5", 200000)
    s = settings.of(replay_scenario(base, data))
    assert [c.source for c in s.chain("pricing.model")][:2] == ["recorded", "default"]
    assert s["window"] == settings.Setting(200000, "recorded", "the transcript: context_window")
    assert "pricing.model" not in s.not_recorded() and "window" not in s.not_recorded()
    user = settings.of(replay_scenario(sc.load_replay("transcript", {"window": 200000}), data))
    assert user["window"].source == "user"


def test_a_model_only_genai_prices_knows_is_billed_from_it_with_its_providers_cache():
    pytest.importorskip("genai_prices")
    s = settings.load("oscillation-40", {"pricing.model": "claude-sonnet-4-5"})
    p = s.scenario.pricing
    assert (p.input, p.output, p.cache_read, p.cache_write_5m, p.cache_write_1h) == (3.0, 15.0, 0.3, 3.75, 6.0)
    assert s["pricing.input"].where.startswith("genai-prices") and p.cache == "explicit"
    assert s["pricing.cache"].where == "prices.toml: providers.anthropic.cache"
    assert "tiers" in prices.library_entry("claude-sonnet-4-5")  # its long-context tier is known


def test_the_library_and_the_shipped_table_agree_on_every_shipped_model():
    """The shipped prices stay the fallback; where genai-prices knows the model they must not differ."""
    pytest.importorskip("genai_prices")
    for model, entry in prices.load().items():
        for key, value in prices.library_entry(model).items():
            if key in prices.PRICE_KEYS:
                assert value.value == entry[key], (model, key)


def test_an_unknown_model_is_refused_once_with_every_key_it_needs_and_a_price_file_supplies_them(tmp_path):
    with pytest.raises(UserError) as err:
        settings.load("oscillation-40", {"pricing.model": "acme-9"})
    named = str(err.value).split("gives: ", 1)[1].split(";", 1)[0].split(", ")
    assert named == list(prices.PRICED_KEYS) and "--prices FILE" in str(err.value)
    path = tmp_path / "p.toml"
    path.write_text("[models.acme-9]\n" + "\n".join(
        f"{k} = {json.dumps(v)}" for k, v in prices.entry_values(prices.load()["gpt-5"]).items()) + "\n")
    s = settings.load("oscillation-40", {"pricing.model": "acme-9"}, price_path=path)
    assert s.scenario.pricing.input == 1.25 and s["pricing.input"].source == "user"
    assert str(path) in s["pricing.input"].where and "sha256" in s["pricing.input"].where


def test_run_ids_hash_values_not_sources():
    from prunesim.studies.sweep import run_id

    by_file = sc.load("oscillation-40").to_dict()
    by_flag = sc.load("oscillation-40", {"window": 32000}).to_dict()  # the same value, now the user's
    assert run_id(by_file, "naive", 0) == run_id(by_flag, "naive", 0)


def test_a_run_folder_holds_its_settings(tmp_path):
    out = tmp_path / "r"
    assert main(["run", "oscillation-40", "--policy", "naive", "--set", "pricing.reuse=0.9", "--out", str(out)]) == 0
    data = json.loads((out / settings.SETTINGS_FILE).read_text())
    assert data["values"]["pricing.reuse"] == {"value": 0.9, "source": "user", "where": "--set pricing.reuse"}
    assert data["runtime"]["model"] == "claude-opus-4-5" and "pricing.model" in data["runtime"]["not_recorded"]


def test_defaults_explain_prints_the_chain_and_refuses_an_unknown_key(capsys):
    assert main(["defaults", "--explain", "pricing.reuse", "--set", "pricing.reuse=0.7"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "pricing.reuse" and out[2].split()[:4] == ["used", "0.7", "user", "--set"]
    assert main(["defaults", "--explain", "no.such.key"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no.such.key" in err


@pytest.mark.parametrize(("asked", "meant"), [("AGENT.CAP", "agent.cap"), ("agent.", "agent.profile"),
                                              ("agent.profile.x", "agent.profile"), ("cap", "agent.cap"),
                                              ("", "an empty key")])
def test_defaults_explain_of_a_near_miss_names_the_key_meant(capsys, asked, meant):
    assert main(["defaults", "--explain", asked]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and meant in err, err


def test_defaults_explain_names_the_agent_models_values_and_their_sources(capsys):
    from prunesim.model.agent_profiles import PARAMETERS, resolve
    from prunesim.model.scenario import AgentParams

    def explained(*args):
        assert main(["defaults", "--explain", *args]) == 0
        return capsys.readouterr().out.splitlines()[2].split(None, 3)

    assert explained("agent.profile")[:3] == ["used", "'none'", "default"]  # a synthetic run has none
    assert explained("agent.cap")[1:3] == ["None", "default"] and "off" in explained("agent.cap")[3]
    profile = resolve(AgentParams(profile="openhands"))
    for param in PARAMETERS:  # every parameter of the profile, with the profile's value and source
        used = explained(f"agent.{param}", "--set", "agent.profile=openhands")
        value = profile.values[param]
        assert used[1] == repr(value if value is None or isinstance(value, (bool, str)) else value)
        kind = "fitted" if "fitted" in profile.sources[param] else "default"
        assert used[2] == kind and used[3].startswith(f"profile openhands: {profile.sources[param]}")
    assert explained("agent.cap", "--set", "agent.profile=openhands", "--set", "agent.cap=100")[1:3] == ["100", "user"]


def test_the_uncached_bill_is_the_bill_of_a_provider_that_caches_nothing():
    data = workload("google/gemini-3-pro-preview")
    cached, _ = replay(data, sc.load_replay("transcript"), "noop")
    none, _ = replay(data, sc.load_replay("transcript", {"pricing.cache": "none"}), "noop")
    p = cached.scenario.pricing
    assert uncached_bill(cached.summary, (p.input, p.output)) == pytest.approx(none.summary["cost_usd"], abs=1e-9)
    assert none.summary["cost_usd"] > cached.summary["cost_usd"]


@needs("mini-swe-agent")
def test_the_mini_swe_agent_leaderboard_names_gemini_and_leaves_lost_constraints_out(tmp_path, capsys):
    out = tmp_path / "lb"
    assert main(["leaderboard", str(TRACES / "mini-swe-agent"), "--policies", "noop,observation-masking",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    meta = json.loads((out / "leaderboard.json").read_text())
    assert list(meta["runtime"]) == ["gemini-3-pro-preview"]
    assert meta["runtime"]["gemini-3-pro-preview"]["windows"] == [1048576]
    assert meta["runtime"]["gemini-3-pro-preview"]["triggers"] == [786432]
    assert "lost_constraints" in meta["unobservable"]
    rows = list(csv.DictReader((out / "runs.csv").open()))
    assert {r["model"] for r in rows} == {"gemini-3-pro-preview"}
    assert all(r["lost_constraints"] == "" for r in rows)  # not a 0
    assert "lost_constraints" not in (out / "leaderboard.csv").read_text()
    assert "billed as gemini-3-pro-preview" in printed and "claude-opus-4-5" not in printed
