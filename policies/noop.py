"""noop: never prunes. The baseline against which every cost is measured."""

from __future__ import annotations

from prunesim.policies.base import Action, Policy, WindowView


class NoopPolicy(Policy):
    name = "noop"
    summary = "never prunes"

    def decide(self, view: WindowView) -> list[Action]:
        return []
