"""The compiled turn loop: noop, naive, recency, slack-gated on a synthetic workload, as a record of what happened.

It does what :class:`prunesim.model.engine.Engine` does for these policies, in the
same order and with the same arithmetic (window, hard ceiling, prune pass,
clock), and draws the policy's numbers from the policy's own generator in the
same order (numba's ``Generator`` reproduces numpy's draws bit for bit). It
computes no metric: it writes one row per published event, which
:mod:`prunesim.kernel.fold` folds into the observers' counters.
"""

from __future__ import annotations

import numba
import numpy as np

# Event codes (column 0 of an event row).
APPEND, TRUNC, REMOVE, CALL, REACHED, TURN_END, PASS, NON_MODEL, GATE = range(9)
# The policies (the first argument of simulate).
NOOP, NAIVE, RECENCY, SLACK_GATED = range(4)
# Causes: of a truncation (column 2) and of a removal (column 2).
FORCED_TRUNCATION, FORCED_DROP, RATIONALE_CUT = range(3)
EVICT, DROP, NONMODEL_RECENCY, FALLBACK_RECENCY = range(4)
COLUMNS = 11  # code, turn, a, b, c, d, e, f, utilization, appended total, removed total
PASS_COLUMNS = 17  # PassRecord's fields, time_s as 0 (the event's time holds it)


@numba.njit(cache=True, inline="always")
def _log(ev, times, n, code, turn, a, b, c, d, e, f, now, util, added, removed):
    """Write event row ``n`` (the table is sized for every row a run can write: see simulate)."""
    ev[n, 0], ev[n, 1], ev[n, 2], ev[n, 3], ev[n, 4], ev[n, 5] = code, turn, a, b, c, d
    ev[n, 6], ev[n, 7], ev[n, 8], ev[n, 9], ev[n, 10] = e, f, util, added, removed
    times[n] = now
    return n + 1


@numba.njit(cache=True, inline="always")
def _add(sp, order, n_order, sid, tokens, ceiling, util, added):
    """Window.add: place span ``sid`` at the end, cut to the ceiling; returns (kept, cut, n_order, util, added).

    Written without a branch: numba counts references to the arrays an inlined function is given, and prunes
    the counts only where the function is one straight block (a branch here cost four atomic counts a span).
    """
    room = ceiling - util
    cut = max(0, tokens - room if room > 0 else tokens)
    kept = tokens - cut
    placed = kept > 0
    sp[sid, 1] = kept
    sp[sid, 11] = placed  # (a fresh id's row is zeros: 0 when nothing is kept)
    order[n_order] = sid  # (past the order's end when nothing is kept: the next placement writes over it)
    return kept, cut, n_order + placed, util + kept, added + kept


@numba.njit(cache=True)
def _compact(sp, order, n_order):
    """Drop the ids of spans no longer in the window from the window order; returns its new length."""
    m = 0
    for q in range(n_order):
        if sp[order[q], 11]:
            order[m] = order[q]
            m += 1
    return m


@numba.njit(cache=True, inline="always")
def _take(sp, sid, util, removed):
    """Window.remove: span ``sid`` leaves; returns (utilization, removed total). (Indexed, not given its row: a
    row's view costs two reference counts.)"""
    sp[sid, 11] = 0
    sp[sid, 12] = 1
    return util - sp[sid, 1], removed + sp[sid, 1]


@numba.njit(cache=True)
def _largest_first(sp, ids, n):
    """Sort ``ids[:n]`` by their spans' tokens, largest first, ties kept in order (a stable sort, as mergesort)."""
    keys = np.empty(n, dtype=np.int64)
    for q in range(n):
        keys[q] = -sp[ids[q], 1]
    ids[:n] = ids[:n][np.argsort(keys, kind="mergesort")]


PARTIAL_SELECTION = 16  # selections made one by one; a pass that selects more sorts the rest once


@numba.njit(cache=True)
def _largest_prefix(sp, ids, tokens, n, limit, reclaim):
    """Bring the largest spans of ``ids[:n]`` forward one at a time (the first of equal ones, the others kept in
    order), until ``limit`` are or, with a ``reclaim`` target (> 0), their tokens reach it; returns how many.
    ``tokens[:n]`` holds their sizes, and moves with them (compared in one array, not looked up in the table:
    half the selection's time).

    It leaves in ``ids[:k]`` what a stable largest-first sort puts first: a pass selects a few of its candidates,
    and finding them costs fewer comparisons than sorting them all.
    """
    total = 0
    q = 0
    while q < n and q < limit and not (reclaim > 0 and total >= reclaim):
        if q < PARTIAL_SELECTION:
            best = q
            for r in range(q + 1, n):
                if tokens[r] > tokens[best]:
                    best = r
            x, size = ids[best], tokens[best]
            for r in range(best, q, -1):
                ids[r], tokens[r] = ids[r - 1], tokens[r - 1]
            ids[q], tokens[q] = x, size
        elif q == PARTIAL_SELECTION:
            _largest_first(sp, ids[q:], n - q)
            for r in range(q, n):
                tokens[r] = sp[ids[r], 1]
        total += tokens[q]
        q += 1
    return q


