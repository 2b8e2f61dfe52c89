"""The outcome forecast's fast path: one instance's run under a policy with the reacting agent, as plain numbers.

A re-implementation of what the SimPy engine does for the workloads of :mod:`prunesim.studies.outcome_workload`
(a pinned base, then work turns of one tool call and one tool output each) under the agent model of
:mod:`prunesim.model.agent` and the policies an outcome study runs (no-op, observation masking counted in
observations or in OpenHands' events, and llm-summary in turn batches). It keeps the window span by span as
the engine does (window order, placeholders where the policy cleared, a summary where it compacted), draws the
agent's needs with the same counter-based uniforms (:mod:`prunesim.model.agent_draws`) and takes the summary's
draws from a stream of uniforms the caller gives (the policy's own stream, to match the engine, or
counter-based ones in bulk), so that on the same inputs it gives the engine's figures to the token:
``tests/test_agent_kernel.py`` holds them equal, policy by policy. The order of a turn, as the engine's:

1. the needs of work turn ``w`` are drawn and each needed item's standing read, before anything moves;
2. each re-fetch or redo turn: a model call, its tool call and output enter, the policy is consulted, the cap
   is checked (a stop here leaves the work turn undone);
3. the work turn's model call, its call and output enter, the policy is consulted (a summary is a model call
   of its own), then the cap is checked (not after the last work turn: that run is done).

Every agent call is a turn of its own for the policy (its spans carry the count of agent calls so far, as the
engine's turn), while the items' ages, and so the needs, count work turns.

With numba installed (the ``kernel`` extra) the loop is compiled; without it the same code runs as Python.
"""

from __future__ import annotations

import math

import numpy as np

try:  # the compiled loop is an extra; the same code runs as Python without it
    import numba

    def _jit(fn):
        return numba.njit(cache=True)(fn)

    COMPILED = True
except ImportError:  # pragma: no cover - exercised where numba is absent
    def _jit(fn):
        return fn

    COMPILED = False

# Policy kinds (the `policy` array's first entry) and span kinds.
NOOP, MASK_OBSERVATIONS, MASK_EVENTS, SUMMARY_BATCHES = 0, 1, 2, 3
SYSTEM, CALL, OUTPUT, MASKED, SUMMARY = 0, 1, 2, 3, 4
HELD, CARRIED, RECORDED, LOST = 0, 1, 2, 3
# The record of one run (columns of `simulate`'s result).
COLUMNS = ("agent_calls", "decision_calls", "work_turns", "refetch_turns", "redo_turns", "capped",
           "agent_prompt", "agent_output", "agent_cached", "decision_prompt", "decision_output", "decision_cached")
N_COLUMNS = len(COLUMNS)

# splitmix64 (prunesim.model.agent_draws): the same constants, the same chain.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_UNIT = 1.0 / 9007199254740992.0  # 2**-53
NEED, CARRY, SUMMARY_DRAW = 2, 3, 4  # purposes (agent_draws' NEED and CARRY; 4: a bulk run's summary draws)


@_jit
def _mix(z):
    z = z + _GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@_jit
def uniform(seed, purpose, a, b):
    """``agent_draws.draw(seed, purpose, a, b)``: the same bits."""
    x = _mix(_mix(_mix(_mix(np.uint64(seed)) ^ np.uint64(purpose)) ^ np.uint64(a)) ^ np.uint64(b))
    return float(x >> _S11) * _UNIT


@_jit
def _prefix(tok, pos):
    s = 0
    for k in range(pos):
        s += tok[k]
    return s


@_jit
def _remove_at(st, pos, n):
    """Drop the span at window position ``pos`` (later ones move down); the new length."""
    for r in range(5):
        row = st[r]
        for k in range(pos, n - 1):
            row[k] = row[k + 1]
    return n - 1


@_jit
def _insert_at(st, pos, n, kind, tok, turn, item, sid):
    """Put a span at window position ``pos`` (later ones move up); the new length."""
    for r in range(5):
        row = st[r]
        for k in range(n, pos, -1):
            row[k] = row[k - 1]
    st[0, pos] = kind
    st[1, pos] = tok
    st[2, pos] = turn
    st[3, pos] = item
    st[4, pos] = sid
    return n + 1


