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
    Metric("fallback_evictions", "actions", "Non-model evictions (recency drop, truncation, template summary)."),
    Metric("fallback_tokens", "tokens", "Tokens freed by non-model evictions, net of any summary written."),
)


class GateMetrics(Observer):
    def __init__(self, run):
        self.decisions = {"run": 0, "over_budget": 0, "decision_in_band": 0, "insufficient_net": 0}
        self.fallbacks = self.fallback_tokens = 0

    def on_gate_decision(self, time, turn, reason, numbers) -> None:
        self.decisions[reason] = self.decisions.get(reason, 0) + 1

    def on_fallback(self, time, turn, reason, spans, freed) -> None:
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
        }
