"""The grouped tombstone digest: size within a square-root allowance, every folded key still covered."""

import math

import pytest
from prunesim.errors import UserError
from prunesim.io import scenario_files as scenario_mod
from prunesim.model import engine as engine_mod
from prunesim.model.digest import Digest
from prunesim.model.grouped_digest import GroupedDigest
from prunesim.runner import run_one

BASE, ROOT = 16, 32


def commands(n: int) -> list[str]:
    """Distinct commands with the structure of real sessions: a few tools over many files in a few folders."""
    tools = ("cat", "sed -n 1,80p", "grep -n TODO", "python -m pytest -x")
    return [f"{tools[i % 4]} src/pkg_{i % 7}/module_{i}.py" for i in range(n)]


def test_size_stays_within_the_square_root_allowance_while_the_exact_list_grows_linearly():
    grouped, exact = GroupedDigest(BASE, ROOT), Digest(BASE)
    sizes = {}
    for n, key in enumerate(commands(20000), start=1):
        grouped.add(key)
        exact.add(key)
        assert grouped.tokens <= BASE + math.ceil(ROOT * math.sqrt(n))
        if n in (100, 10000):
            sizes[n] = (grouped.tokens - BASE, exact.tokens - BASE)
    # 100 times the keys: the exact list about 100 times the tokens, the grouped one at most 10 times
    assert sizes[10000][1] > 80 * sizes[100][1]
    assert sizes[10000][0] <= 10 * sizes[100][0] + 1
    assert grouped.keyed == grouped.folded == 20000


def test_every_folded_key_is_covered_and_a_key_outside_every_group_is_not():
    d = GroupedDigest(BASE, ROOT)
    keys = commands(3000)
    for key in keys:
        d.add(key)
    assert all(k in d for k in keys)
    assert "ls -la /etc" not in d and "" not in d  # no group is a prefix of it
    named = list(d.named())
    assert len(named) == len(d) < 3000 and any(e.endswith("*") for e in named)
    # the groups end at separators: each covers whole words or path components
    assert all(e[:-1] == "" or e[-2] in " /_.-" for e in named if e.endswith("*"))
    # what is lost: a key never folded that shares a group's prefix is read as recorded
    unseen = commands(6000)[3000:]
    assert sum(k in d for k in unseen) > 0


def test_small_digests_stay_exact():
    d = GroupedDigest(BASE, 128)
    for key in commands(20):
        d.add(key)
    assert sorted(d.named()) == sorted(commands(20)) and d.groups_made == 0
    assert not any(k in d for k in commands(40)[20:])


def test_a_bounded_grouped_digest_coarsens_and_never_forgets():
    d = GroupedDigest(BASE, 128, max_tokens=40)
    keys = commands(2000)
    for key in keys:
        d.add(key)
        assert d.tokens <= 40
    assert all(k in d for k in keys) and d.older == 0


def test_keys_with_nothing_in_common_end_in_one_group_covering_everything():
    # hashes share no prefix: the only sublinear cover is every key (the honest limit, docs/policies.md)
    d = GroupedDigest(BASE, 1)
    for i in range(200):
        d.add(f"{i:08x}"[::-1] + "q")
    assert list(d.named()) == ["*"] and "anything" in d


def test_a_group_adds_no_commands_beyond_those_it_was_given():
    d = GroupedDigest(BASE, 1, is_command=lambda key: True)
    for i in range(50):
        d.add(f"cat src/f{i}.py")
    assert d.commands < 50 and d.commands_beyond(0) == d.commands
    # keys the window traces that a group covers may outnumber the commands it was given: none added
    assert d.commands_beyond(d.commands + 10) == 0


def test_same_keys_same_digest():
    def build():
        d = GroupedDigest(BASE, ROOT)
        for key in commands(2000):
            d.add(key)
        return d.text()

    assert build() == build()


def run(digest="groups", turns=600, seed=19):
    sc = scenario_mod.load("reentrancy-60", {"turns": turns, "tombstone.budget": 800, "tombstone.digest": digest,
                                             "tombstone.digest_root": 8})
    return sc, run_one(sc, "tombstoned", seed, trace="all")


def test_in_a_run_the_grouped_digest_covers_every_folded_key(monkeypatch):
    seen = {}
    original = engine_mod.Engine.run

    def keep(self):
        original(self)
        seen["digest"] = self.digest

    monkeypatch.setattr(engine_mod.Engine, "run", keep)
    _, result = run()
    digest = seen["digest"]
    assert isinstance(digest, GroupedDigest)
    evictions = {r.seq: r.body for r in result.edit_log if r.kind == "evict"}
    folded = [evictions[seq]["key"] for r in result.edit_log if r.kind == "fold" for seq in r.body["records"]]
    assert len(folded) == digest.folded == sum(r.body["tombstones"] for r in result.edit_log if r.kind == "fold") > 0
    assert all(k in digest for k in folded if k)
    assert digest.keyed == sum(1 for k in folded if k)
    assert result.summary["digest_tokens"] <= BASE + math.ceil(8 * math.sqrt(digest.keyed))
    assert result.summary["unrecorded_evictions"] == 0 and result.summary["edit_log_verified"]


def test_grouped_against_exact_in_a_run():
    _, grouped = run("groups")
    _, exact = run("keys")
    assert 0 < grouped.summary["digest_tokens"] < exact.summary["digest_tokens"]
    assert grouped.summary["tombstone_folds"] > 0 and exact.summary["tombstone_folds"] > 0


@pytest.mark.parametrize("overrides, key", [
    ({"tombstone.digest": "tree"}, "tombstone.digest"),
    ({"tombstone.digest_root": 0}, "tombstone.digest_root"),
])
def test_bad_digest_settings_are_refused(overrides, key):
    with pytest.raises(UserError, match=key):
        scenario_mod.load("reentrancy-60", overrides)
