"""recency: non-model eviction of the lowest-recency spans, no decision tokens."""

from __future__ import annotations

from dataclasses import dataclass

from prunesim.model.scenario import non_negative
from prunesim.model.spans import PRUNABLE_KINDS
from prunesim.policies.base import Action, Evict, Policy, WindowView


@dataclass
class RecencyParams:
    """``[recency]``: the baseline frees down to ``trigger - low_water_gap``."""

    low_water_gap: int = 1000

    def check(self, key: str, where: str, scenario) -> None:
        non_negative(self.low_water_gap, f"{key}.low_water_gap", where)


def oldest_prunable(view: WindowView, protect_recent_turns: int) -> list[int]:
    """Prunable span ids, oldest first, excluding the most recent turns."""
    last = view.turn - protect_recent_turns
    return [
        s.id
        for s in view.spans
        if s.kind in PRUNABLE_KINDS and not s.pinned and not s.is_constraint and s.turn <= last
    ]


class RecencyPolicy(Policy):
    name = "recency"
    summary = "drops the oldest prunable spans once utilization reaches the trigger"
    tables = {"recency": RecencyParams}
    reads = ("trigger", "recency", "decision.protect_recent_turns")
    roles = {"threshold": "trigger", "low_water": "recency.low_water_gap"}

    def decide(self, view: WindowView) -> list[Action]:
        trigger = self.scenario.trigger
        if view.utilization < trigger:
            return []
        # Free down to the trigger minus the low-water gap, oldest first.
        target = trigger - self.scenario.recency.low_water_gap
        need = view.utilization - target
        chosen: list[int] = []
        sizes = {s.id: s.tokens for s in view.spans}
        for span_id in oldest_prunable(view, self.scenario.decision.protect_recent_turns):
            if need <= 0:
                break
            chosen.append(span_id)
            need -= sizes[span_id]
        return [Evict(tuple(chosen), reason="recency")] if chosen else []
