"""The synthetic tool loop's draws, compiled: the same numbers as :class:`prunesim.model.workload.SyntheticToolLoop`.

The workload draws a whole chunk of ``CHUNK`` turns at a time from its stream,
one distribution after another, so that turn ``t`` gets the same arrivals
whatever the run's length. Most of those draws are never used by a short run,
and all of them are the same for every candidate scenario of a study that
reruns the same seeds (common random numbers). So the draws are split in two:

* :func:`chunk_variates` draws a chunk's *standard* variates in the workload's
  order (a standard normal behind each lognormal, the uniform or the standard
  exponential behind each geometric draw, as numpy's generator consumes them),
  no further in the stream than the run reads;
  they depend only on the seed and on which draws the scenario makes, so a
  study keeps them per seed (:class:`prunesim.kernel.summary.Kernel`);
* :func:`arrivals` turns the variates of the turns a run needs into the
  loop's arrival rows with the scenario's own parameters: a lognormal size is
  ``exp(mu + sigma z)``, a geometric draw is numpy's search over the running
  sum for ``p >= 1/3`` and ``ceil(-E / log1p(-p))`` below, exactly as numpy
  computes them from the same variates (tests/test_kernel_draws.py checks the
  numbers against numpy's own draws).
"""

from __future__ import annotations

import numba
import numpy as np

# Columns of an arrival row (kernel.loop.simulate reads the first eight).
TURN, STEP, KIND, TOKENS, STALE_AT, PINNED, OFFERABLE, CONSTRAINT, MARKER, SYSTEM = range(10)
ARRIVAL_COLUMNS = 10
# Columns of a span template (an initial span, a scripted event, or the loop's own kinds).
T_KIND, T_TOKENS, T_STALE, T_PINNED, T_OFFERABLE, T_CONSTRAINT, T_MARKER, T_SYSTEM, T_REPLACES, T_KEYED = range(10)
TEMPLATE_COLUMNS = 10
# The first rows of the templates: the tool loop's own reasoning, call and output; the scripted events follow.
OWN_REASONING, OWN_CALL, OWN_OUTPUT = range(3)
OWN = 3
# numpy's geometric draw searches the running sum at and above this p, and inverts an exponential below.
GEOMETRIC_SEARCH_P = 0.333333333333333333333333
INT64_MAX = np.iinfo(np.int64).max
# Which draws a chunk makes, as flags (the variates' pattern): sizes with sigma > 0, search-method geometrics,
# a tool latency, repeats and their geometric's method.
DRAWS_REASONING, DRAWS_CALL, DRAWS_OUTPUT, SEARCH_REASONING, SEARCH_OUTPUT, DRAWS_TOOL, DRAWS_REPEATS, \
    SEARCH_REPEAT = range(8)


NORMAL, UNIFORM, EXPONENTIAL = range(3)  # the standard variate behind a draw


@numba.njit(cache=True)
def _row(rng, out, row, variate, n, keep):
    """Draw ``n`` standard variates in order (as ``rng.standard_normal(n)``, ``random(n)`` or
    ``standard_exponential(n)`` draws them), the first ``keep`` kept in ``out[row]`` (``row`` < 0: none)."""
    for i in range(n):
        if variate == NORMAL:
            v = rng.standard_normal()
        elif variate == UNIFORM:
            v = rng.random()
        else:
            v = rng.standard_exponential()
        if i < keep and row >= 0:
            out[row, i] = v


@numba.njit(cache=True)
def chunk_variates(rng, pattern, n, keep):
    """A chunk's standard variates, drawn from ``rng`` in the workload's order, the first ``keep`` turns' kept;
    rows: the reasoning, call and output normals, the reasoning and output staleness variates, the tool latency
    normals (a row of zeros for a draw the pattern does not make). The repeats' draws move the stream and are
    not kept.

    With ``keep < n`` the chunk is the run's last: what follows its last kept variate in the stream is never
    read, so its last row is drawn only as far as kept and the repeats not at all (a 60-turn run of a fresh seed
    draws about 4,200 variates rather than up to 8,192; each row before still takes the whole chunk's, to move
    the stream as the workload does).
    """
    out = np.zeros((6, keep))
    rows = [(0, NORMAL, pattern[DRAWS_REASONING]), (1, NORMAL, pattern[DRAWS_CALL]),
            (2, NORMAL, pattern[DRAWS_OUTPUT]), (3, UNIFORM if pattern[SEARCH_REASONING] else EXPONENTIAL, 1),
            (4, UNIFORM if pattern[SEARCH_OUTPUT] else EXPONENTIAL, 1), (5, NORMAL, pattern[DRAWS_TOOL]),
            (-1, UNIFORM, pattern[DRAWS_REPEATS]),
            (-1, UNIFORM if pattern[SEARCH_REPEAT] else EXPONENTIAL, pattern[DRAWS_REPEATS])]
    last = 0  # the last row the run reads
    for q in range(6):
        if rows[q][2]:
            last = q
    for q in range(len(rows)):
        row, variate, drawn = rows[q]
        if not drawn or (keep < n and q > last):
            continue
        _row(rng, out, row, variate, keep if keep < n and q == last else n, keep)
    return out


