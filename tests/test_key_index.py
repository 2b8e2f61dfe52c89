"""The index of what the window holds and records of each key, against walks of the whole window, turn by turn."""

import pytest
from prunesim.io import scenario_files as scenario_mod
from prunesim.model.engine import Engine
from prunesim.model.key_index import DIRECT_KINDS, NAMING_KINDS
from prunesim.model.spans import SUMMARY_TAG
from prunesim.runner import run_one


def walked(engine) -> tuple[int, dict[str, tuple[bool, str]]]:
    """By walking the window: the commands it shows (history_gap), and for every key the agent may need
    again whether the window holds its output and what records its pruning. The definitions the index
    must match."""
    evicted = engine.evicted
    traced, outputs, carried, tombstones, argued = set(), set(), set(), set(), set()
    for s in engine.window.spans():
        if s.key and s.kind in DIRECT_KINDS:
            traced.add(s.key)
        elif s.kind in NAMING_KINDS:
            traced.update(evicted[i].key for i in s.names if i in evicted)
        if s.kind == "tool_output":
            outputs.add(s.key)
        if s.kind == "tombstone":
            tombstones.add(s.key)
        if SUMMARY_TAG in s.tags:
            carried.update(evicted[i].key for i in s.names if i in evicted and evicted[i].kind == "tool_output")
        if s.kind == "prune_rationale":
            argued.update(evicted[i].key for i in s.names if i in evicted)
    shown = [k for k in traced if engine.needs.was_seen(k)]
    count = len(shown)
    digest = engine.digest
    if digest is not None and engine.digest_tokens():
        count += digest.commands_beyond(sum(1 for k in shown if k in digest))
    answers = {}
    for key in engine.removed_turn:
        record = ("tombstone" if key in tombstones else "digest" if engine.in_digest(key)
                  else "rationale" if key in argued else "")
        answers[key] = (key in outputs or key in carried, record)
    return count, answers


@pytest.fixture
def checked(monkeypatch):
    """Every turn, at note_history: a dict of the index's answers, the walks', and whether the digest is
    in the window and a summary carries a removed output; appended to the list returned."""
    seen = []
    original = Engine.note_history

    def note_history(self):
        index = self.key_index
        count, answers = walked(self)
        mine = {key: (index.holds(key), index.record_of(key, self.in_digest)) for key in answers}
        seen.append({"index": (index.commands_traced(self.digest_tokens() > 0), mine), "walk": (count, answers),
                     "digest": self.digest_tokens() > 0, "carried": bool(index.carried)})
        original(self)

    monkeypatch.setattr(Engine, "note_history", note_history)
    return seen


CASES = [
    ("reentrancy-60", {"turns": 300, "tombstone.budget": 200}, "tombstoned"),
    ("reentrancy-60", {"turns": 300, "tombstone.budget": 200, "tombstone.digest_max": 40}, "slack-gated+tombstoned"),
    ("reentrancy-60", {"turns": 300, "tombstone.budget": 120, "tombstone.digest": "groups"}, "tombstoned"),
    ("reentrancy-60", {"turns": 300}, "observation-masking"),  # placeholders
    ("reentrancy-60", {"turns": 300}, "llm-summary"),  # summaries that carry removed outputs
    ("reentrancy-60", {"turns": 300}, "memory-pressure"),
    ("reentrancy-60", {"turns": 300}, "naive"),  # rationales naming what they evicted
    ("long-session-2000", {"turns": 1200, "tombstone.digest": "groups", "tombstone.digest_max": 300},
     "tombstoned"),
]
RECORDS = {"tombstoned": {"tombstone", "digest"}, "slack-gated+tombstoned": {"tombstone", "digest"},
           "naive": {"", "rationale"}}  # what records a pruning under each policy (nothing for the others)


@pytest.mark.parametrize(("name", "overrides", "policy"), CASES)
def test_the_index_answers_what_walks_of_the_window_do(checked, name, overrides, policy):
    scenario = scenario_mod.load(name, overrides)
    for seed in (1, 2):
        checked.clear()
        result = run_one(scenario, policy, seed, trace="none")
        assert len(checked) == scenario.turns
        differ = [(turn, t["index"], t["walk"]) for turn, t in enumerate(checked, 1) if t["index"] != t["walk"]]
        assert not differ, differ[:2]
        assert 0 <= result.summary["history_gap"] < 1
    # The last seed's run asked what the case is there for.
    assert max(t["walk"][0] for t in checked) > 0
    answers = [answer for t in checked for answer in t["walk"][1].values()]
    assert {holds for holds, _ in answers} == {False, True}
    assert {record for _, record in answers} == RECORDS.get(policy, {""})
    assert any(t["digest"] for t in checked) == ("tombstone.budget" in overrides or name == "long-session-2000")
    if policy == "llm-summary":
        assert sum(t["carried"] for t in checked) > 100
