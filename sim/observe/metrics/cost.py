"""What the model calls bill: prompt tokens over all calls, and the share spent on deciding."""

from __future__ import annotations

from prunesim.model.events import Observer

from .definition import Metric

DEFINITIONS = (
    Metric("input_tokens_billed", "tokens", "Prompt tokens over all model calls (turn calls, prune passes and "
           "compactions)."),
    Metric("output_tokens_billed", "tokens", "Output tokens over all model calls (the agent's turns, rationales and "
           "summaries)."),
    Metric("decision_tokens_billed", "tokens", "Prompt and output tokens of the calls that decide what to prune or "
           "write a summary (prune passes and compactions)."),
    Metric(
        "decision_share",
        "fraction",
        "decision_tokens_billed / (input_tokens_billed + output tokens of prune passes and compactions).",
    ),
)


class CostMetrics(Observer):
    def __init__(self, run):
        self.input_billed = 0
        self.output_billed = 0
        self.decision_billed = 0
        self.decision_output = 0

    def on_model_call(self, time, turn, prompt_tokens, output_tokens, decision) -> None:
        self.input_billed += prompt_tokens
        self.output_billed += output_tokens
        if decision:
            self.decision_billed += prompt_tokens + output_tokens
            self.decision_output += output_tokens

    def summary(self, so_far: dict) -> dict:
        billed_all = self.input_billed + self.decision_output
        return {
            "input_tokens_billed": self.input_billed,
            "output_tokens_billed": self.output_billed,
            "decision_tokens_billed": self.decision_billed,
            "decision_share": round(self.decision_billed / billed_all, 6) if billed_all else 0.0,
        }