def scratch(work_max: int, cap: int, horizon: int):
    """The arrays one batch's runs reuse, sized for its longest run."""
    steps = (cap if cap > 0 else work_max * (1 + min(work_max, horizon))) + 2
    size = 2 * steps + 8
    ids = 3 * size + 8
    turns = steps + work_max + 4
    return (np.zeros((5, size), np.int64),  # the window in order: kind, tokens, turn, item, span id
            np.zeros((4, ids), np.int64),  # by span id: kind, tokens, turn, item (what a summary remembers)
            np.zeros(ids, np.bool_),  # by span id: a summary in the window names it
            np.zeros((2, ids), np.int64),  # the summary's names in order, and the next summary's
            np.zeros((7, work_max + 2), np.int64),  # by item: turn, outputs, calls and placeholders held,
            #                                         outputs a summary carries; the needs: item, how
            np.zeros((4, size), np.int64),  # per consult: positions, sizes, event index, masked (0/1)
            np.zeros((3, turns), np.int64))  # per consult, by turn: calls, outputs, seen/masked


@_jit
def _take(st, pos, n, items):
    """Remove the span at ``pos``, keeping count of what of each item the window holds."""
    kind, item = st[0, pos], st[3, pos]
    if kind == OUTPUT:
        items[1, item] -= 1
    elif kind == CALL:
        items[2, item] -= 1
    elif kind == MASKED:
        items[3, item] -= 1
    return _remove_at(st, pos, n)


@_jit
def _place(st, n, content, items, next_id, kind, tok, turn, item):
    """Append a new span (a call or an output of ``item``); the new length and the last id."""
    next_id += 1
    n = _insert_at(st, n, n, kind, tok, turn, item, next_id)
    content[0, next_id], content[1, next_id], content[2, next_id], content[3, next_id] = kind, tok, turn, item
    items[1 if kind == OUTPUT else 2, item] += 1
    return n, next_id


@_jit
def _clear(st, n, util, stable, next_id, work, m, content, items):
    """The engine's Clear of the ``m`` spans at positions ``work[0, :m]`` (in window order): each replaced where
    it stood by a placeholder of size ``work[1, k]`` (none for 0); an output's placeholder records its item."""
    shift = 0
    first = -1
    for k in range(m):
        pos = work[0, k] - shift
        if first < 0:
            first = pos
        kind, tok, turn, item = st[0, pos], st[1, pos], st[2, pos], st[3, pos]
        n = _take(st, pos, n, items)
        util -= tok
        next_id += 1  # the marker's id is taken whether or not it is placed
        size = work[1, k]
        if size > 0:
            n = _insert_at(st, pos, n, MASKED if kind == OUTPUT else kind, size, turn, item, next_id)
            util += size
            content[0, next_id], content[1, next_id], content[2, next_id], content[3, next_id] = (
                MASKED, size, turn, item)
            if kind == OUTPUT:
                items[3, item] += 1
        else:
            shift += 1
    if first >= 0:
        stable = min(stable, _prefix(st[1], first))
    return n, util, stable, next_id


@_jit
def _mask_observations(st, n, keep, placeholder, work):
    """SWE-agent's LastNObservations (polling 1): the outputs older than the last ``keep`` observations (the
    instance template counts as one) go to ``work``; their count."""
    count = 0
    for k in range(n):
        if st[0, k] == OUTPUT or st[0, k] == MASKED:
            count += 1
    older = max(0, max(0, count + 1 - keep) - 1)
    m = 0
    seen = 0
    for k in range(n):
        kind = st[0, k]
        if kind == OUTPUT or kind == MASKED:
            if kind == OUTPUT and seen < older:
                work[0, m] = k
                work[1, m] = placeholder
                m += 1
            seen += 1
    return m


