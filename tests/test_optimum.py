"""The clairvoyant optimum: its dynamic program is exact for its model, and its bill beats every policy's."""

import itertools
from pathlib import Path

import numpy as np
import pytest
from prunesim.io.prices import pricing
from prunesim.io.scenario_files import load_replay
from prunesim.model.spans import Span
from prunesim.policies import REGISTRY, every_policy
from prunesim.policies.base import Evict, WindowView
from prunesim.policies.scheduled import NAME, NEVER, Schedule, scheduled_policy
from prunesim.studies import optimum
from prunesim.studies.transcript_replay import expand, iter_workloads, replay, replay_scenario
from shared_traces import TRACES

FIXTURES = Path(__file__).parent / "fixtures"
SHIPPED = ("claude-code-dev", "mini-swe-agent-dev", "codex", "mini-swe-agent", "swe-agent")


def random_model(rng, model: str) -> optimum._Model:
    """A few turns of spans that arrive, stay and go, and calls at times that sometimes outlast the cache."""
    turns = int(rng.integers(3, 8))
    spans = [(int(rng.integers(3000, 6000)), 0, turns, NEVER)]  # the system prompt: never goes
    for t in range(1, turns + 1):
        for _ in range(int(rng.integers(1, 4))):
            release = t + 1 if rng.random() < 0.7 else int(rng.integers(t + 1, turns + 3))
            last = turns if rng.random() < 0.9 else int(rng.integers(t, turns + 1))  # the runtime drops some
            spans.append((int(rng.integers(100, 6000)), t, last, release))
    tokens, first, last, release = (np.array(col) for col in zip(*spans, strict=True))
    prompt = np.array([tokens[(first <= c) & (last > c)].sum() for c in range(turns)])
    time = np.cumsum(rng.choice([5.0, 60.0, 400.0], size=turns, p=[0.6, 0.3, 0.1]))
    readable = np.where(np.diff(np.concatenate([[0], time])) > 300, 2048,
                        np.concatenate([[min(prompt[0], 2000)], prompt[:-1]]))
    return optimum._Model(np.arange(1, turns + 1), time, prompt, rng.integers(10, 500, size=turns), readable,
                          tokens, first, last, release, np.full(turns, 2048), np.zeros(turns, dtype=np.int64),
                          pricing(model))


@pytest.mark.parametrize("model", ["claude-opus-4-5", "gemini-3-pro-preview", "gpt-5-codex"])
def test_the_dynamic_program_finds_the_cheapest_set_of_batches_of_its_model(model):
    rng = np.random.default_rng(7)
    for _ in range(60):
        m = random_model(rng, model)
        batches, best = optimum.optimal_batches(m)
        turns = range(1, int(m.turn.max()))
        every = min(optimum.model_bill(m, sub).sum()
                    for k in range(len(turns) + 1) for sub in itertools.combinations(turns, k))
        assert best == pytest.approx(every, rel=1e-12, abs=1e-15)
        assert optimum.model_bill(m, batches).sum() == pytest.approx(best, rel=1e-12, abs=1e-15)


def view(turn, spans):
    return WindowView(turn, sum(s.tokens for s in spans), 1000, 1000, False, tuple(spans),
                      tuple(s for s in spans if not s.pinned))


def test_the_scheduled_policy_evicts_at_its_batches_what_may_go_by_then():
    spans = [Span(1, "system", 50, 0, pinned=True), Span(2, "tool_output", 30, 1, key="a"),
             Span(3, "tool_output", 30, 2, key="b"), Span(4, "reasoning", 10, 3)]
    schedule = Schedule(frozenset({3, 5}), {("tool_output", "b", 2): 5})
    policy = scheduled_policy(schedule)(None, None)
    assert policy.name == NAME
    assert policy.decide(view(2, spans)) == []  # not a batch turn
    assert policy.decide(view(3, spans)) == [Evict((2,), reason=NAME)]  # b is needed until turn 5, 4 arrived now
    assert policy.decide(view(5, spans[:1] + spans[2:])) == [Evict((3, 4), reason=NAME)]


def test_the_clairvoyant_is_never_a_registered_policy():
    assert NAME not in REGISTRY and NAME not in every_policy()


def shipped_files():
    files = [p for folder in SHIPPED if (TRACES / folder).is_dir() for p in expand([TRACES / folder])]
    return files or [pytest.param(None, marks=pytest.mark.skip(reason=f"no shipped transcripts in {TRACES}"))]


def check_every_unit(path: Path) -> int:
    base = load_replay("transcript", {}, every_policy())
    units = 0
    for data in iter_workloads(path):
        scenario = replay_scenario(base, data)
        plan = optimum.plan(data, base, None, scenario)
        clairvoyant = replay(data, base, plan.policy, None, trace="none", scenario=scenario)[0].summary["cost_usd"]
        assert round(plan.billed_usd, 9) == clairvoyant  # the planner's chosen bill is the engine's, re-priced
        for policy in every_policy():
            billed = replay(data, base, policy, None, trace="none", scenario=scenario)[0].summary["cost_usd"]
            assert clairvoyant <= billed, (data.name, policy, clairvoyant, billed)
        units += 1
    return units


@pytest.mark.parametrize("path", shipped_files(), ids=lambda p: p.name[-40:] if p else "none")
def test_the_optimum_costs_no_more_than_any_policy_on_every_shipped_unit(path):
    assert check_every_unit(path) >= 1


