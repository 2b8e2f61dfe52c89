"""The engine: one scenario, one policy, one seed, as a pure function.

``run_one`` builds a SimPy environment, a window, the workload and the policy
(each with its own random stream), runs the agent process and returns a
:class:`RunResult`. The engine decides when the policy is consulted (at the end
of every turn), applies what it answers, and reports every change to its
observers (the recorder and the metrics).
"""

from __future__ import annotations

import json

import simpy
from prunesim.model.needs import NeedModel
from prunesim.model.provenance import Provenance
from prunesim.model.scenario import Scenario
from prunesim.model.spans import Span
from prunesim.model.window import Window
from prunesim.model.workload import Arrival, TurnPlan
from prunesim.observe.metrics import MetricsObserver
from prunesim.observe.recorder import Recorder
from prunesim.policies.base import BoundaryEvent, Evict, ModelPass, Policy, Summarize, Truncate, WindowView, named_spans


class PolicyContractError(RuntimeError):
    """A policy broke the contract (for example, it named a span that is not in the window)."""


class Engine(Provenance):
    def __init__(self, scenario: Scenario, policy: Policy, workload, recorder: Recorder, metrics: MetricsObserver,
                 needs: NeedModel | None = None):
        self.scenario = scenario
        self.policy = policy
        self.workload = workload
        self.recorder = recorder
        self.metrics = metrics
        self.window = Window(scenario.window, scenario.budget, scenario.hard)
        self.env = simpy.Environment()
        self.turn = 0
        self.pass_count = 0
        self.deciding = False
        self.concurrent = scenario.decision.concurrent
        lat = scenario.latency
        self._lat = (lat.model_base_s, lat.model_per_input_token_s, lat.model_per_output_token_s)
        self._init_provenance(needs)

    # -- observers -------------------------------------------------------------
    def _changed(self, event: str, span: Span, delta: int) -> None:
        w = self.window
        self.metrics.utilization(w.utilization)
        if self.recorder.mode != "all":  # the recorder keeps no per-change rows
            return
        self.recorder.change(
            self.env.now, self.turn, event, span.kind, span.id, span.key, delta, w.utilization, w.appended_total,
            w.removed_total,
        )

    def _event(self, event: str, **detail) -> None:
        if self.recorder.mode == "none":  # nothing kept: skip encoding the detail
            return
        self.recorder.event(self.env.now, self.turn, event, json.dumps(detail, sort_keys=True))

    # -- window changes ----------------------------------------------------------
    def place(self, arrival: Arrival, **span_fields) -> Span:
        span = Span(
            id=self.window.new_id(),
            kind=arrival.kind,
            tokens=arrival.tokens,
            turn=self.turn,
            key=arrival.key,
            stale_at=self.turn + arrival.stale_after,
            pinned=arrival.pinned,
            tags=arrival.tags,
            **span_fields,
        )
        return self.append(span)

    def append(self, span: Span) -> Span:
        wanted = span.tokens
        outcome = self.window.append(span)
        if outcome.kept:
            self._changed("append", span, outcome.kept)
        if outcome.cut:
            self.metrics.truncation(outcome.cut)
            if span.is_constraint:
                self.metrics.constraint_lost()
            self._event("forced_truncation", kind=span.kind, wanted=wanted, kept=outcome.kept)
        return span

    def remove(self, span_id: int, event: str) -> Span:
        span = self.window.remove(span_id)
        if span.is_constraint:
            self.metrics.constraint_lost()
        self._changed(event, span, -span.tokens)
        self._removed(span, event)
        return span

    # -- model calls -----------------------------------------------------------
    def model_latency(self, input_tokens: int, output_tokens: int) -> float:
        base, per_in, per_out = self._lat
        return base + per_in * input_tokens + per_out * output_tokens

    # -- the agent -------------------------------------------------------------
    def agent(self):
        for arrival in self.workload.initial():
            self.place(arrival)
        for plan in self.workload:
            self.turn = plan.turn
            yield from self.take_turn(plan)
            self.metrics.turn_reached(self.turn, self.window.utilization)
            if not self.deciding:  # one model-driven pass at a time
                for action in self.policy.decide(self.view()):
                    if isinstance(action, ModelPass) and self.concurrent:
                        self.check_contract(action)
                        self.deciding = True
                        self.env.process(self.concurrent_pass(action))
                    else:
                        yield from self.apply(action)
            w = self.window
            self.metrics.turn_end(self.turn, w.utilization)
            if self.needs is not None:
                self.note_history()
            self.recorder.turn_end(self.env.now, self.turn, w.utilization, w.appended_total, w.removed_total)
            if len(self.evicted) >= self._forget_at and not self.deciding:
                self.forget_unreferenced()

    def concurrent_pass(self, action: ModelPass):
        if self.authorized(action):
            yield from self.model_pass(action)
        self.deciding = False

    def take_turn(self, plan: TurnPlan):
        if plan.drop_tags:
            self.runtime_drop(plan.drop_tags)
        prompt = self.window.utilization
        output = plan.reasoning.tokens + plan.tool_call.tokens
        self.metrics.model_call(prompt, output, decision=False)
        yield self.env.timeout(self.model_latency(prompt, output))
        self.place(plan.reasoning)
        self.place(plan.tool_call)
        yield self.env.timeout(plan.tool_latency_s)
        self.place(plan.tool_output)
        for arrival in plan.extra:
            self.place(arrival)
        self._saw(plan)
        yield from self.meet_needs()

    def runtime_drop(self, tags: frozenset[str]) -> None:
        """Spans the replayed runtime removed on its own (a recorded compaction) leave the window.

        Not the policy's doing: no eviction is recorded for them, no tombstone is left.
        """
        for span in [s for s in self.window.spans() if s.tags & tags]:
            self.window.remove(span.id)
            self._changed("runtime_drop", span, -span.tokens)

    def view(self) -> WindowView:
        w = self.window
        return WindowView(self.turn, w.utilization, w.budget, w.size, w.hard, w.spans())

    # -- actions ---------------------------------------------------------------
    def apply(self, action):
        self.check_contract(action)
        if not self.authorized(action):
            return
        if isinstance(action, ModelPass):
            yield from self.model_pass(action)
        elif isinstance(action, Evict):
            self.evict(action)
        elif isinstance(action, Truncate):
            self.truncate(action)
        elif isinstance(action, Summarize):
            self.summarize(action)
        elif isinstance(action, BoundaryEvent):
            self.metrics.boundary(action.reason)
            self._event("boundary", reason=action.reason, **action.numbers)
        else:
            raise TypeError(f"policy {self.policy.name!r} returned {action!r}, which is not an action")

    def check_contract(self, action) -> None:
        """A policy may only name spans that are in the window; anything else is a bug in the policy."""
        missing = [i for i in named_spans(action) if i not in self.window]
        if missing:
            raise PolicyContractError(
                f"policy {self.policy.name!r} named span(s) {missing} that are not in the window (turn {self.turn})"
            )

    def model_pass(self, p: ModelPass):
        """Read the index, write the rationale (cut at a hard ceiling), evict what was written.

        The model call takes simulated time. In a concurrent runtime the agent's
        turns go on meanwhile, so their arrivals compete with the rationale for
        the room left under the ceiling.
        """
        w = self.window
        self.pass_count += 1
        pass_turn = self.turn
        before = w.utilization
        in_window = p.placement == "window"
        kind_opts = dict(pass_id=self.pass_count, pinned=p.protect_artifacts)
        # The pass's prompt must fit under the ceiling: a runtime at its limit drops
        # the oldest prunable content to make room (a forced truncation, lost content).
        self.make_room(p.index_tokens, exclude=frozenset(p.selected))
        if in_window:
            index = self.append(Span(w.new_id(), "prune_index", p.index_tokens, self.turn, stale_at=self.turn,
                                     **kind_opts))
            index_kept = index.tokens
        else:  # the index is read from the edit log: billed, but it must still fit the call
            index_kept = min(p.index_tokens, max(0, w.ceiling - w.utilization))
        prompt = before + index_kept
        yield self.env.timeout(self.model_latency(prompt, p.rationale_tokens))
        # The rationale is written selection by selection; a hard ceiling cuts it short.
        room = max(0, w.ceiling - w.utilization - (0 if in_window else index_kept))
        written = 0
        rationale = min(p.rationale_base, room)
        for extra in p.rationale_per_span:
            if rationale + extra > room:
                break
            rationale += extra
            written += 1
        cut = rationale < p.rationale_tokens
        chosen = p.selected[:written]
        self.metrics.model_call(prompt, rationale, decision=True)
        if in_window and rationale:
            note = Span(w.new_id(), "prune_rationale", rationale, self.turn, stale_at=self.turn + 1,
                        names=tuple(chosen), **kind_opts)
            w.append(note)
            self._changed("append", note, rationale)
        if cut:
            self.metrics.truncation(p.rationale_tokens - rationale)
            self._event("rationale_cut", wanted=p.rationale_tokens, written=rationale, selections=written)
        peak = w.utilization
        self._pass_started(p, chosen, index_kept, rationale)
        evicted = spans = stale = 0
        for span_id in chosen:
            if span_id in w:
                span = self.remove(span_id, "evict")
                evicted += span.tokens
                spans += 1
                stale += span.is_stale(self.turn)
        if getattr(p, "prune_own_rationale", False) and in_window and rationale and note.id in w:
            # A reentrant plan: its own justification was one of its candidates.
            evicted += self.remove(note.id, "evict").tokens
            spans += 1
            stale += 1
        self._pass_tombstones = 0
        net = evicted - index_kept - rationale
        in_band = w.budget - before < p.overhead
        self.metrics.prune_pass(pass_turn, index_kept, rationale, evicted, spans, cut, in_band)
        self.recorder.prune_pass((
            self.pass_count, pass_turn, self.env.now, before, peak, w.utilization, w.budget - before,
            p.candidates, len(p.selected), spans, index_kept, rationale, evicted, net, int(cut), stale, int(in_band),
        ))

    def make_room(self, tokens: int, exclude: frozenset[int] = frozenset()) -> None:
        """Drop the oldest unpinned spans until ``tokens`` fit under the ceiling."""
        w = self.window
        if w.utilization + tokens <= w.ceiling:
            return
        for span in w.spans():
            if w.utilization + tokens <= w.ceiling:
                break
            if span.pinned or span.id in exclude:
                continue
            self.remove(span.id, "forced_drop")
            self.metrics.truncation(span.tokens)
            self._event("forced_drop", kind=span.kind, tokens=span.tokens)

    def evict(self, action: Evict) -> None:
        freed = 0
        for span_id in action.span_ids:
            if span_id in self.window:
                freed += self.remove(span_id, f"fallback_{action.reason}").tokens
        self.metrics.fallback(freed)
        self._event("fallback", reason=action.reason, spans=len(action.span_ids), freed=freed)

    def truncate(self, action: Truncate) -> None:
        if action.span_id not in self.window:
            return
        span = self.window.get(action.span_id)
        freed = self.window.shrink(action.span_id, action.keep_tokens)
        if span.is_constraint:
            self.metrics.constraint_lost()
        self._changed(f"fallback_{action.reason}", span, -freed)
        if action.span_id not in self.window:  # cut to nothing: it left the window
            self._removed(span, f"fallback_{action.reason}")
        self.metrics.fallback(freed)
        self._event("fallback", reason=action.reason, spans=1, freed=freed)

    def summarize(self, action: Summarize) -> None:
        freed = 0
        for span_id in action.span_ids:
            if span_id in self.window:
                freed += self.remove(span_id, f"fallback_{action.reason}").tokens
        summary = Span(self.window.new_id(), "summary", action.summary_tokens, self.turn, stale_at=self.turn + 1)
        self.append(summary)
        self.metrics.fallback(freed - summary.tokens)
        self._event("fallback", reason=action.reason, spans=len(action.span_ids), freed=freed - summary.tokens)

    # -- running ---------------------------------------------------------------
    def run(self) -> None:
        self.env.process(self.agent())
        self.env.run()
        self.finish_provenance()
        self.metrics.sim_time = self.env.now
        self.metrics.final_utilization = self.window.utilization
