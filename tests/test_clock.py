"""The engine's clock shortcut changes no result: the same runs with plain SimPy timeouts."""

import pytest
from prunesim.io.scenario_files import load
from prunesim.model.engine import Clock
from prunesim.runner import run_one


@pytest.mark.parametrize("policy", ["noop", "naive", "slack-gated+tombstoned", "llm-summary"])
def test_runs_are_identical_with_plain_timeouts(monkeypatch, policy):
    sc = load("oscillation-40", {"turns": 120})
    fast = run_one(sc, policy, 3)
    monkeypatch.setattr(Clock, "_SHORTCUT", False)
    plain = run_one(sc, policy, 3)
    assert fast.summary == plain.summary
    assert fast.recorder.trace == plain.recorder.trace
    assert list(fast.ledger) == list(plain.ledger) and list(fast.events) == list(plain.events)


def test_the_shortcut_is_taken_when_nothing_else_is_queued():
    clock = Clock()
    assert clock.advance(2.5) and clock.now == 2.5
    clock.timeout(1.0)  # an event queued at 3.5: a delay reaching past it must go through the queue
    assert not clock.advance(1.0) and not clock.advance(4.0) and clock.now == 2.5
    assert clock.advance(0.5) and clock.now == 3.0
