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
   of its own), then the cap is checked.

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
def _prefix(tok, n, pos):
    s = 0
    for k in range(pos):
        s += tok[k]
    return s


@_jit
def _remove_at(st, pos, n):
    """Drop the span at window position ``pos`` (the arrays shift down); the new length."""
    for arr in st:
        for k in range(pos, n - 1):
            arr[k] = arr[k + 1]
    return n - 1


@_jit
def _insert_at(st, pos, n, kind, tok, turn, item, sid):
    for arr in st:
        for k in range(n, pos, -1):
            arr[k] = arr[k - 1]
    st[0][pos] = kind
    st[1][pos] = tok
    st[2][pos] = turn
    st[3][pos] = item
    st[4][pos] = sid
    return n + 1


@_jit
def simulate(work, base, call, output, billed, policy, summary, agent, seed, draws, use_draws):
    """One run; returns its record (:data:`COLUMNS`) as float64.

    ``policy``: int64 [kind, n, placeholder tokens, keep_turns]; ``summary``: float64 [keep_tool_output,
    keep_tool_call, keep_other, size_half, age_half_life, tokens, max_tokens, instruction_tokens];
    ``agent``: float64 [need_rate (the run's own), need_decay, need_horizon, summary_fidelity, redo_turns, cap,
    cap counts decisions (0/1)]; ``draws``: the policy stream's uniforms (``use_draws``), else the summary's
    draws are counter-based on ``seed``.
    """
    rate, decay, horizon, fidelity = agent[0], agent[1], int(agent[2]), agent[3]
    redo_turns, cap, with_decisions = int(agent[4]), int(agent[5]), agent[6] > 0
    kind_p = policy[0]
    steps_max = (cap if cap > 0 else work * (1 + min(work, horizon))) + 2
    size = 2 * steps_max + 8
    # window, in order: kind, tokens, turn, item, span id
    st = np.zeros((5, size), np.int64)
    n = 0
    ids = 3 * size + 8
    # by span id: the content a summary remembers (kind, tokens, turn), the item, whether a summary names it
    c_kind = np.zeros(ids, np.int64)
    c_tok = np.zeros(ids, np.int64)
    c_turn = np.zeros(ids, np.int64)
    c_item = np.full(ids, -1, np.int64)
    named = np.zeros(ids, np.bool_)
    names = np.zeros(ids, np.int64)  # the summary's names in order
    n_names = 0
    # by item (the work turn's output, 0-based in order)
    it_turn = np.zeros(work + 1, np.int64)
    out_alive = np.zeros(work + 1, np.int64)
    call_alive = np.zeros(work + 1, np.int64)
    ph_alive = np.zeros(work + 1, np.int64)
    carried = np.zeros(work + 1, np.int64)
    n_items = 0
    next_id = 0
    util = 0
    stable = 0  # prompt tokens unchanged since the last call (what an ideal implicit cache reads)
    rec = np.zeros(N_COLUMNS, np.float64)
    agent_calls = 0
    decision_calls = 0
    k_draw = 0
    need_item = np.zeros(work + 1, np.int64)
    need_how = np.zeros(work + 1, np.int64)
    if base > 0:
        next_id += 1
        n = _insert_at(st, n, n, SYSTEM, base, 0, -1, next_id)
        util += base
    capped = False
    for w in range(1, work + 1):
        # 1. needs, drawn against the window as the last turn left it
        n_need = 0
        if rate > 0.0:
            for i in range(n_items):
                t = it_turn[i]
                if w - t > horizon or t >= w:
                    continue
                p = rate * math.exp(-(w - t - 1) / decay)
                if p > 1.0:
                    p = 1.0
                if uniform(seed, NEED, w, i) < p:
                    if out_alive[i] > 0:
                        continue
                    how = LOST
                    if carried[i] > 0:
                        if uniform(seed, CARRY, w, i) < fidelity:
                            continue
                        how = RECORDED
                    elif call_alive[i] > 0 or ph_alive[i] > 0:
                        how = RECORDED
                    need_item[n_need] = i
                    need_how[n_need] = how
                    n_need += 1
        # 2. re-fetch and redo turns
        for r in range(n_need):
            i = need_item[r]
            turns = 1 if need_how[r] == RECORDED else redo_turns
            for _ in range(turns):
                rec[6] += util
                rec[8] += stable
                rec[7] += call  # a re-fetch's call writes the item's tool call
                stable = util
                agent_calls += 1
                if call > 0:
                    next_id += 1
                    n = _insert_at(st, n, n, CALL, call, w, i, next_id)
                    util += call
                    c_kind[next_id], c_tok[next_id], c_turn[next_id], c_item[next_id] = CALL, call, w, i
                    call_alive[i] += 1
                next_id += 1
                n = _insert_at(st, n, n, OUTPUT, output, w, i, next_id)
                util += output
                c_kind[next_id], c_tok[next_id], c_turn[next_id], c_item[next_id] = OUTPUT, output, w, i
                out_alive[i] += 1
                if need_how[r] == RECORDED:
                    rec[3] += 1
                else:
                    rec[4] += 1
                n, util, stable, next_id, n_names, k_draw, decision_calls = _consult(
                    st, n, util, stable, next_id, w, policy, summary, c_kind, c_tok, c_turn, c_item, named, names,
                    n_names, out_alive, call_alive, ph_alive, carried, rec, seed, draws, use_draws, k_draw,
                    decision_calls)
                counted = agent_calls + (decision_calls if with_decisions else 0)
                if cap > 0 and counted >= cap:
                    capped = True
                    break
            if capped:
                break
        if capped:
            break
        # 3. the work turn
        rec[6] += util
        rec[8] += stable
        rec[7] += billed
        stable = util
        agent_calls += 1
        it_turn[n_items] = w
        if call > 0:
            next_id += 1
            n = _insert_at(st, n, n, CALL, call, w, n_items, next_id)
            util += call
            c_kind[next_id], c_tok[next_id], c_turn[next_id], c_item[next_id] = CALL, call, w, n_items
            call_alive[n_items] += 1
        next_id += 1
        n = _insert_at(st, n, n, OUTPUT, output, w, n_items, next_id)
        util += output
        c_kind[next_id], c_tok[next_id], c_turn[next_id], c_item[next_id] = OUTPUT, output, w, n_items
        out_alive[n_items] += 1
        n_items += 1
        n, util, stable, next_id, n_names, k_draw, decision_calls = _consult(
            st, n, util, stable, next_id, w, policy, summary, c_kind, c_tok, c_turn, c_item, named, names, n_names,
            out_alive, call_alive, ph_alive, carried, rec, seed, draws, use_draws, k_draw, decision_calls)
        rec[2] += 1
        counted = agent_calls + (decision_calls if with_decisions else 0)
        if cap > 0 and counted >= cap:
            capped = True
            break
    rec[0] = agent_calls
    rec[1] = decision_calls
    rec[5] = 1.0 if capped else 0.0
    return rec


