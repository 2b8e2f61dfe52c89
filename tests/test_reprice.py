"""Re-pricing a run's per-call stream gives the dollars a replay under those assumptions bills, bit for bit."""

import dataclasses
from pathlib import Path

import pytest
from prunesim.io.scenario_files import load, load_replay
from prunesim.runner import run_one
from prunesim.studies import reprice
from prunesim.studies.transcript_replay import iter_workloads, replay, replay_scenario
from shared_traces import TRACES, needs

FIXTURES = Path(__file__).parent / "fixtures"


def priced(scenario, **changes):
    return dataclasses.replace(scenario, pricing=dataclasses.replace(scenario.pricing, **changes))


def check(run, scenario) -> int:
    """Re-price ``run(scenario at reuse 1)`` at several reuses and with no cache; each equals ``run`` there."""
    stream = reprice.stream_of(run(reprice.at_full_reuse(scenario), "turns"))
    checked = 0
    for reuse in (scenario.pricing.reuse, 0.83, 0.5, 1.0):
        billed = run(priced(scenario, reuse=reuse), "none").summary["cost_usd"]
        assert round(float(reprice.dollars(stream, scenario.pricing, [reuse], [True])[0]), 9) == billed, reuse
        checked += 1
    bare = run(priced(scenario, cache="none"), "none").summary["cost_usd"]
    assert round(float(reprice.dollars(stream, scenario.pricing, [0.7], [False])[0]), 9) == bare
    return checked + 1


@pytest.mark.parametrize("policy", ["noop", "naive", "slack-gated", "llm-summary:codex"])
def test_a_synthetic_runs_stream_reprices_to_its_replays_bills(policy):
    scenario = load("oscillation-40", {"llm_summary.unit": "tokens", "llm_summary.threshold": 20000}, [policy])
    for seed in (0, 1):
        assert check(lambda s, trace, seed=seed: run_one(s, policy, seed, trace=trace), scenario) == 5


def test_many_draws_at_once_are_each_draws_own_bill():
    scenario = load("oscillation-40", {}, ["naive"])
    stream = reprice.stream_of(run_one(reprice.at_full_reuse(scenario), "naive", 3, trace="turns"))
    reuses, cached = [0.9, 1.0, 0.95, 0.9], [True, True, False, True]
    batch = reprice.dollars(stream, scenario.pricing, reuses, cached)
    one = [reprice.dollars(stream, scenario.pricing, [r], [c])[0] for r, c in zip(reuses, cached, strict=True)]
    assert list(batch) == one and batch[0] == batch[3] and batch[0] != batch[2]


def test_a_stream_is_read_only_from_a_run_at_full_reuse_with_its_calls():
    scenario = priced(load("oscillation-40", {}, ["noop"]), reuse=0.9)
    with pytest.raises(ValueError, match="reuse = 1"):
        reprice.stream_of(run_one(scenario, "noop", 0, trace="turns"))
    with pytest.raises(ValueError, match="per-call rows"):
        reprice.stream_of(run_one(reprice.at_full_reuse(scenario), "noop", 0, trace="none"))


def transcript_check(path, policies, limit=None):
    base = load_replay("transcript", {}, policies)
    checked = 0
    for i, data in enumerate(iter_workloads(path)):
        if limit is not None and i >= limit:
            break
        scenario = replay_scenario(base, data)
        for policy in policies:
            checked += check(lambda s, trace, policy=policy, data=data: replay(data, base, policy, None, trace=trace,
                                                                               scenario=s)[0], scenario)
    return checked


def test_a_replayed_transcripts_stream_reprices_to_its_replays_bills():
    assert transcript_check(FIXTURES / "mini.traj.json", ["noop", "observation-masking:swe-agent"]) == 10


@needs("claude-code-dev", "mini-swe-agent-dev")
@pytest.mark.parametrize("folder", ["claude-code-dev", "mini-swe-agent-dev"])
def test_real_sessions_reprice_to_their_replays_bills_under_each_cache(folder):
    path = sorted((TRACES / folder).iterdir())[2]
    assert transcript_check(path, ["noop", "clear-tool-uses:anthropic", "llm-summary:openhands-sdk"], limit=1) == 15
