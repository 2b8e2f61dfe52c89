"""slack-gated: a model-driven pass only when the decision boundary says it pays.

Once utilization reaches its own trigger, ``trigger - [gate] lead`` (``lead``
tokens below the scenario's trigger, so that there is still room to decide, and
so that sweeping ``trigger`` moves it with every other threshold policy), the
policy draws the plan a model-driven pass would make (:func:`plan_pass`) and
asks :func:`evaluate_boundary` about it:

* ``stale_candidate_sizes`` are the sizes of the spans the plan selects (what
  the model judged stale and would evict), ``index_size`` the plan's index and
  ``expected_rationale_size`` the rationale it would write;
* on ``"run"`` the pass is taken as planned; the boundary guarantees that it
  frees more than ``margin`` net of its own index and rationale;
* on a refusal it takes the scenario's non-model ``[gate] fallback``, which
  costs no decision tokens, and frees down to ``trigger - low_water_gap``
  (low-water mark) where it can:

  - ``"recency"``: drop the oldest prunable spans outside the protected recent turns;
  - ``"truncate"``: cut the oldest tool outputs, one after another, to ``truncate_keep`` tokens;
  - ``"template"``: replace the oldest prunable spans by one fixed-size summary of
    ``template_tokens`` (only when that frees something).

Every consultation is recorded as a :class:`BoundaryEvent` carrying the reason
and the numbers behind it. The plan is drawn on every consultation, whether it
runs or not, so the policy's random stream advances the same way in both cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prunesim.errors import UserError
from prunesim.model.scenario import non_negative, searched
from prunesim.policies.base import Action, BoundaryEvent, Evict, Policy, Summarize, Truncate, WindowView
from prunesim.policies.boundary import BoundaryDecision, evaluate_boundary
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
    is swept, as naive and recency do.
    """

    lead: int = field(default=0, metadata=searched(0, 8000, integer=True))
    margin_factor: float = 1.5
    fallback: Literal["recency", "truncate", "template"] = "recency"
    low_water_gap: int = 1000
    truncate_keep: int = 200
    template_tokens: int = 300

    def check(self, key: str, where: str, scenario) -> None:
        acts_at = scenario.trigger - self.lead
        if not 0 <= acts_at <= scenario.budget:
            raise UserError(where, f"{key}.lead", f"{self.lead} puts the gate at {acts_at} (trigger - lead), "
                            f"outside 0..{scenario.budget} (the budget)")
        for name in ("margin_factor", "low_water_gap", "truncate_keep", "template_tokens"):
            non_negative(getattr(self, name), f"{key}.{name}", where)


__all__ = ["BoundaryDecision", "SlackGatedPolicy", "evaluate_boundary", "fallback_actions"]


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

    def acting_trigger(self) -> int:
        return self.trigger

    def decide(self, view: WindowView) -> list[Action]:
        if view.utilization < self.trigger:
            return []
        gate = self.scenario.gate
        params = self.scenario.decision
        plan = plan_pass(view, params, self.rng)  # drawn whatever the gate says
        decision = evaluate_boundary(
            view.utilization,
            view.budget,
            [s.tokens for s in plan.selected],
            plan.index_tokens,
            plan.rationale_tokens,
            gate.margin_factor,
        )
        numbers = {
            "utilization": view.utilization,
            "trigger": self.trigger,
            "headroom": decision.headroom,
            "overhead": decision.overhead,
            "reclaimable": decision.reclaimable,
            "margin": decision.margin,
            "index": plan.index_tokens,
            "rationale": plan.rationale_tokens,
            "candidates": len(plan.candidates),
            "selected": len(plan.selected),
            "selected_tokens": plan.selected_tokens,
        }
        if decision.run:
            return [BoundaryEvent(decision.reason, numbers), plan.as_pass()]
        numbers["fallback"] = gate.fallback
        event = BoundaryEvent(decision.reason, numbers)
        return [event, *fallback_actions(view, gate, self.low_water, params.protect_recent_turns)]
