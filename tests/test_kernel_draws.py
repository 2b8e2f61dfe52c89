"""The kernel's compiled workload against SyntheticToolLoop and numpy: the same arrivals, drawn from the same stream."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from prunesim.kernel.differential import random_scenario, summary_bytes
from prunesim.model.provenance import is_marker
from prunesim.model.spans import KINDS, SYSTEM_PROMPT, Span
from prunesim.model.workload import SyntheticToolLoop
from prunesim.runner import streams

pytest.importorskip("numba", reason="the kernel is the optional extra prunesim[kernel]")

from prunesim.kernel import draws  # noqa: E402  (needs numba)
from prunesim.kernel.summary import Kernel, Prepared, run_summary  # noqa: E402


def tool_loop_rows(scenario, seed: int):
    """What SyntheticToolLoop places, as the kernel's arrival rows, and each turn's model output and tool time."""
    lat = scenario.latency
    plans = SyntheticToolLoop(scenario.workload, scenario.turns, lat.tool_mean_s, lat.tool_sigma,
                              streams(seed)["workload"])
    rows, output, tool_s = [], [], []

    def add(turn, step, a):
        span = Span(0, a.kind, a.tokens, turn, a.key, turn + a.stale_after, a.pinned, a.tags)
        rows.append([turn, step, KINDS.index(a.kind), a.tokens, span.stale_at, a.pinned, span.offerable,
                     span.is_constraint, is_marker(span), SYSTEM_PROMPT in span.tags])

    for a in plans.initial():
        add(0, 0, a)
    for plan in plans:
        output.append(plan.reasoning.tokens + plan.tool_call.tokens)
        tool_s.append(plan.tool_latency_s)
        if not plan.unit:
            add(plan.turn, 0, plan.reasoning)
            add(plan.turn, 0, plan.tool_call)
        add(plan.turn, 1, plan.tool_output)
        for a in plan.extra:
            add(plan.turn, 1, a)
    return np.array(rows, dtype=np.int64), output, tool_s


def compiled_rows(scenario, seed: int):
    prep = Prepared(scenario, "noop")
    kernel = Kernel()
    variates = kernel._streams(seed, tuple(prep.pattern.tolist()), prep.turns)
    rows, _, _, output, tool_s = draws.arrivals(variates, prep.turns, prep.pattern, prep.sizes, prep.p_stale,
                                                prep.tool, prep.scale, scenario.workload.turn_unit, prep.initial,
                                                prep.templates, prep.event_first)
    return rows, output.tolist(), tool_s.tolist()


@pytest.mark.parametrize("draw", range(16))
def test_compiled_arrivals_are_the_tool_loops(draw):
    rng = np.random.default_rng([draw, 29])
    scenario = random_scenario(rng, turns=int(rng.choice([1, 40, 1024, 1100])))
    if draw % 4 == 0:  # sizes without a sigma draw nothing: the later draws move up the stream
        w = scenario.workload
        scenario = dataclasses.replace(scenario, workload=dataclasses.replace(
            w, reasoning=dataclasses.replace(w.reasoning, sigma=0.0),
            reasoning_stale_after=float(rng.choice([1.0, 2.9, 3.1]))))
    seed = int(rng.integers(0, 2**32))
    rows, output, tool_s = compiled_rows(scenario, seed)
    ref_rows, ref_output, ref_tool_s = tool_loop_rows(scenario, seed)
    assert rows.tolist() == ref_rows.tolist()
    assert output == ref_output
    assert tool_s == ref_tool_s  # the floats themselves, bit for bit


def test_geometric_from_its_variate_is_numpys_draw():
    """Both of numpy's methods (the search at p >= 1/3, the inversion below), at the boundary and far from it."""
    ps = [1.0, 0.5, draws.GEOMETRIC_SEARCH_P, np.nextafter(draws.GEOMETRIC_SEARCH_P, 0), 0.2, 1e-3, 1e-9]
    for seed, p in enumerate(ps):
        ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        search = p >= draws.GEOMETRIC_SEARCH_P
        variates = ours.random(2000) if search else ours.standard_exponential(2000)
        assert [draws.geometric(v, p) for v in variates] == theirs.geometric(p, 2000).tolist()
        assert ours.random() == theirs.random()  # and the stream is where numpy leaves it


@pytest.mark.parametrize("bounds", [{}, {"variates_bytes": 1, "seeds": 1}], ids=["kept", "forgotten"])
def test_a_kernel_keeping_seeds_gives_what_a_fresh_one_gives(bounds):
    """The per-seed draws a study's kernel keeps (or forgets past its bounds) change nothing: scenarios
    interleaved, seeds revisited, a longer run extending the draws a shorter one made."""
    rng = np.random.default_rng(11)
    scenarios = [random_scenario(rng) for _ in range(3)]
    scenarios.append(dataclasses.replace(scenarios[0], turns=1100))
    kernel = Kernel(**bounds)
    for scenario in scenarios + scenarios[::-1]:
        for policy in ("naive", "slack-gated"):
            kept = kernel.summaries(scenario, policy, [5, 6, 5])
            fresh = [run_summary(scenario, policy, seed) for seed in (5, 6, 5)]
            assert [summary_bytes(s) for s in kept] == [summary_bytes(s) for s in fresh]
    drawn = {(seed, tuple(Prepared(sc, "naive").pattern.tolist())) for sc in scenarios for seed in (5, 6)}
    assert len(kernel._variates) == (1 if bounds else len(drawn))