@_jit
def _take(st, pos, n, out_alive, call_alive, ph_alive):
    """Remove the span at ``pos``, keeping the items' counts of what of them the window holds."""
    kind, item = st[0][pos], st[3][pos]
    if kind == OUTPUT:
        out_alive[item] -= 1
    elif kind == CALL:
        call_alive[item] -= 1
    elif kind == MASKED:
        ph_alive[item] -= 1
    return _remove_at(st, pos, n)


@_jit
def _clear(st, n, util, stable, next_id, pos_list, sizes, count, c_kind, c_tok, c_turn, c_item, out_alive,
           call_alive, ph_alive):
    """The engine's Clear: each span (positions in window order) replaced where it stood by a placeholder of its
    size (none for size 0); the placeholder of an output records the item."""
    shift = 0
    first = -1
    for k in range(count):
        pos = pos_list[k] - shift
        if first < 0:
            first = pos
        kind, tok, turn, item = st[0][pos], st[1][pos], st[2][pos], st[3][pos]
        n = _take(st, pos, n, out_alive, call_alive, ph_alive)
        util -= tok
        next_id += 1  # the marker's id is taken whether or not it is placed
        if sizes[k] > 0:
            n = _insert_at(st, pos, n, MASKED if kind == OUTPUT else kind, sizes[k], turn, item, next_id)
            util += sizes[k]
            c_kind[next_id], c_tok[next_id], c_turn[next_id], c_item[next_id] = MASKED, sizes[k], turn, item
            if kind == OUTPUT:
                ph_alive[item] += 1
        else:
            shift += 1
    if first >= 0:
        stable = min(stable, _prefix(st[1], n, first))
    return n, util, stable, next_id


