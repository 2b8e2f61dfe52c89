"""Counter-based uniforms for the agent model: a fixed function of (seed, purpose, a, b).

The agent's draws are not taken from a stream: each is a hash of the run's
seed, what it is for (``purpose``) and two integers that say which draw it is
(a work turn and an item, say). So every policy meets the same needs on the
same seed whatever it does to the window (a stream would shift with every
draw a policy's runs make or skip), no other random stream moves, and a
re-implementation elsewhere (numpy, numba) draws the very same numbers:
:func:`draws` is the vectorized twin of :func:`draw`, and
``tests/test_agent_draws.py`` holds them equal.

The hash is splitmix64's finalizer (Steele, Lea and Flood, 2014) chained over
the four integers: ``x = mix(mix(mix(mix(seed) ^ purpose) ^ a) ^ b)``, where
``mix(z)`` adds the golden-ratio increment and runs the finalizer, all modulo
2**64. The uniform is the top 53 bits over 2**53.
"""

from __future__ import annotations

import numpy as np

# What a draw is for (the second integer hashed): one constant per question the agent asks.
RUN = 1  # the run's need intensity: (RUN, 0, 0)
NEED = 2  # is item i needed before work turn w: (NEED, w, i)
CARRY = 3  # does a summary carrying item i meet the need at work turn w: (CARRY, w, i)

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def _mix(z: int) -> int:
    z = (z + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


def draw(seed: int, purpose: int, a: int = 0, b: int = 0) -> float:
    """A uniform in [0, 1), fixed by the four integers (each taken modulo 2**64)."""
    x = _mix(_mix(_mix(_mix(seed & _MASK) ^ (purpose & _MASK)) ^ (a & _MASK)) ^ (b & _MASK))
    return (x >> 11) * (1.0 / (1 << 53))


def _mix_array(z: np.ndarray) -> np.ndarray:
    z = z + np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
    return z ^ (z >> np.uint64(31))


def draws(seed, purpose, a, b) -> np.ndarray:
    """:func:`draw` over numpy arrays (broadcast; non-negative integers below 2**64): the same numbers."""
    with np.errstate(over="ignore"):
        x = _mix_array(np.asarray(seed, dtype=np.uint64))
        x = _mix_array(x ^ np.asarray(purpose, dtype=np.uint64))
        x = _mix_array(x ^ np.asarray(a, dtype=np.uint64))
        x = _mix_array(x ^ np.asarray(b, dtype=np.uint64))
    return (x >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
