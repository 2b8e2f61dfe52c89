"""The API in a notebook: named ledger and event records, to_pandas(), replays of transcripts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from prunesim import api
from prunesim.errors import UserError
from prunesim.model.events import PassRecord
from prunesim.observe.recorder import EventRecord, LedgerRow

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="module")
def gated():
    return api.run("oscillation-40", policy="slack-gated", seed=3)


def test_ledger_rows_are_named_records_of_the_pass_and_its_cost(gated):
    assert gated.ledger and all(isinstance(r, LedgerRow) for r in gated.ledger)
    assert LedgerRow._fields[: len(PassRecord._fields)] == PassRecord._fields  # the engine's record first
    first = gated.ledger[0]
    assert first.net == first.evicted - first.index - first.rationale
    assert first.pass_cost_usd > 0 and first.pass_cost_usd == pytest.approx(
        first.decision_cost_usd + first.invalidation_cost_usd)
    assert gated.summary["passes"] == len(gated.ledger)


def test_events_are_named_records_with_their_detail_parsed(gated, tmp_path):
    assert gated.events and all(isinstance(e, EventRecord) for e in gated.events)
    boundary = [e for e in gated.events if e.event == "boundary"]
    assert boundary and all(isinstance(e.detail, dict) and "reason" in e.detail for e in boundary)
    assert sum(e.detail["reason"] == "run" for e in boundary) == gated.summary["gate_runs"]
    # events.csv still holds the detail as JSON text, the same content
    api.write(gated, tmp_path)
    lines = (tmp_path / "events.csv").read_text().splitlines()[1:]
    assert len(lines) == len(gated.events)


def test_to_pandas_gives_data_frames_with_the_records_fields(gated):
    pandas = pytest.importorskip("pandas", reason="needs pandas: pip install '.[test]'")
    ledger = gated.ledger.to_pandas()
    assert list(ledger.columns) == list(LedgerRow._fields) and len(ledger) == len(gated.ledger)
    assert ledger["net"].sum() == gated.summary["sum_net_tokens"]
    events = gated.events.to_pandas()
    assert list(events.columns) == list(EventRecord._fields)
    assert isinstance(events["detail"].iloc[0], dict)
    trace = gated.to_pandas()
    assert isinstance(trace, pandas.DataFrame) and trace["utilization"].max() == gated.summary["peak_utilization"]


def test_to_pandas_without_pandas_says_how_to_get_it(gated, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ModuleNotFoundError, match="pip install pandas"):
        gated.ledger.to_pandas()
    assert len(gated.ledger) > 0  # the records themselves need no pandas


def test_api_run_replays_a_transcript(tmp_path):
    # agent.profile none: the recording's own repeats (mini-swe-agent's profile would add the agent's re-runs of
    # what recency dropped from a 60-token window: tests/test_agent_model.py)
    result = api.run(workload=FIXTURES / "mini.traj.json", policy="recency",
                     overrides={"budget": 60, "trigger": 40, "recency.low_water_gap": 0, "agent.profile": "none"})
    assert result.scenario.name == "transcript" and result.transcript
    assert result.summary["repeats"] == 2 and "needed_evicted_tokens" in result.summary
    api.write(result, tmp_path)
    record = json.loads((tmp_path / "summary.json").read_text())
    assert record["transcript"] == result.transcript and record["scenario"] == "transcript"
    with pytest.raises(UserError, match="holds several runs"):
        api.run(workload=FIXTURES / "openhands.jsonl")
    with pytest.raises(UserError, match="give a scenario or a workload"):
        api.run()


def test_a_replay_keeps_the_trace_it_is_asked_for_and_the_same_summary():
    # A replay's figures are heard as it runs: trace "none" keeps no rows (and no call rows), as a synthetic run.
    runs = {trace: api.run(workload=FIXTURES / "mini.traj.json", policy="recency", trace=trace, agent="none",
                           overrides={"budget": 60, "trigger": 40, "recency.low_water_gap": 0})
            for trace in ("none", "turns", "all")}
    rows = {trace: r.recorder.trace["event"] for trace, r in runs.items()}
    assert rows["none"] == [] and not runs["none"].calls
    assert rows["turns"] and set(rows["turns"]) == {"turn_end"}
    assert "append" in rows["all"] and "turn_end" not in rows["all"]
    full = runs["all"].summary
    assert full["repeats"] == 2 and full["policy_evicted_tokens"] > 0
    assert all(r.summary == full for r in runs.values())


def test_run_workload_writes_the_trace_its_flag_asks_for(tmp_path):
    from cli_capture import cli

    files = {}
    for trace in ("turns", "all"):
        code, _, err = cli("run", "--workload", FIXTURES / "mini.traj.json", "--policy", "recency", "--set",
                           "budget=60", "--set", "trigger=40", "--out", tmp_path / trace, "--trace", trace,
                           "--agent", "none")
        assert code == 0, err
        files[trace] = (tmp_path / trace / "trace.csv").read_text().splitlines()
    events = {trace: {line.split(",")[3] for line in lines[1:]} for trace, lines in files.items()}
    assert events["turns"] == {"turn_end"} and "append" in events["all"]
    summaries = [json.loads((tmp_path / t / "summary.json").read_text()) for t in files]
    assert summaries[0] == summaries[1] and summaries[0]["metrics"]["repeats"] == 2


def test_a_synthetic_runs_summary_json_names_no_transcript(tmp_path, gated):
    api.write(gated, tmp_path)
    assert "transcript" not in json.loads((tmp_path / "summary.json").read_text())


@pytest.mark.parametrize("workload", [None, FIXTURES / "openai.json"])
@pytest.mark.parametrize("overrides", [{"window": -5}, {"no_such_key": 1}, {"window.x": 1}])
def test_an_error_in_the_apis_overrides_names_overrides_not_the_command_lines_set(workload, overrides):
    scenario = None if workload else "oscillation-40"
    with pytest.raises(UserError) as err:
        api.run(scenario, overrides=overrides, workload=workload)
    assert "overrides" in str(err.value) and "--set" not in str(err.value)


@pytest.mark.parametrize("workload", [None, FIXTURES / "openai.json"])
def test_given_as_names_the_overrides_in_a_synthetic_run_as_in_a_replay(workload):
    scenario = None if workload else "oscillation-40"
    with pytest.raises(UserError) as err:
        api.run(scenario, overrides={"no_such_key": 1}, workload=workload, given_as="--set")
    assert "(with --set): no_such_key: unknown key" in str(err.value)


def test_a_turns_override_on_an_api_replay_is_refused_as_overrides():
    with pytest.raises(UserError, match=r"^overrides: turns: cannot be set"):
        api.run(overrides={"turns": 3}, workload=FIXTURES / "openai.json")


@pytest.mark.parametrize("argv", [["run", "oscillation-40", "--set", "window=-5"],
                                  ["run", "--workload", str(FIXTURES / "openai.json"), "--set", "window.x=1"],
                                  ["compare", "oscillation-40", "--set", "no_such_key=1"]])
def test_the_command_line_still_names_set(argv, capsys):
    from prunesim.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--set" in err and "overrides" not in err


def test_overrides_on_a_scenario_object_pin_the_window_as_on_a_name():
    """Overrides given with a Scenario pin what they set, as they do with a scenario's name (a replay keeps a
    pinned window rather than the recorded one)."""
    by_name = api.load_scenario("transcript", {"window": 90_000})
    by_object = api.load_scenario(api.load_scenario("transcript"), {"window": 90_000})
    assert "window" in by_name.replay.pinned and by_object.replay.pinned == by_name.replay.pinned
