"""The run's metrics folded in compiled code from the loop's event rows: the observers' counters, not their figures.

:func:`fold` reads the rows :func:`prunesim.kernel.loop.simulate` writes, in
order, and keeps what the registered observers keep for these events:
:class:`~prunesim.observe.metrics.window.WindowMetrics` (peak, first trigger,
band floor, the time held at each utilization level, truncations, constraints,
overflow), :class:`~prunesim.observe.metrics.passes.PassMetrics` (the pass
counters and the gap trend's sums), the gate's decisions and fallbacks, the
eviction counters, and :class:`~prunesim.observe.metrics.cost.CostMetrics`
with the provider's prompt cache of :mod:`prunesim.observe.cache` (explicit,
implicit or none; entries, expiry, the system prompt's mark, invalidation),
with the same arithmetic in the same order. The figures themselves are
computed from these counters by the observers' own ``summary`` code
(:mod:`prunesim.kernel.summary`). What a synthetic run under these policies
never publishes (needs, tombstones, context edits, a recorded warm start or
rewrite, refetches) is not folded.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numba
import numpy as np
from prunesim.kernel import draws, loop
from prunesim.kernel.bitgen import generator_at
from prunesim.kernel.draws import MARKER, SYSTEM
from prunesim.observe.metrics.window import BAND_QUANTILES, QUANTILE_TOLERANCE

_P10, _P90 = BAND_QUANTILES


def callees_digest() -> str:
    """What the functions here compile in from other files: the sources of bitgen.py, draws.py and loop.py, and
    the window metrics' quantile constants ("" when a source cannot be read)."""
    h = hashlib.sha256(repr((BAND_QUANTILES, QUANTILE_TOLERANCE)).encode())
    try:
        for name in ("bitgen.py", "draws.py", "loop.py"):
            h.update(Path(__file__).with_name(name).read_bytes())
    except OSError:
        return ""
    return h.hexdigest()[:16]


# numba checks a cached function against its own file only, not against what it compiled in from others:
# after an edit of loop.py alone, run would load the loop compiled before it. So this file names the callees
# it was last saved with (tests/test_hostile_round5.py checks the name is current); while they differ, the
# functions here compile afresh in each process instead of loading a stale cache.
CALLEES = "03a0ff7e2c84a5e3"
CACHE = callees_digest() == CALLEES

# Counters (the int64 result), by index.
(PEAK, FIRST_TRIGGER, BAND_FLOOR, FORCED, TRUNCATED, OVERFLOW, LOST_CONSTRAINTS, FINAL,
 PASSES, FIRST_HALF, SECOND_HALF, TREND_LAST, TREND_GAPS, TREND_SUM, TREND_ORDER_SUM, FIRST_PASS, LAST_PASS,
 SUM_INDEX, SUM_RATIONALE, SUM_EVICTED, SUM_AFTER, NET_NEGATIVE, ZERO_YIELD, CUT, IN_BAND, EVICTED_SPANS,
 GATE_RUN, GATE_OVER_BUDGET, GATE_IN_BAND, GATE_INSUFFICIENT, FALLBACKS, FALLBACK_TOKENS,
 NON_MODEL, NON_MODEL_TOKENS, POLICY_SPANS, NEEDED_SPANS, POLICY_TOKENS, NEEDED_TOKENS,
 UNRECORDED, TOMBSTONE_TOKENS, PLACEHOLDER_TOKENS,
 INPUT, OUTPUT, DECISION, DECISION_OUTPUT, READ, WRITE, UNCACHED, INVALIDATIONS, INVALIDATED) = range(50)
BAND_P10, BAND_P90 = 50, 51
INT_COUNTERS = 52
# Float counters (the float64 result): the band's sums are the seconds held in all, above the trigger, at the budget.
SIM_TIME, COST, DECISION_COST, INVALIDATION_COST, HELD, HELD_ABOVE, HELD_AT_CEILING, GATE_RISK = range(8)
FLOAT_COUNTERS = 8
# The cache's behaviours, and whose edit a change of the prompt is (a pass's own id is positive).
EXPLICIT, IMPLICIT, NO_CACHE = range(3)
FALLBACK_SOURCE, RUNTIME_SOURCE, NO_SOURCE = -1, -2, 0
_NO_LIMIT = 0
# The span-table columns the fold reads (see loop.simulate).
_KIND, _TOKENS, _STALE_AT, _SOURCE, _NAMES_START, _NAMES_COUNT, _IN_WINDOW, _REMOVED = 0, 1, 3, 6, 9, 10, 11, 12