@_jit
def _mask_observations(st, n, keep, ph):
    """SWE-agent's LastNObservations (polling 1): the window positions of the outputs older than the last
    ``keep`` observations (the instance template counts as one)."""
    count = 0
    for k in range(n):
        if st[0][k] == OUTPUT or st[0][k] == MASKED:
            count += 1
    older = max(0, max(0, count + 1 - keep) - 1)
    pos = np.zeros(n, np.int64)
    m = 0
    seen = 0
    for k in range(n):
        if st[0][k] == OUTPUT or st[0][k] == MASKED:
            if st[0][k] == OUTPUT and seen < older:
                pos[m] = k
                m += 1
            seen += 1
    return pos, m


@_jit
def _mask_events(st, n, window, turns):
    """OpenHands' ObservationMaskingCondenser (``observation_masking.openhands_masked``): the positions to clear
    and whether each is a masked output (else a span of its step, which leaves without a placeholder)."""
    calls = np.zeros(turns + 2, np.int64)
    outs = np.zeros(turns + 2, np.int64)
    at = np.zeros(n, np.int64)  # event index of each output (-1: not an output)
    events = 0
    system = False
    for k in range(n):
        kind, turn = st[0][k], st[2][k]
        at[k] = -1
        if kind == SYSTEM:
            if not system:
                events += 1
            system = True
        elif kind == CALL:
            calls[turn] += 1
            events += 1
        elif kind == OUTPUT or kind == MASKED:
            outs[turn] += 1
            if outs[turn] > calls[turn]:
                calls[turn] = outs[turn]
                events += 1
            if kind == OUTPUT:
                at[k] = events
            events += 1
        else:
            events += 1
    steps = np.zeros(turns + 2, np.bool_)
    masked = np.zeros(n, np.bool_)
    anything = False
    for k in range(n):
        if at[k] >= 0 and at[k] < events - window:
            masked[k] = True
            steps[st[2][k]] = True
            anything = True
    pos = np.zeros(n, np.int64)
    is_masked = np.zeros(n, np.bool_)
    m = 0
    if anything:
        for k in range(n):
            kind = st[0][k]
            if masked[k] or (steps[st[2][k]] and (kind == CALL or kind == OUTPUT)):
                pos[m] = k
                is_masked[m] = masked[k]
                m += 1
    return pos, is_masked, m


