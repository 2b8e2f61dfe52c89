"""slack-gated: a model-driven pass only when the decision boundary says it pays.

Once utilization reaches its own trigger, ``trigger - [gate] lead`` (``lead``
tokens below the scenario's trigger, so that there is still room to decide, and
so that sweeping ``trigger`` moves it with every other threshold policy), the
policy asks :func:`evaluate_boundary` whether a model-driven pass would pay,
with what it knows before the model call (``[gate] knowledge``):

* ``"estimate"`` (the default; what a runtime knows): the window, the
  candidates it would list in the index (each one's size) and the index's
  size, and running estimates from the passes it ran before. The stale size is
  the expected yield of :class:`~prunesim.policies.boundary.IndexEstimate`:
  the expected number of selections (``prior_selections``, the seed's ~3,
  before the first pass) times what as many of this index's largest
  candidates hold, times the learned ratio of what passes named to that; with
  ``prior_yield`` set, instead, the running mean of the yields from that fixed
  prior (:class:`~prunesim.policies.boundary.PassEstimate`, at most what the
  candidates hold). The rationale is the expected one (from
  ``prior_rationale``); the margin is ``margin_factor`` x that expected
  rationale. The pass that runs is then drawn, and may turn out net-negative:
  the ledger counts it;
* ``"oracle"`` (a named bound, not a runtime): it judges the very plan the
  model will carry out (:func:`plan_pass`: the spans it will name, the
  rationale it will write), so that a pass it runs frees more than ``margin``
  net of its own index and rationale by construction. Seed 000's replay runs it
  as a counterfactual row, to show what perfect knowledge would add.

On ``"run"`` the pass is taken as planned. On a refusal it takes the
scenario's non-model ``[gate] fallback``, which costs no decision tokens, and
frees down to ``trigger - low_water_gap`` (low-water mark) where it can:

  - ``"recency"``: drop the oldest prunable spans outside the protected recent turns;
  - ``"truncate"``: cut the oldest tool outputs, one after another, to ``truncate_keep`` tokens;
  - ``"template"``: replace the oldest prunable spans by one fixed-size summary of
    ``template_tokens`` (only when that frees something).

Every consultation is recorded as a :class:`BoundaryEvent` carrying the reason
and the numbers behind it. The plan is drawn on every consultation, whether it
runs or not and whatever the knowledge, so that the policy's random stream
advances the same way in every case (an estimating and an oracle gate meet the
same plans until their decisions part); under ``"estimate"`` the decision reads
only the plan's candidates and index, which the runtime builds itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from prunesim.errors import UserError
from prunesim.model.scenario import non_negative, positive, searched
from prunesim.policies.base import Action, BoundaryEvent, Evict, Policy, Summarize, Truncate, WindowView
from prunesim.policies.boundary import (
    BoundaryDecision,
    IndexEstimate,
    PassEstimate,
    evaluate_boundary,
    net_negative_bound,
)
from prunesim.policies.decision import plan_pass
from prunesim.policies.recency import oldest_prunable


@dataclass
class Gate:
    """``[gate]``: the ``slack-gated`` policy's parameters (see ``docs/policies.md``).

    Once utilization reaches ``trigger - lead`` (``lead`` tokens below the
    scenario's trigger; 0: at the trigger; negative: above it, for scenarios whose
    trigger 0 means "after every turn") it draws a model-driven plan and asks
    the decision boundary whether to run it; on a refusal it takes the non-model
    ``fallback`` instead, freeing down to its own trigger minus ``low_water_gap``.
    Expressed relative to the scenario's trigger, the gate moves when ``trigger``
    is swept, as naive and recency do. ``knowledge`` says what it decides on
    (``"estimate"``: running estimates from ``prior_selections`` (or a fixed
    ``prior_yield``, when set) and ``prior_rationale`` on; ``"oracle"``: the plan
    itself, a bound for comparison).
    """

    lead: int = field(default=0, metadata=searched(0, 8000, integer=True))
    margin_factor: float = 1.5
    knowledge: Literal["estimate", "oracle"] = "estimate"
    prior_selections: float = 3.0  # the seed's pass names "~3" spans
    prior_rationale: float = 400.0  # "~400 tokens of decision text"
    # Unset: the yield is expected from the index (prior_selections). Set: from this fixed number of tokens on, as
    # the gate did before it read the index (the seed's pass: "evicted traces totaling ~1,800 tokens").
    prior_yield: float | None = None
    fallback: Literal["recency", "truncate", "template"] = "recency"
    low_water_gap: int = 1000
    truncate_keep: int = 200
    template_tokens: int = 300

    def check(self, key: str, where: str, scenario) -> None:
        acts_at = scenario.trigger - self.lead
        if not 0 <= acts_at <= scenario.budget:
            raise UserError(where, f"{key}.lead", f"{self.lead} puts the gate at {acts_at} (trigger - lead), "
                            f"outside 0..{scenario.budget} (the budget)")
        for name in ("margin_factor", "prior_rationale", "low_water_gap", "truncate_keep", "template_tokens"):
            non_negative(getattr(self, name), f"{key}.{name}", where)
        if self.prior_yield is not None:
            non_negative(self.prior_yield, f"{key}.prior_yield", where)
        positive(self.prior_selections, f"{key}.prior_selections", where)


__all__ = ["BoundaryDecision", "IndexEstimate", "PassEstimate", "SlackGatedPolicy", "evaluate_boundary",
           "fallback_actions"]


def fallback_actions(view: WindowView, gate, target: int, protect_recent_turns: int) -> list[Action]:
    """The non-model eviction ``gate.fallback`` takes to bring ``view`` down to ``target`` tokens.

    It frees what it can: fewer tokens than asked when the eligible spans run out.
    """
    need = view.utilization - target
    if need <= 0:
        return []
    spans = {s.id: s for s in view.spans}
    eligible = [spans[i] for i in oldest_prunable(view, protect_recent_turns)]
    if gate.fallback == "recency":
        chosen = []
        for span in eligible:
            if need <= 0:
                break
            chosen.append(span.id)
            need -= span.tokens
        return [Evict(tuple(chosen), reason="recency", fallback=True)] if chosen else []
    if gate.fallback == "truncate":
        actions: list[Action] = []
        for span in eligible:
            if need <= 0:
                break
            if span.kind == "tool_output" and span.tokens > gate.truncate_keep:
                actions.append(Truncate(span.id, gate.truncate_keep, reason="truncate", fallback=True))
                need -= span.tokens - gate.truncate_keep
        return actions
    if gate.fallback == "template":
        chosen, total = [], 0
        for span in eligible:
            if total - gate.template_tokens >= need:
                break
            chosen.append(span.id)
            total += span.tokens
        if total <= gate.template_tokens:
            return []  # a summary would not free anything
        return [Summarize(tuple(chosen), gate.template_tokens, reason="template", fallback=True)]
    raise ValueError(f"unknown fallback {gate.fallback!r}")  # the scenario schema rules this out


class SlackGatedPolicy(Policy):
    name = "slack-gated"
    model_driven = True
    summary = "model-driven pass only when the decision boundary says it pays; non-model fallback otherwise"
    tables = {"gate": Gate}
    reads = ("trigger", "decision", "gate")
    roles = {"threshold": "gate.lead", "low_water": "gate.low_water_gap"}

    def __init__(self, scenario, rng):
        super().__init__(scenario, rng)
        gate = scenario.gate
        self.trigger = scenario.trigger - gate.lead
        self.low_water = self.trigger - gate.low_water_gap
        # What a runtime learns from its own passes (None: the oracle, which needs no estimate).
        self.estimate: IndexEstimate | PassEstimate | None = None
        if gate.knowledge == "estimate":
            self.estimate = (IndexEstimate(gate.prior_selections, gate.prior_rationale) if gate.prior_yield is None
                             else PassEstimate(gate.prior_yield, gate.prior_rationale))

    def acting_trigger(self) -> int:
        return self.trigger

    def decide(self, view: WindowView) -> list[Action]:
        if view.utilization < self.trigger:
            return []
        gate = self.scenario.gate
        params = self.scenario.decision
        plan = plan_pass(view, params, self.rng)  # drawn whatever the gate says or knows
        if self.estimate is None:  # the oracle: the plan's own spans and rationale
            decision = evaluate_boundary(view.utilization, view.budget, [s.tokens for s in plan.selected],
                                         plan.index_tokens, plan.rationale_tokens, gate.margin_factor)
            numbers = self._numbers(view, plan, decision)
            numbers["risk_bound"] = 0.0 if decision.run else 1.0  # it knows the net: a pass it runs is positive
        elif isinstance(self.estimate, IndexEstimate):
            decision, numbers = self._on_index(view, plan, self.estimate)
        else:
            decision, numbers = self._on_fixed_prior(view, plan, self.estimate)
        if decision.run:
            return [BoundaryEvent(decision.reason, numbers), plan.as_pass()]
        numbers["fallback"] = gate.fallback
        event = BoundaryEvent(decision.reason, numbers)
        return [event, *fallback_actions(view, gate, self.low_water, params.protect_recent_turns)]

    def _on_index(self, view: WindowView, plan, est: IndexEstimate) -> tuple[BoundaryDecision, dict]:
        forecast = est.forecast([s.tokens for s in plan.candidates])  # the index: known before the call
        gate = self.scenario.gate
        decision = evaluate_boundary(view.utilization, view.budget, [forecast.expected_yield], plan.index_tokens,
                                     forecast.expected_rationale, gate.margin_factor)
        numbers = self._numbers(view, plan, decision)
        numbers.update(expected_yield=forecast.expected_yield, expected_rationale=forecast.expected_rationale,
                       expected_selections=forecast.selections, yield_ratio=forecast.ratio,
                       favoured_tokens=forecast.favoured, candidate_tokens=forecast.held,
                       spread_net=math.sqrt(est.net_variance),
                       risk_bound=net_negative_bound(decision.reclaimable, est.net_variance))
        if decision.run:  # what the model then names and writes is what the runtime learns from
            est.observe(forecast, len(plan.selected), plan.selected_tokens, plan.rationale_tokens)
        return decision, numbers

    def _on_fixed_prior(self, view: WindowView, plan, est: PassEstimate) -> tuple[BoundaryDecision, dict]:
        held = float(sum(s.tokens for s in plan.candidates))  # listed in the index: known before the call
        expected_yield = min(est.expected_yield, held)
        decision = evaluate_boundary(view.utilization, view.budget, [expected_yield], plan.index_tokens,
                                     est.expected_rationale, self.scenario.gate.margin_factor)
        numbers = self._numbers(view, plan, decision)
        numbers.update(expected_yield=expected_yield, expected_rationale=est.expected_rationale,
                       candidate_tokens=held, spread_net=math.sqrt(est.net_variance),
                       risk_bound=net_negative_bound(decision.reclaimable, est.net_variance))
        if decision.run:
            est.observe(plan.selected_tokens, plan.rationale_tokens)
        return decision, numbers

    def _numbers(self, view: WindowView, plan, decision: BoundaryDecision) -> dict:
        numbers = {
            "knowledge": self.scenario.gate.knowledge,
            "utilization": view.utilization,
            "trigger": self.trigger,
            "headroom": decision.headroom,
            "overhead": decision.overhead,
            "reclaimable": decision.reclaimable,
            "margin": decision.margin,
            "index": plan.index_tokens,
            "candidates": len(plan.candidates),
        }
        if self.estimate is None:  # what only the oracle reads before the call
            numbers.update(rationale=plan.rationale_tokens, selected=len(plan.selected),
                           selected_tokens=plan.selected_tokens)
        return numbers
