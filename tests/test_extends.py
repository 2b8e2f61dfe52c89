"""Scenario files that extend others, the generated defaults table, and budgets sized to each transcript."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.io import prices
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts.workload import WorkloadData
from prunesim.studies.transcript_replay import peak_tokens, replay, replay_scenario

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_scenario_that_extends_a_shipped_one_changes_only_what_it_names(tmp_path):
    path = write(tmp_path / "mine.toml", 'extends = "oscillation-40"\nturns = 80\n'
                 "[workload.tool_output]\nmean = 366.0\n[gate]\nfallback = \"truncate\"\n")
    mine, base = sc.load(str(path)), sc.load("oscillation-40")
    assert (mine.name, mine.description) == ("mine", "")
    assert mine.turns == 80 and mine.workload.tool_output.mean == 366.0
    assert mine.workload.tool_output.sigma == base.workload.tool_output.sigma  # tables merge key by key
    assert mine.gate.fallback == "truncate" and mine.gate.lead == base.gate.lead
    assert mine.decision == base.decision and mine.workload.initial == base.workload.initial
    expected = base.to_dict()
    got = mine.to_dict()
    for key in ("name", "description", "turns"):
        expected.pop(key), got.pop(key)
    expected["workload"]["tool_output"]["mean"] = 366.0
    expected["gate"]["fallback"] = "truncate"
    assert got == expected


def test_extends_chains_and_paths_are_relative_to_the_file(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "a.toml", 'extends = "oscillation-40"\nturns = 50\nseed = 7\n')
    b = write(tmp_path / "b.toml", 'extends = "sub/a.toml"\nturns = 60\n')
    loaded = sc.load(str(b), {"trigger": 20000})
    assert (loaded.turns, loaded.seed, loaded.trigger, loaded.window) == (60, 7, 20000, 32000)


def test_the_shipped_example_runs(capsys):
    assert main(["run", str(ROOT / "examples" / "scenarios" / "oscillation-80.toml"), "--seed", "3", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["scenario"] == "oscillation-80" and record["metrics"]["turns"] == 80


@pytest.mark.parametrize("files,needle", [
    ({"a.toml": 'extends = "b.toml"', "b.toml": 'extends = "a.toml"'}, "a cycle: a.toml -> b.toml -> a.toml"),
    ({"a.toml": 'extends = "a.toml"'}, "a cycle: a.toml -> a.toml"),
    ({"a.toml": 'extends = "no-such-scenario"'}, "unknown scenario 'no-such-scenario' (shipped:"),
    ({"a.toml": 'extends = "missing.toml"'}, "no such scenario file"),
    ({"a.toml": "extends = 3"}, "must be a shipped scenario's name or a path"),
    ({"a.toml": 'extends = "b.toml"', "b.toml": "nope = 1"}, "nope: unknown key"),
])
def test_bad_extends_is_one_line_naming_the_file(tmp_path, capsys, files, needle):
    for name, text in files.items():
        write(tmp_path / name, text + "\n")
    assert main(["run", str(tmp_path / "a.toml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and str(tmp_path) in err
    assert not (tmp_path / "out").exists()


# -- the defaults table ---------------------------------------------------------
def test_docs_defaults_table_is_the_generated_one(capsys):
    main(["defaults", "--markdown"])
    generated = capsys.readouterr().out.strip()
    doc = (ROOT / "docs" / "scenarios.md").read_text()
    assert doc.split("<!-- defaults:begin -->")[1].split("<!-- defaults:end -->")[0].strip() == generated


def test_the_defaults_table_shows_where_shipped_scenarios_differ(capsys):
    header, rows = sc.defaults_table()
    assert header[:2] == ["key", "default"] and "oscillation-40" in header
    by_key = {r[0]: dict(zip(header, r, strict=True)) for r in rows}
    shipped = sc.load("oscillation-40").decision
    assert by_key["decision.reclaim_target"]["default"] == "0" != f"{shipped.reclaim_target:g}"
    assert by_key["decision.reclaim_target"]["oscillation-40"] == f"{shipped.reclaim_target:g}"
    assert by_key["decision.protect_recent_turns"]["oscillation-40"] == str(shipped.protect_recent_turns)
    assert shipped.concurrent is False and by_key["decision.concurrent"]["oscillation-40"] == ""  # the default
    # every parameter a file may set is in the table, policy tables included
    assert {"gate.lead", "recency.low_water_gap", "replay.trigger_of_budget", "need.focus"} <= set(by_key)


# -- the recorded runtime of a replay ----------------------------------------------
def workload(sizes: list[int], model: str = "", window: int | None = None) -> WorkloadData:
    parts = [{"type": "part", "turn": t, "kind": "tool_output", "tokens": n, "key": f"k{t}"}
             for t, n in enumerate(sizes, 1)]
    header = {"type": "header", "prunesim_workload": 1, "name": "w", "source": "t", "format": "t",
              "tokenizer": "pieces", "model": model, "turns": len(sizes), "parts": len(parts), "repeats": 0,
              "prompt_tokens": None, "context_window": window}
    return WorkloadData(header, parts)


@pytest.mark.parametrize(("model", "pricing", "window"), [
    ("google/gemini-3-pro-preview", "gemini-3-pro-preview", 1048576),
    ("claude-opus-4-5-20251101", "claude-opus-4-5", 200000),
])
def test_the_recorded_model_sets_prices_and_window_and_the_trigger_follows_the_window(model, pricing, window):
    base = sc.load("transcript")
    data = workload([5000] * 10, model)
    scenario = replay_scenario(base, data)
    assert scenario.pricing.model == pricing and scenario.window == window == scenario.budget
    assert scenario.trigger == round(0.75 * window)
    # the trigger never depends on what the transcript will hold: twice the content, the same trigger
    assert replay_scenario(base, workload([10000] * 10, model)).trigger == scenario.trigger
    assert scenario.pricing.cache == ("implicit" if "gemini" in model else "explicit")


def test_a_recorded_window_wins_over_the_documented_one_and_an_impossible_one_is_refused():
    base = sc.load("transcript")
    assert replay_scenario(base, workload([5000] * 4, "gpt-5", 272000)).window == 272000
    data = workload([5000] * 4, "gpt-5", 100000)
    data.header["prompt_tokens"] = [5000, 120000, None, 20000]
    with pytest.raises(UserError, match="recorded window of 100,000 tokens is smaller than a prompt the run sent"):
        replay_scenario(base, data)


def test_an_unknown_model_is_one_error_naming_it_every_key_it_needs_and_the_flag():
    with pytest.raises(UserError) as err:
        replay_scenario(sc.load("transcript"), workload([10] * 3, "acme/llama-9"))
    text = str(err.value)
    assert "\n" not in text and "'acme/llama-9'" in text and "--set pricing.model=NAME" in text
    needed = text.split("gives: ", 1)[1].split(";", 1)[0].split(", ")
    assert needed == [k for k in prices.PRICED_KEYS]  # every key at once, not the first one missing


@pytest.mark.parametrize("overrides", [{"window": 64000, "trigger": 12000}, {"trigger": 2000},
                                       {"pricing.model": "gpt-5"}])
def test_what_the_user_sets_wins_over_the_recording(overrides):
    loaded = sc.load("transcript", overrides)
    assert set(loaded.replay.pinned) == set(overrides)
    scenario = replay_scenario(loaded, workload([5000] * 10, "claude-opus-4-5"))
    assert scenario.window == overrides.get("window", 200000)
    assert scenario.trigger == overrides.get("trigger", round(0.75 * scenario.budget))
    assert scenario.pricing.model == overrides.get("pricing.model", "claude-opus-4-5")


def test_a_noop_replay_that_would_cut_content_warns_naming_transcript_and_window():
    data = workload([30000] * 4, "claude-opus-4-5")
    result, _ = replay(data, sc.load("transcript", {"window": 64000}), "noop")
    assert result.summary["forced_truncations"] > 0
    s = result.summary
    assert any(f"t (w): the noop replay cut content the recorded run sent, on a 64,000-token window: "
               f"{s['forced_truncations']} forced cut(s), {s['truncated_tokens']:,} tokens" in w
               for w in result.warnings)
    quiet, _ = replay(workload([3000] * 4, "claude-opus-4-5"), sc.load("transcript"), "noop")
    assert not any("window" in w for w in quiet.warnings)


def test_a_file_extending_transcript_with_its_own_budget_means_it(tmp_path):
    path = write(tmp_path / "t.toml", 'extends = "transcript"\nbudget = 9000\ntrigger = 6000\n')
    loaded = sc.load(str(path))
    assert loaded.replay.pinned == ["budget", "trigger"]
    scenario = replay_scenario(loaded, workload([100] * 3, "claude-opus-4-5"))
    assert (scenario.window, scenario.budget, scenario.trigger) == (200000, 9000, 6000)


def test_peak_tokens_places_a_compactions_replacement_after_what_it_replaced():
    data = workload([50000, 50000, 20000], "claude-opus-4-5")
    data.parts[0]["dropped_at"] = 3
    data.parts[1]["dropped_at"] = 3
    data.parts.append({"type": "part", "turn": 2, "kind": "user", "tokens": 5000})  # the summary
    data.header["events"] = [{"event": "compaction", "turn": 3}]
    assert peak_tokens(data) == 100000  # not 105,000: the summary arrives once the old content left
    result, _ = replay(data, sc.load("transcript", {"window": 100000}), "noop")
    assert result.summary["forced_truncations"] == 0 and result.summary["peak_utilization"] == 100000


def test_replay_dir_says_when_a_policy_never_acted(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    args = ["replay-dir", str(FIXTURES), "--policies", "noop,recency", "--out", str(out), "--skip-bad"]
    main([*args, "--set", "budget=100000", "--set", "trigger=90000"])
    err = capsys.readouterr().err
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    n = sum(r["policy"] == "recency" for r in rows)
    assert f"recency: never acted on {n} of {n} transcript(s): {n} never reached its trigger" in err
    assert "noop: never acted" not in err  # never acting is what noop is for
    assert {r["budget"] for r in rows} == {"100000"}
    main([*args, "--set", "trigger=60"])  # the recorded windows (one per model), a trigger of the user's
    err = capsys.readouterr().err
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    recency = [r for r in rows if r["policy"] == "recency"]
    acted = sum(int(r["non_model_evictions"]) > 0 for r in recency)
    assert acted > 0 and (acted == len(recency) or "reached it with nothing it would remove" in err
                          or "never reached its trigger" in err)
    assert {"200000", "1048576", "272000"} <= {r["budget"] for r in recency}


def test_a_policy_that_acts_through_placeholders_is_not_called_idle(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    main(["replay-dir", str(FIXTURES), "--policies", "observation-masking", "--set", "observation_masking.n=1",
          "--out", str(out), "--skip-bad"])
    err = capsys.readouterr().err
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    acts = ("passes", "non_model_evictions", "clearings", "compactions", "memory_warnings")
    idle = sum(all(int(r[k]) == 0 for k in acts) for r in rows)
    assert any(int(r["clearings"]) > 0 for r in rows)  # masking acted, by placeholders alone
    if idle:
        assert f"observation-masking: never acted on {idle} of {len(rows)} transcript(s)" in err
    else:
        assert "never acted" not in err