@_jit
def _keep_probability(kind, tok, turn, now, summary):
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
def _summary_batches(st, n, util, stable, next_id, w, batch, keep_turns, summary, c_kind, c_tok, c_turn, c_item,
                     named, names, n_names, out_alive, call_alive, ph_alive, carried, rec, seed, draws, use_draws,
                     k_draw, decision_calls):
    """llm-summary in turn batches: once ``batch + keep_turns`` turns are unsummarized, the oldest ``batch`` of
    them (and the summary before) are replaced by a summary, whose content is drawn as SummaryWriter draws it."""
    seen = np.zeros(w + 2, np.bool_)
    distinct = 0
    for k in range(n):
        kind = st[0][k]
        if kind == CALL or kind == OUTPUT or kind == MASKED:
            t = st[2][k]
            if not seen[t]:
                seen[t] = True
                distinct += 1
    if distinct < batch + keep_turns:
        return n, util, stable, next_id, n_names, k_draw, decision_calls
    last = 0
    found = 0
    for t in range(w + 2):
        if seen[t]:
            found += 1
            if found == batch:
                last = t
                break
    # the model call reads the window and the instruction
    rec[9] += util + int(summary[7])
    rec[11] += stable
    stable = util
    decision_calls += 1
    # which content the summary carries: one draw per piece judged, in window order
    first = -1
    replaced_tokens = 0
    new_names = np.zeros(n_names + n + 1, np.int64)
    m = 0
    k = 0
    while k < n:
        kind = st[0][k]
        if kind == SUMMARY or ((kind == CALL or kind == OUTPUT or kind == MASKED) and st[2][k] <= last):
            if first < 0:
                first = k
            replaced_tokens += st[1][k]
            if kind == SUMMARY:
                for q in range(n_names):
                    cid = names[q]
                    u = draws[k_draw] if use_draws else uniform(seed, SUMMARY_DRAW, k_draw, 0)
                    k_draw += 1
                    if u < _keep_probability(c_kind[cid], c_tok[cid], c_turn[cid], w, summary):
                        new_names[m] = cid
                        m += 1
                    else:
                        named[cid] = False
                        if c_kind[cid] == OUTPUT:
                            carried[c_item[cid]] -= 1
            else:
                sid = st[4][k]
                u = draws[k_draw] if use_draws else uniform(seed, SUMMARY_DRAW, k_draw, 0)
                k_draw += 1
                if u < _keep_probability(kind, st[1][k], st[2][k], w, summary):
                    new_names[m] = sid
                    m += 1
                    named[sid] = True
                    if kind == OUTPUT:
                        carried[st[3][k]] += 1
            util -= st[1][k]
            n = _take(st, k, n, out_alive, call_alive, ph_alive)
        else:
            k += 1
    size = int(round(summary[5]))
    tokens = max(1, min(size, int(summary[6]), replaced_tokens))
    rec[10] += tokens
    next_id += 1
    n = _insert_at(st, first, n, SUMMARY, tokens, w, -1, next_id)
    util += tokens
    c_kind[next_id], c_tok[next_id], c_turn[next_id] = SUMMARY, tokens, w
    for q in range(m):
        names[q] = new_names[q]
    stable = min(stable, _prefix(st[1], n, first))
    return n, util, stable, next_id, m, k_draw, decision_calls


@_jit
def _consult(st, n, util, stable, next_id, w, policy, summary, c_kind, c_tok, c_turn, c_item, named, names,
             n_names, out_alive, call_alive, ph_alive, carried, rec, seed, draws, use_draws, k_draw,
             decision_calls):
    """The policy consulted after a turn (:data:`NOOP`, :data:`MASK_OBSERVATIONS`, :data:`MASK_EVENTS`,
    :data:`SUMMARY_BATCHES`)."""
    kind = policy[0]
    if kind == MASK_OBSERVATIONS:
        pos, m = _mask_observations(st, n, policy[1], policy[2])
        if m:
            sizes = np.full(m, policy[2], np.int64)
            n, util, stable, next_id = _clear(st, n, util, stable, next_id, pos, sizes, m, c_kind, c_tok, c_turn,
                                              c_item, out_alive, call_alive, ph_alive)
    elif kind == MASK_EVENTS:
        pos, is_masked, m = _mask_events(st, n, policy[1], w)
        if m:
            sizes = np.zeros(m, np.int64)
            for q in range(m):
                if is_masked[q]:
                    sizes[q] = policy[2]
            n, util, stable, next_id = _clear(st, n, util, stable, next_id, pos, sizes, m, c_kind, c_tok, c_turn,
                                              c_item, out_alive, call_alive, ph_alive)
    elif kind == SUMMARY_BATCHES:
        n, util, stable, next_id, n_names, k_draw, decision_calls = _summary_batches(
            st, n, util, stable, next_id, w, policy[1], policy[3], summary, c_kind, c_tok, c_turn, c_item, named,
            names, n_names, out_alive, call_alive, ph_alive, carried, rec, seed, draws, use_draws, k_draw,
            decision_calls)
    return n, util, stable, next_id, n_names, k_draw, decision_calls
