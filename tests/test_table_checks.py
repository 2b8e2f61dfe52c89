"""A policy's table is checked for the runs of the policies that read it, and only for those.

reentrancy-60's ``[gate]`` (lead -16,000) puts slack-gated's gate above the budget once the trigger is
18,000: a naive run of it is valid, a run, compare or sweep that includes slack-gated is refused in one
line naming the flag and the problem, before anything is written.
"""

from __future__ import annotations

import pytest
from cli_capture import cli
from prunesim import api
from prunesim.errors import UserError
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts.workload import WorkloadData
from prunesim.policies import get_policy
from prunesim.runner import run_one, tables_read
from prunesim.studies.sweep import plan_sweep
from prunesim.studies.transcript_replay import replay

GATE = "gate.lead: -16000 puts the gate at 34000 (trigger - lead), outside 0..24000 (the budget)"
SET = ("--set", "trigger=18000")


def refused(code: int, out: str, err: str, *words: str) -> None:
    assert code == 2 and not out and err.count("\n") == 1 and "Traceback" not in err, (code, out, err)
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("policy", ["naive", "recency", "tombstoned", "noop"])
def test_a_run_of_a_policy_that_never_reads_the_gate_is_not_refused_for_it(policy):
    code, out, err = cli("run", "reentrancy-60", "--policy", policy, *SET)
    assert code == 0, err
    assert "trigger 18000" in out


@pytest.mark.parametrize("policy", ["slack-gated", "slack-gated+tombstoned"])  # the wrapper reads its planner's
def test_a_run_of_slack_gated_is_refused_naming_the_flag(policy):
    refused(*cli("run", "reentrancy-60", "--policy", policy, *SET), "(with --set)", GATE)


def test_compare_is_refused_when_it_includes_slack_gated_and_only_then():
    refused(*cli("compare", "reentrancy-60", "--policies", "naive,slack-gated", "--seeds", "0:2", *SET),
            "(with --set) under slack-gated: " + GATE)  # of the policies compared, the one refused is named
    code, out, err = cli("compare", "reentrancy-60", "--policies", "naive,recency", "--seeds", "0:2", *SET)
    assert code == 0 and "naive" in out and "recency" in out, err


def test_sweep_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "sweep"
    refused(*cli("sweep", "reentrancy-60", "--policies", "naive,slack-gated", "--seeds", "0:2", "--out", out, *SET),
            "(with --set)", GATE)
    assert not out.exists()
    # A grid point slack-gated runs is named; a point only naive runs is not slack-gated's concern.
    refused(*cli("sweep", "reentrancy-60", "--policies", "naive,slack-gated", "--grid", "trigger=0,18000",
                 "--seeds", "0:2", "--out", out), "--grid point trigger=18000 under slack-gated: " + GATE)
    assert not out.exists()
    plan = plan_sweep("reentrancy-60", {"naive:trigger": [0, 18000]}, ["naive", "slack-gated"], [0])
    assert sorted((plan.scenarios[r.point].trigger, r.policy) for r in plan.runs) == [
        (0, "naive"), (0, "slack-gated"), (18000, "naive")]
    # The lead moved with the trigger: valid for slack-gated too.
    plan_sweep("reentrancy-60", {"slack-gated:gate.lead": [0, 1000]}, ["naive", "slack-gated"], [0],
               {"trigger": 18000})


def test_run_one_checks_the_tables_of_the_policy_it_runs():
    scenario = sc.load("reentrancy-60", {"trigger": 18000})  # loaded for its own policy, naive
    assert run_one(scenario, "naive", 0, trace="none").summary["passes"] > 0
    with pytest.raises(UserError, match="reentrancy-60 under slack-gated: gate.lead"):
        run_one(scenario, "slack-gated", 0, trace="none")
    with pytest.raises(UserError, match=r"\(with overrides\): gate.lead"):
        api.run("reentrancy-60", policy="slack-gated", overrides={"trigger": 18000})
    with pytest.raises(UserError, match="gate.lead"):
        sc.load("reentrancy-60", {"trigger": 18000}, ["naive", "slack-gated"])


def test_the_kernel_checks_them_too():
    pytest.importorskip("numba")
    from prunesim.kernel.summary import run_summary

    scenario = sc.load("reentrancy-60", {"trigger": 18000})
    with pytest.raises(UserError, match="reentrancy-60 under slack-gated: gate.lead"):
        run_summary(scenario, "slack-gated", 0)


def test_every_policy_table_is_checked_for_its_own_policy_only():
    # clear_tool_uses.trigger above the window: nothing to naive, a refusal for clear-tool-uses (and its presets).
    assert tables_read(get_policy("slack-gated+tombstoned")) == ("trigger", "decision", "gate", "tombstone")
    scenario = sc.load("oscillation-40", {"clear_tool_uses.trigger": 10**6})
    assert run_one(scenario, "naive", 0, trace="none").summary["turns"] == scenario.turns
    for policy in ("clear-tool-uses", "clear-tool-uses:anthropic"):
        with pytest.raises(UserError, match="clear_tool_uses.trigger: 1000000 is above the window 32000"):
            run_one(scenario, policy, 0, trace="none")
    refused(*cli("run", "oscillation-40", "--policy", "clear-tool-uses", "--set", "clear_tool_uses.trigger=1000000"),
            "(with --set): clear_tool_uses.trigger")


def test_a_replay_checks_the_gate_on_the_recorded_runtime():
    # A lead that fits the 200k window of the transcript scenario, not the 32k window the run recorded.
    parts = [{"type": "part", "turn": 0, "kind": "system", "tokens": 50},
             {"type": "part", "turn": 1, "kind": "tool_output", "tokens": 500, "key": "ls"}]
    header = {"type": "header", "prunesim_workload": 1, "name": "small-window", "source": "test", "format": "test",
              "tokenizer": "pieces", "model": "gpt-5", "turns": 1, "parts": len(parts), "repeats": 0,
              "prompt_tokens": None, "context_window": 32000}
    data = WorkloadData(header, parts)
    base = sc.load("transcript", {"gate.lead": -40000})
    assert replay(data, base, "naive")[0].scenario.window == 32000
    with pytest.raises(UserError, match="gate.lead: -40000 puts the gate at 64000 .* on the recorded runtime"):
        replay(data, base, "slack-gated")
