"""numpy Generators handed to compiled code by their addresses, not converted at every call.

numba converts a ``np.random.Generator`` argument at each call of a compiled
function through Python-level lookups (its bit generator's ``ctypes``
interface, ``ctypes.cast`` of three function pointers): 5.4 us a call, as much
as a fifth of a short run's loop, paid twice by a run of a fresh seed (its
draws, then its turns). :func:`addresses` reads those addresses once for a
generator the caller keeps alive; :func:`generator_at` builds, in compiled
code, the value numba's conversion builds from them (0.6 us a call), so
numba's own ``Generator`` methods draw from it: the same numbers, from the
same state, which the Python object keeps (tests/test_kernel_seeds.py).
"""

from __future__ import annotations

import ctypes

import numpy as np
from numba.core import cgutils, types
from numba.extending import intrinsic

_BIT_GENERATOR = types.NumPyRandomBitGeneratorType("bit_generator")
_GENERATOR = types.NumPyRandomGeneratorType("generator")


def addresses(rng: np.random.Generator) -> np.ndarray:
    """The addresses numba's conversion reads from ``rng`` (its state, its next_uint64, next_uint32 and
    next_double functions, its bit generator), valid while ``rng`` lives."""
    ct = rng.bit_generator.ctypes

    def function(f) -> int:
        return ctypes.cast(f, ctypes.c_void_p).value

    return np.array([ct.state_address, ct.state.value, function(ct.next_uint64), function(ct.next_uint32),
                     function(ct.next_double), ct.bit_generator.value], dtype=np.uint64)


@intrinsic
def generator_at(typingctx, pointers):
    """The compiled Generator over the bit generator at ``pointers`` (what :func:`addresses` gives); it holds
    no reference to the Python object (its memory-info and parent are null), whose owner keeps it alive."""

    def codegen(context, builder, sig, args):
        table = context.make_array(sig.args[0])(context, builder, args[0])

        def item(i):
            return builder.load(cgutils.gep_inbounds(builder, table.data, i))

        bit = cgutils.create_struct_proxy(_BIT_GENERATOR)(context, builder)  # (zero-filled: a null parent)
        bit.state_address, bit.state = item(0), item(1)
        bit.fnptr_next_uint64, bit.fnptr_next_uint32, bit.fnptr_next_double = item(2), item(3), item(4)
        bit.bit_generator = item(5)
        generator = cgutils.create_struct_proxy(_GENERATOR)(context, builder)  # (a null meminfo and parent)
        generator.bit_generator = bit._getvalue()
        return generator._getvalue()

    return _GENERATOR(pointers), codegen
