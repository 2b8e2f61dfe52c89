"""naive: a model-driven prune pass whenever utilization reaches the trigger.

It prunes when the window is fullest, which is exactly when deciding costs the
most relative to the room left. Its index and rationale stay in the window as
prunable spans, so they feed the next pass. With ``decision.reentrant`` its
rationale is a candidate of the very plan that writes it: the editor may prune
its own justification in the pass that acts on it.
"""

from __future__ import annotations

from prunesim.policies.base import Action, Policy, WindowView
from prunesim.policies.decision import plan_pass


class NaivePolicy(Policy):
    name = "naive"
    model_driven = True
    summary = "model-driven pass at the trigger; index and rationale stay in the window"
    reads = ("trigger", "decision")
    roles = {"threshold": "trigger"}

    # False when a wrapper moves the rationale out of the window (its own rationale is then no candidate).
    rationale_in_window = True

    def decide(self, view: WindowView) -> list[Action]:
        if view.utilization < self.scenario.trigger:
            return []
        params = self.scenario.decision
        plan = plan_pass(view, params, self.rng)
        if params.reentrant and self.rationale_in_window:
            # Its own rationale is a candidate too. Once the plan is applied the editor scores it as
            # spent (stale), and judges that right as often as any other staleness.
            own = bool(self.rng.random() < params.selection_quality)
            return [plan.as_pass(prune_own_rationale=own)]
        return [plan.as_pass()]
