"""Reconciling a removal takes the oldest live tool outputs that fit, found through a tree, not a rescan."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from prunesim.io.transcripts import assemble as asm


def _greedy(live: set[int], kinds: list[str], tokens: np.ndarray, need: float) -> tuple[list[int], float]:
    """The rule itself, walked over every live part oldest first."""
    chosen, removed = [], 0.0
    for i in sorted(live):
        if removed >= need:
            break
        if kinds[i] != "tool_output" or tokens[i] <= 0:
            continue
        if removed + tokens[i] - need > need - removed:
            continue
        chosen.append(i)
        removed += tokens[i]
    return chosen, removed


@given(parts=st.lists(st.tuples(st.sampled_from(["tool_output", "reasoning", "user"]),
                                st.one_of(st.integers(0, 5000), st.floats(0, 5000)), st.booleans()),
                      min_size=1, max_size=200),
       need=st.floats(1, 50_000), removals=st.integers(1, 4))
def test_removals_take_what_the_greedy_rule_takes(parts, need, removals):
    kinds = [k for k, _, _ in parts]
    tokens = np.array([float(t) for _, t, _ in parts])
    live = {i for i, (_, _, alive) in enumerate(parts) if alive}
    tree = asm._Outputs(len(parts))
    for i in live:
        if kinds[i] == "tool_output" and tokens[i] > 0:
            tree.add(i, tokens[i])
    for _ in range(removals):  # one removal after another, each on what the last left
        expected = _greedy(live, kinds, tokens, need)
        assert asm._oldest_outputs(tree, tokens, need) == expected
        for i in expected[0]:
            live.discard(i)
            tree.remove(i)
