"""A kernel run's record, handed to the run's observers: the summary code is the engine's own.

:func:`run_summary` builds what :func:`prunesim.runner.run_one` builds (the
policy, the workload, the registered observers, the same random streams),
runs the compiled loop (:mod:`prunesim.kernel.loop`) and replays its event
rows as the ``on_<kind>`` calls the engine would have made, with the same
arguments in the same order. The observers then summarize as after any run.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from prunesim.kernel import loop
from prunesim.model.editlog import EditLog
from prunesim.model.events import Bus, PassRecord, RunEnd
from prunesim.model.provenance import is_marker
from prunesim.model.scenario import Scenario
from prunesim.model.spans import KINDS, Span
from prunesim.model.workload import SyntheticToolLoop
from prunesim.observe import RunContext, build_observers
from prunesim.observe.metrics import summarize
from prunesim.policies import get_policy, policy_name
from prunesim.policies.boundary import REASONS
from prunesim.runner import EDIT_LOG_TAIL, streams

KIND_CODE = {kind: i for i, kind in enumerate(KINDS)}
TRUNCATION_CAUSES = ("forced_truncation", "forced_drop", "rationale_cut")
REMOVAL_CAUSES = ("evict", "forced_drop", "nonmodel_recency", "fallback_recency")
POLICY_CODE = {"noop": loop.NOOP, "naive": loop.NAIVE, "recency": loop.RECENCY, "slack-gated": loop.SLACK_GATED}
_EMPTY = frozenset()


def _row(turn: int, step: int, span: Span) -> tuple:
    return (turn, step, KIND_CODE[span.kind], span.tokens, span.stale_at, span.pinned, span.offerable,
            span.is_constraint)


def _arrivals(scenario: Scenario, rng: np.random.Generator):
    """What the workload places, drawn by the synthetic tool loop itself (the same draws and keys), as the
    kernel's arrival rows, with each row's (key, tags)."""
    lat = scenario.latency
    plans = SyntheticToolLoop(scenario.workload, scenario.turns, lat.tool_mean_s, lat.tool_sigma, rng)
    rows, sources, first, output, tool_s = [], [], [], [], []

    def add(turn: int, step: int, a) -> None:
        rows.append(_row(turn, step, Span(0, a.kind, a.tokens, turn, a.key, turn + a.stale_after, a.pinned,
                                          a.tags)))
        sources.append((a.key, a.tags))

    for a in plans.initial():
        add(0, 0, a)
    n_init = len(rows)
    for plan in plans:
        t = plan.turn
        first.append(len(rows))
        output.append(plan.reasoning.tokens + plan.tool_call.tokens)
        tool_s.append(plan.tool_latency_s)
        if not plan.unit:
            add(t, 0, plan.reasoning)
            add(t, 0, plan.tool_call)
        add(t, 1, plan.tool_output)
        for a in plan.extra:
            add(t, 1, a)
    table = np.asarray(rows, dtype=np.int64).reshape(len(rows), 8)
    return (table, n_init, np.asarray(first, dtype=np.int64), np.asarray(output, dtype=np.int64),
            np.asarray(tool_s, dtype=np.float64)), sources


def simulate(scenario: Scenario, name: str, rngs: dict):
    """The compiled loop's record of one run (see :func:`prunesim.kernel.loop.simulate`)."""
    workload, sources = _arrivals(scenario, rngs["workload"])
    d = scenario.decision
    lat = scenario.latency
    dec = np.array([d.index_base, d.index_per_candidate, d.rationale_base, d.rationale_per_span,
                    d.rationale_sigma, d.select_mean, d.reclaim_target, d.selection_quality], dtype=np.float64)
    kinds = np.array([KIND_CODE["prune_index"], KIND_CODE["prune_rationale"]], dtype=np.int64)
    ceiling = scenario.budget if scenario.hard else scenario.window
    latency = np.array([lat.model_base_s, lat.model_per_input_token_s, lat.model_per_output_token_s])
    low_water = scenario.recency.low_water_gap if name == "recency" else 0
    record = loop.simulate(POLICY_CODE[name], rngs["policy"], *workload, ceiling, scenario.budget,
                           scenario.trigger, latency, dec, d.select_max, d.protect_recent_turns,
                           d.reentrant and name == "naive", kinds, low_water, gate_numbers(scenario, name))
    return record, sources


def gate_numbers(scenario: Scenario, name: str) -> np.ndarray:
    """slack-gated's gate: where it acts (trigger - lead), its low-water mark and its margin factor."""
    if name != "slack-gated":
        return np.zeros(3)
    gate = scenario.gate
    acts_at = scenario.trigger - gate.lead
    return np.array([acts_at, acts_at - gate.low_water_gap, gate.margin_factor], dtype=np.float64)