@numba.njit(cache=True)
def simulate(policy, rng, arrivals, n_init, turn_first, model_output, tool_s, ceiling, budget, trigger, lat,
             dec, select_max, protect_recent, reentrant, prune_kinds, low_water_gap, gate):
    """Run the turns; returns (events, times, spans, names, passes, end time, the gate's risk sum).

    ``arrivals``: one row per span the workload places, initial ones first, then each turn's in order:
    (turn, step, kind, tokens, stale_at, pinned, offerable, constraint); step 0 enters after the model
    call, step 1 after the tool. Turn ``t``'s rows start at ``turn_first[t - 1]``. ``dec`` holds the
    decision's floats: index_base, index_per_candidate, rationale_base, rationale_per_span,
    rationale_sigma, select_mean, reclaim_target, selection_quality. ``prune_kinds``: the kind codes
    of the prune index and rationale. ``low_water_gap``: recency frees down to ``trigger`` minus it.
    ``gate``: slack-gated's (trigger - lead, its low-water mark, margin_factor, 1 when it decides on estimates
    and 0 for the oracle, prior_yield, prior_rationale, 1 when prior_yield is set, prior_selections); its
    fallback is recency's. The last value returned is the sum of the bounds on a net-negative pass of the gate's
    decisions that ran one (GateMetrics.risk_sum).
    """
    gate_at, gate_low_water, margin_factor = np.int64(gate[0]), np.int64(gate[1]), gate[2]
    estimating = gate[3] != 0
    # boundary.PassEstimate (a fixed prior_yield) or boundary.IndexEstimate, their sums in the same order: each
    # prior counts as one pass
    fixed_prior = gate[6] != 0
    e_n = 1.0
    e_y, e_r = 1.0 * gate[4], 1.0 * gate[5]
    e_d = 1.0 * (gate[4] - gate[5])
    e_dd = 1.0 * ((gate[4] - gate[5]) * (gate[4] - gate[5]))
    e_k = 1.0 * gate[7]  # IndexEstimate: selections, the ratio and its count, the errors (e_r, e_n shared)
    e_q, e_qn = 1.0, 1.0
    e_e, e_ee = 0.0, 0.0
    risk_sum = 0.0
    k_index, k_rationale = prune_kinds[0], prune_kinds[1]
    n_rows = arrivals.shape[0]
    turns = model_output.shape[0]
    cap = n_rows + 2 * turns + 8
    # Span table, by id (ids start at 1): kind, tokens, turn, stale_at, pinned, pass_id, source (arrival
    # row, -1 for a pass's own spans), offerable, constraint, names start, names count, in window, removed.
    sp = np.zeros((cap, 13), dtype=np.int64)
    names = np.zeros(cap, dtype=np.int64)  # (a span is named once at most: the pass naming it evicts it)
    n_names = 0
    order = np.zeros(cap, dtype=np.int64)  # ids in window order (removed ones compacted away lazily)
    n_order = 0
    # Scratch of a consultation: the candidates (or recency's choice), those judged stale, the selections' sizes.
    cand = np.empty(cap, dtype=np.int64)
    judged = np.empty(cap, dtype=np.int64)
    judged_tokens = np.empty(cap, dtype=np.int64)
    sizes = np.empty(cap, dtype=np.int64)  # the candidates' sizes, for the gate's forecast
    # (a pass selects at most the candidates, at most every span: select_max may be far more, as a decision
    # field's bound only)
    per_span = np.empty(max(1, min(select_max, cap)), dtype=np.int64)
    passes = np.zeros((turns + 1, PASS_COLUMNS), dtype=np.int64)
    n_pass = 0
    # Rows: at most 7 a turn (its call, the policy's consultation, a gate decision, a non-model eviction, a
    # pass, the pass's call, its end), and 2 for each span that enters (its append, a cut) and leaves (its
    # removal, a forced drop's truncation): every row written whole, so the table is not zeroed.
    ev = np.empty((7 * turns + 4 * cap, COLUMNS), dtype=np.int64)
    times = np.empty(ev.shape[0], dtype=np.float64)
    n = 0
    now = 0.0
    util = 0
    added = 0
    removed = 0
    next_id = 0
    lat_base, lat_in, lat_out = lat[0], lat[1], lat[2]
    for t in range(turns + 1):  # t == 0: the initial arrivals; then turn t
        turn = t
        if t == 0:
            lo, hi = 0, n_init
        else:
            lo, hi = turn_first[t - 1], turn_first[t] if t < turns else n_rows
            prompt = util
            output = model_output[t - 1]
            n = _log(ev, times, n, CALL, turn, prompt, output, 0, 0, 0, 0, now, util, added, removed)
            now = now + (lat_base + lat_in * prompt + lat_out * output)
        tool_done = t == 0
        for i in range(lo, hi):
            if arrivals[i, 1] == 1 and not tool_done:
                now = now + tool_s[t - 1]
                tool_done = True
            next_id += 1
            sid = next_id
            kind = arrivals[i, 2]
            # (indexed in place: a row's view of the table would cost two reference counts an arrival)
            sp[sid, 0], sp[sid, 2], sp[sid, 3], sp[sid, 4] = kind, turn, arrivals[i, 4], arrivals[i, 5]
            sp[sid, 5], sp[sid, 6], sp[sid, 7], sp[sid, 8] = -1, i, arrivals[i, 6], arrivals[i, 7]
            kept, cut, n_order, util, added = _add(sp, order, n_order, sid, arrivals[i, 3], ceiling, util, added)
            if kept > 0:
                n = _log(ev, times, n, APPEND, turn, sid, kept, 0, 0, 0, 0, now, util, added, removed)
            if cut:
                n = _log(ev, times, n, TRUNC, turn, FORCED_TRUNCATION, kind, kept + cut, kept, arrivals[i, 7], -1,
                         now, util, added, removed)
        if t == 0:
            continue
        if not tool_done:  # a turn whose tool output is none of its rows cannot happen: every turn has one
            now = now + tool_s[t - 1]
        # The turn's arrivals are in: the policy is consulted.
        n = _log(ev, times, n, REACHED, turn, 0, 0, 0, 0, 0, 0, now, util, added, removed)
        evicting = False  # an oldest-first non-model eviction down to `target` (recency, or the gate's fallback)
        target = 0
        fallback = 0
        run_pass = False
        if policy == RECENCY and util >= trigger:
            evicting = True
            target = trigger - low_water_gap
        if (policy == NAIVE and util >= trigger) or (policy == SLACK_GATED and util >= gate_at):
            n_order = _compact(sp, order, n_order)  # then the candidates, in window order
            cutoff = turn - protect_recent
            nc = 0
            for q in range(n_order):
                cid = order[q]
                artifact = sp[cid, 0] == k_index or sp[cid, 0] == k_rationale
                if sp[cid, 7] and sp[cid, 4] == 0 and (sp[cid, 2] <= cutoff or artifact):
                    cand[nc] = cid
                    nc += 1
            index_tokens = np.int64(round(dec[0] + dec[1] * nc))
            nj = 0
            for q in range(nc):  # one uniform a candidate, drawn in order as rng.random(nc) draws them
                if (rng.random() < dec[7]) == (turn >= sp[cand[q], 3]):
                    judged[nj], judged_tokens[nj] = cand[q], sp[cand[q], 1]
                    nj += 1
            # the judged spans largest first (stable), as many as the plan selects
            if dec[6] > 0:
                ns = _largest_prefix(sp, judged, judged_tokens, nj, select_max, dec[6])
            else:
                extra_max = max(0, select_max - 1)
                p = 0.0 if extra_max == 0 else min(1.0, max(0.0, (dec[5] - 1) / extra_max))
                want = 1 + rng.binomial(extra_max, p) if extra_max else 1
                ns = _largest_prefix(sp, judged, judged_tokens, nj, min(want, nj), 0.0)
            for q in range(ns):  # as rng.lognormal(0, sigma, ns) draws them
                per_span[q] = max(1, np.int64(round(dec[3] * rng.lognormal(0.0, dec[4]))))
            own = False
            if reentrant:
                own = rng.random() < dec[7]
            rationale_base = np.int64(dec[2])
            rationale_tokens = rationale_base
            for q in range(ns):
                rationale_tokens += per_span[q]
            overhead = index_tokens + rationale_tokens
            if policy == SLACK_GATED:  # evaluate_boundary, then the pass or the fallback
                selected_tokens = 0
                for q in range(ns):
                    selected_tokens += sp[judged[q], 1]
                headroom = budget - util
                if estimating:  # SlackGatedPolicy.decide: the candidates, the index, the sums
                    held = 0
                    for q in range(nc):
                        held += sp[cand[q], 1]
                    expected_rationale = e_r / e_n
                    if fixed_prior:  # PassEstimate
                        expected_yield = min(e_y / e_n, 1.0 * held)
                    else:  # IndexEstimate.forecast: the e_k largest candidates (a fraction of the next), scaled
                        for q in range(nc):
                            sizes[q] = sp[cand[q], 1]
                        sizes[:nc].sort()  # ascending: the largest at the end
                        k = e_k / e_n
                        whole = np.int64(k)
                        top = 0
                        for q in range(min(whole, nc)):
                            top += sizes[nc - 1 - q]
                        favoured = 1.0 * top
                        if whole < nc:
                            favoured = favoured + (k - whole) * sizes[nc - 1 - whole]
                        expected_yield = (e_q / e_qn) * favoured
                    gate_overhead = index_tokens + expected_rationale
                    reclaimable = expected_yield - gate_overhead
                    margin = margin_factor * expected_rationale
                else:
                    gate_overhead = 1.0 * overhead
                    reclaimable = 1.0 * (selected_tokens - overhead)
                    margin = margin_factor * rationale_tokens
                if headroom < 0:
                    reason = 1
                elif headroom < gate_overhead:
                    reason = 2
                elif reclaimable <= margin:
                    reason = 3
                else:
                    reason = 0
                if reason == 0 and estimating:  # net_negative_bound, then the estimate's observe
                    if fixed_prior:
                        var = max(0.0, (e_dd - e_d * e_d / e_n) / (e_n - 1.0)) if e_n > 1.0 else np.inf
                    else:
                        var = max(0.0, (e_ee - e_e * e_e / e_n) / (e_n - 1.0)) if e_n > 1.0 else np.inf
                    if reclaimable <= 0 or var == np.inf:
                        risk_sum += 1.0
                    else:
                        risk_sum += var / (var + reclaimable * reclaimable)
                    d_tokens = selected_tokens - rationale_tokens
                    if not fixed_prior:  # IndexEstimate.observe
                        error = d_tokens - (expected_yield - expected_rationale)
                        e_k += ns
                        top = 0
                        for q in range(min(ns, nc)):
                            top += sizes[nc - 1 - q]
                        if top > 0:
                            e_qn += 1.0
                            e_q += selected_tokens / top
                        e_e += error
                        e_ee += error * error
                    e_n += 1.0
                    e_y += selected_tokens
                    e_r += rationale_tokens
                    e_d += d_tokens
                    e_dd += d_tokens * d_tokens
                n = _log(ev, times, n, GATE, turn, reason, index_tokens, rationale_tokens, nc, ns,
                                    selected_tokens, now, util, added, removed)
                if reason == 0:
                    run_pass = True
                else:
                    evicting = True
                    target = gate_low_water
                    fallback = 1
            else:
                run_pass = True
        if evicting:
            # RecencyPolicy.decide (or fallback_actions): the oldest offerable spans of turns before the
            # protected ones, until utilization would be down to the target; then Engine.evict.
            n_order = _compact(sp, order, n_order)
            need = util - target
            last = turn - protect_recent
            nc = 0
            for q in range(n_order):
                if need <= 0:
                    break
                cid = order[q]
                if sp[cid, 11] and sp[cid, 7] and sp[cid, 2] <= last:
                    cand[nc] = cid
                    nc += 1
                    need -= sp[cid, 1]
            if nc:
                freed = 0
                for q in range(nc):
                    sid = cand[q]
                    util, removed = _take(sp, sid, util, removed)
                    freed += sp[sid, 1]
                    n = _log(ev, times, n, REMOVE, turn, NONMODEL_RECENCY + fallback, sid, sp[sid, 1], 0, 0, 0, now,
                             util, added, removed)
                n = _log(ev, times, n, NON_MODEL, turn, nc, freed, fallback, 0, 0, 0, now, util, added, removed)
        if run_pass:
            # -- the pass (Engine.model_pass) --
            n_pass += 1
            before = util
            if util + index_tokens > ceiling:  # make room: the oldest unpinned spans, the selected excluded
                for q in range(n_order):
                    if util + index_tokens <= ceiling:
                        break
                    sid = order[q]
                    if not sp[sid, 11] or sp[sid, 4]:
                        continue
                    excluded = False
                    for r in range(ns):
                        if judged[r] == sid:
                            excluded = True
                    if excluded:
                        continue
                    util, removed = _take(sp, sid, util, removed)
                    n = _log(ev, times, n, REMOVE, turn, DROP, sid, sp[sid, 1], 0, 0, 0, now, util, added, removed)
                    n = _log(ev, times, n, TRUNC, turn, FORCED_DROP, sp[sid, 0], sp[sid, 1], 0, 0, -1, now, util, added,
                             removed)
            next_id += 1
            sid = next_id
            sp[sid, 0], sp[sid, 2], sp[sid, 3], sp[sid, 4] = k_index, turn, turn, 0
            sp[sid, 5], sp[sid, 6], sp[sid, 7], sp[sid, 8] = n_pass, -1, 1, 0
            tokens, cut, n_order, util, added = _add(sp, order, n_order, sid, index_tokens, ceiling, util, added)
            if tokens > 0:
                n = _log(ev, times, n, APPEND, turn, sid, tokens, 0, 0, 0, 0, now, util, added, removed)
            if cut:
                n = _log(ev, times, n, TRUNC, turn, FORCED_TRUNCATION, k_index, tokens + cut, tokens, 0,
                                    -1, now, util, added, removed)
            index_kept = tokens
            prompt = before + index_kept
            now = now + (lat_base + lat_in * prompt + lat_out * rationale_tokens)
            room = max(0, ceiling - util)
            written = 0
            rationale = min(rationale_base, room)
            for q in range(ns):
                if rationale + per_span[q] > room:
                    break
                rationale += per_span[q]
                written += 1
            was_cut = rationale < rationale_tokens
            n = _log(ev, times, n, CALL, turn, prompt, rationale, 1, n_pass, 0, 0, now, util, added,
                                removed)
            note = 0
            if rationale:
                next_id += 1
                note = next_id
                sp[note, 0], sp[note, 1], sp[note, 2], sp[note, 3] = k_rationale, rationale, turn, turn + 1
                sp[note, 5], sp[note, 6], sp[note, 7], sp[note, 9], sp[note, 10] = n_pass, -1, 1, n_names, written
                if n_names + written > names.shape[0]:
                    bigger = np.zeros(2 * names.shape[0] + written, dtype=np.int64)
                    bigger[:n_names] = names[:n_names]
                    names = bigger
                for q in range(written):
                    names[n_names + q] = judged[q]
                n_names += written
                sp[note, 11] = 1
                order[n_order] = note
                n_order += 1
                util += rationale
                added += rationale
                n = _log(ev, times, n, APPEND, turn, note, rationale, 0, 0, 0, 0, now, util, added,
                                    removed)
            if was_cut:
                n = _log(ev, times, n, TRUNC, turn, RATIONALE_CUT, k_rationale, rationale_tokens,
                                    rationale, 0, written, now, util, added, removed)
            peak = util
            evicted = 0
            spans = 0
            stale = 0
            n_victims = written
            if own and rationale and sp[note, 11]:  # a reentrant plan: its own justification was a candidate
                n_victims += 1
            for q in range(n_victims):
                sid = judged[q] if q < written else note
                if sp[sid, 11]:
                    util, removed = _take(sp, sid, util, removed)
                    n = _log(ev, times, n, REMOVE, turn, EVICT, sid, sp[sid, 1], 0, 0, 0, now, util, added, removed)
                    evicted += sp[sid, 1]
                    spans += 1
                    # (the engine counts its own rationale as stale)
                    stale += 1 if sid == note else int(turn >= sp[sid, 3])
            net = evicted - index_kept - rationale
            in_band = budget - before < overhead
            k = n_pass - 1
            passes[k, 0], passes[k, 1], passes[k, 3], passes[k, 4], passes[k, 5] = n_pass, turn, before, peak, util
            passes[k, 6], passes[k, 7], passes[k, 8], passes[k, 9] = budget - before, nc, ns, spans
            passes[k, 10], passes[k, 11], passes[k, 12], passes[k, 13] = index_kept, rationale, evicted, net
            passes[k, 14], passes[k, 15], passes[k, 16] = was_cut, stale, in_band
            n = _log(ev, times, n, PASS, turn, n_pass - 1, 0, 0, 0, 0, 0, now, util, added, removed)
        n = _log(ev, times, n, TURN_END, turn, 0, 0, 0, 0, 0, 0, now, util, added, removed)
    return ev[:n], times[:n], sp[:next_id + 1], names[:n_names], passes[:n_pass], now, risk_sum