@numba.njit(cache=CACHE)
def _store(entries, expiry, ne, length, spans, at, min_tokens):
    """PromptCache._store: write or refresh the entry at ``length``, keeping them sorted; returns the count."""
    if length < min_tokens:
        return ne
    if ne == 0 or entries[ne - 1, 0] < length:
        entries[ne, 0], entries[ne, 1], expiry[ne] = length, spans, at
        return ne + 1
    if entries[0, 0] >= length:
        i = 1 if entries[0, 0] == length else 0
    else:
        i = ne
        while i and entries[i - 1, 0] > length:
            i -= 1
    if i and entries[i - 1, 0] == length:
        expiry[i - 1] = max(expiry[i - 1], at)
        entries[i - 1, 1] = spans
        return ne
    entries[i + 1:ne + 1] = entries[i:ne].copy()
    expiry[i + 1:ne + 1] = expiry[i:ne].copy()
    entries[i, 0], entries[i, 1], expiry[i] = length, spans, at
    return ne + 1


@numba.njit(cache=CACHE)
def _round(x):
    return np.int64(np.rint(x))  # Python's round of a float: to the nearest, ties to even


@numba.njit(cache=CACHE)
def fold(ev, times, sp, names, passes, arrivals, now, scenario, cache, rates, kinds):
    """The counters (int64, float64) of one run.

    ``scenario``: (turns, acting trigger, budget, hard); ``cache``: the pricing's (behaviour, ttl_s, min_tokens,
    granularity, breakpoints, lookback, reuse); ``rates``: USD per token read, written, uncached, output, and
    the rewrite premium; ``kinds``: the codes of prune_rationale, placeholder, summary, tombstone.
    """
    turns, trigger, budget, hard = np.int64(scenario[0]), np.int64(scenario[1]), np.int64(scenario[2]), \
        scenario[3] != 0
    behaviour, ttl, min_tokens = np.int64(cache[0]), cache[1], np.int64(cache[2])
    g, breakpoints, lookback, reuse = max(np.int64(1), np.int64(cache[3])), np.int64(cache[4]), \
        np.int64(cache[5]), cache[6]
    r_read, r_write, r_input, r_output, rewrite_rate = rates[0], rates[1], rates[2], rates[3], rates[4]
    c = np.zeros(INT_COUNTERS, dtype=np.int64)
    f = np.zeros(FLOAT_COUNTERS)
    rows = ev.shape[0]
    # -- the window metrics: the points after the first trigger, as (level, seconds) in the order held
    hold_level = np.zeros(rows + 1, dtype=np.int64)
    hold_time = np.zeros(rows + 1)
    n_hold = 0
    since = 0.0
    level = 0
    first_trigger = -1
    band_floor = -1
    c[TREND_LAST] = -1
    c[FIRST_PASS] = c[LAST_PASS] = -1
    early = np.zeros(passes.shape[0] + 1, dtype=np.int64)  # passes before the first trigger (their turns)
    n_early = 0
    # -- the cost observer's view of the window, and the prompt cache
    ids = np.zeros(sp.shape[0], dtype=np.int64)
    toks = np.zeros(sp.shape[0], dtype=np.int64)
    n_ids = 0
    total = 0
    pend = np.zeros((rows + 1, 4), dtype=np.int64)  # removals not yet applied: (span, cause, freed, pass)
    n_pend = 0
    current_pass = 0
    calls = 0
    # a call stores at most three entries (the system prompt's, a held part's, its own); the loop calls the model
    # once a turn and once a pass
    room = 3 * (turns + passes.shape[0]) + 4
    entries = np.zeros((room, 2), dtype=np.int64)  # (length, spans), sorted by length
    expiry = np.zeros(room)
    ne = 0
    cleanup_at = 64
    has_system, system_tokens, system_spans = False, 0, 0
    has_system_end = False
    cache_calls = 0
    extent, extent_expiry, cut_away = 0, -1.0, 0
    has_first_edit, first_edit, first_source = False, 0, NO_SOURCE
    for r in range(rows):
        code, turn, a, b, cc, d, e = ev[r, 0], ev[r, 1], ev[r, 2], ev[r, 3], ev[r, 4], ev[r, 5], ev[r, 6]
        util = ev[r, 8]
        time = times[r]
        if first_trigger >= 0 and (code == loop.APPEND or code == loop.REMOVE):  # WindowMetrics._hold
            hold_level[n_hold], hold_time[n_hold] = level, time - since
            n_hold += 1
            since, level = time, util
            if util < band_floor:
                band_floor = util
        if code == loop.APPEND:
            if util > c[PEAK]:
                c[PEAK] = util
            if first_trigger < 0 and util >= trigger:
                first_trigger = turn
                band_floor = util
                since, level = time, util
                for q in range(n_early):
                    _half(c, early[q], first_trigger, turns)
                n_early = 0
            ids[n_ids], toks[n_ids] = a, b
            n_ids += 1
            total += b
            src = sp[a, _SOURCE]
            if src >= 0 and arrivals[src, SYSTEM] and calls == 0:  # cache.mark_system
                has_system, system_tokens, system_spans = True, total, n_ids
                has_system_end = True
        elif code == loop.REMOVE:
            cause, sid, freed = a, b, cc
            if sp[sid, 8]:
                c[LOST_CONSTRAINTS] += 1
            if cause != loop.DROP:  # a pass's eviction, a non-model eviction or the gate's fallback
                c[POLICY_TOKENS] += freed
                needed = turn < sp[sid, _STALE_AT]
                if needed:
                    c[NEEDED_TOKENS] += freed
                c[POLICY_SPANS] += 1
                c[NEEDED_SPANS] += needed
            pend[n_pend, 0], pend[n_pend, 1], pend[n_pend, 2], pend[n_pend, 3] = sid, cause, freed, current_pass
            n_pend += 1
            total -= freed
        elif code == loop.TRUNC:
            c[FORCED] += 1
            c[TRUNCATED] += cc - d
            if e:
                c[LOST_CONSTRAINTS] += 1
        elif code == loop.TURN_END:
            if not hard and util > budget:
                c[OVERFLOW] += 1
            c[FINAL] = util
        elif code == loop.NON_MODEL:
            if cc:
                c[FALLBACKS] += 1
                c[FALLBACK_TOKENS] += b
            c[NON_MODEL] += 1
            c[NON_MODEL_TOKENS] += b
        elif code == loop.GATE:
            c[GATE_RUN + a] += 1
        elif code == loop.PASS:
            pass_turn = passes[a, 1]
            c[PASSES] += 1
            if first_trigger >= 0:
                _half(c, pass_turn, first_trigger, turns)
            else:
                early[n_early] = pass_turn
                n_early += 1
            if c[FIRST_PASS] < 0:
                c[FIRST_PASS] = pass_turn
            c[LAST_PASS] = pass_turn
            c[SUM_INDEX] += passes[a, 10]
            c[SUM_RATIONALE] += passes[a, 11]
            c[SUM_EVICTED] += passes[a, 12]
            c[SUM_AFTER] += passes[a, 5]
            c[EVICTED_SPANS] += passes[a, 9]
            c[NET_NEGATIVE] += passes[a, 13] < 0
            c[ZERO_YIELD] += passes[a, 9] == 0
            c[CUT] += passes[a, 14]
            c[IN_BAND] += passes[a, 16]
        elif code == loop.CALL:
            prompt, output, decision, pass_id = a, b, cc != 0, d
            if n_pend:  # CostMetrics._apply_removals, then PromptCache.edits
                cached = extent - cut_away
                lowest, lowest_index = -1, 0
                for q in range(n_pend):
                    sid, cause, freed, by = pend[q, 0], pend[q, 1], pend[q, 2], pend[q, 3]
                    i = 0
                    offset = 0
                    index = 0  # its index among the spans still in the window
                    while ids[i] != sid:
                        offset += toks[i]
                        index += ids[i] != 0
                        i += 1
                    source = by if cause == loop.EVICT else (RUNTIME_SOURCE if cause == loop.DROP
                                                             else FALLBACK_SOURCE)
                    left = toks[i] - freed
                    if left > 0:
                        toks[i] = left
                    else:  # gone (id 0, no tokens): the others close up once the batch is applied
                        ids[i], toks[i] = 0, 0
                    if offset < cached:
                        taken = cached - offset if freed > cached - offset else freed
                        cut_away += taken
                        cached -= taken
                        if not has_first_edit or offset < first_edit:
                            has_first_edit, first_edit, first_source = True, offset, source
                    if lowest < 0 or offset < lowest:
                        lowest, lowest_index = offset, index
                n_pend = 0
                n_ids = _close_up(ids, toks, n_ids)
                ne, has_system = _cut(entries, ne, behaviour, lowest, lowest_index, has_system, system_tokens)
            # PromptCache.bill
            spans = n_ids
            stable = total if prompt > total else -1
            cache_calls += 1
            if cache_calls == 1 and not has_system_end:
                has_system = True
                system_tokens, system_spans = (stable, spans) if stable >= 0 else (prompt, spans)
            invalidated, source = 0, NO_SOURCE
            if behaviour == NO_CACHE:
                cut_away, has_first_edit, first_source = 0, False, NO_SOURCE
                read, write, uncached = 0, 0, prompt
            else:
                at = time + ttl
                if behaviour == EXPLICIT:
                    use_system = breakpoints >= 2 and has_system and system_tokens < prompt
                    held = breakpoints >= 3 and stable >= 0 and stable < prompt
                    found = -1
                    for q in range(ne - 1, -1, -1):  # longest first
                        length, e_spans = entries[q, 0], entries[q, 1]
                        if expiry[q] < time or length > prompt:
                            continue
                        if lookback == _NO_LIMIT or spans - e_spans <= lookback:
                            found = q
                            break
                        if (use_system and system_tokens >= length and system_spans - e_spans <= lookback) or (
                                held and stable >= length and spans - e_spans <= lookback):
                            found = q
                            break
                    readable = 0
                    if found >= 0:
                        expiry[found] = at
                        readable = entries[found, 0]
                    if use_system:
                        length = system_tokens - system_tokens % g
                        if ne and entries[0, 0] == length:
                            expiry[0] = at
                        else:
                            ne = _store(entries, expiry, ne, length, system_spans, at, min_tokens)
                    if held:
                        ne = _store(entries, expiry, ne, stable - stable % g, spans, at, min_tokens)
                    length = prompt - prompt % g
                    if ne and entries[ne - 1, 0] < length and length >= min_tokens:
                        entries[ne, 0], entries[ne, 1], expiry[ne] = length, spans, at
                        ne += 1
                    else:
                        ne = _store(entries, expiry, ne, length, spans, at, min_tokens)
                else:  # implicit: the longest live entry, and this prompt
                    best = -1
                    for q in range(ne):
                        if expiry[q] >= time and (best < 0 or entries[q, 0] > entries[best, 0]):
                            best = q
                    readable = 0
                    if best >= 0:
                        readable = min(entries[best, 0], prompt)
                        readable -= readable % g
                    if readable < min_tokens:
                        readable = 0
                    if best >= 0 and entries[best, 0] > prompt:
                        kept_expiry = at if readable else expiry[best]
                        entries[0, 0], entries[0, 1], expiry[0] = entries[best, 0], entries[best, 1], kept_expiry
                    else:
                        entries[0, 0], entries[0, 1], expiry[0] = prompt, spans, at
                    ne = 1
                read = readable if reuse == 1.0 else _round(reuse * readable)
                cacheable = prompt - prompt % g
                if cacheable < min_tokens:
                    cacheable = 0
                if has_first_edit:  # PromptCache._invalidated
                    alive = extent_expiry >= time
                    survived = extent - cut_away
                    survived -= survived % g
                    if survived < min_tokens:
                        survived = 0
                    edit_source = first_source
                    cut_away, has_first_edit, first_source = 0, False, NO_SOURCE
                    if alive:
                        lost = _round(reuse * survived) - read
                        if lost > 0:
                            invalidated, source = lost, edit_source
                if stable >= 0 and stable < prompt:
                    ne, has_system = _cut(entries, ne, behaviour, stable, spans, has_system, system_tokens)
                if ne:
                    extent, extent_expiry = entries[ne - 1, 0], expiry[ne - 1]
                else:
                    extent, extent_expiry = 0, -1.0
                if ne > cleanup_at:
                    m = 0
                    for q in range(ne):
                        if expiry[q] >= time:
                            entries[m], expiry[m] = entries[q], expiry[q]
                            m += 1
                    ne = m
                    cleanup_at = max(64, 2 * ne)
                write, uncached = cacheable - read, prompt - cacheable
            # CostMetrics.on_model_call
            cost = read * r_read + write * r_write + uncached * r_input + output * r_output
            calls += 1
            c[INPUT] += prompt
            c[OUTPUT] += output
            c[READ] += read
            c[WRITE] += write
            c[UNCACHED] += uncached
            f[COST] += cost
            if decision:
                c[DECISION] += prompt + output
                c[DECISION_OUTPUT] += output
                f[DECISION_COST] += cost
                if pass_id:
                    current_pass = pass_id
            if invalidated and source != RUNTIME_SOURCE:
                c[INVALIDATIONS] += 1
                c[INVALIDATED] += invalidated
                f[INVALIDATION_COST] += invalidated * rewrite_rate
    # -- the run's end
    f[SIM_TIME] = now
    final = ev[rows - 1, 8] if rows else 0
    c[FINAL] = final
    if first_trigger >= 0:
        hold_level[n_hold], hold_time[n_hold] = level, now - since
        n_hold += 1
    c[FIRST_TRIGGER], c[BAND_FLOOR] = first_trigger, band_floor
    n_hold = _timed_only(hold_level, hold_time, n_hold)
    levels, seconds = _held(hold_level[:n_hold], hold_time[:n_hold])
    if first_trigger >= 0:
        _band(c, f, levels, seconds, trigger, budget)
    _window_end(c, sp, names, arrivals, kinds)
    return c, f


