"""The index of traced keys (history_gap) against a walk of the whole window, turn by turn."""

import pytest
from prunesim.io import scenario_files as scenario_mod
from prunesim.model.engine import Engine
from prunesim.model.history import DIRECT_KINDS, NAMING_KINDS
from prunesim.runner import run_one


def walked(engine) -> int:
    """Commands the window shows, found by walking it: the definition the index must match."""
    traced = set()
    for s in engine.window.spans():
        if s.key and s.kind in DIRECT_KINDS:
            traced.add(s.key)
        elif s.kind in NAMING_KINDS:
            traced.update(engine.evicted[i].key for i in s.names if i in engine.evicted)
    shown = [k for k in traced if engine.needs.was_seen(k)]
    count = len(shown)
    digest = engine.digest
    if digest is not None and engine.digest_tokens():
        count += digest.commands_beyond(sum(1 for k in shown if k in digest))
    return count


@pytest.fixture
def checked(monkeypatch):
    """Every note_history records (index, walk, digest in the window) in the list returned."""
    seen = []
    original = Engine.note_history

    def note_history(self):
        seen.append((self.history.commands_traced(), walked(self), self.digest_tokens() > 0))
        original(self)

    monkeypatch.setattr(Engine, "note_history", note_history)
    return seen


CASES = [
    ("reentrancy-60", {"turns": 300, "tombstone.budget": 200}, "tombstoned"),
    ("reentrancy-60", {"turns": 300, "tombstone.budget": 200, "tombstone.digest_max": 40}, "slack-gated+tombstoned"),
    ("reentrancy-60", {"turns": 300, "tombstone.budget": 120, "tombstone.digest": "groups"}, "tombstoned"),
    ("reentrancy-60", {"turns": 300}, "observation-masking"),  # placeholders
    ("reentrancy-60", {"turns": 300}, "llm-summary"),  # summaries that carry removed spans
    ("reentrancy-60", {"turns": 300}, "memory-pressure"),
    ("reentrancy-60", {"turns": 300}, "naive"),  # rationales naming what they evicted
    ("long-session-2000", {"turns": 1200, "tombstone.digest": "groups", "tombstone.digest_max": 300},
     "tombstoned"),
]


@pytest.mark.parametrize(("name", "overrides", "policy"), CASES)
def test_the_index_answers_what_a_walk_of_the_window_does(checked, name, overrides, policy):
    scenario = scenario_mod.load(name, overrides)
    for seed in (1, 2):
        checked.clear()
        result = run_one(scenario, policy, seed, trace="none")
        assert len(checked) == scenario.turns
        differ = [(turn, a, b) for turn, (a, b, _) in enumerate(checked, 1) if a != b]
        assert not differ, differ[:5]
        assert max(b for _, b, _ in checked) > 0
        # where tombstones fold, the digest's commands count too, on most turns
        assert any(d for _, _, d in checked) == ("tombstone.budget" in overrides or name == "long-session-2000")
        assert 0 <= result.summary["history_gap"] < 1