@numba.njit(cache=True)
def geometric(variate, p):
    """numpy's geometric draw of ``p`` from the variate it consumed (a uniform when searching, else an exponential)."""
    if p >= GEOMETRIC_SEARCH_P:
        x = 1
        total = p
        term = p
        q = 1.0 - p
        while variate > total:
            term *= q
            total += term
            x += 1
        return x
    z = np.ceil(-variate / np.log1p(-p))
    if z >= 9.223372036854776e18:
        return INT64_MAX
    return np.int64(z)


@numba.njit(cache=True)
def size(z, dist, drawn, scale):
    """One token size: the lognormal ``exp(mu + sigma z)`` (the mean without a sigma), times ``scale``, rounded
    and clipped as lognormal_sizes does. ``dist``: (mu, sigma, mean, min, max), a tuple (an array given to a
    function costs two reference counts a call: three calls a turn)."""
    mu, sigma, mean, low, high = dist
    v = np.exp(mu + sigma * z) if drawn else mean
    v = np.rint(v * scale)
    if v < low:
        v = low
    if v > high:
        v = high
    return np.int64(v)


@numba.njit(cache=True)
def _dist(sizes, which):
    return sizes[which, 0], sizes[which, 1], sizes[which, 2], sizes[which, 3], sizes[which, 4]


@numba.njit(cache=True, inline="always")
def _put(rows, n, turn, step, templates, t, tokens, stale_after):
    """Arrival row ``n``: template ``t`` with these tokens, stale ``stale_after`` turns after ``turn``."""
    rows[n, TURN], rows[n, STEP], rows[n, KIND] = turn, step, templates[t, T_KIND]
    rows[n, TOKENS], rows[n, STALE_AT], rows[n, PINNED] = tokens, turn + stale_after, templates[t, T_PINNED]
    rows[n, OFFERABLE], rows[n, CONSTRAINT] = templates[t, T_OFFERABLE], templates[t, T_CONSTRAINT]
    rows[n, MARKER], rows[n, SYSTEM] = templates[t, T_MARKER], templates[t, T_SYSTEM]
    return n + 1


@numba.njit(cache=True)
def arrivals(variates, turns, pattern, sizes, p_stale, tool, scale, turn_unit, initial, templates, event_first):
    """The loop's arrays (arrival rows, the initial rows' count, each turn's first row, each turn's model output,
    each turn's tool latency) for ``turns`` turns from the chunks' ``variates`` (one (6, CHUNK) block per chunk,
    side by side).

    ``sizes``: the (mu, sigma, mean, min, max) of reasoning, call and output; ``p_stale``: the geometric p of
    reasoning and output staleness; ``tool``: (mu, sigma) of the latency; ``scale``: the early factor per turn
    (ones without one). ``initial`` and ``templates`` are span templates: ``templates`` holds a reasoning, a
    call and an output, then the scripted events (sorted by turn, in file order; turn ``t``'s from
    ``3 + event_first[t - 1]``).
    """
    n_events = templates.shape[0] - OWN
    rows = np.empty((initial.shape[0] + turns * 3 + n_events, ARRIVAL_COLUMNS), dtype=np.int64)
    n = 0
    for q in range(initial.shape[0]):
        n = _put(rows, n, 0, 0, initial, q, initial[q, T_TOKENS], initial[q, T_STALE])
    n_init = n
    first = np.zeros(turns, dtype=np.int64)
    output = np.zeros(turns, dtype=np.int64)
    tool_s = np.zeros(turns)
    reasoning, call, tool_output = _dist(sizes, 0), _dist(sizes, 1), _dist(sizes, 2)
    for i in range(turns):
        turn = i + 1
        r_tok = size(variates[0, i], reasoning, pattern[DRAWS_REASONING], 1.0)
        c_tok = size(variates[1, i], call, pattern[DRAWS_CALL], 1.0)
        o_tok = size(variates[2, i], tool_output, pattern[DRAWS_OUTPUT], scale[i])
        r_stale = geometric(variates[3, i], p_stale[0])
        o_stale = geometric(variates[4, i], p_stale[1])
        if pattern[DRAWS_TOOL]:
            tool_s[i] = np.exp(tool[0] + tool[1] * variates[5, i])
        output[i] = r_tok + c_tok
        first[i] = n
        # The turn's tool output and call, as the scripted events leave them.
        out, out_tokens, out_stale = OWN_OUTPUT, o_tok, o_stale
        call_stale = o_stale
        lo, hi = OWN + event_first[i], OWN + event_first[i + 1]
        for e in range(lo, hi):
            if templates[e, T_REPLACES]:
                out, out_tokens, out_stale = e, templates[e, T_TOKENS], templates[e, T_STALE]
                if templates[e, T_KEYED]:
                    call_stale = templates[e, T_STALE]
        if turn_unit:
            out_tokens = r_tok + c_tok + out_tokens
            out_stale = max(r_stale, out_stale)
        else:
            n = _put(rows, n, turn, 0, templates, OWN_REASONING, r_tok, r_stale)
            n = _put(rows, n, turn, 0, templates, OWN_CALL, c_tok, call_stale)
        n = _put(rows, n, turn, 1, templates, out, out_tokens, out_stale)
        for e in range(lo, hi):
            if not templates[e, T_REPLACES]:
                n = _put(rows, n, turn, 1, templates, e, templates[e, T_TOKENS], templates[e, T_STALE])
    return rows[:n], n_init, first, output, tool_s