@numba.njit(cache=CACHE)
def _close_up(ids, toks, n):
    """Drop the spans gone (id 0) from the cost observer's view of the window; returns its new length."""
    m = 0
    for q in range(n):
        if ids[q]:
            ids[m], toks[m] = ids[q], toks[q]
            m += 1
    return m


@numba.njit(cache=CACHE)
def _cut(entries, ne, behaviour, offset, span_index, has_system, system_tokens):
    """PromptCache._cut: every entry ends at ``offset`` at the latest; returns (entries, the system mark kept)."""
    if behaviour == EXPLICIT:
        while ne and entries[ne - 1, 0] > offset:
            ne -= 1
    else:
        for q in range(ne):
            if entries[q, 0] > offset:
                entries[q, 0], entries[q, 1] = offset, span_index
    return ne, has_system and not system_tokens > offset


@numba.njit(cache=CACHE)
def _half(c, turn, first_trigger, turns):
    """PassMetrics._count_half: the pass's half of the post-trigger turns, and the gap trend's sums."""
    if turn < first_trigger:
        return
    if c[TREND_LAST] >= 0:
        gap = turn - c[TREND_LAST]
        c[TREND_SUM] += gap
        c[TREND_ORDER_SUM] += c[TREND_GAPS] * gap
        c[TREND_GAPS] += 1
    c[TREND_LAST] = turn
    if turn < first_trigger + (turns - first_trigger + 1) / 2:
        c[FIRST_HALF] += 1
    else:
        c[SECOND_HALF] += 1


