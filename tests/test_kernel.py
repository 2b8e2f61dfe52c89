"""The compiled kernel against the SimPy engine: the same summary, byte for byte, or no kernel at all."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.io.scenario_files import load, replace
from prunesim.kernel.choice import (
    AUTO_MIN_TURNS,
    AUTO_MIN_TURNS_COMPILED,
    EngineChoice,
    auto_min_turns,
    kernel_gap,
    pick,
    summary,
)
from prunesim.kernel.differential import differences, random_scenario, summary_bytes
from prunesim.model.scenario import NeedParams, Scenario
from prunesim.observe import REGISTRY
from prunesim.policies.slack_gated import Gate
from prunesim.studies.replay import get_replay

pytest.importorskip("numba", reason="the kernel is the optional extra prunesim[kernel]")


@pytest.mark.parametrize("policy", ["noop", "naive", "recency", "slack-gated"])
@pytest.mark.parametrize("draw", range(12))
def test_random_scenarios_give_the_engines_summary_byte_for_byte(policy, draw):
    rng = np.random.default_rng([draw, len(policy)])
    scenario = random_scenario(rng)
    for seed in rng.integers(0, 2**32, 3).tolist():
        simpy, kernel = summary(scenario, policy, seed, "simpy"), summary(scenario, policy, seed, "kernel")
        assert summary_bytes(kernel) == summary_bytes(simpy), differences(simpy, kernel)


def _concurrent(scenario: Scenario) -> Scenario:
    return dataclasses.replace(scenario, decision=dataclasses.replace(scenario.decision, concurrent=True))


@pytest.mark.parametrize("policy", ["noop", "recency"])
@pytest.mark.parametrize("draw", range(20))
def test_a_concurrent_runtime_gives_the_engines_summary_byte_for_byte_where_no_pass_runs(policy, draw):
    rng = np.random.default_rng([draw, len(policy), 7])
    scenario = _concurrent(random_scenario(rng))
    assert kernel_gap(scenario, policy) == ""
    for seed in rng.integers(0, 2**32, 3).tolist():
        simpy, kernel = summary(scenario, policy, seed, "simpy"), summary(scenario, policy, seed, "kernel")
        assert summary_bytes(kernel) == summary_bytes(simpy), differences(simpy, kernel)
        # what justifies it: the flag changes nothing in SimPy's own runs of these policies
        in_line = dataclasses.replace(scenario, decision=dataclasses.replace(scenario.decision, concurrent=False))
        assert summary_bytes(simpy) == summary_bytes(summary(in_line, policy, seed, "simpy"))


def test_a_concurrent_runtime_changes_the_runs_of_a_policy_that_runs_passes():
    # The null: under naive the flag does move SimPy's figures (passes decided while the agent goes on), so the
    # comparison above could see a difference, and the kernel, which runs passes in line, must refuse it.
    rng = np.random.default_rng(3)
    moved = 0
    for _ in range(6):
        scenario = random_scenario(rng)
        moved += summary(scenario, "naive", 1, "simpy") != summary(_concurrent(scenario), "naive", 1, "simpy")
    assert moved
    assert kernel_gap(_concurrent(scenario), "naive") == "decision.concurrent"


def test_the_random_scenarios_exercise_what_the_kernel_claims():
    """Not a vacuous comparison: the drawn runs prune, cut rationales, hit the ceiling, read and rewrite the
    prompt cache of each behaviour, lose constraints and leave evictions nothing records."""
    rng = np.random.default_rng(7)
    scenarios = [random_scenario(rng) for _ in range(12)]
    runs = [summary(sc, "naive", seed, "kernel") for seed, sc in enumerate(scenarios)]
    assert sum(r["passes"] for r in runs) > 100
    assert any(r["cut_passes"] for r in runs)
    assert any(r["forced_truncations"] for r in runs) and any(not r["forced_truncations"] for r in runs)
    for behaviour in ("explicit", "implicit"):  # the cache reads, and the passes' edits cost rewrites
        cached = [r for sc, r in zip(scenarios, runs, strict=True) if sc.pricing.cache == behaviour]
        assert any(r["cache_invalidations"] for r in cached) and all(r["cache_read_tokens"] for r in cached)
    assert any(r["cache_read_tokens"] == 0 and r["uncached_input_tokens"] == r["input_tokens_billed"]
               for sc, r in zip(scenarios, runs, strict=True) if sc.pricing.cache == "none")
    assert any(r["unrecorded_evictions"] for r in runs) and any(r["lost_constraints"] for r in runs)
    assert any(r["overflow_turns"] for r in runs)
    rng = np.random.default_rng(7)
    assert sum(summary(random_scenario(rng), "recency", seed, "kernel")["non_model_evictions"] for seed in range(12))
    rng = np.random.default_rng(7)
    scenarios = [random_scenario(rng) for _ in range(40)]
    gated = [summary(sc, "slack-gated", seed, "kernel") for seed, sc in enumerate(scenarios)]
    for figure in ("gate_runs", "fallback_evictions", "refusals_decision_in_band", "refusals_insufficient_net"):
        assert any(r[figure] for r in gated), figure
    # both knowledges of the gate, and an estimating gate's bound strictly between certainty and none
    knows = [sc.gate.knowledge for sc in scenarios]
    assert {"estimate", "oracle"} <= set(knows)
    assert any(0 < r["gate_risk_bound"] < 1 for k, r in zip(knows, gated, strict=True) if k == "estimate")
    assert all(r["gate_risk_bound"] in (0.0, -1) for k, r in zip(knows, gated, strict=True) if k == "oracle")
    # an estimating gate of each kind (the yield from the index, or from a fixed prior) both runs and refuses
    for fixed in (False, True):
        runs = [r for sc, r in zip(scenarios, gated, strict=True)
                if sc.gate.knowledge == "estimate" and (sc.gate.prior_yield is not None) == fixed]
        assert any(r["gate_runs"] for r in runs) and any(r["refusals_insufficient_net"] for r in runs), fixed


@pytest.mark.parametrize("policy", ["naive", "slack-gated"])
def test_a_run_past_the_workloads_first_chunk_gives_the_engines_summary(policy):
    """Turn 1,025 on is drawn from the stream's second chunk, after the first chunk's repeats."""
    rng = np.random.default_rng([1100, len(policy)])
    scenario = random_scenario(rng, turns=1100)
    for seed in (3, 4):
        simpy, kernel = summary(scenario, policy, seed, "simpy"), summary(scenario, policy, seed, "kernel")
        assert summary_bytes(kernel) == summary_bytes(simpy), differences(simpy, kernel)


@pytest.mark.parametrize("plan", ["select_mean", "reclaim_target"])
def test_a_pass_selecting_many_spans_gives_the_engines_summary(plan):
    """A pass brings its largest candidates forward one at a time, and sorts the rest once past
    kernel.loop.PARTIAL_SELECTION: runs whose passes select more spans than that must still match."""
    from prunesim.kernel.loop import PARTIAL_SELECTION
    from prunesim.runner import run_one
    rng = np.random.default_rng([29, len(plan)])
    many = 4 * PARTIAL_SELECTION
    selected = []
    for _ in range(4):
        scenario = random_scenario(rng, turns=80)
        decision = dataclasses.replace(scenario.decision, select_max=many, select_mean=float(many),
                                       reclaim_target=1e9 if plan == "reclaim_target" else 0.0)
        scenario = dataclasses.replace(scenario, decision=decision)
        for seed in (1, 2):
            simpy, kernel = summary(scenario, "naive", seed, "simpy"), summary(scenario, "naive", seed, "kernel")
            assert summary_bytes(kernel) == summary_bytes(simpy), differences(simpy, kernel)
            selected += [row.selected for row in run_one(scenario, "naive", seed).ledger]
    assert max(selected) > PARTIAL_SELECTION + 1  # (the SimPy engine's record of the same passes)


def test_shipped_oscillation_scenario_byte_identical():
    scenario = load("oscillation-40")
    for seed in range(20):
        for policy in ("noop", "naive", "recency", "slack-gated"):
            assert summary_bytes(summary(scenario, policy, seed, "kernel")) == \
                summary_bytes(summary(scenario, policy, seed, "simpy"))


def test_what_the_kernel_does_not_cover_runs_on_simpy_or_is_refused(monkeypatch):
    plain = Scenario()
    assert kernel_gap(plain, "naive") == ""
    needs = dataclasses.replace(plain, need=NeedParams(relevant=0.1))
    concurrent = dataclasses.replace(plain, decision=dataclasses.replace(plain.decision, concurrent=True))
    truncating = dataclasses.replace(plain, tables={"gate": Gate(fallback="truncate")})
    for scenario, policy in ((plain, "tombstoned"), (truncating, "slack-gated"), (needs, "naive"),
                             (concurrent, "naive"), (concurrent, "slack-gated")):
        assert kernel_gap(scenario, policy)
        assert pick("auto", [(scenario, policy)], 10 * AUTO_MIN_TURNS) == "simpy"
        with pytest.raises(UserError, match="--engine: the kernel does not cover"):
            pick("kernel", [(scenario, policy)], 1)
    assert pick("auto", [(plain, "naive")], 10 * AUTO_MIN_TURNS) == "kernel"
    for policy in ("noop", "recency"):  # they never run a pass: how one would run is not theirs to read
        assert kernel_gap(concurrent, policy) == ""
        assert pick("kernel", [(concurrent, policy)], 1) == "kernel"
    with monkeypatch.context() as m:  # an observer the fold does not feed: SimPy, where it hears the run
        m.setitem(REGISTRY, "mine", type("MyObserver", (), {}))
        assert kernel_gap(plain, "naive") == "the observer 'mine'"
    assert pick("auto", [(plain, "naive")], auto_min_turns() - 1) == "simpy"  # too little work to pay for loading
    with pytest.raises(UserError, match="unknown engine"):
        pick("fast", [(plain, "naive")], 1)


def test_a_numba_older_than_the_kernel_is_built_for_keeps_the_runs_on_simpy(monkeypatch):
    import numba

    monkeypatch.setattr(numba, "__version__", "0.59.1")
    assert kernel_gap(Scenario(), "naive") == ("this install: numba 0.59.1 (the kernel needs 0.68 or later: "
                                              "pip install 'prunesim[kernel]')")
    assert pick("auto", [(Scenario(), "naive")], 10 * AUTO_MIN_TURNS) == "simpy"
    with pytest.raises(UserError, match="numba 0.59.1"):
        pick("kernel", [(Scenario(), "naive")], 1)
    monkeypatch.setattr(numba, "__version__", "0.70.0rc1")
    assert kernel_gap(Scenario(), "naive") == ""


def test_auto_asks_for_less_work_once_the_kernel_is_compiled():
    summary(Scenario(), "naive", 0, "kernel")  # compiled now, and kept in numba's cache
    from prunesim.kernel import fold
    if type(fold.run._cache).__name__ == "NullCache":
        pytest.skip("numba has no cache directory it can write here")
    assert auto_min_turns() == AUTO_MIN_TURNS_COMPILED < AUTO_MIN_TURNS
    assert pick("auto", [(Scenario(), "naive")], AUTO_MIN_TURNS_COMPILED) == "kernel"


def test_engine_kernel_on_a_study_it_does_not_cover_is_one_line_and_exit_2(capsys):
    assert main(["replay", "reentrancy", "--seeds", "0:3", "--engine", "kernel"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.strip().count("\n") == 0 and "--engine: the kernel does not cover the reentrancy replay" in out.err



def test_engine_auto_says_which_engine_ran_and_changes_nothing(capsys):
    assert main(["replay", "oscillation", "--seeds", "0:4", "--json"]) == 0
    simpy = capsys.readouterr().out
    assert main(["replay", "oscillation", "--seeds", "0:4", "--json", "--engine", "auto"]) == 0
    auto = capsys.readouterr()
    assert auto.out == simpy
    assert "replay: engine: simpy for naive @22k: too few turns to pay" in auto.err
    assert main(["replay", "oscillation", "--seeds", "0:4", "--json", "--engine", "kernel"]) == 0
    kernel = capsys.readouterr()
    assert kernel.out == simpy
    assert "replay: engine: kernel for naive @22k, naive @20k, slack-gated" in kernel.err


def test_a_study_on_the_kernel_gives_the_simpy_summaries():
    """The oscillation replay with its variants on the kernel (auto, given enough work): the same runs."""
    replay = get_replay("oscillation")
    base = load(replay.scenario)
    work = {v.label: (replace(base, v.overrides) if v.overrides else base, v.policy) for v in replay.variants}
    choice = EngineChoice("auto", work, 10 * AUTO_MIN_TURNS)
    assert set(choice.chosen.values()) == {"kernel"}
    seeds = list(range(6))
    assert replay.run_variants(seeds, engine=choice)[1] == replay.run_variants(seeds)[1]
