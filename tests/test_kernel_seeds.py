"""The kernel's seeding against numpy's: the same PCG64 states as prunesim.runner.streams, seed for seed."""

from __future__ import annotations

import numpy as np
import pytest
from prunesim.runner import streams

pytest.importorskip("numba", reason="the kernel is the optional extra prunesim[kernel]")

from prunesim.kernel.seeds import start_states  # noqa: E402  (needs numba)

# Seeds of every width SeedSequence distinguishes: one 32-bit word, two, more than its pool of four.
EDGES = [0, 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**96 + 5, 2**128 - 1, 2**128,
         2**160 + 2**33 + 9, 3**200]


@pytest.mark.parametrize("block", range(4))
def test_start_states_are_numpys_seed_for_seed(block):
    """Thousands of seeds: the study's 0..N, random 32- and 64-bit ones and the widths at the pool's edges."""
    rng = np.random.default_rng([block, 29])
    seeds = (list(range(block * 500, block * 500 + 500)) + rng.integers(0, 2**32, 500).tolist()
             + rng.integers(0, 2**63, 500).tolist() + EDGES)
    for seed in seeds:
        want = streams(seed)
        workload, policy = start_states(seed)
        assert workload == want["workload"].bit_generator.state, seed
        assert policy == want["policy"].bit_generator.state, seed


def test_the_states_draw_numpys_numbers():
    """Set on a generator, the states give the numbers the streams' own generators give."""
    for seed in (0, 7, 2**40 + 3):
        workload, policy = start_states(seed)
        want = streams(seed)
        for state, name in ((workload, "workload"), (policy, "policy")):
            rng = np.random.Generator(np.random.PCG64(0))
            rng.bit_generator.state = state
            assert rng.standard_normal(50).tolist() == want[name].standard_normal(50).tolist()


def test_a_generator_handed_by_its_addresses_draws_what_numbas_conversion_draws():
    """kernel.bitgen: the same numbers (uniforms, normals, lognormals, binomials, exponentials) as numba's
    conversion of the Generator draws, and the Python object's state moves with them."""
    import numba
    from prunesim.kernel.bitgen import addresses, generator_at

    def draws(rng, n):
        out = np.empty(5 * n)
        for i in range(n):
            out[5 * i], out[5 * i + 1] = rng.random(), rng.standard_normal()
            out[5 * i + 2], out[5 * i + 3] = rng.lognormal(0.0, 0.7), rng.binomial(6, 0.35)
            out[5 * i + 4] = rng.standard_exponential()
        return out

    converted = numba.njit(draws)
    at = numba.njit(lambda pointers, n: converted(generator_at(pointers), n))
    for seed in (0, 11, 2**33):
        ours, theirs = np.random.Generator(np.random.PCG64(seed)), np.random.Generator(np.random.PCG64(seed))
        assert at(addresses(ours), 2_000).tolist() == converted(theirs, 2_000).tolist()
        assert ours.bit_generator.state == theirs.bit_generator.state
        assert ours.random() == theirs.random()


def test_a_copied_or_pickled_kernel_draws_from_its_own_generators():
    """The addresses a kernel hands to compiled code are its own generators': a deep copy or an unpickled kernel
    takes its copies' addresses, and gives the same summaries after the original is gone."""
    import copy
    import gc
    import pickle

    from prunesim.kernel.bitgen import addresses
    from prunesim.kernel.differential import random_scenario, summary_bytes
    from prunesim.kernel.summary import Kernel

    scenario = random_scenario(np.random.default_rng(17))
    kernel = Kernel()
    want = [summary_bytes(s) for s in kernel.summaries(scenario, "naive", [1, 2])]
    copies = [copy.deepcopy(kernel), pickle.loads(pickle.dumps(kernel))]
    for other in copies:
        assert other._policy_at.tolist() == addresses(other._policy_rng).tolist()
    del kernel
    gc.collect()
    for other in copies:
        assert [summary_bytes(s) for s in other.summaries(scenario, "naive", [1, 2])] == want
