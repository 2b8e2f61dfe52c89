"""The Wilson interval every yes/no figure is reported with."""

import math

import pytest
from prunesim.observe.metrics.intervals import wilson


def test_known_values():
    # Wilson 95% for 5 of 10 and for 1 of 20 (standard tables: 0.2366..0.7634, 0.0089..0.2361).
    assert [round(x, 4) for x in wilson(5, 10)] == [0.2366, 0.7634]
    assert [round(x, 4) for x in wilson(1, 20)] == [0.0089, 0.2361]


def test_edges_stay_inside_zero_one_and_are_exact():
    assert wilson(0, 7)[0] == 0.0 and wilson(7, 7)[1] == 1.0
    assert 0.0 < wilson(7, 7)[0] < 1.0
    assert all(math.isnan(x) for x in wilson(0, 0))


def test_interval_holds_the_share_and_narrows_with_trials():
    for k, n in [(3, 10), (30, 100), (300, 1000)]:
        low, high = wilson(k, n)
        assert low < k / n < high
    assert wilson(300, 1000)[1] - wilson(300, 1000)[0] < wilson(3, 10)[1] - wilson(3, 10)[0]


def test_impossible_counts_are_refused():
    with pytest.raises(ValueError):
        wilson(11, 10)
