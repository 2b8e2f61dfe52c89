"""The outcome forecast's fast path against the SimPy engine: the same runs, token for token, on the same draws.

The kernel (sim/studies/agent_kernel.py) re-implements the engine with the agent model for the workloads of an
outcome forecast. Here both run the same instance under each policy the kernel covers, at need rates from none
to thrashing, on the engine's own draws (the policy's stream for the summary, the counter-based needs), and
every figure the forecast reads must agree exactly: calls, work turns, re-fetches, redos, the stop at the cap,
prompt, output and cached tokens of the agent's and the policy's calls.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from prunesim.model import agent_draws
from prunesim.runner import streams
from prunesim.studies import agent_kernel as kernel
from prunesim.studies.outcome_sims import engine_record, setup
from prunesim.studies.outcome_workload import Instances

POLICIES = [
    ("noop", {}),
    ("observation-masking:complexity-trap", {}),
    ("observation-masking:openhands", {"observation_masking.n": 6}),
    ("llm-summary:complexity-trap", {"llm_summary.threshold": 6, "llm_summary.keep_turns": 3}),
]
# (work turns, base, call, output, billed): a short run, one past the cap, one that ends on its cap
SHAPES = [(18, 900, 60, 400, 90), (40, 2000, 120, 700, 150), (30, 500, 0, 300, 40)]


def one(work, base, call, out, billed) -> Instances:
    a = np.array
    return Instances(a([work]), a([base]), a([call]), a([out]), a([billed]), a([True]), a([True]))


@pytest.mark.parametrize(("policy", "sets"), POLICIES, ids=[p for p, _ in POLICIES])
def test_kernel_and_engine_make_the_same_runs(policy, sets):
    s = setup(policy, sets, "openhands")
    s = dataclasses.replace(s, profile=dataclasses.replace(s.profile, values={**s.profile.values, "cap": 30}))
    checked = 0
    for work, base, call, out, billed in SHAPES:
        inst = one(work, base, call, out, billed)
        for seed in (1, 2):
            for rate, decay, fidelity in ((0.0, 4.0, 0.5), (0.4, 3.0, 0.5), (2.0, 8.0, 0.0), (2.0, 8.0, 1.0)):
                engine = engine_record(inst, 0, seed, s, rate, decay, fidelity)
                draws = streams(seed)["policy"].random(20_000)
                fast = kernel.run_one(work, base, call, out, billed, s.fast, s.summary, rate, decay,
                                      int(s.profile.need_horizon), fidelity, int(s.profile.redo_turns), s.cap,
                                      s.with_decisions, seed, draws)
                assert dict(zip(kernel.COLUMNS, fast.tolist(), strict=True)) == \
                       dict(zip(kernel.COLUMNS, engine.tolist(), strict=True)), (work, seed, rate, decay, fidelity)
                checked += 1
    assert checked == 24


def test_the_runs_do_react_and_stop_at_the_cap():
    """Not a comparison that holds because nothing happens: masking at a high need rate re-fetches and caps."""
    s = setup("observation-masking:openhands", {"observation_masking.n": 6}, "openhands")
    rec = kernel.run_one(60, 1000, 50, 400, 60, s.fast, s.summary, 2.0, 8.0, 250, 0.0, 1, 40, True, 3)
    row = dict(zip(kernel.COLUMNS, rec.tolist(), strict=True))
    assert row["refetch_turns"] + row["redo_turns"] > 0 and row["capped"] == 1 and row["agent_calls"] == 40
    assert row["work_turns"] < 60


def test_the_counter_based_uniforms_are_the_agent_models():
    for seed, purpose, a, b in ((0, 2, 1, 0), (7, 2, 10, 3), (2**63 + 5, 3, 250, 249), (123, 1, 0, 0)):
        assert kernel.uniform(np.uint64(seed), purpose, a, b) == agent_draws.draw(seed, purpose, a, b)