@_jit
def _mask_events(st, n, window, placeholder, work, by_turn):
    """OpenHands' ObservationMaskingCondenser (``observation_masking.openhands_masked``): the outputs that
    ``window`` events or more follow, with a placeholder each, and every other call and output of their steps,
    which leave without one."""
    for k in range(n):
        t = st[2, k]
        by_turn[0, t] = 0
        by_turn[1, t] = 0
        by_turn[2, t] = 0
    events = 0
    system = False
    for k in range(n):
        kind, t = st[0, k], st[2, k]
        work[2, k] = -1
        if kind == SYSTEM:
            if not system:
                events += 1
            system = True
        elif kind == CALL:
            by_turn[0, t] += 1
            events += 1
        elif kind == OUTPUT or kind == MASKED:
            by_turn[1, t] += 1
            if by_turn[1, t] > by_turn[0, t]:
                by_turn[0, t] = by_turn[1, t]
                events += 1
            if kind == OUTPUT:
                work[2, k] = events
            events += 1
        else:
            events += 1
    anything = False
    for k in range(n):
        work[3, k] = 0
        if work[2, k] >= 0 and work[2, k] < events - window:
            work[3, k] = 1
            by_turn[2, st[2, k]] = 1
            anything = True
    m = 0
    if anything:
        for k in range(n):
            kind = st[0, k]
            if work[3, k] == 1 or (by_turn[2, st[2, k]] == 1 and (kind == CALL or kind == OUTPUT)):
                work[0, m] = k
                work[1, m] = placeholder if work[3, k] == 1 else 0
                m += 1
    return m


@_jit
def _keep_probability(kind, tok, turn, now, summary):
    """SummaryWriter's chance of carrying a piece of content (policies/summary.py, ``keep_probability``)."""
    if kind == OUTPUT:
        base = summary[0]
    elif kind == CALL:
        base = summary[1]
    else:
        base = summary[2]
    if summary[3] > 0:
        base *= summary[3] / (summary[3] + tok)
    if summary[4] > 0:
        base *= 0.5 ** (max(0, now - turn) / summary[4])
    return base


@_jit
def _summary_batches(st, n, util, stable, next_id, now, batch, keep_turns, summary, content, named, names, n_names,
                     items, rec, seed, draws, use_draws, k_draw, by_turn):
    """llm-summary in turn batches: once ``batch + keep_turns`` turns are unsummarized, the oldest ``batch`` of
    them (and the summary before) are replaced by a summary; what it carries is drawn as SummaryWriter draws it
    (one uniform per piece judged, in window order; the size fixed: a summary of sigma 0)."""
    for t in range(now + 2):  # (turns that left the window may still be marked from an earlier consult)
        by_turn[2, t] = 0
    distinct = 0
    for k in range(n):
        kind = st[0, k]
        if kind == CALL or kind == OUTPUT or kind == MASKED:
            t = st[2, k]
            if by_turn[2, t] == 0:
                by_turn[2, t] = 1
                distinct += 1
    if distinct < batch + keep_turns:
        return n, util, stable, next_id, n_names, k_draw, 0
    last = 0
    found = 0
    for t in range(now + 2):
        if by_turn[2, t] == 1:
            found += 1
            if found == batch:
                last = t
                break
    rec[9] += util + int(summary[7])  # the call reads the window and the instruction
    rec[11] += stable
    stable = util
    first = -1
    replaced_tokens = 0
    m = 0
    k = 0
    while k < n:
        kind = st[0, k]
        if kind == SUMMARY or ((kind == CALL or kind == OUTPUT or kind == MASKED) and st[2, k] <= last):
            if first < 0:
                first = k
            replaced_tokens += st[1, k]
            if kind == SUMMARY:
                for q in range(n_names):
                    cid = names[0, q]
                    u = draws[k_draw] if use_draws else uniform(seed, SUMMARY_DRAW, k_draw, 0)
                    k_draw += 1
                    if u < _keep_probability(content[0, cid], content[1, cid], content[2, cid], now, summary):
                        names[1, m] = cid
                        m += 1
                    else:
                        named[cid] = False
                        if content[0, cid] == OUTPUT:
                            items[4, content[3, cid]] -= 1
            else:
                sid = st[4, k]
                u = draws[k_draw] if use_draws else uniform(seed, SUMMARY_DRAW, k_draw, 0)
                k_draw += 1
                if u < _keep_probability(kind, st[1, k], st[2, k], now, summary):
                    names[1, m] = sid
                    m += 1
                    named[sid] = True
                    if kind == OUTPUT:
                        items[4, st[3, k]] += 1
            util -= st[1, k]
            n = _take(st, k, n, items)
        else:
            k += 1
    tokens = max(1, min(int(round(summary[5])), int(summary[6]), replaced_tokens))
    rec[10] += tokens
    next_id += 1
    n = _insert_at(st, first, n, SUMMARY, tokens, now, -1, next_id)
    util += tokens
    content[0, next_id], content[1, next_id], content[2, next_id], content[3, next_id] = SUMMARY, tokens, now, -1
    for q in range(m):
        names[0, q] = names[1, q]
    stable = min(stable, _prefix(st[1], first))
    return n, util, stable, next_id, m, k_draw, 1


