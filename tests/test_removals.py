"""The cost observer's burst of removals gives the cache the same changes, and leaves the same window, as the
plain loop that searches and sums the window once per removal."""

from __future__ import annotations

import numpy as np
import pytest
from prunesim.observe.removals import SHORT_BURST, apply_burst, apply_one_by_one


def _case(rng: np.random.Generator, n: int, k: int, repeat_ids: bool):
    ids = [int(i) for i in rng.permutation(3 * n)[:n]]
    if repeat_ids and n > 2:  # a span id held twice (the plain loop finds the first)
        ids[-1] = ids[0]
    tokens = [int(t) for t in rng.integers(1, 500, n)]
    pending = []
    for j in range(k):
        pick = rng.random()
        if pick < 0.1:  # a span the window never held
            span_id = 10 * n + j
        else:  # any span of the window, maybe one the burst already cut or took out
            span_id = ids[int(rng.integers(0, n))]
        # cut down (part of it), taken out exactly, or more than it holds
        freed = int(rng.integers(0, 700))
        pending.append((span_id, freed, f"source{j % 3}"))
    return ids, tokens, pending


@pytest.mark.parametrize("seed", range(40))
def test_a_burst_matches_the_plain_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    k = int(rng.integers(SHORT_BURST, 3 * n + SHORT_BURST))
    ids, tokens, pending = _case(rng, n, k, repeat_ids=seed % 5 == 0)
    ids_a, tokens_a = list(ids), list(tokens)
    expected = apply_one_by_one(ids_a, tokens_a, pending)
    ids_b, tokens_b = list(ids), list(tokens)
    got = apply_burst(ids_b, tokens_b, pending)
    assert got == expected
    assert (ids_b, tokens_b) == (ids_a, tokens_a)
    assert expected[0], "the case applied no removal"


def test_a_burst_that_takes_out_every_span_leaves_an_empty_window():
    ids, tokens = list(range(20)), [5] * 20
    pending = [(i, 5, "pass") for i in reversed(ids)]
    changes, unheld = apply_burst(ids, tokens, pending)
    assert ids == [] and tokens == [] and unheld == 0
    # the last span goes first, with all the others ahead of it; the first goes last, with nothing ahead
    assert changes[0] == (95, 19, 5, "pass") and changes[-1] == (0, 0, 5, "pass")
