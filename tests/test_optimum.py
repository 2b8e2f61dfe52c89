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