@_jit
def _consult(st, n, util, stable, next_id, now, policy, summary, content, named, names, n_names, items, rec, seed,
             draws, use_draws, k_draw, work, by_turn):
    """The policy consulted after a turn (``now``: the engine's turn, one per agent call); returns the state and
    whether it made a model call (a summary)."""
    kind = policy[0]
    called = 0
    m = 0
    if kind == MASK_OBSERVATIONS:
        m = _mask_observations(st, n, policy[1], policy[2], work)
    elif kind == MASK_EVENTS:
        m = _mask_events(st, n, policy[1], policy[2], work, by_turn)
    elif kind == SUMMARY_BATCHES:
        n, util, stable, next_id, n_names, k_draw, called = _summary_batches(
            st, n, util, stable, next_id, now, policy[1], policy[3], summary, content, named, names, n_names, items,
            rec, seed, draws, use_draws, k_draw, by_turn)
    if m:
        n, util, stable, next_id = _clear(st, n, util, stable, next_id, work, m, content, items)
    return n, util, stable, next_id, n_names, k_draw, called


@_jit
def _run(work_turns, base, call, output, billed, policy, summary, rate, decay, horizon, fidelity, redo_turns, cap,
         with_decisions, seed, draws, use_draws, st, content, named, names, items, work, by_turn, rec):
    """One run into ``rec`` (:data:`COLUMNS`), on the scratch arrays (:func:`scratch`)."""
    n = 0
    next_id = 0
    util = 0
    stable = 0  # prompt tokens unchanged since the last call: what an ideal implicit cache reads
    n_names = 0
    n_items = 0
    k_draw = 0
    agent_calls = 0
    decision_calls = 0
    capped = False
    for q in range(N_COLUMNS):
        rec[q] = 0.0
    for q in range(work_turns + 1):
        for r in range(7):
            items[r, q] = 0
    if base > 0:
        next_id += 1
        n = _insert_at(st, 0, 0, SYSTEM, base, 0, -1, next_id)
        util += base
    for w in range(1, work_turns + 1):
        # 1. the needs of work turn w, and where each needed item stands, before anything moves
        n_need = 0
        if rate > 0.0:
            for i in range(n_items):
                t = items[0, i]
                if w - t > horizon or t >= w or items[1, i] > 0:  # a held item: its draw would change nothing
                    continue
                p = rate * math.exp(-(w - t - 1) / decay)
                if p > 1.0:
                    p = 1.0
                if uniform(seed, NEED, w, i) < p:
                    how = LOST
                    if items[4, i] > 0:
                        if uniform(seed, CARRY, w, i) < fidelity:
                            continue
                        how = RECORDED
                    elif items[2, i] > 0 or items[3, i] > 0:
                        how = RECORDED
                    items[5, n_need] = i
                    items[6, n_need] = how
                    n_need += 1
        # 2. a re-fetch (one turn) or a redo (redo_turns) for each, the policy consulted after every turn
        for r in range(n_need):
            i = items[5, r]
            how = items[6, r]
            for _ in range(1 if how == RECORDED else redo_turns):
                rec[6] += util
                rec[8] += stable
                rec[7] += call  # the call that asks for it again writes the item's tool call
                stable = util
                agent_calls += 1
                if call > 0:
                    n, next_id = _place(st, n, content, items, next_id, CALL, call, agent_calls, i)
                    util += call
                n, next_id = _place(st, n, content, items, next_id, OUTPUT, output, agent_calls, i)
                util += output
                rec[3 if how == RECORDED else 4] += 1
                n, util, stable, next_id, n_names, k_draw, called = _consult(
                    st, n, util, stable, next_id, agent_calls, policy, summary, content, named, names, n_names, items,
                    rec, seed, draws, use_draws, k_draw, work, by_turn)
                decision_calls += called
                if cap > 0 and agent_calls + (decision_calls if with_decisions else 0) >= cap:
                    capped = True
                    break
            if capped:
                break
        if capped:
            break
        # 3. the work turn: its call, its tool call and output (a new item), the policy, the cap
        rec[6] += util
        rec[8] += stable
        rec[7] += billed
        stable = util
        agent_calls += 1
        items[0, n_items] = w  # an item's age is counted in work turns; its spans carry the engine's turn
        if call > 0:
            n, next_id = _place(st, n, content, items, next_id, CALL, call, agent_calls, n_items)
            util += call
        n, next_id = _place(st, n, content, items, next_id, OUTPUT, output, agent_calls, n_items)
        util += output
        n_items += 1
        n, util, stable, next_id, n_names, k_draw, called = _consult(
            st, n, util, stable, next_id, agent_calls, policy, summary, content, named, names, n_names, items, rec,
            seed, draws, use_draws, k_draw, work, by_turn)
        decision_calls += called
        rec[2] += 1
        # (a run whose last work turn reaches the cap is done: nothing is left to stop)
        if cap > 0 and w < work_turns and agent_calls + (decision_calls if with_decisions else 0) >= cap:
            capped = True
            break
    for q in range(next_id + 1):
        named[q] = False
    rec[0] = agent_calls
    rec[1] = decision_calls
    rec[5] = 1.0 if capped else 0.0