def run_summary(scenario: Scenario, policy: str, seed: int | None = None) -> dict:
    """The summary :func:`prunesim.runner.run_one` gives for ``trace="none"``, computed by the kernel."""
    cls = get_policy(policy)
    name = policy_name(policy)
    missing = {t: table() for t, table in cls.tables.items() if t not in scenario.tables}
    if missing:  # as run_one: a policy's own tables take their defaults when the scenario has none
        scenario = dataclasses.replace(scenario, tables={**scenario.tables, **missing})
    seed = scenario.seed if seed is None else seed
    rngs = streams(seed)
    policy_obj = cls(scenario, rngs["policy"])
    observers = build_observers(RunContext(scenario, name, seed, policy_obj.acting_trigger(), "none"))
    (ev, times, table, names, passes, now), sources = simulate(scenario, name, rngs)
    gate = _gate_numbers(scenario) if name == "slack-gated" else None
    end_spans = _replay(Bus(observers), ev.tolist(), times.tolist(), table.tolist(), names.tolist(),
                        passes.tolist(), sources, gate)
    in_window, gone = end_spans
    named = set()
    for s in in_window:
        if s.kind in ("prune_rationale", "placeholder", "summary"):
            named.update(s.names)
    edit_log = EditLog(tail=EDIT_LOG_TAIL)
    end = RunEnd(
        time_s=now,
        utilization=int(ev[-1][8]) if len(ev) else 0,
        unrecorded_evictions=sum(1 for s in gone if not is_marker(s) and s.id not in named),
        tombstone_tokens=sum(s.tokens for s in in_window if s.kind == "tombstone"),
        keeps_edit_log=False,
        edit_log=edit_log,
        anchor=edit_log.anchor(),
        digest_tokens=0,
        placeholder_tokens=sum(s.tokens for s in in_window if s.kind == "placeholder"),
    )
    for h in Bus(observers).run_end:
        h(end)
    return summarize(observers)


def _gate_numbers(scenario: Scenario):
    """A function of a GATE row giving the numbers SlackGatedPolicy.decide publishes, in its order."""
    acts_at, budget, gate = scenario.trigger - scenario.gate.lead, scenario.budget, scenario.gate

    def numbers(util: int, index: int, rationale: int, candidates: int, selected: int, selected_tokens: int,
                run: bool) -> dict:
        overhead = index + rationale
        out = {"utilization": util, "trigger": acts_at, "headroom": budget - util, "overhead": overhead,
               "reclaimable": selected_tokens - overhead, "margin": gate.margin_factor * rationale, "index": index,
               "rationale": rationale, "candidates": candidates, "selected": selected,
               "selected_tokens": selected_tokens}
        if not run:
            out["fallback"] = gate.fallback
        return out
    return numbers


def _replay(bus: Bus, ev, times, table, names, passes, sources, gate=None):
    """Call the observers' handlers row by row; returns (spans in the window, spans removed)."""
    window: dict[int, Span] = {}
    gone: list[Span] = []
    on_appended, on_removed, on_truncation = bus.span_appended, bus.span_removed, bus.truncation
    on_call, on_reached, on_end, on_pass = bus.model_call, bus.turn_reached, bus.turn_end, bus.prune_pass
    for row, now in zip(ev, times, strict=True):
        code, turn, a, b, c, d, e, f, util, added, removed = row
        if code == loop.APPEND:
            kind, tokens, span_turn, stale_at, pinned, pass_id, src, _, _, start, count = table[a][:11]
            key, tags = sources[src] if src >= 0 else ("", _EMPTY)
            span = Span(a, KINDS[kind], tokens, span_turn, key, stale_at, bool(pinned), tags, pass_id,
                        tuple(names[start:start + count]))
            window[a] = span
            for h in on_appended:
                h(now, turn, span, b, util, added, removed)
        elif code == loop.REMOVE:
            span = window.pop(b)
            gone.append(span)
            cause = REMOVAL_CAUSES[a]
            for h in on_removed:
                h(now, turn, cause, span, c, util, added, removed)
        elif code == loop.TRUNC:
            cause = TRUNCATION_CAUSES[a]
            for h in on_truncation:
                h(now, turn, cause, KINDS[b], c, d, bool(e), f)
        elif code == loop.CALL:
            if c:  # a prune pass's call
                for h in on_call:
                    h(now, turn, a, b, True, d)
            else:
                for h in on_call:
                    h(now, turn, a, b, False)
        elif code == loop.REACHED:
            for h in on_reached:
                h(turn, util)
        elif code == loop.TURN_END:
            for h in on_end:
                h(now, turn, util, added, removed)
        elif code == loop.NON_MODEL:
            for h in bus.non_model_eviction:
                h(now, turn, "evict", "recency", a, b, bool(c))
        elif code == loop.GATE:
            numbers = gate(util, b, c, d, e, f, a == 0)
            for h in bus.gate_decision:
                h(now, turn, REASONS[a], numbers)
        elif code == loop.PASS:
            p = passes[a]
            p[2] = now
            record = PassRecord(*p)
            for h in on_pass:
                h(now, record)
    return list(window.values()), gone