@numba.njit(cache=CACHE)
def _timed_only(levels, seconds, n):
    """Drop the points held for no time, when some point was held for some; returns how many are left.

    Most of a run's points last no time (the spans that enter or leave at one moment). Once the band's time is
    positive, such a point changes none of its figures: each sum it enters gains +0.0 (the same float), and a
    level held for no time is never the first at which the running time reaches a share above zero, so no
    quantile is one. Without them the levels' sort has half as many to order. (With no time held at all the
    quantiles count the levels instead, and all are kept.)"""
    if not (seconds[:n] > 0).any():
        return n
    m = 0
    for q in range(n):
        if seconds[q] > 0:
            levels[m], seconds[m] = levels[q], seconds[q]
            m += 1
    return m


@numba.njit(cache=CACHE)
def _held(levels, seconds):
    """Seconds held at each distinct level, ascending, each summed in the order held (as a dict would)."""
    n = levels.shape[0]
    # Each level with its place in the order held, as one distinct key: sorted, the keys give the levels ascending
    # and equal ones in the order held, the order a stable sort gives (a merge sort took a tenth of a naive run).
    keys = levels * n + np.arange(n)
    keys.sort()
    out_levels = np.zeros(n, dtype=np.int64)
    out_seconds = np.zeros(n)
    m = -1
    for key in keys:
        q = key % n
        if m < 0 or out_levels[m] != levels[q]:
            m += 1
            out_levels[m] = levels[q]
            out_seconds[m] = 0.0 + seconds[q]
        else:
            out_seconds[m] += seconds[q]
    return out_levels[:m + 1], out_seconds[:m + 1]


