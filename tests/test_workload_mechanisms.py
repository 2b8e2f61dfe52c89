"""The workload's two transcript-backed mechanisms: tool outputs that are larger early, and a turn as one unit.

Both are options of ``[workload]`` (docs/model.md); off, the workload draws
exactly what it drew before they existed.
"""

import numpy as np
import pytest
from prunesim.errors import UserError
from prunesim.io import scenario_files as sc
from prunesim.model.workload import SyntheticToolLoop
from prunesim.observe.recorder import LEDGER_COLUMNS
from prunesim.runner import run_one, streams

OFF = {"workload.tool_output_early": 0, "workload.turn_unit": False}


def plans(scenario, seed):
    rng = streams(seed)["workload"]
    return list(SyntheticToolLoop(scenario.workload, scenario.turns, 1.5, 0.6, rng))


def test_without_an_early_factor_the_draws_are_the_same(oscillation):
    base = sc.replace(oscillation, OFF)
    early = sc.replace(oscillation, OFF | {"workload.tool_output_early": 2.0, "workload.tool_output_early_turns": 5.0})
    a, b = plans(base, 3), plans(early, 3)
    assert [p.reasoning.tokens for p in a] == [p.reasoning.tokens for p in b]
    assert [p.tool_call.tokens for p in a] == [p.tool_call.tokens for p in b]
    assert [p.tool_latency_s for p in a] == [p.tool_latency_s for p in b]
    # The early turns' outputs are larger, the late ones the same draws to within the factor's rounding.
    assert sum(q.tool_output.tokens for q in b[:5]) > 1.5 * sum(q.tool_output.tokens for q in a[:5])
    late = [(p.tool_output.tokens, q.tool_output.tokens) for p, q in zip(a[30:], b[30:], strict=True)]
    assert all(abs(x - y) <= 1 + 0.01 * x for x, y in late)


def test_the_mean_output_decays_as_the_formula_says(oscillation):
    early, turns = 1.5, 4.0
    s = sc.replace(oscillation, OFF | {"workload.tool_output_early": early, "workload.tool_output_early_turns": turns,
                                       "workload.tool_output.max": 10**6, "workload.tool_output.sigma": 0.3})
    sizes = np.array([[p.tool_output.tokens for p in plans(s, seed)] for seed in range(600)], dtype=float)
    t = np.arange(1, s.turns + 1)
    expected = s.workload.tool_output.mean * (1 + early * np.exp(-(t - 1) / turns))
    assert np.allclose(sizes.mean(axis=0), expected, rtol=0.05)


def test_a_turn_unit_is_one_span_with_the_turns_reasoning_and_call(oscillation):
    parts = sc.replace(oscillation, OFF)
    unit = sc.replace(oscillation, OFF | {"workload.turn_unit": True})
    for p, q in zip(plans(parts, 5), plans(unit, 5), strict=True):
        assert q.unit and not p.unit
        assert q.tool_output.tokens == p.reasoning.tokens + p.tool_call.tokens + p.tool_output.tokens
        assert q.tool_output.stale_after == max(p.reasoning.stale_after, p.tool_output.stale_after)
        assert (q.reasoning.tokens, q.tool_call.tokens) == (p.reasoning.tokens, p.tool_call.tokens)  # still billed


def test_under_a_turn_unit_the_window_holds_turns_and_bills_the_same_output(oscillation):
    unit = run_one(sc.replace(oscillation, {"workload.turn_unit": True}), "naive", 1000)
    parts = run_one(sc.replace(oscillation, {"workload.turn_unit": False}), "naive", 1000)
    assert not {"reasoning", "tool_call"} & set(unit.trace()["kind"].tolist())
    assert {"reasoning", "tool_call"} <= set(parts.trace()["kind"].tolist())
    assert unit.summary["passes"] > 0
    # Until the first pass both runs hold the same tokens at the end of every turn (a unit only regroups them).
    first = dict(zip(LEDGER_COLUMNS, parts.ledger[0], strict=True))["turn"]
    first = min(first, dict(zip(LEDGER_COLUMNS, unit.ledger[0], strict=True))["turn"])

    def ends(r):
        t = r.trace()
        return {int(turn): int(u) for turn, u in zip(t["turn"], t["utilization"], strict=True) if turn < first}
    assert ends(unit) == ends(parts)


@pytest.mark.parametrize("overrides, key", [
    ({"workload.tool_output_early": -1}, "workload.tool_output_early"),
    ({"workload.tool_output_early": 1e9}, "workload.tool_output_early"),
    ({"workload.tool_output_early_turns": 0}, "workload.tool_output_early_turns"),
    ({"workload.turn_unit": 3}, "workload.turn_unit"),
])
def test_bad_values_name_the_key(overrides, key):
    with pytest.raises(UserError) as err:
        sc.load("oscillation-40", overrides)
    assert err.value.key == key and "\n" not in str(err.value)
