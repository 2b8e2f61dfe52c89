"""A run's random streams as :func:`prunesim.runner.streams` makes them, without numpy's SeedSequence objects.

``streams(seed)`` spawns two children of ``SeedSequence(seed)`` and seeds a
PCG64 from each. Through numpy's Python-level machinery that takes about
17 us a seed, as much as a short kernel run's loop; a study of one seed a
run pays it every run. :func:`start_states` computes the same two PCG64
states: numpy's SeedSequence hash (the entropy's words mixed into a pool of
four, each child's spawn key after the padded entropy, the pool drawn out as
the seeding words) compiled, and PCG64's seeding (two steps of its 128-bit
generator) on Python integers. tests/test_kernel_seeds.py compares the states
with numpy's own on thousands of seeds.
"""

from __future__ import annotations

import numba
import numpy as np
from prunesim.runner import STREAM_POLICY, STREAM_WORKLOAD

# numpy's SeedSequence constants (numpy/random/bit_generator.pyx).
POOL_SIZE = 4
INIT_A, MULT_A = 0x43B0D7E5, 0x931E8875
INIT_B, MULT_B = 0x8B51F9DD, 0x58F38DED
MIX_MULT_L, MIX_MULT_R = 0xCA01F9DD, 0x4973F715
XSHIFT = 16
MASK32 = 0xFFFFFFFF
# PCG64's 128-bit multiplier.
PCG_MULT = (2549297995355413924 << 64) + 4865540595714422341
MASK128 = (1 << 128) - 1
CHILDREN = max(STREAM_WORKLOAD, STREAM_POLICY) + 1


@numba.njit(cache=True)
def _hashmix(value, hash_const):
    """SeedSequence's hashmix: returns (the mixed value, the next hash constant)."""
    value ^= hash_const
    hash_const = (hash_const * MULT_A) & MASK32
    value = (value * hash_const) & MASK32
    return value ^ (value >> XSHIFT), hash_const


@numba.njit(cache=True)
def _mix(x, y):
    result = (MIX_MULT_L * x - MIX_MULT_R * y) & MASK32
    return result ^ (result >> XSHIFT)


@numba.njit(cache=True)
def child_words(entropy, children):
    """The four 64-bit seeding words of each of the first ``children`` children of a SeedSequence of
    ``entropy`` (its 32-bit words, least significant first), as ``generate_state(4, np.uint64)`` gives them."""
    out = np.zeros((children, 4), dtype=np.uint64)
    n = max(entropy.shape[0], POOL_SIZE)  # a spawned child's entropy is padded to the pool with zeros
    assembled = np.zeros(n + 1, dtype=np.int64)
    assembled[:entropy.shape[0]] = entropy
    pool = np.zeros(POOL_SIZE, dtype=np.int64)
    for child in range(children):
        assembled[n] = child  # the spawn key (child,)
        h = INIT_A
        for i in range(POOL_SIZE):
            pool[i], h = _hashmix(assembled[i], h)
        for src in range(POOL_SIZE):
            for dst in range(POOL_SIZE):
                if src != dst:
                    v, h = _hashmix(pool[src], h)
                    pool[dst] = _mix(pool[dst], v)
        for src in range(POOL_SIZE, n + 1):
            for dst in range(POOL_SIZE):
                v, h = _hashmix(assembled[src], h)
                pool[dst] = _mix(pool[dst], v)
        h = INIT_B
        for i in range(2 * 4):  # eight 32-bit words, paired little-endian into four 64-bit ones
            v = pool[i % POOL_SIZE] ^ h
            h = (h * MULT_B) & MASK32
            v = (v * h) & MASK32
            v ^= v >> XSHIFT
            out[child, i // 2] |= np.uint64(v) << np.uint64(32 * (i % 2))
    return out


def pcg64_state(words) -> dict:
    """The state numpy's PCG64 takes from these seeding words (``bit_generator.state``)."""
    initstate = (int(words[0]) << 64) | int(words[1])
    initseq = (int(words[2]) << 64) | int(words[3])
    inc = ((initseq << 1) | 1) & MASK128
    state = inc  # (0 x the multiplier + inc: the first step from a zero state)
    state = ((state + initstate) * PCG_MULT + inc) & MASK128
    return {"bit_generator": "PCG64", "state": {"state": state, "inc": inc}, "has_uint32": 0, "uinteger": 0}


def start_states(seed: int) -> tuple[dict, dict]:
    """The workload's and the policy's PCG64 states of ``streams(seed)``, for a seed that is a non-negative int."""
    words = []
    while True:
        words.append(seed & MASK32)
        seed >>= 32
        if not seed:
            break
    children = child_words(np.array(words, dtype=np.int64), CHILDREN)
    return pcg64_state(children[STREAM_WORKLOAD]), pcg64_state(children[STREAM_POLICY])