def test_the_optimum_costs_no_more_than_any_policy_on_the_fixture_transcripts():
    assert sum(check_every_unit(FIXTURES / name) for name in ("mini.traj.json", "openai.json", "tiny.traj")) == 3


# -- under an agent profile: the planner knows the needs the engine enforces -----------------------------------
class Recording:
    """Wraps an agent model's lookback needs: the items the engine finds needed before each work turn's call."""

    def __init__(self, lookback):
        self.lookback, self.drawn = lookback, {}

    def needed(self, w):
        items = self.lookback.needed(w)
        for it in items:
            self.drawn.setdefault((it.key, it.turn), []).append(w)
        return items

    def __getattr__(self, name):
        return getattr(self.lookback, name)


def engine_lookback_needs(data, scenario, seed):
    """The lookback needs the engine itself draws in noop's run (every need held: nothing is fetched again)."""
    from prunesim.io.transcripts import workload as wl
    from prunesim.model.agent import build_agent
    from prunesim.runner import run_one

    workload = optimum._workload(data, scenario)
    agent = build_agent(scenario, seed, workload)
    agent.lookback = Recording(agent.lookback)
    result = run_one(scenario, "noop", seed, trace="none", workload=wl.TranscriptWorkload(
        wl.sized_as(data, scenario.replay.sizes), scenario.workload.reasoning_stale_after,
        scenario.workload.output_stale_after), agent=agent)
    assert result.summary["refetches"] == 0 and result.summary["redos"] == 0
    return agent.lookback.drawn


def profiled(profile: str):
    return load_replay("transcript", {"agent.profile": profile}, every_policy())


@pytest.mark.parametrize("profile", ["swe-agent", "openhands"])
def test_the_planner_draws_the_lookback_needs_the_engine_draws(profile):
    base = profiled(profile)
    seen = 0
    for data in iter_workloads(FIXTURES / "mini.traj.json"):
        scenario = replay_scenario(base, data)
        for seed in range(12):
            needs = optimum.enforced_needs(data, scenario, seed)
            assert needs.profile == profile and needs.resources == []
            planned = {(n.key, n.turn): list(n.uses) for n in needs.lookback}
            assert planned == engine_lookback_needs(data, scenario, seed)
            seen += len(planned)
    assert seen  # the openhands and swe-agent rates draw needs on this transcript


def test_a_profile_without_the_resource_re_fetch_gives_the_planner_no_resource_needs():
    base = load_replay("transcript", {}, every_policy())
    data = next(iter_workloads(FIXTURES / "mini.traj.json"))
    scenario = replay_scenario(base, data)
    assert optimum.enforced_needs(data, scenario, 0).profile == "mini-swe-agent"
    assert optimum.enforced_needs(data, scenario, 0).resources == []  # mini-swe-agent's resource reaction is off
    none = replay_scenario(profiled("none"), data)
    assert optimum.enforced_needs(data, none, 0) == optimum.Needs(optimum.needs_of(data, none, 0), [])


def mini_units():
    folder = TRACES / "mini-swe-agent-dev"
    if not folder.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no transcripts in {folder}"))]
    return expand([folder])[:12]


@pytest.mark.parametrize("path", mini_units(), ids=lambda p: p.name[:30] if p else "none")
def test_under_mini_swe_agents_profile_the_planner_predicts_the_engines_bill(path):
    base = load_replay("transcript", {}, every_policy())  # auto: mini-swe-agent's profile
    for data in iter_workloads(path):
        scenario = replay_scenario(base, data)
        plan = optimum.plan(data, base, None, scenario)
        assert plan.chosen == "planned"
        assert plan.predicted_usd == pytest.approx(plan.billed_usd, rel=1e-9)
        s = plan.result.summary
        assert s["agent_profile"] == "mini-swe-agent" and s["refetches"] == 0 and s["redos"] == 0


def check_against_finished_runs(path: Path, profile: str) -> tuple[int, int]:
    """The optimum against every policy under ``profile``: no more than any policy whose run did all of its work;
    a policy below it stopped at the turn cap with work left (the agent thrashed). (units, capped runs below)"""
    base = profiled(profile)
    units = capped_below = 0
    for data in iter_workloads(path):
        scenario = replay_scenario(base, data)
        plan = optimum.plan(data, base, None, scenario)
        s = plan.result.summary
        assert not s["capped"] and s["turns"] == scenario.turns  # the optimum's agent does all the work
        for policy in every_policy():
            run = replay(data, base, policy, None, trace="none", scenario=scenario)[0].summary
            if run["cost_usd"] < plan.billed_usd:
                assert run["capped"] and run["turns"] < scenario.turns, (data.name, policy, run["cost_usd"])
                capped_below += 1
        units += 1
    return units, capped_below


@pytest.mark.parametrize("profile", ["swe-agent", "openhands"])
def test_under_other_profiles_the_optimum_costs_no_more_than_any_policy_that_finished(profile):
    units = sum(check_against_finished_runs(FIXTURES / name, profile)[0]
                for name in ("mini.traj.json", "openai.json", "tiny.traj"))
    assert units == 3


def test_a_policy_that_thrashes_to_the_cap_bills_less_than_the_optimum_for_less_work():
    folder = TRACES / "codex"
    if not folder.is_dir():
        pytest.skip(f"no transcripts in {folder}")
    counts = [check_against_finished_runs(path, "openhands") for path in expand([folder])]
    units, capped_below = sum(c[0] for c in counts), sum(c[1] for c in counts)
    assert units == 2 and capped_below >= 1  # observation-masking:openhands stops at the cap on both sessions
