"""The need model's parts: the set of keys seen long ago, and the draws against a plain loop over the keys."""

import numpy as np
from prunesim.model.needs import KeySet, Need, NeedModel
from prunesim.model.scenario import NeedParams


def test_keyset_membership_survives_merges():
    keys = KeySet()
    added = [f"cmd {i}" for i in range(3 * KeySet.MERGE_AT + 17)]  # three merges and a tail in the recent set
    for key in added:
        keys.add(key)
    assert len(keys) == len(added)
    assert all(key in keys for key in added)
    assert not any(f"cmd {i}" in keys for i in range(len(added), len(added) + 2000))


def plain_draw(model: NeedModel, rng, turn: int) -> list[Need]:
    """The draw as a loop over every key within the horizon, two uniforms each: the definition."""
    p = model.params
    keys = [k for k, t in model.first_seen.items() if turn - p.horizon <= t < turn]
    out = []
    if not keys:
        return out
    for key, (u_mind, u_judge) in zip(keys, rng.random((len(keys), 2)), strict=True):
        stale = turn >= model.stale_at[key]
        mind = p.focus if key in model.focus else p.relevant
        truly = u_mind < (p.stale if stale else mind)  # needed: fresh content that came to mind, or stale after all
        spurious = stale and not truly and u_mind < mind and u_judge < p.misjudge  # stale, taken for relevant
        if truly or spurious:
            out.append(Need(key, truly, stale))
    return out


def test_draws_are_those_of_a_plain_loop_over_the_keys():
    params = NeedParams(relevant=0.2, stale=0.05, misjudge=0.5, horizon=15, focus=0.7)
    model = NeedModel(params, np.random.default_rng(7))
    reference = np.random.default_rng(7)
    source = np.random.default_rng(1)
    needs = 0
    for turn in range(1, 400):
        for _ in range(int(source.integers(0, 3))):
            key = f"k{int(source.integers(0, 120))}"  # repeats: keys seen again, and again past the horizon
            tags = frozenset({"focus"}) if source.random() < 0.1 else frozenset()
            model.observe(key, turn, turn + int(source.integers(1, 30)), tags)
        model.expire(turn)
        expected = plain_draw(model, reference, turn)
        assert model.draw(turn) == expected
        needs += len(expected)
    assert needs > 300
    assert model.rng.random() == reference.random()  # the same numbers drawn, no more, no fewer
