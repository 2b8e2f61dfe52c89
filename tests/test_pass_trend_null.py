"""The pass trend is checked against a null model before it judges "prune-pass frequency increasing".

Two nulls with no trend by construction: each real run's gaps between passes
shuffled (what the run did, in a random order), and a renewal process (gaps
drawn independently from one distribution) observed from a pass to a fixed
end. The statistic's mean under both must be 0 within noise; the count it
replaced (second half of the post-trigger turns minus the first) is shown
biased under the same shuffle, which is why it was replaced (docs/model.md).
"""

import numpy as np
import pytest
from prunesim.observe.metrics.passes import gap_trend, half_of
from prunesim.runner import run_one

SHUFFLES = 200


def halves_count(turns, first_trigger, last_turn):
    halves = [half_of(t, first_trigger, last_turn) for t in turns]
    return halves.count(1) - halves.count(0)


@pytest.fixture(scope="module")
def runs(oscillation):
    """(pass turns from the first trigger on, first trigger turn) for 40 naive runs at 22k."""
    out = []
    for seed in range(1000, 1040):
        r = run_one(oscillation, "naive", seed)
        first = r.summary["first_trigger_turn"]
        turns = [int(row[1]) for row in r.ledger if int(row[1]) >= first]
        out.append((turns, first))
    return out


def shuffled(turns, rng):
    gaps = np.diff(turns)
    rng.shuffle(gaps)
    return np.concatenate(([turns[0]], turns[0] + np.cumsum(gaps))).tolist()


def test_the_trend_of_real_runs_with_shuffled_gaps_is_zero_within_noise(runs, oscillation):
    rng = np.random.default_rng(7)
    new, old = [], []
    for turns, first in runs:
        if len(turns) < 3:
            continue
        for _ in range(SHUFFLES):
            order = shuffled(turns, rng)
            new.append(gap_trend(order))
            old.append(halves_count(order, first, oscillation.turns))
    new, old = np.array(new), np.array(old, dtype=float)
    # Given the runs, the shuffles are independent draws: the standard error of their mean is std / sqrt(n).
    assert abs(new.mean()) < 4 * new.std() / np.sqrt(len(new))
    # The count it replaced is not: the pass at the first trigger opens the first half.
    assert old.mean() < -6 * old.std() / np.sqrt(len(old))


def test_the_trend_of_a_renewal_process_is_zero_within_noise():
    rng = np.random.default_rng(11)
    values = []
    for _ in range(20000):
        turns, t = [5], 5  # a pass at the first trigger, then gaps of 1..4 turns until turn 40
        while (t := t + int(rng.integers(1, 5))) <= 40:
            turns.append(t)
        values.append(gap_trend(turns))
    values = np.array(values)
    assert abs(values.mean()) < 4 * values.std() / np.sqrt(len(values))
    assert values.std() > 0.5  # the statistic varies: the test above is not a constant 0


def test_a_rising_pass_rate_is_seen():
    rng = np.random.default_rng(3)
    values = []
    for _ in range(2000):  # gaps shrink from about 4 turns to about 1
        gaps = np.maximum(1, np.rint(np.linspace(4, 1, 12) + rng.normal(0, 0.7, 12))).astype(int)
        values.append(gap_trend(np.cumsum(gaps).tolist()))
    assert np.median(values) > 2