@numba.njit(cache=CACHE)
def _band(c, f, levels, seconds, trigger, budget):
    """WindowMetrics.band's sums and quantiles over the levels held (ascending), in the same order."""
    total = above = at_ceiling = 0.0
    for q in range(levels.shape[0]):
        total += seconds[q]
        if levels[q] > trigger:
            above += seconds[q]
        if levels[q] >= budget:
            at_ceiling += seconds[q]
    f[HELD], f[HELD_ABOVE], f[HELD_AT_CEILING] = total, above, at_ceiling
    c[BAND_P10] = _time_quantile(levels, seconds, total, _P10)
    c[BAND_P90] = _time_quantile(levels, seconds, total, _P90)


@numba.njit(cache=CACHE)
def _time_quantile(levels, seconds, total, q):
    """window.time_quantile: the smallest level at or below which the window spent ``q`` of the time."""
    weighted = total > 0
    whole = total if weighted else float(levels.shape[0])
    running, target = 0.0, q * whole * (1 - QUANTILE_TOLERANCE)
    for i in range(levels.shape[0]):
        running += seconds[i] if weighted else 1.0
        if running >= target:
            return levels[i]
    return levels[-1]


@numba.njit(cache=CACHE)
def _window_end(c, sp, names, arrivals, kinds):
    """The run end's figures: evictions nothing in the window records, and the markers' tokens left."""
    rationale, placeholder, summary, tombstone = kinds[0], kinds[1], kinds[2], kinds[3]
    named = np.zeros(sp.shape[0], dtype=np.bool_)
    for sid in range(1, sp.shape[0]):  # (the table indexed, not its rows taken: a row's view costs two counts)
        if sp[sid, _IN_WINDOW]:
            kind = sp[sid, _KIND]
            if kind == rationale or kind == placeholder or kind == summary:
                for q in range(sp[sid, _NAMES_START], sp[sid, _NAMES_START] + sp[sid, _NAMES_COUNT]):
                    named[names[q]] = True
            if kind == tombstone:
                c[TOMBSTONE_TOKENS] += sp[sid, _TOKENS]
            if kind == placeholder:
                c[PLACEHOLDER_TOKENS] += sp[sid, _TOKENS]
    for sid in range(1, sp.shape[0]):
        if sp[sid, _REMOVED] and not named[sid]:
            source = sp[sid, _SOURCE]
            marker = True if source < 0 else arrivals[source, MARKER] != 0  # a pass's own spans are records
            if not marker:
                c[UNRECORDED] += 1


