"""Long runs keep bounded state: forgetting removed spans that nothing names changes no figure."""

import pytest
from prunesim import runner
from prunesim.io import scenario_files as scenario_mod
from prunesim.model import engine, provenance
from prunesim.policies import REGISTRY

CASES = [
    ("oscillation-40", {"turns": 300}),
    ("oscillation-40", {"turns": 300, "decision.concurrent": True}),
    ("reentrancy-60", {"turns": 200}),
]


@pytest.mark.parametrize("name, overrides", CASES)
def test_forgetting_unreferenced_spans_leaves_every_figure_unchanged(monkeypatch, name, overrides):
    if name not in scenario_mod.shipped_scenarios():
        pytest.skip(f"needs the shipped scenario {name} (scenarios/{name}.toml): restore it from the repository")
    sc = scenario_mod.load(name, overrides)
    for policy in sorted(REGISTRY):
        monkeypatch.setattr(provenance, "FORGET_AT", 10**9)  # never forget
        kept = runner.run_one(sc, policy, 3, trace="all")
        monkeypatch.setattr(provenance, "FORGET_AT", 8)  # forget every few turns
        forgot = runner.run_one(sc, policy, 3, trace="all")
        assert forgot.summary == kept.summary, policy
        assert (forgot.ledger, forgot.events) == (kept.ledger, kept.events), policy


def test_a_long_run_holds_only_what_the_window_still_names(monkeypatch):
    monkeypatch.setattr(provenance, "FORGET_AT", 64)
    sc = scenario_mod.load("oscillation-40", {"turns": 2000})
    seen = {}
    original = engine.Engine.forget_unreferenced

    def spy(self):
        original(self)
        seen["max_after"] = max(seen.get("max_after", 0), len(self.evicted))
        seen["calls"] = seen.get("calls", 0) + 1

    monkeypatch.setattr(engine.Engine, "forget_unreferenced", spy)
    result = runner.run_one(sc, "naive", 0, trace="none")
    assert result.summary["evicted_spans"] > 1000
    assert seen["calls"] > 10 and seen["max_after"] < 64
