"""Scenario files that extend others, the generated defaults table, and budgets sized to each transcript."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from prunesim.cli import main
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
    assert {"gate.lead", "recency.low_water_gap", "replay.budget_of_peak", "need.focus"} <= set(by_key)


# -- budgets sized to each transcript --------------------------------------------
def workload(sizes: list[int]) -> WorkloadData:
    parts = [{"type": "part", "turn": t, "kind": "tool_output", "tokens": n, "key": f"k{t}"}
             for t, n in enumerate(sizes, 1)]
    header = {"type": "header", "prunesim_workload": 1, "name": "w", "source": "t", "format": "t",
              "tokenizer": "pieces", "model": "", "turns": len(sizes), "parts": len(parts), "repeats": 0,
              "prompt_tokens": None}
    return WorkloadData(header, parts)


def test_the_transcript_scenario_sizes_the_budget_to_each_transcript():
    base = sc.load("transcript")
    for sizes in ([1000] * 10, [5000] * 10):
        data = workload(sizes)
        scenario = replay_scenario(base, data)
        assert peak_tokens(data) == sum(sizes)
        assert scenario.budget == round(0.5 * sum(sizes)) and scenario.trigger == round(0.75 * scenario.budget)
        result, _ = replay(data, base, "recency")
        assert result.summary["non_model_evictions"] > 0 and result.scenario.budget == scenario.budget


@pytest.mark.parametrize("overrides", [{"budget": 16000, "trigger": 12000}, {"trigger": 2000}])
def test_an_absolute_budget_or_trigger_switches_relative_sizing_off(overrides):
    loaded = sc.load("transcript", overrides)
    assert loaded.replay.budget_of_peak == 0
    scenario = replay_scenario(loaded, workload([5000] * 10))
    assert (scenario.budget, scenario.trigger) == (overrides.get("budget", 32000), overrides["trigger"])
    both = sc.load("transcript", {**overrides, "replay.budget_of_peak": 0.4})
    assert both.replay.budget_of_peak == 0.4  # named together: relative sizing stays


def test_a_file_extending_transcript_with_its_own_budget_means_it(tmp_path):
    path = write(tmp_path / "t.toml", 'extends = "transcript"\nbudget = 9000\ntrigger = 6000\n')
    assert sc.load(str(path)).replay.budget_of_peak == 0


def test_replay_dir_says_when_a_policy_never_acted(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    args = ["replay-dir", str(FIXTURES), "--policies", "noop,recency", "--out", str(out)]
    main([*args, "--set", "budget=100000", "--set", "trigger=90000"])
    err = capsys.readouterr().err
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    n = sum(r["policy"] == "recency" for r in rows)
    assert f"recency: never acted on {n} of {n} transcript(s): {n} never reached its trigger" in err
    assert "noop: never acted" not in err  # never acting is what noop is for
    assert {r["budget"] for r in rows} == {"100000"}
    main(args)  # the shipped sizing: half of each transcript's peak
    err = capsys.readouterr().err
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert "never reached its trigger" not in err  # every transcript reaches a trigger sized to it
    recency = [r for r in rows if r["policy"] == "recency"]
    acted = sum(int(r["non_model_evictions"]) > 0 for r in recency)
    assert acted > 0 and (acted == len(recency) or "reached it with nothing it would remove" in err)
    assert len({r["budget"] for r in recency}) > 1


def test_a_policy_that_acts_through_placeholders_is_not_called_idle(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    main(["replay-dir", str(FIXTURES), "--policies", "observation-masking", "--set", "observation_masking.n=1",
          "--out", str(out)])
    err = capsys.readouterr().err
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    acts = ("passes", "non_model_evictions", "clearings", "compactions", "memory_warnings")
    idle = sum(all(int(r[k]) == 0 for k in acts) for r in rows)
    assert any(int(r["clearings"]) > 0 for r in rows)  # masking acted, by placeholders alone
    if idle:
        assert f"observation-masking: never acted on {idle} of {len(rows)} transcript(s)" in err
    else:
        assert "never acted" not in err
