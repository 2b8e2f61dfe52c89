"""Tool-result clearing with a size limit: at the trigger, drop the oldest outputs larger than a limit."""

from __future__ import annotations

from prunesim.policies import Policy
from prunesim.policies.base import Evict


class KeepOutputsUnder(Policy):
    name = "keep-outputs-under"
    summary = "drops the oldest tool outputs over 500 tokens once utilization reaches the trigger"
    limit = 500  # tokens: outputs this size or smaller stay

    def decide(self, view):
        if view.utilization < self.scenario.trigger:
            return []
        need = view.utilization - self.scenario.trigger
        chosen = []
        for span in view.spans:  # oldest first
            if need <= 0:
                break
            if span.kind == "tool_output" and span.offerable and span.tokens > self.limit:
                chosen.append(span.id)
                need -= span.tokens
        return [Evict(tuple(chosen), reason="clear_large")] if chosen else []
