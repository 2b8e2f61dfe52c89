"""The tombstone lifecycle: a budget for tombstones, and the digest the oldest fold into."""


import numpy as np
import pytest
from prunesim.errors import UserError
from prunesim.io import scenario_files as scenario_mod
from prunesim.model import engine as engine_mod
from prunesim.model.digest import Digest
from prunesim.runner import run_one

BUDGET = 800


def run(policy="tombstoned", digest_max=0, turns=600, budget=BUDGET, seed=19):
    sc = scenario_mod.load("reentrancy-60", {"turns": turns, "tombstone.budget": budget,
                                             "tombstone.digest_max": digest_max})
    return run_one(sc, policy, seed, trace="all")


@pytest.mark.parametrize("policy", ["tombstoned", "slack-gated+tombstoned"])
def test_the_budget_holds_at_the_end_of_every_turn(policy):
    result = run(policy)
    t = result.recorder.trace
    held = 0
    at_end = {}  # turn -> tombstone tokens after its last change
    for turn, kind, delta in zip(t["turn"], t["kind"], t["delta"], strict=True):
        if kind == "tombstone":
            held += delta
        at_end[turn] = held
    assert len(at_end) > 500 and max(at_end.values()) <= BUDGET
    s = result.summary
    assert s["tombstone_folds"] > 10 and 0 < s["digest_tokens"] < BUDGET
    assert s["tombstone_tokens"] == held <= BUDGET
    assert s["edit_log_verified"] and s["unrecorded_evictions"] == 0
    # without a budget the same run holds far more in tombstones
    assert run(policy, budget=0).summary["tombstone_tokens"] > 10 * BUDGET


@pytest.mark.parametrize("digest_max", [0, 22])
def test_the_digest_accounts_for_every_folded_key(monkeypatch, digest_max):
    dropped = []
    original_drop = Digest._drop

    def spy(self, key, command):
        dropped.append(key)
        original_drop(self, key, command)

    monkeypatch.setattr(Digest, "_drop", spy)
    seen = {}
    original_run = engine_mod.Engine.run

    def keep(self):
        original_run(self)
        seen["digest"] = self.digest

    monkeypatch.setattr(engine_mod.Engine, "run", keep)
    result = run(digest_max=digest_max)
    digest = seen["digest"]
    evictions = {r.seq: r.body for r in result.edit_log if r.kind == "evict"}
    folds = [r.body for r in result.edit_log if r.kind == "fold"]
    assert len(folds) == result.summary["tombstone_folds"] > 0
    folded = [evictions[seq]["key"] for f in folds for seq in f["records"]]
    assert len(folded) == digest.folded == sum(f["tombstones"] for f in folds)
    named = set(digest.named())
    assert all(k in digest for k in named) and len(named) == digest.keys
    # every folded key is named, or was dropped from a bounded digest and counted as older
    assert {k for k in folded if k} == named | set(dropped)
    assert digest.older == len(dropped) and digest.unnamed == folded.count("")
    if digest_max:
        assert dropped and result.summary["digest_tokens"] <= digest_max
    else:
        assert not dropped


def test_the_agent_reads_a_key_in_the_digest_as_recorded():
    exact = run()
    records = [e.detail.get("record") for e in exact.events if e.event in ("need_dismissed", "override_retrieval")]
    assert "digest" in records  # needs met by the digest: dismissed, or overridden when truly needed
    assert exact.summary["re_retrievals"] == 0
    # a digest too small to name much forgets keys, and the agent runs those commands again
    assert run(digest_max=20).summary["re_retrievals"] > 0


def test_the_digest_grows_sublinearly_with_what_it_covers():
    numbered = Digest(16)
    for turn in range(1, 20001):
        numbered.add(f"cmd-{turn}")
        numbered.add(f"think-{turn}")
    assert numbered.tokens < 16 + 10  # consecutive turns fold into two runs
    repeated = Digest(16)
    for i in range(20000):
        repeated.add(f"pytest tests/test_{i % 50}.py")  # fifty commands run again and again
    assert repeated.keys == 50 and repeated.folded == 20000
    assert repeated.tokens < 16 + 50 * 5
    bounded = Digest(16, max_tokens=200)
    for i in range(5000):
        bounded.add(f"cat src/module_{i}_x.py")
        assert bounded.tokens <= 200
    assert bounded.keys + bounded.older == 5000 and "cat src/module_4999_x.py" in bounded
    assert "cat src/module_0_x.py" not in bounded  # the oldest went first


def test_numbered_keys_keep_their_identity():
    d = Digest(0)
    for k in ("cmd-7", "cmd-07", "cmd-9", "cmd-8"):
        d.add(k)
    assert "cmd-7" in d and "cmd-07" in d and "cmd-8" in d and "cmd-007" not in d and "cmd-10" not in d
    assert set(d.named()) == {"cmd-7", "cmd-07", "cmd-8", "cmd-9"}
    d._drop("cmd-8", False)
    assert "cmd-8" not in d and "cmd-7" in d and "cmd-9" in d


@pytest.mark.parametrize("overrides, key", [
    ({"tombstone.budget": 10}, "tombstone.budget"),
    ({"tombstone.budget": -1}, "tombstone.budget"),
    ({"tombstone.digest_max": 10}, "tombstone.digest_max"),
])
def test_bad_tombstone_settings_are_refused(overrides, key):
    with pytest.raises(UserError, match=key):
        scenario_mod.load("reentrancy-60", overrides)


def test_the_tombstoned_wrapper_keeps_every_field_of_the_planners_pass():
    import dataclasses

    from prunesim.policies.base import ModelPass
    from prunesim.policies.tombstoned import TombstonedPolicy

    sc = scenario_mod.load("reentrancy-60")
    policy = TombstonedPolicy(sc, np.random.default_rng(0))
    fields = [f.name for f in dataclasses.fields(ModelPass)]
    values = {"selected": (3, 4), "index_tokens": 5, "rationale_base": 6, "rationale_per_span": (7, 8),
              "candidates": 9, "placement": "window", "protect_artifacts": False, "tombstone_tokens": 0,
              "prune_own_rationale": True}
    assert set(values) == set(fields)  # a new field must be carried over by TombstonedPolicy.wrap
    wrapped = policy.wrap(ModelPass(**values))
    changed = {"placement": "log", "protect_artifacts": True, "tombstone_tokens": sc.tombstone.tokens}
    assert {f: getattr(wrapped, f) for f in fields} == {**values, **changed}