# The scalars of :func:`run`, in its ``numbers`` array.
(N_POLICY, N_TURNS, N_TURN_UNIT, N_CEILING, N_BUDGET, N_TRIGGER, N_SELECT_MAX, N_PROTECT_RECENT, N_REENTRANT,
 N_LOW_WATER) = range(10)
NUMBERS = 10


@numba.njit(cache=CACHE)
def variates(workload_rng, pattern, n, keep):
    """draws.chunk_variates from the generator at ``workload_rng`` (bitgen.addresses)."""
    return draws.chunk_variates(generator_at(workload_rng), pattern, n, keep)


@numba.njit(cache=CACHE)
def run(numbers, policy_rng, variates, pattern, sizes, p_stale, tool, scale, initial, templates, event_first, latency,
        dec, prune_kinds, gate, run_numbers, cache, rates, marker_kinds):
    """One run, compiled end to end: the workload's arrivals (draws.arrivals), the turns (loop.simulate), the
    counters (:func:`fold`); one call, so that no intermediate table crosses into Python."""
    rows, n_init, first, output, tool_s = draws.arrivals(variates, numbers[N_TURNS], pattern, sizes, p_stale, tool,
                                                         scale, numbers[N_TURN_UNIT] != 0, initial, templates,
                                                         event_first)
    ev, times, table, names, passes, now, risk = loop.simulate(
        numbers[N_POLICY], generator_at(policy_rng), rows, n_init, first, output, tool_s, numbers[N_CEILING],
        numbers[N_BUDGET], numbers[N_TRIGGER], latency, dec, numbers[N_SELECT_MAX], numbers[N_PROTECT_RECENT],
        numbers[N_REENTRANT] != 0, prune_kinds, numbers[N_LOW_WATER], gate)
    c, f = fold(ev, times, table, names, passes, rows, now, run_numbers, cache, rates, marker_kinds)
    f[GATE_RISK] = risk
    return c, f
