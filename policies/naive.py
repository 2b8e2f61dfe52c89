"""naive: a model-driven prune pass whenever utilization reaches the trigger.

It prunes when the window is fullest, which is exactly when deciding costs the
most relative to the room left. Its index and rationale stay in the window as
prunable spans, so they feed the next pass.
"""

from __future__ import annotations

from .base import Action, Policy, WindowView
from .decision import plan_pass


class NaivePolicy(Policy):
    name = "naive"
    model_driven = True
    summary = "model-driven pass at the trigger; index and rationale stay in the window"

    def decide(self, view: WindowView) -> list[Action]:
        if view.utilization < self.scenario.trigger:
            return []
        plan = plan_pass(view, self.scenario.decision, self.rng)
        return [plan.as_pass()]
