"""The gate's decisions and the non-model evictions it falls back on.

Refusals are counted by reason: over budget, decision in band ("no slack to
decide", a different state from "nothing worth pruning") and insufficient net.
"""

from __future__ import annotations

from prunesim.model.events import Observer

from .definition import Metric

DEFINITIONS = (
    Metric("gate_runs", "decisions", "Gate evaluations that allowed a model-driven pass."),
    Metric("refusals_over_budget", "decisions", "Gate refusals because utilization was above the budget."),
    Metric(
        "refusals_decision_in_band",
        "decisions",
        "Gate refusals because headroom was below the pass's own overhead: no slack to decide.",
    ),
    Metric(
        "refusals_insufficient_net",
        "decisions",
        "Gate refusals because reclaimable tokens after overhead did not clear the margin: nothing worth pruning.",
    ),
    Metric(
        "fallback_evictions",
        "actions",
        "Non-model evictions a gate took in place of a model-driven pass it refused (recency drop, truncation, "
        "template summary); a policy's own non-model evictions are non_model_evictions.",
    ),
    Metric("fallback_tokens", "tokens", "Tokens freed by fallback_evictions, net of any summary written."),
    Metric(
        "gate_risk_bound",
        "probability",
        "Mean, over the gate decisions that let a model-driven pass run and reported one, of the gate's own bound "
        "on the probability that the pass is net-negative (Cantelli's, from its running estimates: "
        "policies/boundary.py; 0 for an oracle gate, 1 before any spread is known); -1 if none.",
    ),
)


class GateMetrics(Observer):
    def __init__(self, run):
        self.decisions = {"run": 0, "over_budget": 0, "decision_in_band": 0, "insufficient_net": 0}
        self.fallbacks = self.fallback_tokens = 0
        self.risk_sum = 0.0  # of the bounds reported by decisions that ran a pass, summed in order
        self.risk_count = 0

    def on_gate_decision(self, time, turn, reason, numbers) -> None:
        self.decisions[reason] = self.decisions.get(reason, 0) + 1
        if reason == "run" and "risk_bound" in numbers:
            self.risk_sum += numbers["risk_bound"]
            self.risk_count += 1

    def on_non_model_eviction(self, time, turn, action, reason, spans, freed, fallback) -> None:
        if fallback:
            self.fallbacks += 1
            self.fallback_tokens += freed

    def summary(self, so_far: dict) -> dict:
        return {
            "gate_runs": self.decisions["run"],
            "refusals_over_budget": self.decisions["over_budget"],
            "refusals_decision_in_band": self.decisions["decision_in_band"],
            "refusals_insufficient_net": self.decisions["insufficient_net"],
            "fallback_evictions": self.fallbacks,
            "fallback_tokens": self.fallback_tokens,
            "gate_risk_bound": round(self.risk_sum / self.risk_count, 6) if self.risk_count else -1,
        }