@_jit
def _batch(works, bases, calls, outputs, billed, rates, seeds, policy, summary, decay, horizon, fidelity, redo_turns,
           cap, with_decisions, st, content, named, names, items, work, by_turn, out):
    empty = np.zeros(1)
    for j in range(len(works)):
        _run(works[j], bases[j], calls[j], outputs[j], billed[j], policy, summary, rates[j], decay, horizon,
             fidelity, redo_turns, cap, with_decisions, seeds[j], empty, False, st, content, named, names, items,
             work, by_turn, out[j])


def run_batch(works, bases, calls, outputs, billed, rates, seeds, policy, summary, decay: float, horizon: int,
              fidelity: float, redo_turns: int, cap: int, with_decisions: bool) -> np.ndarray:
    """Many runs under one policy and one agent but each its own workload, need rate and seed: one record each
    (rows of :data:`COLUMNS`). The summary's draws are counter-based on each run's seed."""
    works = np.ascontiguousarray(works, dtype=np.int64)
    out = np.zeros((len(works), N_COLUMNS))
    if not len(works):
        return out
    sc = scratch(int(works.max()), int(cap), int(horizon))
    _batch(works, np.ascontiguousarray(bases, dtype=np.int64), np.ascontiguousarray(calls, dtype=np.int64),
           np.ascontiguousarray(outputs, dtype=np.int64), np.ascontiguousarray(billed, dtype=np.float64),
           np.ascontiguousarray(rates, dtype=np.float64), np.ascontiguousarray(seeds, dtype=np.uint64),
           np.asarray(policy, dtype=np.int64), np.asarray(summary, dtype=np.float64), float(decay), int(horizon),
           float(fidelity), int(redo_turns), int(cap), bool(with_decisions), *sc, out)
    return out


def run_one(work: int, base: int, call: int, output: int, billed: float, policy, summary, rate: float, decay: float,
            horizon: int, fidelity: float, redo_turns: int, cap: int, with_decisions: bool, seed: int,
            draws: np.ndarray | None = None) -> np.ndarray:
    """One run's record; ``draws``: the policy stream's uniforms for the summary's draws (the engine's, to
    compare with it), else counter-based on ``seed``."""
    sc = scratch(int(work), int(cap), int(horizon))
    rec = np.zeros(N_COLUMNS)
    use = draws is not None
    _run(int(work), int(base), int(call), int(output), float(billed), np.asarray(policy, dtype=np.int64),
         np.asarray(summary, dtype=np.float64), float(rate), float(decay), int(horizon), float(fidelity),
         int(redo_turns), int(cap), bool(with_decisions), np.uint64(seed),
         np.asarray(draws if use else np.zeros(1), dtype=np.float64), use, *sc, rec)
    return rec
